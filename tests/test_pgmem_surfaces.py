"""Every surface on a PostgreSQL workspace: where the workspace is, the web memory API, the MCP tools.

* :func:`memory.config.workspace_location` decides the workspace the same way for ``sessiongraph
  memory``, ``mcp`` and ``serve``: ``-w`` (folder or URL), ``$SESSIONGRAPH_MEMORY``, the settings
  file's ``memory.store``/``memory.views``, the user data directory.
* The web memory API and the MCP memory tools run in process on each backend (``workspace_factory``),
  the workspace named the way a user names it (a URL and a views folder on PostgreSQL).
* ``sessiongraph mcp -w postgresql://... --views DIR`` over stdio in a subprocess.
* The workspace database's read transaction sees one snapshot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from starlette.testclient import TestClient

from graph import SessionStore
from graph.importers import import_file
from graph.server import ServerContext, create_app
from memory import MemoryWorkspace, WritePipeline, add_memory
from memory.config import (
    CONFIG_ENV,
    MEMORY_ENV,
    ConfigError,
    WorkspaceLocation,
    default_workspace,
    load_config,
    views_folder,
    workspace_location,
)
from memory.mcp_server import build_server
from memory.web import extension
from tests.conftest import postgres_url
from tests.memory_backends import WorkspaceFactory
from tests.serverkit import EXAMPLE, SESSION, TOKEN

URL = "postgresql://u:secret@db.example:5432/team?schema=shared"


# ------------------------------------------------------------------ where the workspace is


def _settings(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return {CONFIG_ENV: str(path)}


def test_the_location_order_is_option_then_environment_then_settings_then_default(
    tmp_path: Path,
) -> None:
    env = _settings(tmp_path, f'[memory]\nstore = "{URL}"\nviews = "~/team-views"\n')
    home = Path(os.path.expanduser("~"))
    # -w wins: a folder is a SQLite workspace, whatever the settings say.
    assert workspace_location(tmp_path / "mine", env=env) == WorkspaceLocation(
        tmp_path / "mine", None, "--workspace"
    )
    # A URL given with -w takes its views from --views, else the settings file's memory.views.
    there = workspace_location(URL, tmp_path / "v", env=env)
    assert (there.folder, there.store) == (tmp_path / "v", URL)
    assert workspace_location(URL, env=env).folder == home / "team-views"
    # The environment variable takes a URL too.
    other = URL.replace("shared", "other")
    by_env = workspace_location(env=env | {MEMORY_ENV: other})
    assert (by_env.store, by_env.source) == (other, MEMORY_ENV)
    assert by_env.folder == home / "team-views"
    assert workspace_location(env=env | {MEMORY_ENV: str(tmp_path / "e")}).store is None
    # Then the settings file's store.
    by_file = workspace_location(env=env)
    assert by_file.store == URL and by_file.source.endswith("memory.store")
    assert by_file.shown == f"--views {home / 'team-views'}"
    # Without views anywhere: one folder per host, database and schema.
    bare = _settings(tmp_path, f'[memory]\nstore = "{URL}"\n')
    assert workspace_location(env=bare).folder == views_folder(URL)
    assert views_folder(URL).name == "memory-db.example-team-shared"
    # Nothing at all: the user data directory's folder.
    assert workspace_location(env={}) == WorkspaceLocation(default_workspace())


def test_a_store_setting_that_is_not_a_url_is_refused_with_its_key(tmp_path: Path) -> None:
    env = _settings(tmp_path, '[memory]\nstore = "/some/folder"\n')
    with pytest.raises(ConfigError) as e:
        load_config(env=env)
    assert e.value.key == "memory.store" and "postgresql://" in str(e.value)
    env = _settings(tmp_path, "[memory]\nviews = 3\n")
    with pytest.raises(ConfigError, match="memory.views"):
        load_config(env=env)
    config = load_config(env=_settings(tmp_path, f'[memory]\nstore = "{URL}"\n'))
    assert (config.store, config.views) == (URL, None)


# ------------------------------------------------------------------ in process, on each backend


def _named(factory: WorkspaceFactory, name: str = "ws") -> dict[str, str]:
    """The server's settings naming workspace ``name`` as a user would (a URL and views on PG)."""
    url = factory.store(name)
    folder = str(factory.root / name)
    if url is None:
        return {"memory.workspace": folder}
    return {"memory.workspace": url, "memory.views": folder}


def _written(factory: WorkspaceFactory, tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    ws = factory()
    for s in store.sessions():
        assert WritePipeline(ws, store).write(s.id, force=True) is None
    return store


def test_the_web_memory_api_on_each_backend(
    workspace_factory: WorkspaceFactory, tmp_path: Path
) -> None:
    store = _written(workspace_factory, tmp_path)
    settings = _named(workspace_factory)
    ctx = ServerContext(store, settings)
    app = create_app(
        store, token=TOKEN, hosts=["testserver"], extensions=[extension(ctx)], settings=settings
    )
    c = TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        rows = c.get("/api/memory/records").json()
        assert rows, "the written records are served"
        sid = rows[0]["citations"][0]["source_id"]
        made = c.post(
            "/api/memory/records",
            json={
                "content": "The weather client retries with exponential backoff.",
                "topic": "projects/weather",
                "sources": [{"source": sid, "label": "retry", "snippet": "retries"}],
            },
        )
        assert made.status_code == 201, made.text
        rid = made.json()["id"]
        hits = c.get("/api/memory/search", params={"q": "exponential backoff"}).json()
        assert rid in [h["id"] for h in hits]
        core = c.get("/api/memory/core").json()
        assert core["topic"] == "core" and core["revision"] >= 2
        assert c.delete(f"/api/memory/records/{rid}").status_code == 200
        assert c.get(f"/api/memory/records/{rid}").status_code == 404
        # The same store of record, seen by another workspace object: the write went there.
        other = workspace_factory()
        assert rid not in {r.id for r in other.records()}
        assert len(other.records()) == len(rows)
        if workspace_factory.backend == "postgres":
            assert not (workspace_factory.root / "ws" / "memory.db").exists()
            assert (workspace_factory.root / "ws" / "views" / "core.md").is_file()
    finally:
        c.close()
        store.close()


async def _ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_the_mcp_memory_tools_on_each_backend(
    workspace_factory: WorkspaceFactory, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    ws = workspace_factory()

    async def main() -> None:
        async with Client(build_server(store, ws)) as client:
            before = await _ok(client, "memory_status")
            assert before["records"] == 0
            saved = await _ok(
                client,
                "memory_save",
                content="fetch_json retries with exponential backoff.",
                topic="projects/weather",
            )
            (rid,) = saved["created"]
            found = await _ok(client, "memory_search", query="exponential backoff")
            assert [r["record_id"] for r in found["records"]] == [rid]
            got = await _ok(client, "memory_get", record_id=rid)
            assert got["topic"] == "projects/weather"
            after = await _ok(client, "memory_status")
            assert after["records"] == 1 and after["revision"] == before["revision"] + 1

    try:
        anyio.run(main)
        assert [r.content for r in workspace_factory().records()] == [
            "fetch_json retries with exponential backoff."
        ]
    finally:
        store.close()


def test_a_read_transaction_sees_one_snapshot(workspace_factory: WorkspaceFactory) -> None:
    ws = workspace_factory()
    add_memory(ws, "Prefer tabs in Makefiles.")
    with ws.conn.reading():
        assert ws.conn.in_transaction
        revision = ws.revision
        with ws.conn.reading(), ws.atomic():  # nested: part of the open one
            pass
        if workspace_factory.backend == "postgres":  # SQLite's writer waits for the reader
            other = workspace_factory()
            add_memory(other, "Tea, not coffee.")
            assert ws.revision == revision and len(ws.records()) == 1
    assert not ws.conn.in_transaction
    with pytest.raises(RuntimeError), ws.conn.reading():
        raise RuntimeError("boom")
    assert not ws.conn.in_transaction
    expected = revision + (1 if workspace_factory.backend == "postgres" else 0)
    assert ws.revision == expected


# ------------------------------------------------------------------ a subprocess


def test_mcp_over_stdio_on_a_postgresql_workspace(tmp_path: Path) -> None:
    factory = WorkspaceFactory("postgres", tmp_path, postgres_url())
    url = factory.store("mcp")
    assert url is not None
    db = tmp_path / "s.db"
    store = SessionStore(db)
    import_file(store, EXAMPLE)
    store.close()
    views = tmp_path / "views"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"HOME": str(tmp_path / "home"), MEMORY_ENV: str(tmp_path / "not-this-one")}
    args = ["-c", "from graph.cli.commands import main; main()", "--db", str(db), "mcp"]
    args += ["-w", url, "--views", str(views), "--no-follow"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            saved = await _ok(
                client,
                "memory_save",
                content="The nightly build runs at 02:00 UTC.",
                citations=[{"session_id": SESSION, "node_id": await _first_node(client)}],
            )
            assert len(saved["created"]) == 1
            found = await _ok(client, "memory_search", query="nightly build")
            assert found["total"] == 1

    try:
        anyio.run(main)
        again = MemoryWorkspace(tmp_path / "elsewhere", store=url)
        assert [r.content for r in again.records()] == ["The nightly build runs at 02:00 UTC."]
        again.close()
        assert (views / "views" / "core.md").is_file() and not (views / "memory.db").exists()
        assert not (tmp_path / "not-this-one").exists()
    finally:
        factory.close()


async def _first_node(client: Client) -> str:
    window = await _ok(client, "read_transcript", session_id=SESSION)
    node = window["messages"][0]["id"]
    assert isinstance(node, str)
    return node

"""Memory off for the server and MCP: no memory routes, pages, links, tools, and nothing on disk.

Memory is turned off by ``memory.backend = "none"`` in the settings file or by
``SESSIONGRAPH_MEMORY_BACKEND=none``; each case is checked against memory on, so the test can fail.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from starlette.testclient import TestClient

from graph import SessionStore
from graph.importers import import_file
from graph.server import ServerContext, create_app
from graph.server.app import ExtensionError, load_extensions
from memory.config import BACKEND_ENV, CONFIG_ENV
from memory.mcp_server import build_server
from memory.workspace import MemoryWorkspace
from tests.serverkit import EXAMPLE, TOKEN

LOOKUP_TOOLS = {
    "list_sessions",
    "open_session",
    "read_transcript",
    "latest_message",
    "search_sessions",
}
MEMORY_PATHS = ["/memory", "/memory/panel", "/api/memory/records", "/api/memory/search?q=x"]


def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("SESSIONGRAPH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "no-such-config.toml"))


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore(tmp_path / "s.db")
    import_file(s, EXAMPLE)
    return s


def _off(how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clean_env(monkeypatch, tmp_path)
    if how == "config":
        config = tmp_path / "config.toml"
        config.write_text('[memory]\nbackend = "none"\n')
        monkeypatch.setenv(CONFIG_ENV, str(config))
    elif how == "env":
        monkeypatch.setenv(BACKEND_ENV, "none")


def _app(store: SessionStore, ws: Path) -> TestClient:
    settings = {"memory.workspace": str(ws)}
    app = create_app(store, token=TOKEN, hosts=["testserver"], settings=settings)
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.mark.parametrize("how", ["on", "config", "env"])
def test_the_server_has_no_memory_when_memory_is_off(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    _off(how, monkeypatch, tmp_path)
    ws = tmp_path / "ws"
    with _app(store, ws) as client:
        statuses = [client.get(p).status_code for p in MEMORY_PATHS]
        schema = client.get("/api/openapi.json").json()
        home = client.get("/").text
    memory_paths = [p for p in schema["paths"] if p.startswith("/api/memory")]
    if how == "on":
        assert statuses == [200] * len(MEMORY_PATHS)
        assert memory_paths and 'href="/memory"' in home
        return
    assert statuses == [404] * len(MEMORY_PATHS)
    assert memory_paths == []
    assert "/api/sessions" in schema["paths"]  # the rest of the server is there
    assert 'href="/memory' not in home and "Memory" not in home
    assert not ws.exists()


def test_a_malformed_memory_setting_is_a_typed_error(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.setenv(BACKEND_ENV, "floppy")
    with pytest.raises(ExtensionError, match=r"server extension memory: .*floppy"):
        load_extensions(ServerContext(store, {}))


def _tool_surface(store: SessionStore, ws: MemoryWorkspace | None) -> tuple[set[str], int, int]:
    async def main() -> tuple[set[str], int, int]:
        async with Client(build_server(store, ws)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            resources = len((await client.list_resources()).resources)
            prompts = len((await client.list_prompts()).prompts)
            return tools, resources, prompts

    return anyio.run(main)


def test_the_mcp_server_without_a_workspace_has_the_look_up_tools_only(
    store: SessionStore, tmp_path: Path
) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    try:
        tools, resources, prompts = _tool_surface(store, ws)
    finally:
        ws.close()
    assert tools > LOOKUP_TOOLS and (resources, prompts) == (1, 1)

    assert _tool_surface(store, None) == (LOOKUP_TOOLS, 0, 0)


def test_mcp_over_stdio_with_memory_off(store: SessionStore, tmp_path: Path) -> None:
    store.close()
    ws = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"HOME": str(tmp_path / "home"), BACKEND_ENV: "none"}
    command = [
        "-c",
        "from graph.cli.commands import main; main()",
        "--db",
        str(tmp_path / "s.db"),
        "mcp",
    ]
    params = StdioServerParameters(
        command=sys.executable, args=[*command, "--workspace", str(ws), "--no-follow"], env=env
    )

    async def main() -> tuple[set[str], int, int, str]:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            resources = len((await client.list_resources()).resources)
            prompts = len((await client.list_prompts()).prompts)
            listed = await client.call_tool("list_sessions", {})
            assert not listed.is_error
            return tools, resources, prompts, str(listed.structured_content)

    tools, resources, prompts, listed = anyio.run(main)
    assert (tools, resources, prompts) == (LOOKUP_TOOLS, 0, 0)
    assert "7d3c9a52" in listed
    assert not ws.exists() and not (tmp_path / "home").exists()


def test_serve_with_memory_off_in_a_subprocess(store: SessionStore, tmp_path: Path) -> None:
    store.close()
    ws = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"HOME": str(tmp_path / "home"), BACKEND_ENV: "none", "SESSIONGRAPH_MEMORY": str(ws)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "s.db"),
        ]
        + ["serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"(http://\S+)/\?token=(\S+)", line)
        assert m, line
        base, token = m.groups()
        headers = {"Authorization": f"Bearer {token}"}
        # The URL is printed once the socket listens: the first request waits to be accepted.
        assert httpx.get(f"{base}/memory", headers=headers, timeout=120).status_code == 404
        assert httpx.get(f"{base}/api/memory/records", headers=headers).status_code == 404
        paths = httpx.get(f"{base}/api/openapi.json", headers=headers).json()["paths"]
        assert "/api/sessions" in paths and not [p for p in paths if "memory" in p]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not ws.exists() and not (tmp_path / "home").exists()


def test_serve_refuses_a_malformed_memory_setting_in_one_line(
    store: SessionStore, tmp_path: Path
) -> None:
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"HOME": str(tmp_path / "home"), BACKEND_ENV: "floppy"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "s.db"),
        ]
        + ["serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("error: server extension memory: ") and "floppy" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr

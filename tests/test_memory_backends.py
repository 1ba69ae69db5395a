"""The memory workspace's store of record on each backend: recall, its index, the lock, the schema.

Every test here runs on SQLite and on PostgreSQL (``workspace_factory``; PostgreSQL from
``$SESSIONGRAPH_TEST_POSTGRES``, skipped without it, required in CI), and the last one drives
``sessiongraph --db postgresql://... memory -w postgresql://...`` in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role
from memory import (
    FailureReason,
    MemoryWorkspace,
    SearchIndexMissingError,
    WorkspaceBusyError,
    WritePipeline,
    add_memory,
)
from memory.errors import UnknownRecordError, WorkspaceSchemaError
from memory.reading import search_page
from memory.schema import SCHEMA_VERSION
from tests.conftest import postgres_url
from tests.memory_backends import WorkspaceFactory, snapshot


def test_recall_ranks_reads_words_plainly_and_pages(workspace_factory: WorkspaceFactory) -> None:
    ws = workspace_factory()
    build = add_memory(ws, "The nightly build runs at 02:00 UTC.", topic="ops").id
    deploy = add_memory(ws, "Deploys go out after the nightly build passes.", topic="ops").id
    add_memory(ws, "Tea, not coffee, in the mornings.", topic="me")
    assert {h.record_id for h in ws.search("nightly build")} == {build, deploy}
    assert ws.search("coffee")[0].topic == "me"
    # What a user types is words, never query syntax, on either backend.
    for q in ['"nightly', "build OR", "-build", "nightly AND (", "a:b*", "or", "NEAR(x)", "'"]:
        assert isinstance(ws.search(q), list)
    assert ws.search("") == [] and ws.search("kubernetes") == []
    page = search_page(ws, "nightly", 1, 1)
    assert (page.total, page.pages, len(page.hits)) == (2, 2, 1)
    rest = search_page(ws, "nightly", 2, 1)
    assert {page.hits[0].record_id, rest.hits[0].record_id} == {build, deploy}
    kept = search_page(ws, "nightly", keep=lambda rid: rid == deploy)
    assert kept.total == 1 and kept.hits[0].record_id == deploy


def _drop_index(ws: MemoryWorkspace) -> None:
    if ws.store_url is None:
        ws.conn.execute("DROP TABLE records_fts")
    else:
        ws.conn.execute("DROP INDEX records_search")


def test_a_missing_search_index_fails_loudly_and_open_restores_it(
    workspace_factory: WorkspaceFactory,
) -> None:
    ws = workspace_factory()
    add_memory(ws, "The nightly build runs at 02:00 UTC.")
    _drop_index(ws)
    with pytest.raises(SearchIndexMissingError):
        ws.search("build")
    with pytest.raises(SearchIndexMissingError):
        search_page(ws, "build")
    ws.close()
    again = workspace_factory()  # ensured at open
    assert len(again.search("build")) == 1


def test_two_writers_one_gets_concurrent_update(workspace_factory: WorkspaceFactory) -> None:
    store = MemorySessionStore()
    sid = store.create_session("s").id
    store.append(sid, "Remember that the staging host is stage-2.", role=Role.USER)
    store.append(sid, "Noted: staging runs on stage-2.", role=Role.ASSISTANT)
    first, second = workspace_factory(), workspace_factory()
    assert first.id == second.id  # one store of record
    with first.write_lock():
        with pytest.raises(WorkspaceBusyError):
            with second.write_lock(timeout=0.2):
                pass
        failure = WritePipeline(second, store).write(sid, force=True)
        assert failure is not None
        assert (failure.reason, failure.retryable) == (FailureReason.CONCURRENT_UPDATE, True)
        assert second.records() == []
    assert WritePipeline(second, store).write(sid, force=True) is None
    assert first.records() == second.records() != []
    assert WritePipeline(first, store).owed(sid) == []  # one memory: written once for both


def test_a_newer_schema_is_refused_and_record_is_a_typed_lookup(
    workspace_factory: WorkspaceFactory,
) -> None:
    ws = workspace_factory()
    with pytest.raises(UnknownRecordError) as e:
        ws.record("m-nope")
    assert isinstance(e.value, LookupError)
    ws.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(WorkspaceSchemaError) as refused:
        workspace_factory()
    assert (refused.value.found, refused.value.supported) == (99, SCHEMA_VERSION)


def test_a_refused_change_leaves_every_table_unchanged(
    workspace_factory: WorkspaceFactory,
) -> None:
    ws = workspace_factory()
    rid = add_memory(ws, "Prefer tabs in Makefiles.").id
    before = snapshot(ws)
    with pytest.raises(Exception, match="SECRET"):
        add_memory(ws, "The key is sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5 for now.")
    assert snapshot(ws) == before and [r.id for r in ws.records()] == [rid]


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from graph.cli.commands import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_the_command_line_on_postgresql_end_to_end(tmp_path: Path) -> None:
    """``sessiongraph --db postgresql://... memory -w postgresql://... write/status/search``."""
    import psycopg

    url = postgres_url()
    tag = f"t_{uuid.uuid4().hex[:12]}"
    graph_schema, memory_schema = f"{tag}_graph", f"{tag}_memory"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {graph_schema}")
    sep = "&" if "?" in url else "?"
    db = f"{url}{sep}options=-csearch_path%3D{graph_schema}"
    ws = f"{url}{sep}schema={memory_schema}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")} | {
        "SESSIONGRAPH_MEMORY": str(tmp_path / "default-ws"),
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    transcript = Path(__file__).parent / "fixtures" / "claude-code" / "rewind-damaged.jsonl"
    try:
        _run(env, "--db", db, "import", str(transcript))
        views = tmp_path / "views"
        memory = ["--db", db, "memory", "-w", ws, "--views", str(views)]
        status = json.loads(_run(env, *memory, "status", "--json").stdout)
        assert status["records"] == 0 and status["pending"]
        assert "session(s) written" in _run(env, *memory, "write").stdout
        status = json.loads(_run(env, *memory, "status", "--json").stdout)
        assert status["pending"] == [] and status["records"] > 0
        word = max(
            (w for r in MemoryWorkspace(views, store=ws).records() for w in r.content.split()),
            key=len,
        ).strip(".,:;!?()\"'`")
        found = json.loads(_run(env, *memory, "search", word, "--json").stdout)
        assert found["total"] >= 1
        assert (views / "views" / "core.md").is_file()  # the views are local
        assert not (views / "memory.db").exists()  # the store of record is not
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for (schema,) in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (tag + "%",)
            ).fetchall():
                conn.execute(f"DROP SCHEMA {schema} CASCADE")

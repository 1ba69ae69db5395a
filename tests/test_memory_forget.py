"""Forgetting a session (``memory forget``): its records, its citations in other records, its archived
turns (the archive's one exception, logged without content), all or nothing, in the library and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role, SessionStore
from memory import MemoryWorkspace, WorkspaceStoreError, WritePipeline, add_memory, caps
from memory import forget as forget_mod
from memory.database import WorkspaceDatabase
from memory.forget import NothingToForgetError, forget_session
from memory.tombstones import NothingToUndoError, delete_record, undo_delete
from tests.memory_backends import WorkspaceFactory, snapshot

SECRET_WORD = "zanzibarquokka"  # appears in session A only


@dataclass
class Setup:
    ws: MemoryWorkspace
    a: str
    b: str
    a_only: str
    mixed: str
    linker: str
    bare: str


@pytest.fixture
def setup(workspace_factory: WorkspaceFactory) -> Iterator[Setup]:
    store = MemorySessionStore()
    a = store.create_session("a").id
    b = store.create_session("b").id
    qa = store.append(a, f"Where is the {SECRET_WORD} config kept?", role=Role.USER)
    aa = store.append(a, f"The {SECRET_WORD} config is in /etc/zq.", role=Role.ASSISTANT)
    qb = store.append(b, "Which shell do we use?", role=Role.USER)
    store.append(b, "We use fish.", role=Role.ASSISTANT)
    ws = workspace_factory()
    pipe = WritePipeline(ws, store)
    assert pipe.write(a, force=True) is None and pipe.write(b, force=True) is None
    a_only = add_memory(ws, f"The {SECRET_WORD} lives in /etc/zq.", cites=[aa]).id
    mixed = add_memory(ws, "Shell and config notes.", cites=[qa, qb]).id
    linker = add_memory(ws, f"See [[notes#^{a_only}]] for the path.", cites=[qb]).id
    bare = add_memory(ws, "I like short answers.").id
    yield Setup(ws, a, b, a_only, mixed, linker, bare)


def _a_sources(ws: MemoryWorkspace, sid: str) -> list[str]:
    return [s.id for s in ws.sources() if s.session_id == sid]


def test_forget_erases_the_session_and_nothing_else(setup: Setup) -> None:
    ws = setup.ws
    erased = set(_a_sources(ws, setup.a))
    b_records = {
        r.id: r
        for r in ws.records()
        if r.citations and all(c.source not in erased for c in r.citations)
    }
    written_a = [
        r.id
        for r in ws.records()
        if r.id != setup.a_only and {c.source for c in r.citations} <= erased
    ]
    delete_record(ws, written_a[0], grace=600)  # waiting in its grace period: erased too
    revision = ws.revision

    report = forget_session(ws, setup.a)

    assert report.session_id == setup.a and report.sources == len(erased) == 2
    assert report.tombstones == 1 and report.revision == revision + 1 == ws.revision
    after = {r.id: r for r in ws.records()}
    assert set(report.records_deleted) == set(written_a[1:]) | {setup.a_only}
    assert setup.a_only not in after and written_a[0] not in after
    assert set(report.records_updated) == {setup.mixed, setup.linker}
    assert [s.session_id for s in ws.sources()] == [setup.b] * len(ws.sources())
    assert all(c.source not in erased for r in after.values() for c in r.citations)
    assert len(after[setup.mixed].citations) == 1
    assert after[setup.linker].content == "See for the path."
    assert after[setup.bare].citations[0].source == ""
    for rid, rec in b_records.items():
        if rid != setup.linker:
            assert after[rid] == rec
    with pytest.raises(NothingToUndoError):
        undo_delete(ws, written_a[0])
    assert ws.search(SECRET_WORD) == []

    rows = ws.conn.execute("SELECT * FROM erasures").fetchall()
    assert rows == [(ws.revision, setup.a, 2, len(report.records_deleted), 2, rows[0][-1])]
    with pytest.raises(WorkspaceStoreError, match="append-only"):  # the guard is back
        ws.conn.execute("DELETE FROM sources")
    for f in (ws.views_path / "topics").rglob("*.md"):
        assert SECRET_WORD not in f.read_text("utf-8")
    if ws.store_url is None:
        assert SECRET_WORD.encode() not in ws.db_path.read_bytes()  # zeroed, not just unlinked


def test_forget_of_an_unknown_session_changes_nothing(setup: Setup) -> None:
    before = snapshot(setup.ws)
    with pytest.raises(NothingToForgetError, match="holds nothing of session 'nope'"):
        forget_session(setup.ws, "nope")
    with pytest.raises(NothingToForgetError, match="2 sessions match"):
        forget_session(setup.ws, os.path.commonprefix([setup.a, setup.b]))
    with pytest.raises(NothingToForgetError, match="holds nothing"):
        forget_session(setup.ws, "")
    assert snapshot(setup.ws) == before


def test_a_failing_erase_changes_nothing(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = setup.ws
    before = snapshot(ws)
    records = ws.records()

    def boom(c: WorkspaceDatabase, erased: set[str]) -> int:
        raise WorkspaceStoreError("disk full (simulated)")

    monkeypatch.setattr(forget_mod, "_erase_tombstones", boom)
    with pytest.raises(WorkspaceStoreError, match="simulated"):
        forget_session(ws, setup.a)
    assert snapshot(ws) == before
    assert ws.records() == records and _a_sources(ws, setup.a)
    with pytest.raises(WorkspaceStoreError, match="append-only"):
        ws.conn.execute("DELETE FROM sources")


def test_forget_past_the_change_cap_is_still_one_transaction(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(caps, "MAX_CHANGES_PER_TRANSACTION", 2)
    revision = setup.ws.revision
    report = forget_session(setup.ws, setup.a)
    assert len(report.records_deleted) + len(report.records_updated) > 2
    assert setup.ws.revision == revision + 1
    assert _a_sources(setup.ws, setup.a) == []


def test_forget_with_no_record_left_to_change_still_erases_the_archive(tmp_path: Path) -> None:
    store = MemorySessionStore()
    sid = store.create_session("s").id
    node = store.append(sid, "a turn nobody cited", role=Role.USER)
    with MemoryWorkspace(tmp_path / "ws") as ws:
        ws.archive([node])
        report = forget_session(ws, sid)
        assert (report.sources, report.records_deleted, report.revision) == (1, (), 1)
        assert ws.sources() == []


def _cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "store.db"),
            "memory",
            "--workspace",
            str(tmp_path / "ws"),
            *args,
        ],
        capture_output=True,
        text=True,
        input=stdin,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path)},
        timeout=120,
    )


def test_memory_forget_end_to_end(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store.db")
    sid = store.create_session("chat").id
    store.append(sid, f"Remember the {SECRET_WORD} password rule?", role=Role.USER)
    store.append(sid, "Yes: rotate it monthly.", role=Role.ASSISTANT)
    store.close()
    assert _cli(tmp_path, "write").returncode == 0

    # Not a terminal: no prompt that a pipe would answer (it prompted, then read "n" or nothing).
    refused = _cli(tmp_path, "forget", sid[:10], stdin="y\n")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: forget: confirmation needs a terminal: pass --yes to forget"
    )
    assert not refused.stdout
    assert json.loads(_cli(tmp_path, "status", "--json").stdout)["sources"] == 2

    done = _cli(tmp_path, "forget", sid[:10], "--yes", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["session_id"] == sid and out["sources"] == 2 and out["records_deleted"]
    status = json.loads(_cli(tmp_path, "status", "--json").stdout)
    assert status["sources"] == 0 and status["records"] == 0
    assert status["pending"] == []  # the session stays written: memory does not learn it again

    again = _cli(tmp_path, "forget", sid, "--yes")
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"error: memory holds nothing of session '{sid}' (no archived turn of it)"
    ]

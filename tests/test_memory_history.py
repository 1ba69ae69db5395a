"""Memory's history: every revision kept with the record versions it changed; log, diff, restore (also
of a record deleted for good), history across reset, forget blanking what it erased, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role
from memory import (
    ChangeSet,
    MemoryWorkspace,
    RejectedError,
    Rejection,
    UpdateRecord,
    add_memory,
    forget_session,
)
from memory.changes import SourceRef
from memory.history import HistoryError, diff, export_history, log, state_at
from memory.tombstones import delete_record, purge_expired, undo_delete
from tests.memory_backends import WorkspaceFactory, snapshot


@pytest.fixture
def ws(workspace_factory: WorkspaceFactory) -> MemoryWorkspace:
    """The workspace on each backend of its store of record."""
    return workspace_factory()


def _edit(ws: MemoryWorkspace, rid: str, content: str) -> None:
    rec = ws.record(rid)
    refs = tuple(
        SourceRef(source=c.source, label=c.label, snippet=c.snippet) for c in rec.citations
    )
    ws.apply(ChangeSet(changes=(UpdateRecord(memory_id=rid, content=content, sources=refs),)))


def test_history_round_trip_delete_grace_expiry_diff_restore(ws: MemoryWorkspace) -> None:
    r1 = add_memory(ws, "The build uses make.").id  # revision 1
    r2 = add_memory(ws, "Releases are tagged vX.Y.", topic="release").id  # 2
    _edit(ws, r1, "The build uses just.")  # 3
    delete_record(ws, r2, grace=0.001, clock=lambda: 1000.0)  # 4
    assert purge_expired(ws, clock=lambda: 2000.0) == [r2]  # the undo grace period is over
    assert ws.revision == 4 and [r.id for r in ws.records()] == [r1]

    revs = log(ws.conn)
    assert [(r.revision, r.kind) for r in revs] == [
        (4, "delete"),
        (3, "change"),
        (2, "add"),
        (1, "add"),
    ]
    assert [(c.record_id, c.op) for c in revs[0].changes] == [(r2, "deleted")]
    assert [(r.revision, r.changes[0].op) for r in log(ws.conn, r2)] == [
        (4, "deleted"),
        (2, "created"),
    ]
    assert revs[1].changes[0].record is not None
    assert revs[1].changes[0].record["content"] == "The build uses just."

    at2 = state_at(ws.conn, 2)
    assert at2[r1]["content"] == "The build uses make." and at2[r2]["topic"] == "release"
    changes = {rid: (what, lines) for rid, what, _, _, lines in diff(ws.conn, 2)}
    assert changes[r2][0] == "removed"
    assert changes[r1][0] == "changed"
    assert "-The build uses make." in changes[r1][1] and "+The build uses just." in changes[r1][1]
    assert diff(ws.conn, 4) == []

    p = ws.restore_revision(2, r2)  # the record deleted for good comes back, with its id
    assert p.created == (r2,) and ws.revision == 5
    assert ws.record(r2).content == "Releases are tagged vX.Y." and ws.record(r2).topic == "release"
    assert ws.record(r1).content == "The build uses just."  # only that record
    assert log(ws.conn)[0].kind == "restore"

    p = ws.restore_revision(1)  # every record as at revision 1
    assert set(p.deleted) == {r2} and set(p.updated) == {r1}
    assert [(r.id, r.content) for r in ws.records()] == [(r1, "The build uses make.")]
    assert diff(ws.conn, 1) == []
    assert ws.restore_revision(1).changed is False


def test_undo_and_restore_are_recorded(ws: MemoryWorkspace) -> None:
    r1 = add_memory(ws, "Coffee at ten.").id
    delete_record(ws, r1, grace=600)
    undo_delete(ws, r1)
    assert [(r.kind, r.changes[0].op) for r in log(ws.conn, r1)] == [
        ("undo", "restored"),
        ("delete", "deleted"),
        ("add", "created"),
    ]


def test_a_refused_restore_changes_nothing(ws: MemoryWorkspace) -> None:
    target = add_memory(ws, "The cache lives in /var/cache/app.").id
    linker = add_memory(ws, f"See [[notes#^{target}]].").id
    rev = ws.revision
    delete_record(ws, linker, grace=0)
    delete_record(ws, target, grace=0)
    before = snapshot(ws)
    with pytest.raises(RejectedError) as e:
        ws.restore_revision(rev, linker)  # its link points at a record that is gone
    assert e.value.reason is Rejection.DANGLING_LINK
    assert snapshot(ws) == before
    with pytest.raises(HistoryError, match="does not exist"):
        ws.restore_revision(99)
    with pytest.raises(HistoryError, match="did not exist at revision 1"):
        ws.restore_revision(1, linker)
    ws.restore_revision(rev)  # both at once: the link resolves
    assert {r.id for r in ws.records()} == {target, linker}


def test_history_survives_reset_and_is_exported(ws: MemoryWorkspace, tmp_path: Path) -> None:
    r1 = add_memory(ws, "Old workspace fact.").id
    old_id = ws.id
    ws.reset()
    add_memory(ws, "New workspace fact.")
    revs = log(ws.conn)
    assert [(r.workspace_id == old_id, r.revision) for r in revs] == [(False, 1), (True, 1)]
    assert log(ws.conn, r1)[0].changes[0].record is not None
    if ws.store_url is None:
        assert (tmp_path / "ws" / f"memory.{old_id}.db").exists()  # the old database is kept

    assert export_history(ws.conn, tmp_path / "h.jsonl") == 2
    lines = [json.loads(x) for x in (tmp_path / "h.jsonl").read_text("utf-8").splitlines()]
    assert [x["workspace_id"] == old_id for x in lines] == [True, False]
    assert lines[0]["changes"][0]["record"]["content"] == "Old workspace fact."


def test_forget_blanks_the_history_it_erases(ws: MemoryWorkspace) -> None:
    store = MemorySessionStore()
    sid = store.create_session("s").id
    node = store.append(sid, "The vault code is zorbleflax.", role=Role.USER)
    rid = add_memory(ws, "Vault code: zorbleflax.", cites=[node]).id
    _edit(ws, rid, "Vault code: zorbleflax (rotated).")
    keep = add_memory(ws, "Unrelated.").id

    forget_session(ws, sid)

    ops = [(r.kind, r.changes[0].op, r.changes[0].record) for r in log(ws.conn, rid)]
    assert ops == [("forget", "deleted", None), ("change", "erased", None), ("add", "erased", None)]
    assert log(ws.conn, keep)[0].changes[0].record is not None
    with pytest.raises(HistoryError, match="did not exist"):
        ws.restore_revision(2, rid)
    if ws.store_url is None:
        assert b"zorbleflax" not in ws.db_path.read_bytes()
    assert not any("zorbleflax" in str(r) for r in ws.conn.execute("SELECT * FROM record_versions"))


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "s.db"),
        ]
        + ["memory", "--workspace", str(tmp_path / "ws"), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path)},
        timeout=120,
    )


def test_history_commands_end_to_end(tmp_path: Path) -> None:
    saved = json.loads(_cli(tmp_path, "add", "Lunch is at noon.", "--json").stdout)
    rid = saved["id"]
    assert _cli(tmp_path, "delete", rid[-8:], "--grace", "0").returncode == 0

    shown = _cli(tmp_path, "log")
    assert shown.returncode == 0 and "delete" in shown.stdout and "1 created" in shown.stdout
    mine = json.loads(_cli(tmp_path, "log", rid[-8:], "--json").stdout)
    assert [(r["revision"], r["changes"][0]["op"]) for r in mine] == [
        (2, "deleted"),
        (1, "created"),
    ]
    changed = _cli(tmp_path, "diff", "1")
    assert f"removed {rid}" in changed.stdout and "-Lunch is at noon." in changed.stdout

    back = _cli(tmp_path, "restore", f"{rid[-8:]}@1")
    assert back.returncode == 0, back.stderr
    assert "1 created" in back.stdout and "revision 3" in back.stdout
    assert (
        json.loads(_cli(tmp_path, "show", rid, "--json").stdout)["content"] == "Lunch is at noon."
    )

    out = _cli(tmp_path, "export", "-o", str(tmp_path / "exp"), "--history")
    assert out.returncode == 0 and "3 revision(s)" in out.stdout
    assert len((tmp_path / "exp" / "history.jsonl").read_text().splitlines()) == 3

    for args, needle in (
        (("restore", "soon"), "write REV or RECORD@REV"),
        (("restore", "42"), "revision 42 does not exist"),
        (("log", "nope"), "no record in history matches 'nope'"),
    ):
        bad = _cli(tmp_path, *args)
        assert bad.returncode == 1
        assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and needle in bad.stderr

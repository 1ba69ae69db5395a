"""Deleting with a grace that is no number of seconds, and undoing a deletion a restore took back.

``delete_record(grace=inf)`` (and ``memory delete --grace inf``) failed converting the grace's end
to microseconds: the command line called it an internal error, ``nan`` said only "cannot convert
float NaN to integer", and a grace over what the 64-bit column holds failed in the database. A
grace must be a finite number of seconds from 0 to ``MAX_GRACE_SECONDS``, refused by name before
anything changes.

Undoing a deletion after ``restore`` had brought the record back (with its own id) failed in the
database (``UNIQUE constraint failed: records.id``), which the server answered as a retryable
``503 WORKSPACE_UNAVAILABLE``. There is nothing left to undo then: the undo says so
(``NothingToUndoError``, the server's ``404 NOTHING_TO_UNDO``) and the stale tombstone is dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MemoryWorkspace, add_memory
from memory.tombstones import (
    MAX_GRACE_SECONDS,
    NothingToUndoError,
    delete_record,
    tombstones,
    undo_delete,
)
from tests.clikit import console


@pytest.mark.parametrize(
    "grace", [float("inf"), float("nan"), -1.0, MAX_GRACE_SECONDS * 10], ids=repr
)
def test_a_grace_that_is_no_number_of_seconds_is_refused_by_name(
    tmp_path: Path, grace: float
) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    rec = add_memory(ws, "Deploys wait for the freeze.")
    revision = ws.revision
    with pytest.raises(ValueError, match="grace must be 0 to"):
        delete_record(ws, rec.id, grace=grace)
    assert [r.id for r in ws.records()] == [rec.id] and ws.revision == revision
    assert tombstones(ws) == []


def test_the_longest_grace_is_kept(tmp_path: Path) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    rec = add_memory(ws, "Deploys wait for the freeze.")
    stone = delete_record(ws, rec.id, grace=MAX_GRACE_SECONDS)
    assert stone.expires_at - stone.deleted_at == int(MAX_GRACE_SECONDS * 1_000_000)
    assert undo_delete(ws, rec.id).id == rec.id


@pytest.mark.parametrize("grace", ["inf", "nan"])
def test_memory_delete_with_such_a_grace_is_one_error_line(tmp_path: Path, grace: str) -> None:
    ws = tmp_path / "ws"
    rec = add_memory(MemoryWorkspace(ws), "Deploys wait for the freeze.")
    done = console("memory", "-w", str(ws), "delete", rec.id, "--grace", grace)
    assert done.returncode not in (0, 70), done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "grace" in lines[0], lines
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr
    assert [r.id for r in MemoryWorkspace(ws).records()] == [rec.id]


def test_undoing_a_deletion_a_restore_took_back_says_nothing_is_left(tmp_path: Path) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    rec = add_memory(ws, "Deploys wait for the freeze.")
    other = add_memory(ws, "Releases ship on Tuesdays.")
    before = ws.revision
    delete_record(ws, rec.id, grace=60)
    ws.restore_revision(before)  # brings the record back with its own id
    assert {r.id for r in ws.records()} == {rec.id, other.id}
    revision = ws.revision
    with pytest.raises(NothingToUndoError, match="record again"):
        undo_delete(ws, rec.id)
    assert tombstones(ws) == [] and ws.revision == revision
    assert sorted(r.id for r in ws.records()) == sorted([rec.id, other.id])
    with pytest.raises(NothingToUndoError):
        undo_delete(ws, rec.id)


def test_the_server_answers_it_as_nothing_to_undo(tmp_path: Path) -> None:
    from tests.serverkit import client, make_app, written_store

    store, path = written_store(tmp_path)
    api = client(make_app(store, path))
    saved = api.post(
        "/api/memory/records",
        json={
            "content": "Deploys wait.",
            "sources": [{"source": "", "label": "l", "snippet": "s"}],
        },
    ).json()
    before = api.get("/api/memory/core").json()["revision"]
    assert api.delete(f"/api/memory/records/{saved['id']}?grace=60").status_code == 200
    with MemoryWorkspace(path) as ws:
        ws.restore_revision(before)
    r = api.post(f"/api/memory/records/{saved['id']}/undo")
    assert r.status_code == 404 and r.json()["error"]["code"] == "NOTHING_TO_UNDO", r.text

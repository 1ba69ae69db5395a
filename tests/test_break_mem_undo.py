"""Deleting with a grace that is no number of seconds.

``delete_record(grace=inf)`` (and ``memory delete --grace inf``) failed converting the grace's end
to microseconds: the command line called it an internal error, ``nan`` said only "cannot convert
float NaN to integer", and a grace over what the 64-bit column holds failed in the database. A
grace must be a finite number of seconds from 0 to ``MAX_GRACE_SECONDS``, refused by name before
anything changes.

"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MemoryWorkspace, add_memory
from memory.tombstones import (
    MAX_GRACE_SECONDS,
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

"""Where commands write and what they open: a failed export leaves no half bundle, errors name the path.

A bundle is written beside its target and renamed over it, so an export that fails while
writing (a full disk) leaves the file that was there, and no part of the new one; a device such
as ``/dev/stdout`` is still written directly. ``export -o /dev/full`` and ``memory -w DIR`` whose
``memory.db`` is not a database say which path failed, in one line.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from graph import SessionStore
from graph.bundle import export_session, import_bundle
from graph.importers import import_file
from tests.clikit import console

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
SESSION = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"


def sessiongraph(*args: str) -> subprocess.CompletedProcess[str]:
    return console(*args, columns=120)


def _one_error_line(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode == 1, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_failed_export_keeps_the_bundle_that_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(":memory:")
    import_file(store, EXAMPLE)
    out = tmp_path / "session.sgbundle"
    export_session(store, SESSION, out)
    before = out.read_bytes()

    def half_then_full(self: Path, data: bytes) -> int:
        with self.open("wb") as f:
            f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    with pytest.raises(OSError):
        export_session(store, SESSION, out)
    monkeypatch.undo()
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.sgbundle"]
    assert import_bundle(SessionStore(":memory:"), out).nodes_added == 20


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_export_that_cannot_be_written_names_the_file(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    import_file(store, EXAMPLE)
    store.close()
    p = sessiongraph("--db", str(db), "export", SESSION, "-o", "/dev/full")
    _one_error_line(p, "-o /dev/full", "No space left on device")
    assert Path("/dev/full").is_char_device()  # written as it is, never replaced


def test_a_workspace_whose_database_is_not_one_names_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory.db").write_text("not a database\n")
    p = sessiongraph("--db", str(tmp_path / "s.db"), "memory", "-w", str(ws), "status")
    _one_error_line(p, f"-w {ws}", "not a database")

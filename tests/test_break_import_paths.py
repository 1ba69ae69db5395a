"""Paths given to ``sessiongraph import`` that are not regular files, and how their failures print.

A named pipe (``mkfifo``, or a shell's ``<(...)``) or a device is read once and blocks until a writer
comes, while an import reads a file several times (its format, its order in the run, two passes):
it is refused at once, naming the path, instead of hanging or importing half of what was written.
A failed file's line on stderr stays one line whatever the terminal's width, so ``grep`` finds
the file and its reason together.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graph import SessionStore
from graph.importers import import_file, import_paths
from graph.importers.report import TranscriptError
from tests.clikit import console

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


def sessiongraph(*args: str) -> subprocess.CompletedProcess[str]:
    return console(*args, columns=60)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    p = sessiongraph("--db", str(tmp_path / "s.db"), "import", str(fifo), str(EXAMPLE))
    assert p.returncode == 1, p.stderr
    failed = [ln for ln in p.stderr.splitlines() if ln.startswith("failed")]
    assert len(failed) == 1 and str(fifo) in failed[0] and "not a regular file" in failed[0]
    assert "1 failed" in p.stdout
    store = SessionStore(tmp_path / "s.db")
    assert store.has_session("7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90")  # the other file imported


def test_a_device_is_refused_by_the_library_too(tmp_path: Path) -> None:
    store = SessionStore(":memory:")
    with pytest.raises(TranscriptError, match="not a regular file"):
        import_file(store, Path(os.devnull))
    report = import_paths(store, [Path(os.devnull)])
    assert report.files[0].error is not None and "not a regular file" in report.files[0].error


def test_a_failed_file_is_one_line_on_a_narrow_terminal(tmp_path: Path) -> None:
    bad = tmp_path / "a-file-with-a-rather-long-name-that-fills-the-line.jsonl"
    bad.write_text('{"just": "json", "of": "no known format"}\n')
    p = sessiongraph("--db", str(tmp_path / "s.db"), "import", str(bad))
    assert p.returncode == 1
    failed = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(failed) == 1, p.stderr
    assert failed[0].startswith(f"failed {bad}:") and "nothing of it was stored" in failed[0]

"""Failures a user can cause are one line on stderr, even when a driver's message spans several."""

from __future__ import annotations

import subprocess
import sys

from graph.errors import StoreBusyError
from graph.terminal import error_line


def test_an_error_line_is_one_line_with_controls_made_visible() -> None:
    message = "connection failed: port 1 refused\n\tIs the server running?\x1b]0;t\x07"
    line = error_line(message)
    assert "\n" not in line and "\t" not in line and "\x1b" not in line
    assert line == "error: connection failed: port 1 refused Is the server running?\\x1b]0;t\\x07"


def test_a_busy_store_says_why_on_one_line() -> None:
    lock = StoreBusyError("sqlite: database is locked")
    assert "another process holds the write lock" in str(lock)
    lost = StoreBusyError("postgresql: failed\n\tIs it running?", "the server cannot be reached")
    assert str(lost) == (
        "the store is busy: postgresql: failed Is it running?: the server cannot be reached;"
        " retry the same call"
    )
    assert lost.retryable


def test_an_unreachable_postgresql_store_is_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.launch import main; main()",
            "--db",
            "postgresql://nobody@127.0.0.1:1/none",
            "sessions",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert lines[0].startswith("error: --db: cannot connect to 127.0.0.1:1: Connection refused")

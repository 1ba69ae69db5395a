"""A command whose reader goes away (``sessiongraph sessions | head -1``) ends quietly.

The reader closing the pipe is not the command's failure: no ``error: [Errno 32] Broken pipe``
line and no ``Exception ignored`` from the interpreter's last flush, only a non-zero status (1, as
rich gives a table cut short the same way). The test closes the pipe's
read end before the command starts, so its first write is refused, whatever the timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore
from graph.importers import import_file

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--json"],
        ["show", "6a7b8c90"],
        # The memory commands reported the closed pipe as an OSError: `error: [Errno 32] ...`.
        ["memory", "-w", "WS", "status", "--json"],
        ["memory", "-w", "WS", "status"],
        ["memory", "-w", "WS", "status", "--json", "--json"],  # typer's path
    ],
    ids=" ".join,
)
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, args: list[str]) -> None:
    args = [str(tmp_path / "ws") if a == "WS" else a for a in args]
    db = tmp_path / "s.db"
    store = SessionStore(db)
    import_file(store, EXAMPLE)
    store.close()
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    try:
        p = subprocess.run(
            [sys.executable, "-c", "from graph.cli.launch import main; main()", "--db", str(db)]
            + args,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env | {"COLUMNS": "120", "NO_COLOR": "1"},
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert p.stderr == ""
    assert p.returncode == 1

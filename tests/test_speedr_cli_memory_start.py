"""``sessiongraph memory COMMAND`` loads what that command runs: reading memory loads no writer or watcher."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore

PROBE = """
import json, sys
from graph.cli.launch import main
sys.argv[1:] = sys.argv[2:]
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = ["memory.watcher", "memory.organizer", "memory.completion", "memory.editing",
         "memory.forget", "memory.branches", "graph.lineage", "memory.mcp_server", "graph.server.app"]
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}), file=sys.stderr)
"""


def _run(db: Path, tmp: Path, *words: str) -> tuple[str, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"COLUMNS": "120", "SESSIONGRAPH_MEMORY": str(tmp / "memory")}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, "-", "--db", str(db), "memory", *words],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return p.stdout, json.loads(p.stderr.strip().splitlines()[-1])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    st = SessionStore(path)
    sid = st.create_session("one").id
    st.append(sid, "hello", role="user")
    st.close()
    return path


@pytest.mark.parametrize("words", [["status"], ["list"], ["search", "hello"], ["log"]])
def test_reading_memory_loads_no_writer_watcher_or_organizer(
    db: Path, tmp_path: Path, words: list[str]
) -> None:
    out, probe = _run(db, tmp_path, *words)
    assert probe == {"code": 0, "loaded": []}, out


def test_the_status_still_counts_what_is_pending(db: Path, tmp_path: Path) -> None:
    out, probe = _run(db, tmp_path, "status")
    assert probe["code"] == 0
    assert "1 pending turn(s) in 1 session(s)" in out

"""The command line loads only what the command it runs needs (reading memory loads no writer or
watcher); ``--help`` still lists every command."""

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
from graph.cli.commands import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = ["graph.server.cli", "graph.server.app", "graph.importers", "memory.cli.lookup",
         "memory.cli.memory", "memory.cli.mcp", "memory.pipeline", "memory.workspace", "networkx"]
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}), file=sys.stderr)
"""


MEMORY_PROBE = """
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
"""The same for ``sessiongraph memory ...`` through the console script: which heavy memory modules load."""


def _run(*args: str, tmp: Path, probe: str = PROBE) -> tuple[str, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"COLUMNS": "120", "SESSIONGRAPH_MEMORY": str(tmp / "memory")}
    p = subprocess.run(
        [sys.executable, "-c", probe, *args],
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


def test_the_graph_own_commands_load_no_entry_point(db: Path, tmp_path: Path) -> None:
    out, probe = _run("--db", str(db), "sessions", tmp=tmp_path)
    assert probe == {"code": 0, "loaded": []}
    assert "one" in out


@pytest.mark.parametrize("command", ["recent", "read", "latest"])
def test_a_lookup_command_loads_neither_the_server_the_importers_nor_memory(
    db: Path, tmp_path: Path, command: str
) -> None:
    sid = SessionStore(db).sessions()[0].id
    args = [command] if command == "recent" else [command, sid]
    out, probe = _run("--db", str(db), *args, tmp=tmp_path)
    assert probe == {"code": 0, "loaded": ["memory.cli.lookup"]}
    assert "hello" in out or "one" in out


def test_memory_status_loads_the_memory_commands_only(db: Path, tmp_path: Path) -> None:
    _, probe = _run("--db", str(db), "memory", "status", tmp=tmp_path)
    loaded = probe["loaded"]
    assert probe["code"] == 0
    assert isinstance(loaded, list) and "memory.cli.memory" in loaded
    assert not {"graph.server.cli", "graph.server.app", "graph.importers", "memory.cli.mcp"} & set(
        loaded
    )


def test_help_lists_every_command_and_an_unknown_one_is_refused(db: Path, tmp_path: Path) -> None:
    out, probe = _run("--help", tmp=tmp_path)
    assert probe["code"] in (0, None)
    listed = {
        line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()
    }
    assert {
        "sessions",
        "import",
        "export",
        "recent",
        "read",
        "latest",
        "memory",
        "serve",
        "mcp",
    } <= (listed)
    _, probe = _run("--db", str(db), "no-such-command", tmp=tmp_path)
    assert probe["code"] == 2


def test_a_command_help_loads_only_that_command(db: Path, tmp_path: Path) -> None:
    out, probe = _run("recent", "--help", tmp=tmp_path)
    assert probe["loaded"] == ["memory.cli.lookup"]
    assert "--limit" in out


@pytest.mark.parametrize("words", [["status"], ["list"], ["search", "hello"], ["log"]])
def test_reading_memory_loads_no_writer_watcher_or_organizer(
    db: Path, tmp_path: Path, words: list[str]
) -> None:
    out, probe = _run("-", "--db", str(db), "memory", *words, tmp=tmp_path, probe=MEMORY_PROBE)
    assert probe == {"code": 0, "loaded": []}, out


def test_the_status_still_counts_what_is_pending(db: Path, tmp_path: Path) -> None:
    out, probe = _run("-", "--db", str(db), "memory", "status", tmp=tmp_path, probe=MEMORY_PROBE)
    assert probe["code"] == 0
    assert "1 pending turn(s) in 1 session(s)" in out

"""``sessiongraph import`` / ``export`` through the real console script, in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from tests.clikit import console

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"
SID = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from graph.cli.commands import main; main()", *args]
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_quick_start_command_shows_tree_and_pending(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    got = run("--db", db, "import", str(EXAMPLE), "--show")
    assert got.returncode == 0, got.stderr
    out = got.stdout
    assert SID in out and "1 file(s), 20 node(s) added, 0 failed" in out
    assert "rewound" in out and "◀ head" in out and "(covers 11)" in out and "→ spawned" in out
    assert "9 pending" in out
    again = run("--db", db, "import", str(EXAMPLE), "--json")
    report = orjson.loads(again.stdout)
    assert report["files"][0]["nodes_added"] == 0
    assert report["sessions"][SID]["rewound"] == 2


def test_export_then_import_into_another_store(tmp_path: Path) -> None:
    a, b, bundle = str(tmp_path / "a.db"), str(tmp_path / "b.db"), tmp_path / "s.sgbundle"
    assert run("--db", a, "import", str(EXAMPLE)).returncode == 0
    assert run("--db", a, "mark", SID, "--pending", "--value", "ws").returncode == 0
    got = run("--db", a, "export", SID, "-o", str(bundle))
    assert got.returncode == 0, got.stderr
    assert run("--db", b, "import", str(bundle)).returncode == 0
    left, right = SessionStore(a), SessionStore(b)
    assert right.stats(SID) == left.stats(SID)
    assert right.index(SID).marks == left.index(SID).marks and right.index(SID).marks
    pending = run("--db", b, "pending", SID, "--value", "ws")
    assert "nothing pending for memory=ws" in pending.stdout


def test_damaged_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = ROOT / "tests" / "fixtures" / "claude-code" / "rewind-damaged.jsonl"
    got = run("--db", str(tmp_path / "x.db"), "import", str(path))
    assert got.returncode == 0
    assert f"{path}:12: torn write" in got.stderr.replace("\n", "")
    assert f"{path}:10: invalid UTF-8" in got.stderr.replace("\n", "")


def test_no_path_and_no_default_location_fails_cleanly(tmp_path: Path) -> None:
    got = run("--db", str(tmp_path / "x.db"), "import")
    assert got.returncode == 1 and "no PATH given" in got.stderr


def test_a_failed_file_is_one_line_even_when_the_driver_says_more(tmp_path: Path) -> None:
    """A refused connection to a LangGraph PostgresSaver database printed libpq's two lines."""
    pytest.importorskip("psycopg")
    done = console(
        "--db", str(tmp_path / "s.db"), "import", "--langgraph", "postgresql://nobody@127.0.0.1:1/x"
    )
    assert done.returncode == 1
    failed = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert failed[0].startswith("failed postgresql://nobody@127.0.0.1:1/x: ")
    assert failed[0].endswith("(nothing of it was stored)") and len(failed) == 1, done.stderr


def test_export_never_writes_over_a_file_that_is_not_a_bundle(tmp_path: Path) -> None:
    """``export -o`` naming the store itself replaced the store with the bundle: its sessions lost."""
    db = tmp_path / "s.db"
    assert run("--db", str(db), "import", str(EXAMPLE)).returncode == 0
    transcript = tmp_path / "copy.jsonl"
    transcript.write_bytes(EXAMPLE.read_bytes())
    for target in (db, transcript):
        before = target.read_bytes()
        done = run("--db", str(db), "export", SID, "-o", str(target))
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.strip() == (
            f"error: -o {target}: exists and is not a session bundle; it is left as it is"
        )
        assert target.read_bytes() == before
    bundle = tmp_path / "s.sgbundle"
    for _ in range(2):  # a bundle is written over
        assert run("--db", str(db), "export", SID, "-o", str(bundle)).returncode == 0
    assert SessionStore(db).session(SID).id == SID

"""``sessiongraph import --watch``: a writer process appends to a transcript while the watcher runs.

Every appended entry is stored exactly once (the same nodes as one import of the finished file), a
torn last line is stored once its write completes, and a watcher killed mid-stream and started again
loses nothing. :class:`TranscriptWatcher` itself is checked in-process: unchanged files are not read
again, a torn line is a note rather than a skipped line, a sub-agent file re-imports its session.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from graph.importers import import_paths
from graph.importers.watch import TranscriptWatcher
from graph.sqlite_store import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"

WRITER = """
import sys, time
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
start, stop = int(sys.argv[3]), int(sys.argv[4])
with open(sys.argv[2], "ab", buffering=0) as out:
    for line in lines[start:stop]:
        half = len(line) // 2
        out.write(line[:half])      # a torn write: the rest of the line comes later
        time.sleep(0.15)
        out.write(line[half:])
        time.sleep(0.05)
"""


def _expected(tmp_path: Path) -> dict[str, set[str]]:
    """The node ids per session of one import of the finished transcript."""
    store = SessionStore(tmp_path / "expected.db")
    import_paths(store, [EXAMPLE])
    out = {s.id: set(store.index(s.id).pred) for s in store.sessions()}
    store.close()
    return out


def _stored(db: Path) -> dict[str, set[str]]:
    if not db.exists():
        return {}
    store = SessionStore(db)
    try:
        return {s.id: set(store.index(s.id).pred) for s in store.sessions()}
    finally:
        store.close()


def _node_rows(db: Path) -> int:
    store = SessionStore(db)
    try:
        return int(store.conn.execute("SELECT count(*) FROM nodes").fetchone()[0])
    finally:
        store.close()


class Watcher:
    """``sessiongraph import --watch --json`` in a subprocess, its reports one JSON line per pass."""

    def __init__(self, db: Path, folder: Path, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from graph.cli import main; main()",
                "--db",
                str(db),
                "import",
                "--watch",
                "--json",
                "--interval",
                "0.1",
                str(folder),
            ],
            stdout=out.open("a"),
            stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")},
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(timeout=10) == 0

    def reports(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.read_text().splitlines() if line]


def _wait_for(db: Path, want: dict[str, set[str]], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while _stored(db) != want:
        assert time.monotonic() < deadline, "the watcher did not store every entry"
        time.sleep(0.1)


def _write(transcript: Path, start: int, stop: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(EXAMPLE), str(transcript), str(start), str(stop)]
    )


def test_every_appended_entry_is_stored_once_and_torn_lines_when_completed(
    tmp_path: Path,
) -> None:
    folder, db = tmp_path / "projects", tmp_path / "store.db"
    folder.mkdir()
    transcript = folder / "session.jsonl"
    transcript.write_bytes(b"")
    total = len(EXAMPLE.read_bytes().splitlines())
    watcher = Watcher(db, folder, tmp_path / "reports.jsonl")
    try:
        writer = _write(transcript, 0, total)
        assert writer.wait(timeout=30) == 0
        want = _expected(tmp_path)
        _wait_for(db, want)
    finally:
        watcher.stop()
    reports = watcher.reports()
    files = [f for r in reports for f in r["files"]]
    assert sum(f["nodes_added"] for f in files) == sum(map(len, want.values()))
    assert _node_rows(db) == sum(map(len, want.values()))
    assert all(not f["skipped"] and f["error"] is None for f in files)
    # The writer paused mid-line on every line: some pass saw a torn line and said it would wait.
    assert any("not complete yet" in note for f in files for note in f["notes"])


def test_a_killed_watcher_started_again_loses_nothing(tmp_path: Path) -> None:
    folder, db = tmp_path / "projects", tmp_path / "store.db"
    folder.mkdir()
    transcript = folder / "session.jsonl"
    transcript.write_bytes(b"")
    total = len(EXAMPLE.read_bytes().splitlines())
    out = tmp_path / "reports.jsonl"
    first = Watcher(db, folder, out)
    try:
        assert _write(transcript, 0, total // 2).wait(timeout=30) == 0
        deadline = time.monotonic() + 20
        while not _stored(db):
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        first.kill()
    # Appended while no watcher runs, the last line left torn for the restarted one to find.
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    with transcript.open("ab") as f:
        f.write(b"".join(lines[total // 2 : total - 1]) + lines[-1][:20])
    second = Watcher(db, folder, out)
    try:
        time.sleep(0.5)
        with transcript.open("ab") as f:
            f.write(lines[-1][20:])
        _wait_for(db, _expected(tmp_path))
    finally:
        second.stop()
    assert _node_rows(db) == sum(map(len, _expected(tmp_path).values()))


def test_the_watcher_reads_only_what_changed(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    transcript = folder / "session.jsonl"
    transcript.write_bytes(b"".join(lines[:6]) + lines[6][:30])
    store = SessionStore(tmp_path / "store.db")
    watcher = TranscriptWatcher(store, [folder, tmp_path / "not-yet"])
    first = watcher.poll_once()
    (fr,) = first.files
    assert fr.nodes_added > 0 and not fr.skipped
    assert fr.notes == [
        "line 7 is not complete yet (a write in progress); it is imported once completed"
    ]
    assert watcher.poll_once().files == []  # nothing changed: nothing read
    with transcript.open("ab") as f:
        f.write(lines[6][30:])
    (again,) = watcher.poll_once().files
    assert again.nodes_added == 1 and again.notes == []
    later = tmp_path / "not-yet"
    later.mkdir()
    shutil.copyfile(EXAMPLE, later / "copy.jsonl")  # a folder that appears later is followed
    (copied,) = watcher.poll_once().files
    assert copied.path == later / "copy.jsonl"
    store.close()
    # The same ids in two files: the rest of the session was added, nothing twice.
    assert _stored(tmp_path / "store.db") == _expected(tmp_path)
    assert _node_rows(tmp_path / "store.db") == sum(map(len, _expected(tmp_path).values()))


def test_a_sub_agent_file_change_reimports_its_session_file(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    main = folder / "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90.jsonl"
    agent = folder / main.stem / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, main)
    entry = {
        "type": "user",
        "uuid": "a1-1",
        "parentUuid": None,
        "isSidechain": True,
        "agentId": "a1",
        "sessionId": main.stem,
        "timestamp": "2025-11-03T09:05:00Z",
        "message": {"role": "user", "content": "look at the tests"},
    }
    agent.write_text(json.dumps(entry) + "\n")
    store = SessionStore(tmp_path / "store.db")
    watcher = TranscriptWatcher(store, [folder])
    assert [f.path for f in watcher.poll_once().files] == [main]
    with agent.open("a") as f:
        f.write(json.dumps(entry | {"uuid": "a1-2", "parentUuid": "a1-1"}) + "\n")
    assert [f.path for f in watcher.poll_once().files] == [main]  # through its session's file
    store.close()

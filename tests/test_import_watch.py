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
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from graph.importers import import_paths
from graph.importers.watch import TranscriptWatcher
from graph.store.sqlite import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
SESSION = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
STUCK = 120
"""Seconds after which a wait for a watcher or a writer fails: a bound for one that is stuck, far
above the second or two they take, since the machine running the suite may be busy."""

WRITER = """
import os, sys, time
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
start, stop, torn, go = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
with open(sys.argv[2], "ab", buffering=0) as out:
    for n, line in enumerate(lines[start:stop], start):
        half = len(line) // 2
        out.write(line[:half])  # every line in two writes: a torn line in between
        if n == torn:  # keep this one torn until the test has seen the watcher hold it back
            while not os.path.exists(go):
                time.sleep(0.02)
        time.sleep(0.02)
        out.write(line[half:])
"""
"""Appends lines ``start:stop`` of a transcript to a file, each in two writes; line ``torn`` stays
half-written until the file ``go`` exists."""


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

    _started = count()

    def __init__(self, db: Path, folder: Path, out: Path) -> None:
        self.out = out
        self.err = out.with_name(f"{out.stem}-stderr-{next(self._started)}.txt")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from graph.cli.commands import main; main()",
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
            stderr=self.err.open("wb"),
            env={k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")},
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)  # a clean stop: the pass under way finishes
        try:
            self.proc.wait(timeout=STUCK)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        assert self.proc.returncode == 0 and "stopped watching" in self.stderr(), self.stderr()

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def reports(self) -> list[dict[str, Any]]:
        """The reports printed so far (a line the watcher is still writing is read the next time)."""
        text = self.out.read_text()
        return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line]

    def wait_until(self, seen: Callable[[list[dict[str, Any]]], bool], what: str) -> None:
        """Wait until the reports printed so far satisfy ``seen``; ``what`` names it on a failure."""
        deadline = time.monotonic() + STUCK
        while not seen(self.reports()):
            assert self.proc.poll() is None, f"the watcher exited: {self.stderr()}"
            assert time.monotonic() < deadline, (
                f"the watcher did not report {what}: {self.reports()}; stderr: {self.stderr()}"
            )
            time.sleep(0.05)


def _notes(reports: list[dict[str, Any]]) -> list[str]:
    return [note for r in reports for f in r["files"] for note in f["notes"]]


def _wait_for(db: Path, want: dict[str, set[str]], watcher: Watcher) -> None:
    deadline = time.monotonic() + STUCK
    while _stored(db) != want:
        passes = [
            (f["nodes_added"], f["notes"], f["skipped"], f["error"])
            for r in watcher.reports()
            for f in r["files"]
        ]
        assert time.monotonic() < deadline, f"not every entry was stored; passes: {passes}"
        time.sleep(0.1)


def _write(
    transcript: Path, start: int, stop: int, torn: int = -1, go: Path | None = None
) -> subprocess.Popen[bytes]:
    args = [str(EXAMPLE), str(transcript), str(start), str(stop), str(torn), str(go or "")]
    return subprocess.Popen([sys.executable, "-c", WRITER, *args])


def test_every_appended_entry_is_stored_once_and_torn_lines_when_completed(
    tmp_path: Path,
) -> None:
    folder, db = tmp_path / "projects", tmp_path / "store.db"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"  # Claude Code names the file after its session
    transcript.write_bytes(b"")
    total = len(EXAMPLE.read_bytes().splitlines())
    go = tmp_path / "go"
    watcher = Watcher(db, folder, tmp_path / "reports.jsonl")
    try:
        watcher.wait_until(bool, "its first pass (the empty file)")
        writer = _write(transcript, 0, total, torn=total // 2, go=go)
        line = f"line {total // 2 + 1} is not complete yet"
        watcher.wait_until(lambda reports: any(line in n for n in _notes(reports)), repr(line))
        go.touch()
        assert writer.wait(timeout=STUCK) == 0
        want = _expected(tmp_path)
        _wait_for(db, want, watcher)
    finally:
        watcher.stop()
    reports = watcher.reports()
    files = [f for r in reports for f in r["files"]]
    assert sum(f["nodes_added"] for f in files) == sum(map(len, want.values()))
    assert _node_rows(db) == sum(map(len, want.values()))
    assert [(f["skipped"], f["error"]) for f in files if f["skipped"] or f["error"]] == []


def test_a_killed_watcher_started_again_loses_nothing(tmp_path: Path) -> None:
    folder, db = tmp_path / "projects", tmp_path / "store.db"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"  # Claude Code names the file after its session
    transcript.write_bytes(b"")
    total = len(EXAMPLE.read_bytes().splitlines())
    out = tmp_path / "reports.jsonl"
    first = Watcher(db, folder, out)
    try:
        first.wait_until(bool, "its first pass (the empty file)")
        assert _write(transcript, 0, total // 2).wait(timeout=STUCK) == 0
        first.wait_until(
            lambda reports: sum(f["nodes_added"] for r in reports for f in r["files"]) > 0,
            "a node added",
        )
    finally:
        first.kill()
    # Appended while no watcher runs, the last line left torn for the restarted one to find.
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    with transcript.open("ab") as f:
        f.write(b"".join(lines[total // 2 : total - 1]) + lines[-1][:20])
    before = len(first.reports())
    second = Watcher(db, folder, out)
    try:
        # Its first pass stores what was appended meanwhile and holds the torn line back.
        torn = f"line {total} is not complete yet"
        second.wait_until(
            lambda reports: any(torn in n for n in _notes(reports[before:])), repr(torn)
        )
        with transcript.open("ab") as f:
            f.write(lines[-1][20:])
        _wait_for(db, _expected(tmp_path), second)
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
    fresh = folder / "fresh.jsonl"
    whole = EXAMPLE.read_bytes()
    fresh.write_bytes(whole[:10])  # a runtime has just created it: not a transcript yet
    assert watcher.poll_once().files == []
    with fresh.open("ab") as f:
        f.write(whole[10:])
    assert [f.path for f in watcher.poll_once().files] == [fresh]
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
    main = folder / f"{SESSION}.jsonl"
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

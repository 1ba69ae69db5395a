"""The watcher and a busy store: a pass the store's lock kept out is done again on the next pass.

A file whose import failed only because another process held the write lock past the store's timeout
is imported by the next pass, even though it did not change; a file that fails for what it holds is
left until it changes, as before.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from graph.importers.watch import TranscriptWatcher
from graph.store.sqlite import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


def test_a_file_the_busy_store_kept_out_is_imported_by_the_next_pass(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copyfile(EXAMPLE, folder / "session.jsonl")
    db = tmp_path / "store.db"
    store = SessionStore(db, timeout=0.05)
    watcher = TranscriptWatcher(store, [folder])
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process is writing
    try:
        (busy,) = watcher.poll_once().files
        assert busy.error is not None and busy.error.startswith("StoreBusyError: ")
        assert busy.nodes_added == 0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    (again,) = watcher.poll_once().files  # the file did not change: the lock alone was in the way
    assert again.error is None and again.nodes_added > 0
    assert watcher.poll_once().files == []  # imported now: not read again
    store.close()


def test_a_file_that_fails_for_what_it_holds_waits_until_it_changes(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    bad = folder / "notes.jsonl"
    bad.write_text('{"neither": "claude code, pi nor codex"}\n')
    store = SessionStore(tmp_path / "store.db")
    watcher = TranscriptWatcher(store, [folder])
    (failed,) = watcher.poll_once().files
    assert failed.error is not None and not failed.error.startswith("StoreBusyError")
    assert watcher.poll_once().files == []  # unchanged: not tried again
    shutil.copyfile(EXAMPLE, bad)
    (fixed,) = watcher.poll_once().files
    assert fixed.error is None and fixed.nodes_added > 0
    store.close()

"""The search queue when a search cannot move it: another writer holds the lock, a read snapshot, a read-only connection; and one-shot writers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graph import SessionStore


def test_a_search_does_not_wait_for_another_processes_write_lock(tmp_path: Path) -> None:
    """With rows queued and another process holding the write lock, a search answers at once."""
    path = tmp_path / "s.db"
    writer = SessionStore(path)
    sid = writer.create_session().id
    node = writer.append(sid, "the ferry timetable", role="user")  # committed, queued
    reader = SessionStore(path, timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None)  # another process's long import
    other.execute("BEGIN IMMEDIATE")
    try:
        assert [h.node_id for h in reader.search("ferry")] == [node.id]
    finally:
        other.execute("ROLLBACK")
        other.close()
    (waits,) = reader.conn.execute("PRAGMA busy_timeout").fetchone()
    assert waits == 200  # the store's own timeout again, after the search asked for no wait


def test_a_search_inside_a_callers_read_transaction_answers_from_its_snapshot(
    tmp_path: Path,
) -> None:
    """A search in a caller's read transaction answers from its snapshot (the queue cannot move)."""
    path = tmp_path / "s.db"
    writer = SessionStore(path)
    reader = SessionStore(path)
    sid = writer.create_session().id
    node = writer.append(sid, "ferry one", role="user")
    reader.conn.execute("BEGIN")
    reader.conn.execute("SELECT count(*) FROM nodes").fetchone()
    writer.append(sid, "ferry two", role="user")  # after the caller's snapshot
    try:
        assert [h.node_id for h in reader.search("ferry")] == [node.id]
    finally:
        reader.conn.execute("ROLLBACK")


def test_a_search_on_a_read_only_connection_answers(tmp_path: Path) -> None:
    """A search on a read-only connection (simulated: PRAGMA query_only) reads the queue too."""
    path = tmp_path / "s.db"
    writer = SessionStore(path)
    sid = writer.create_session().id
    node = writer.append(sid, "ferry one", role="user")
    reader = SessionStore(path)
    reader.conn.execute("PRAGMA query_only=ON")
    assert [h.node_id for h in reader.search("ferry")] == [node.id]


def test_one_shot_writers_do_not_grow_the_queue_past_its_bound(tmp_path: Path) -> None:
    """Short-lived writers (a command or hook per turn) keep the queue under its bound."""
    from graph.store.sqlite import SEARCH_QUEUE_AT

    path = tmp_path / "s.db"
    sid = SessionStore(path).create_session().id
    for i in range(2 * SEARCH_QUEUE_AT):
        one_shot = SessionStore(path)
        one_shot.append(sid, f"turn {i} about tides", role="user")
        one_shot.close()
    (queued,) = SessionStore(path).conn.execute("SELECT count(*) FROM node_text_queue").fetchone()
    assert queued < SEARCH_QUEUE_AT

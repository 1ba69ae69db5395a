"""Opening a store: what a fresh process pays before its first answer, and that it stays right."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from builder import build, chain

from graph import SessionStore
from graph.errors import StoreError
from graph.store.sqlite import SCHEMA_VERSION


def _statements(db: Path) -> list[str]:
    seen: list[str] = []
    SessionStore(db, tracer=lambda sql, _: seen.append(sql)).close()
    return seen


def test_a_current_file_is_opened_with_one_version_read(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    seen = _statements(db)
    assert seen == [
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        "SELECT value FROM meta WHERE key='schema_version'",
    ]


def test_a_new_file_is_told_apart_from_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)  # no meta table yet: version 0, the schema is built
    assert store.schema_version == SCHEMA_VERSION
    store.close()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database, not at all " * 100)
    with pytest.raises(StoreError):
        SessionStore(bad)


def test_the_parent_folder_is_made_when_missing(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "s.db"
    SessionStore(db).close()
    assert db.exists()
    SessionStore(db).close()  # and opened again where it exists


def test_another_process_writing_before_the_first_check_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 3))
    st.close()
    reader = SessionStore(db)
    writer = SessionStore(db)
    try:
        writer.append(sid, "from the other process", role="user", id="w1")
        assert reader.pending_ids(sid, "memory", "ws")[-1] == "w1"  # the first check: cold walk
        assert reader.index(sid).head == "w1"  # the index built after it
        writer.append(sid, "and again", role="assistant", id="w2")
        assert reader.index(sid).head == "w2"  # a later commit: the header changed
        assert reader.pending_ids(sid, "memory", "ws")[-1] == "w2"
        reader.append(sid, "its own", role="user", id="r1")
        writer.append(sid, "and the other's", role="assistant", id="w3", predecessor="r1")
        assert reader.index(sid).head == "w3"
    finally:
        reader.close()
        writer.close()


def test_a_fresh_store_reads_many_pending_nodes_with_their_markers(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 700))
    ids = list(st.index(sid).pred)
    st.mark(sid, ids[:400], "search", "b")  # another consumer's markers, over several chunks
    st.mark(sid, ids[:40], "memory", "other")
    st.close()
    fresh = SessionStore(db)  # no index cached: the pending rows and their markers read by id
    cold = fresh.pending(sid, "memory", "a")
    fresh.close()
    warm_store = SessionStore(db)
    warm_store.index(sid)
    warm = warm_store.pending(sid, "memory", "a")
    warm_store.close()
    assert [n.id for n in cold] == ids
    assert cold == warm
    assert sum("search" in n.written for n in cold) == 400
    assert sum("memory" in n.written for n in cold) == 40


def test_a_store_opened_through_a_symlinked_folder_sees_other_writers(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    st = SessionStore(real / "s.db")
    sid = build(st, chain("m", 1, 3))
    st.close()
    reader = SessionStore(tmp_path / "linked" / "s.db")
    try:
        assert reader.index(sid).head == "m3"
        writer = SessionStore(real / "s.db")
        writer.append(sid, "m4", role="assistant", id="m4")
        writer.close()
        assert reader.index(sid).head == "m4"  # the WAL index is the same file either way
    finally:
        reader.close()

"""The SQLite store's freshness check: cheap when nothing changed, and never blind to another writer."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from builder import build, chain

from graph import SessionStore


def _statements(st: SessionStore) -> list[str]:
    seen: list[str] = []
    st.conn.set_trace_callback(seen.append)
    return seen


def test_an_unchanged_file_is_checked_without_a_statement(tmp_path: Path) -> None:
    st = SessionStore(tmp_path / "s.db")
    sid = build(st, chain("m", 1, 20))
    st.mark(sid, ["m1", "m2"], "memory", "w")
    st.pending_ids(sid, "memory", "w")  # after its own commit the store asks once
    seen = _statements(st)
    for _ in range(3):
        assert st.pending_ids(sid, "memory", "w")[0] == "m3"
    assert seen == []


@pytest.mark.parametrize("checkpoint", ["none", "passive", "truncate"], ids=lambda c: c)
def test_every_write_of_another_connection_is_seen_on_the_next_call(
    tmp_path: Path, checkpoint: str
) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 10))
    other = SessionStore(db)
    for i in range(11, 41):
        st.pending_ids(sid, "memory", "w")
        other.append(sid, f"m{i}", role="user" if i % 2 else "assistant", id=f"m{i}")
        if checkpoint != "none":
            other.conn.execute(f"PRAGMA wal_checkpoint({checkpoint.upper()})")
        assert st.pending_ids(sid, "memory", "w")[-1] == f"m{i}"
        other.mark(sid, [f"m{k}" for k in range(1, i + 1)], "memory", "w")
        assert st.pending_ids(sid, "memory", "w") == []
    st.close()
    other.close()


def test_a_bare_connection_writing_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 5))
    assert st.session(sid).head == "m5"
    st.pending_ids(sid, "memory", "w")
    with sqlite3.connect(db) as bare:
        bare.execute("UPDATE sessions SET head='m3', rev=rev+1 WHERE id=?", (sid,))
    assert st.pending_ids(sid, "memory", "w")[-1] == "m3"


def test_a_store_opened_through_a_symlink_sees_other_writers(tmp_path: Path) -> None:
    real = tmp_path / "real" / "s.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    st = SessionStore(real)
    sid = build(st, chain("m", 1, 5))
    st.close()
    os.symlink(real, link)
    via_link = SessionStore(link)
    via_link.pending_ids(sid, "memory", "w")
    SessionStore(real).append(sid, "m6", role="assistant", id="m6")
    assert via_link.pending_ids(sid, "memory", "w")[-1] == "m6"


def test_an_in_memory_store_needs_no_wal_index() -> None:
    st = SessionStore(":memory:")
    sid = build(st, chain("m", 1, 5))
    assert st._wal_index is None
    assert st.pending_ids(sid, "memory", "w")[-1] == "m5"
    st.append(sid, "m6", role="assistant", id="m6")
    assert st.pending_ids(sid, "memory", "w")[-1] == "m6"

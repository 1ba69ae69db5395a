"""What only the SQLite store does: files, schema versions, other processes, driver errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from builder import build, chain

from graph import SchemaVersionError, SessionStore, StoreError
from graph.sqlite_store import SCHEMA_VERSION


def run(db: Path, code: str) -> None:
    script = f"from graph import SessionStore\nst = SessionStore({str(db)!r})\n{code}\n"
    subprocess.run([sys.executable, "-c", script], check=True)


def test_second_process_writes_are_seen_without_a_full_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 50))
    idx = st.index(sid)
    pred_dict = idx.pred
    run(db, "st.mark('s', ['m1', 'm2', 'm3'], 'memory', 'w')")
    assert [n.id for n in st.pending(sid, "memory", "w")][:1] == ["m4"]
    run(db, "st.append('s', 'm51', role='assistant', id='m51')")
    assert st.session(sid).head == "m51"
    assert st.pending_ids(sid, "memory", "w")[-1] == "m51"
    assert st.index(sid) is idx and idx.pred is pred_dict  # refreshed in place, not rebuilt
    assert len(idx) == 51


def test_refresh_reads_only_rows_newer_than_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 20))
    st.index(sid)
    seen: list[str] = []
    st.conn.set_trace_callback(seen.append)
    other = SessionStore(db)
    other.mark(sid, ["m1"], "memory", "w")
    st.pending_ids(sid, "memory", "w")
    node_reads = [s for s in seen if "FROM nodes" in s]
    assert node_reads and all("seq>0" not in s.replace(" ", "") for s in node_reads)
    assert st.index(sid).marks["memory"] == {"m1": "w"}


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 5))
    st.mark(sid, ["m1", "m2"], "memory", "w")
    st.rewind(sid, "m4")
    st.close()
    again = SessionStore(db)
    assert again.schema_version == SCHEMA_VERSION
    assert [n.id for n in again.pending(sid, "memory", "w")] == ["m3", "m4"]
    assert again.node("m5").rewound
    assert again.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    with sqlite3.connect(db) as c:
        c.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(SchemaVersionError) as e:
        SessionStore(db)
    assert (e.value.expected, e.value.got) == (SCHEMA_VERSION, 99)


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError) as e:
        SessionStore(bad)
    assert isinstance(e.value.__cause__, sqlite3.Error)


def test_a_locked_database_raises_store_error_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db, timeout=0.05)
    sid = build(st, "m1")
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError):
        st.append(sid, "x", role="user", id="x")
    blocker.execute("ROLLBACK")
    assert [n.id for n in st.branch(sid)] == ["m1"]


def test_the_callers_own_transaction_is_never_committed(tmp_path: Path) -> None:
    st = SessionStore(tmp_path / "s.db")
    sid = build(st, "m1")
    st.conn.execute("BEGIN")
    st.append(sid, "inside", role="assistant", id="x")
    st.conn.execute("ROLLBACK")
    st._forget()
    assert [n.id for n in st.branch(sid)] == ["m1"]

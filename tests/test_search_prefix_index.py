"""Store schema version 5: ``node_text`` keeps prefix indexes, and a version 4 file is rebuilt into it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlite_utils

from graph import Kind, Node, Role, SessionStore
from graph.ids import NodeId, SessionId
from graph.store import sqlite as sqlite_store
from graph.store.sqlite import FTS_PREFIXES, MIGRATIONS, SCHEMA_VERSION


def _table_sql(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name='node_text'").fetchone()
        return str(sql)
    finally:
        conn.close()


def _version_4_file(path: Path) -> None:
    """An empty file built by the first four schema steps."""
    conn = sqlite3.connect(path)
    db = sqlite_utils.Database(conn)
    for step in MIGRATIONS[:4]:
        step(db)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '4')")
    conn.commit()
    conn.close()
    assert "prefix" not in _table_sql(path)


def _nodes(sid: str) -> list[Node]:
    """57 user messages and an event, in one batch large enough to be written into node_text
    directly (a version 4 file has no queue)."""
    words = ["retrying", "retries", "return", "reticent", "unrelated"]
    said = [f"turn {i} {words[i % len(words)]} {'x' * (i % 3)}" for i in range(57)]
    return [
        Node(
            id=NodeId(f"n{i}"),
            session_id=SessionId(sid),
            predecessor=NodeId(f"n{i - 1}") if i else None,
            kind=Kind.EVENT if text is None else Kind.MESSAGE,
            role=Role.SYSTEM if text is None else Role.USER,
            content="an event with words" if text is None else text,
            created_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
        )
        for i, text in enumerate([*said, None])
    ]


def test_a_new_file_keeps_the_prefix_indexes(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    assert store.schema_version == SCHEMA_VERSION >= 5
    store.close()
    assert f"prefix='{FTS_PREFIXES}'" in _table_sql(tmp_path / "s.db")


def test_a_version_4_file_is_rebuilt_in_chunks_and_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v4.db"
    _version_4_file(path)
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:4])
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", 4)
    old = SessionStore(path)
    assert old.schema_version == 4
    sid = old.create_session("old", id="s").id
    old.add_nodes(sid, _nodes(sid), head="n57")  # more rows than one chunk of the copy below
    old.close()
    monkeypatch.undo()
    fresh = SessionStore(tmp_path / "fresh.db")  # the same nodes stored under the current schema
    fresh.create_session("fresh", id="s")
    fresh.add_nodes(sid, _nodes(sid), head="n57")
    want = {q: [h.node_id for h in fresh.search(q, limit=100)] for q in ("ret*", "retr*", "turn")}
    fresh.close()
    monkeypatch.setattr(sqlite_store, "_CHUNK", 10)
    store = SessionStore(path)
    try:
        assert store.schema_version == SCHEMA_VERSION >= 5
        assert f"prefix='{FTS_PREFIXES}'" in _table_sql(path)
        for q, ids in want.items():
            assert [h.node_id for h in store.search(q, limit=100)] == ids, q
        assert len(want["ret*"]) == 46 and len(want["retr*"]) == 24
        (n,) = store.conn.execute("SELECT count(*) FROM node_text").fetchone()
        assert n == 57  # the event contributes no text
        store.append(sid, "retrieval after the migration", role="user")
        assert len(store.search("retr*", limit=100)) == 25
    finally:
        store.close()

"""SessionGraphSaver's payload tables on SQLite: the write table's layout, and files made before it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="the langgraph extra is not installed")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402

_OLD_WRITES = (
    "CREATE TABLE lg_writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL,"
    " checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, task_path TEXT NOT NULL,"
    " idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT NOT NULL, value BLOB NOT NULL,"
    " PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))"
)


def _checkpoint(cid: str, messages: list[Any]) -> Any:
    cp: Any = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"] = {"messages": messages}
    cp["channel_versions"] = {"messages": "1"}
    return cp


def _round_trip(saver: SessionGraphSaver) -> None:
    """Put a checkpoint with writes, rewrite one, and read them back."""
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    hi = HumanMessage("hi", id="m1")
    stored = saver.put(config, _checkpoint("1ef0-0001", [hi]), {"step": 0}, {})
    saver.put_writes(stored, [("messages", [AIMessage("yo", id="m2")]), ("x", 1)], "task-1")
    saver.put_writes(stored, [("x", 2)], "task-1")  # index 0 is stored: kept as it was
    saver.put_writes(stored, [("__error__", "boom")], "task-1")
    saver.put_writes(stored, [("__error__", "again")], "task-1")  # a special channel replaces
    got = saver.get_tuple(config)
    assert got is not None
    assert [(t, c) for t, c, _ in got.pending_writes] == [
        ("task-1", "__error__"),
        ("task-1", "messages"),
        ("task-1", "x"),
    ]
    values = {c: v for _, c, v in got.pending_writes}
    assert values["__error__"] == "again"
    assert values["messages"][0].content == "yo"
    assert values["x"] == 1


def test_the_write_table_keeps_its_rows_in_its_key(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    _round_trip(saver)
    (sql,) = store.conn.execute("SELECT sql FROM sqlite_master WHERE name='lg_writes'").fetchone()
    assert sql.rstrip().endswith("WITHOUT ROWID")
    store.close()


def test_a_file_with_the_earlier_rowid_write_table_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SessionStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(_OLD_WRITES)
    conn.commit()
    conn.close()
    store = SessionStore(path)
    saver = SessionGraphSaver(store)
    _round_trip(saver)
    (sql,) = store.conn.execute("SELECT sql FROM sqlite_master WHERE name='lg_writes'").fetchone()
    assert "WITHOUT ROWID" not in sql
    store.close()

"""SessionGraphSaver's payload tables and reads: the write table's layout, files made before it,
and every read answering what LangGraph's SqliteSaver answers on the same forked history."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="the langgraph extra is not installed")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite missing")

from conftest import postgres_store  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from graph import MemorySessionStore, SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402

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


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    """Each backend the saver runs on (PostgreSQL when SESSIONGRAPH_TEST_POSTGRES is set)."""
    if request.param == "postgres":
        yield from postgres_store()
        return
    opened: BaseStore
    if request.param == "sqlite":
        opened = SessionStore(tmp_path / "s.db")
    else:
        opened = MemorySessionStore()
    yield opened
    opened.close()


def _history(saver: Any) -> list[str]:
    """A chain of six checkpoints, a fork from the third, writes on most; returns the ids."""
    ids: list[str] = []
    messages: list[Any] = []
    parent: str | None = None

    def put(i: int, msgs: list[Any], parent: str | None) -> str:
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent
        cid = f"1ef00000-0000-6000-8000-{i:012d}"
        cp = _checkpoint(cid, list(msgs))
        cp["ts"] = f"2025-01-01T00:00:{i:02d}+00:00"
        stored = saver.put(config, cp, {"step": i, "source": "loop"}, {})
        if i % 3:
            saver.put_writes(stored, [("messages", msgs[-1:]), ("branch:to:model", None)], "a")
            saver.put_writes(stored, [("x", i)], "b", "path")
        ids.append(cid)
        return cid

    for i in range(6):
        cls = HumanMessage if i % 2 == 0 else AIMessage
        messages.append(cls(f"turn {i}", id=f"m{i}"))
        parent = put(i, messages, parent)
    fork = messages[:3] + [HumanMessage("fork", id="f0")]
    put(6, fork, ids[2])
    return ids


def _same(ours: CheckpointTuple | None, theirs: CheckpointTuple | None) -> None:
    assert ours is not None and theirs is not None
    assert ours.config == theirs.config
    assert ours.parent_config == theirs.parent_config
    assert ours.checkpoint == theirs.checkpoint
    assert {k: v for k, v in ours.metadata.items()} == dict(theirs.metadata)
    assert sorted(ours.pending_writes, key=repr) == sorted(theirs.pending_writes, key=repr)


def test_every_read_answers_what_sqlite_saver_answers(store: BaseStore) -> None:
    ours = SessionGraphSaver(store)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    peer = SqliteSaver(conn)
    ids = _history(ours)
    assert _history(peer) == ids
    thread: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    _same(ours.get_tuple(thread), peer.get_tuple(thread))
    for cid in ids:
        one: Any = {"configurable": {**thread["configurable"], "checkpoint_id": cid}}
        _same(ours.get_tuple(one), peer.get_tuple(one))
    missing: Any = {"configurable": {**thread["configurable"], "checkpoint_id": "nope"}}
    assert ours.get_tuple(missing) is None
    assert ours.get_tuple({"configurable": {"thread_id": "other"}}) is None
    before: Any = {"configurable": {**thread["configurable"], "checkpoint_id": ids[4]}}
    for kw in ({}, {"limit": 3}, {"before": before}, {"filter": {"step": 2}}):
        got, want = list(ours.list(thread, **kw)), list(peer.list(thread, **kw))
        assert [t.config for t in got] == [t.config for t in want], kw
        for a, b in zip(got, want, strict=True):
            _same(a, b)
    conn.close()


def test_a_put_on_a_known_thread_reads_its_index_once(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session check and the put share one index read: one freshness check per put, not two."""
    saver = SessionGraphSaver(store)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    stored = saver.put(config, _checkpoint("1ef0-0001", []), {"step": 0}, {})
    calls: list[str] = []
    index = store.index

    def counted(session_id: str) -> Any:
        calls.append(session_id)
        return index(session_id)

    monkeypatch.setattr(store, "index", counted)
    saver.put(stored, _checkpoint("1ef0-0002", [HumanMessage("hi", id="m1")]), {"step": 1}, {})
    assert calls == ["t"]
    monkeypatch.undo()
    got = saver.get_tuple(config)
    assert got is not None and got.checkpoint["id"] == "1ef0-0002"
    assert store.index("t").head == "t/1ef0-0002"

"""The search queue: small writes queue their search rows, and every search sees them all the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph import Kind, Node, Role, SessionStore
from graph.ids import NodeId, SessionId
from graph.store.sqlite import SEARCH_QUEUE_AT


def _count(store: SessionStore, table: str) -> int:
    (n,) = store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(n)


def _nodes(sid: str, n: int, word: str = "harbour") -> list[Node]:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Node(
            id=NodeId(f"{sid}-{i}"),
            session_id=SessionId(sid),
            predecessor=NodeId(f"{sid}-{i - 1}") if i else None,
            kind=Kind.MESSAGE,
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            content=f"turn {i} of the {word} talk {'again ' * (i % 4)}",
            created_at=t0 + timedelta(seconds=i),
        )
        for i in range(n)
    ]


def test_an_append_is_queued_and_found_by_the_next_search() -> None:
    store = SessionStore()
    sid = store.create_session().id
    node = store.append(sid, "the lighthouse keeper's log", role="user")
    assert (_count(store, "node_text_queue"), _count(store, "node_text")) == (1, 0)
    assert [h.node_id for h in store.search("lighthouse")] == [node.id]
    assert (_count(store, "node_text_queue"), _count(store, "node_text")) == (0, 1)


def test_writes_move_the_queue_into_the_index_when_it_is_full() -> None:
    store = SessionStore()
    sid = store.create_session().id
    for i in range(3 * SEARCH_QUEUE_AT + 5):
        store.append(sid, f"message {i} about tides", role="user")
        queued = _count(store, "node_text_queue")
        assert queued < SEARCH_QUEUE_AT
        assert queued + _count(store, "node_text") == i + 1
    assert _count(store, "node_text_queue") == 5
    assert len(store.search("tides", limit=1000)) == 3 * SEARCH_QUEUE_AT + 5


def test_a_large_batch_is_indexed_directly_and_a_small_one_queued() -> None:
    store = SessionStore()
    big = store.create_session(id="big").id
    store.add_nodes(big, _nodes(big, 40))
    assert (_count(store, "node_text_queue"), _count(store, "node_text")) == (0, 40)
    small = store.create_session(id="small").id
    store.add_nodes(small, _nodes(small, 3))
    assert (_count(store, "node_text_queue"), _count(store, "node_text")) == (3, 40)


def test_queued_and_indexed_rows_rank_the_same(tmp_path: Path) -> None:
    """A session written turn by turn answers every search as one imported in one batch does."""
    queued = SessionStore(tmp_path / "queued.db")
    direct = SessionStore(tmp_path / "direct.db")
    for store in (queued, direct):
        store.create_session(id="s")
    nodes = _nodes("s", 2 * SEARCH_QUEUE_AT + 7)
    for node in nodes:
        queued.add_nodes("s", [node])
    direct.add_nodes("s", nodes)
    assert _count(queued, "node_text_queue") > 0
    for q in ("harbour", "again", "turn 3", "talk again*", "zzz", '"of the harbour"'):
        got = [(h.node_id, h.snippet) for h in queued.search(q, limit=50)]
        assert got == [(h.node_id, h.snippet) for h in direct.search(q, limit=50)], q


def test_a_rolled_back_write_queues_nothing() -> None:
    store = SessionStore()
    sid = store.create_session().id
    with pytest.raises(RuntimeError), store.atomic():
        store.append(sid, "never happened", role="user")
        raise RuntimeError
    assert _count(store, "node_text_queue") == 0
    assert store.search("happened") == []


def test_a_search_inside_a_transaction_sees_its_own_queued_rows() -> None:
    store = SessionStore()
    sid = store.create_session().id
    with store.atomic():
        node = store.append(sid, "written and searched in one transaction", role="user")
        assert [h.node_id for h in store.search("searched")] == [node.id]


def test_deleting_a_session_removes_its_queued_rows() -> None:
    store = SessionStore()
    gone = store.create_session().id
    kept = store.create_session().id
    store.append(gone, "anchor words here", role="user")
    other = store.append(kept, "anchor words there", role="user")
    store.delete_session(gone)
    assert _count(store, "node_text_queue") == 1
    assert [h.node_id for h in store.search("anchor")] == [other.id]


def test_another_process_search_sees_rows_this_one_queued(tmp_path: Path) -> None:
    writer = SessionStore(tmp_path / "s.db")
    reader = SessionStore(tmp_path / "s.db")
    sid = writer.create_session().id
    node = writer.append(sid, "a note about the ferry timetable", role="user")
    assert [h.node_id for h in reader.search("ferry")] == [node.id]
    more = writer.append(sid, "the ferry was late", role="assistant")
    assert {h.node_id for h in writer.search("ferry")} == {node.id, more.id}
    assert _count(reader, "node_text_queue") == 0

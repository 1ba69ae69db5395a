"""A single append: its node is built once, and its own commit is not checked for again."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builder import build, chain
from pydantic import ValidationError

from graph import MemorySessionStore, Node, SessionStore, TextBlock, ToolCallBlock
from graph.store.base import BaseStore


def _statements(st: SessionStore) -> list[str]:
    seen: list[str] = []
    st.conn.set_trace_callback(seen.append)
    return seen


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BaseStore:
    return SessionStore(tmp_path / "s.db") if request.param == "sqlite" else MemorySessionStore()


def test_an_appended_node_is_the_node_validation_makes(store: BaseStore) -> None:
    sid = store.create_session("t").id
    when = datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    blocks = (TextBlock(text="hi"), ToolCallBlock(id="c1", name="grep", arguments={"q": "x"}))
    node = store.append(
        sid, list(blocks), role="assistant", id="n1", created_at=when, metadata={"k": [1, 2]}
    )
    expected = Node(
        id="n1",
        session_id=sid,
        predecessor=None,
        kind="message",
        role="assistant",
        content=blocks,
        created_at=when,
        metadata={"k": [1, 2]},
    )
    assert node == expected
    assert store.node("n1") == expected
    text = store.append(sid, "plain", role="user")
    assert (text.predecessor, text.content, text.kind.value) == ("n1", "plain", "message")
    assert text.created_at.tzinfo is not None


def test_arguments_that_are_not_models_yet_are_still_validated(store: BaseStore) -> None:
    sid = store.create_session("t").id
    node = store.append(sid, [{"type": "text", "text": "from a dict"}], role="user", id="d1")
    assert node.content == (TextBlock(text="from a dict"),)
    later = store.append(sid, "x", role="user", created_at="2025-01-01T00:00:00Z")  # type: ignore[arg-type]
    assert later.created_at == datetime(2025, 1, 1, tzinfo=UTC)
    with pytest.raises(ValidationError):
        store.append(sid, [{"type": "nonsense"}], role="user")
    with pytest.raises(ValidationError):
        store.append(sid, "x", role="user", metadata={1: "not a str key"})  # type: ignore[dict-item]
    assert [n.id for n in store.nodes(sid)] == ["d1", later.id]


def test_after_its_own_append_the_store_asks_nothing_to_stay_fresh(tmp_path: Path) -> None:
    st = SessionStore(tmp_path / "s.db")
    sid = build(st, chain("m", 1, 5))
    st.pending_ids(sid, "memory", "w")
    for i in range(6, 10):
        st.append(sid, f"m{i}", role="user", id=f"m{i}")
        seen = _statements(st)
        assert st.pending_ids(sid, "memory", "w")[-1] == f"m{i}"
        assert seen == []  # neither PRAGMA data_version nor a catch-up query
        st.conn.set_trace_callback(None)


def test_another_writer_before_or_after_an_append_is_always_seen(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st, other = SessionStore(db), SessionStore(db)
    sid = build(st, chain("m", 1, 3))
    st.pending_ids(sid, "memory", "w")
    for i in range(4, 40, 2):
        other.append(sid, f"m{i}", role="user", id=f"m{i}")  # unseen when st appends
        mine = st.append(sid, f"m{i + 1}", role="assistant", id=f"m{i + 1}")
        assert mine.predecessor == f"m{i}"
        other.mark(sid, [f"m{k}" for k in range(1, i + 1)], "memory", "w")  # right after st's
        assert st.pending_ids(sid, "memory", "w") == [f"m{i + 1}"]
    assert st.session(sid).head == other.session(sid).head == "m39"
    st.close()
    other.close()


def test_two_stores_appending_at_once_each_see_every_node(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = SessionStore(db)
    sids = [first.create_session(f"s{k}").id for k in range(2)]
    stores = [first, SessionStore(db)]
    errors: list[BaseException] = []

    def write(k: int) -> None:
        try:
            for i in range(60):
                stores[k].append(sids[k], f"{k}-{i}", role="user", id=f"{k}-{i}")
                stores[k].pending_ids(sids[1 - k], "memory", "w")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for st in stores:
        for k in range(2):
            assert st.pending_ids(sids[k], "memory", "w") == [f"{k}-{i}" for i in range(60)]
        st.close()

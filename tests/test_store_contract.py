"""The contract every store twin passes: operations, validation, and all-or-nothing writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from builder import build, chain

from graph import (
    CoverageError,
    CycleError,
    DuplicateNodeError,
    DuplicateSessionError,
    ForeignPredecessorError,
    HeadConflictError,
    Kind,
    Node,
    NotOnBranchError,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UnknownNodeError,
    UnknownPredecessorError,
    UnknownSessionError,
)
from graph.models import ImageBlock
from graph.store import BaseStore


def snapshot(store: BaseStore) -> list[Any]:
    """Everything a caller can read back, for every session."""
    out: list[Any] = []
    for s in sorted(store.sessions(), key=lambda s: s.id):
        idx = store.index(s.id)
        nodes = store.nodes(s.id, list(idx.pred))
        out.append((s.model_dump(), [n.model_dump() for n in nodes], store.tips(s.id)))
    return out


def node(sid: str, nid: str, pred: str | None, text: str = "x", **kw: Any) -> Node:
    return Node(
        id=nid,
        session_id=sid,
        predecessor=pred,
        kind=kw.pop("kind", Kind.MESSAGE),
        role=kw.pop("role", Role.USER),
        content=text,
        created_at=kw.pop("created_at", datetime(2026, 1, 1, tzinfo=UTC)),
        **kw,
    )


def test_append_moves_the_head_and_links_the_predecessor(store: BaseStore) -> None:
    s = store.create_session("t")
    a = store.append(s.id, "hello", role="user")
    b = store.append(s.id, "hi", role="assistant")
    assert b.predecessor == a.id
    assert store.session(s.id).head == b.id
    c = store.append(s.id, "aside", role="user", predecessor=a.id, move_head=False)
    assert store.session(s.id).head == b.id
    assert store.index(s.id).children[a.id] == [b.id, c.id]


def test_store_made_ids_are_time_ordered(store: BaseStore) -> None:
    s = store.create_session()
    ids = [store.append(s.id, str(i), role="user").id for i in range(50)]
    assert ids == sorted(ids)
    assert all(len(i) == 36 and i[14] == "7" for i in ids)


def test_content_blocks_round_trip_exactly(store: BaseStore) -> None:
    s = store.create_session()
    blocks = (
        TextBlock(text="look ünïcode 🚀"),
        ToolCallBlock(id="c1", name="read", arguments={"path": "/x", "n": [1, 2.5, None, True]}),
        ToolResultBlock(call_id="c1", text="contents", is_error=False),
        ImageBlock(ref="sha256:abc", media_type="image/png"),
    )
    n = store.append(s.id, blocks, role="assistant", metadata={"model": "m", "nested": {"k": [1]}})
    back = store.node(n.id)
    assert back.content == blocks
    assert back.metadata == {"model": "m", "nested": {"k": [1]}}
    assert back.created_at == n.created_at


def test_fork_appends_after_a_non_head_node(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 4))
    f = store.fork(sid, "m2", "other", role="assistant", id="f1")
    assert f.predecessor == "m2"
    assert store.session(sid).head == "f1"
    assert [n.id for n in store.branch(sid)] == ["m1", "m2", "f1"]
    assert store.stats(sid).forks == 1


def test_set_head_compare_and_swap(store: BaseStore) -> None:
    sid = build(store, "m1-m2; m1-b1")
    store.set_head(sid, "m2", expected="b1")
    assert store.session(sid).head == "m2"
    with pytest.raises(HeadConflictError) as e:
        store.set_head(sid, "b1", expected="b1")
    assert (e.value.expected, e.value.got) == ("b1", "m2")
    assert store.session(sid).head == "m2"
    with pytest.raises(UnknownNodeError):
        store.set_head(sid, "nope")


def test_sessions_most_recently_updated_first(store: BaseStore) -> None:
    old = store.create_session("old", created_at=datetime(2025, 1, 1, tzinfo=UTC))
    new = store.create_session("new", created_at=datetime(2025, 6, 1, tzinfo=UTC))
    assert [s.id for s in store.sessions()] == [new.id, old.id]
    store.append(old.id, "bump", role="user")
    assert [s.id for s in store.sessions()] == [old.id, new.id]
    assert [s.id for s in store.sessions(limit=1)] == [old.id]


def test_spawn_links_both_ways(store: BaseStore) -> None:
    sid = build(store, "m1-m2")
    child = store.spawn(sid, "m2", title="sub-agent")
    assert (child.spawned_from, child.parent_session) == ("m2", sid)
    assert [c.id for c in store.spawns(sid)] == [child.id]
    store.append(child.id, "task", role="user")
    assert store.stats(sid).spawned == 1
    with pytest.raises(UnknownNodeError):
        store.spawn(sid, "elsewhere")


def test_delete_session_removes_it_and_its_spawns_in_one_transaction(store: BaseStore) -> None:
    sid = build(store, "m1-m2-m3", session="parent")
    store.mark(sid, ["m1"], "memory", "ws")
    store.rewind(sid, "m2")
    store.compact(sid, ["m1", "m2"], "the start", layout="inline", id="sum")
    child = store.spawn(sid, "m2", title="sub-agent", id="parent/agent-1")
    build(store, "c1-c2", session=child.id)
    grandchild = store.spawn(child.id, "c2", id="parent/agent-1/agent-2")
    store.append(grandchild.id, "deeper", role="user", id="g1")
    keep = build(store, "k1-k2", session="other")
    kept = [x for x in snapshot(store) if x[0]["id"] == keep]

    removed = store.delete_session(sid)

    assert removed == ["parent", "parent/agent-1", "parent/agent-1/agent-2"]
    assert [s.id for s in store.sessions()] == [keep]
    assert snapshot(store) == kept
    for gone in removed:
        with pytest.raises(UnknownSessionError):
            store.session(gone)
    with pytest.raises(UnknownNodeError):
        store.node("m1")
    assert build(store, "m1-m2", session="parent") == "parent"  # the ids are free again
    assert store.pending_ids("parent", "memory", "ws") == ["m1", "m2"]
    with pytest.raises(UnknownSessionError):
        store.delete_session("no-such-session")


def test_delete_session_inside_a_rolled_back_transaction_changes_nothing(
    store: BaseStore,
) -> None:
    sid = build(store, "m1-m2", session="s")
    store.spawn(sid, "m2", id="s/agent")
    before = snapshot(store)
    with pytest.raises(RuntimeError), store.atomic():
        store.delete_session(sid)
        raise RuntimeError("roll back")
    assert snapshot(store) == before


def test_add_nodes_takes_any_order_and_is_idempotent(store: BaseStore) -> None:
    s = store.create_session()
    nodes = [node(s.id, "c", "b"), node(s.id, "a", None), node(s.id, "b", "a")]
    added = store.add_nodes(s.id, nodes, head="c")
    assert [n.id for n in added] == ["a", "b", "c"]
    before = snapshot(store)
    assert store.add_nodes(s.id, nodes, head="c") == []
    assert snapshot(store) == before
    assert store.index(s.id).rev == store.index(s.id).rev


def test_identical_reappend_is_a_no_op(store: BaseStore) -> None:
    sid = build(store, "m1-m2")
    before = snapshot(store)
    again = store.append(sid, "m2", role="assistant", predecessor="m1", id="m2")
    assert again.id == "m2"
    assert snapshot(store) == before


def test_get_branch_and_unknown_ids(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 3))
    assert [n.id for n in store.branch(sid, head="m2")] == ["m1", "m2"]
    with pytest.raises(UnknownNodeError):
        store.branch(sid, head="zz")
    with pytest.raises(UnknownSessionError):
        store.branch("no-session")
    with pytest.raises(UnknownNodeError):
        store.node("zz")


def test_to_networkx_is_a_read_only_view(store: BaseStore) -> None:
    import networkx as nx

    sid = build(store, "m1-m2-m3; m2-b1")
    store.mark(sid, ["m1"], "memory", "w")
    s = store.compact(sid, ["m1", "m2"], "sum", layout="inline")
    g = store.to_networkx(sid)
    assert g.number_of_nodes() == 5
    assert g.nodes["m1"]["written"] == {"memory": "w"}
    assert g.edges[s.id, "m1"]["link"] == "covers"
    assert g.nodes[s.id]["head"]
    with pytest.raises(nx.NetworkXError):
        g.add_node("x")


# ------------------------------------------------------------------ validation: typed, all-or-nothing

REJECTED: list[tuple[str, Callable[[BaseStore, str], Any], type[Exception], dict[str, Any]]] = [
    (
        "unknown predecessor",
        lambda st, sid: st.append(sid, "x", role="user", predecessor="ghost"),
        UnknownPredecessorError,
        {"predecessor": "ghost"},
    ),
    (
        "foreign predecessor",
        lambda st, sid: st.append(sid, "x", role="user", predecessor="o1", id="n"),
        ForeignPredecessorError,
        {"node_id": "n", "predecessor": "o1", "expected": "s", "got": "other"},
    ),
    (
        "duplicate id, other content",
        lambda st, sid: st.append(sid, "changed", role="user", predecessor=None, id="m1"),
        DuplicateNodeError,
        {"node_id": "m1", "field": "content"},
    ),
    (
        "duplicate id in another session",
        lambda st, sid: st.append(sid, "o1", role="user", predecessor=None, id="o1"),
        DuplicateNodeError,
        {"node_id": "o1", "field": "session"},
    ),
    (
        "cycle in a batch",
        lambda st, sid: st.add_nodes(sid, [node(sid, "c1", "c2"), node(sid, "c2", "c1")]),
        CycleError,
        {},
    ),
    (
        "self loop",
        lambda st, sid: st.add_nodes(sid, [node(sid, "c1", "c1")]),
        CycleError,
        {"node_id": "c1"},
    ),
    (
        "bad batch member after good ones",
        lambda st, sid: st.add_nodes(sid, [node(sid, "ok1", "m3"), node(sid, "bad", "ghost")]),
        UnknownPredecessorError,
        {"node_id": "bad"},
    ),
    (
        "summary covering nodes not on one branch",
        lambda st, sid: st.compact(sid, ["m2", "b1"], "s"),
        CoverageError,
        {"node_id": "b1"},
    ),
    (
        "sibling summary of a span off the head",
        lambda st, sid: st.compact(sid, ["m1", "m3"], "s", layout="sibling"),
        CoverageError,
        {},
    ),
    (
        "covers on a message",
        lambda st, sid: st.add_nodes(sid, [node(sid, "n", "m3", covers=("m1",))]),
        CoverageError,
        {},
    ),
    (
        "rewind off the branch",
        lambda st, sid: st.rewind(sid, "b1"),
        NotOnBranchError,
        {"node_id": "b1", "head": "m3"},
    ),
    (
        "head CAS conflict",
        lambda st, sid: st.set_head(sid, "m1", expected="m2"),
        HeadConflictError,
        {"expected": "m2", "got": "m3"},
    ),
    (
        "duplicate session",
        lambda st, sid: st.create_session(id="other"),
        DuplicateSessionError,
        {"session_id": "other"},
    ),
]


@pytest.mark.parametrize(
    ("case", "write", "error", "facts"), REJECTED, ids=[r[0] for r in REJECTED]
)
def test_rejected_writes_raise_typed_errors_and_change_nothing(
    store: BaseStore, case: str, write: Any, error: type[Exception], facts: dict[str, Any]
) -> None:
    sid = build(store, "m1-m2-m3; m1-b1", head="m3")
    build(store, "o1", session="other")
    store.mark(sid, ["m1"], "memory", "w")
    before = snapshot(store)
    with pytest.raises(error) as e:
        write(store, sid)
    for k, v in facts.items():
        assert getattr(e.value, k) == v, k
    assert snapshot(store) == before
    assert isinstance(e.value, ValueError) or case == "head CAS conflict"

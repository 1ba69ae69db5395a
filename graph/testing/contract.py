"""The store contract: every operation, its validation, and all-or-nothing writes, for any backend.

A backend (a third-party one, or one of this package's) runs the whole suite by supplying one pytest
fixture, ``store_factory``: a callable that opens a handle onto one storage, empty at the start of each
test. Each call opens another handle onto the *same* storage (a second connection to the same file or
database), which the suite uses to check that a commit is visible to another reader; a backend with no
shared storage returns the same object each time. The suite's ``store`` fixture is the first handle,
and every handle is closed after the test.

In a test module of the backend's package::

    import pytest
    from graph.testing.contract import *  # noqa: F403  (the fixtures and the tests)
    from graph.testing.transactions import *  # noqa: F403

    @pytest.fixture
    def store_factory(tmp_path):
        return lambda: MyStore(tmp_path / "db")

Parametrize ``store_factory`` to run the suite over several backends. Requires pytest (imported only
by this module and :mod:`graph.testing.transactions`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from graph.errors import (
    CoverageError,
    CycleError,
    DuplicateNodeError,
    DuplicateSessionError,
    ForeignPredecessorError,
    HeadConflictError,
    MarkerGapError,
    NotOnBranchError,
    UnknownNodeError,
    UnknownPredecessorError,
    UnknownSessionError,
)
from graph.models import (
    ImageBlock,
    Kind,
    Node,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from graph.store.base import BaseStore

__all__ = [
    "REJECTED",
    "StoreFactory",
    "build",
    "chain",
    "node",
    "snapshot",
    "store",
    "store_handles",
    "test_a_commit_is_visible_to_another_handle",
    "test_a_marker_of_another_value_reads_as_unwritten",
    "test_add_nodes_on_a_cold_handle_builds_no_index_and_rejects_the_same",
    "test_add_nodes_on_a_cold_handle_extends_and_reimports",
    "test_add_nodes_takes_any_order_and_is_idempotent",
    "test_append_moves_the_head_and_links_the_predecessor",
    "test_branch_ids_and_message_ids",
    "test_content_blocks_round_trip_exactly",
    "test_fork_appends_after_a_non_head_node",
    "test_get_branch_and_unknown_ids",
    "test_has_session_and_locate",
    "test_identical_reappend_is_a_no_op",
    "test_iter_nodes_and_node_count",
    "test_link_spawn_gives_a_session_tied_to_its_parent_the_node_that_started_it",
    "test_link_spawn_settles_a_dangling_parent_note",
    "test_markers_of_two_handles_stay_apart",
    "test_note_cycle_parents_rewrites_only_matching_dangling_notes",
    "test_nodes_without_ids_are_every_node_predecessors_first",
    "test_pending_ids_by_tip_matches_pending_by_tip",
    "test_reads_of_a_few_nodes_on_another_handle_equal_the_writers",
    "test_rejected_writes_raise_typed_errors_and_change_nothing",
    "test_sessions_most_recently_updated_first",
    "test_set_artifact_flags_stored_nodes_for_every_handle",
    "test_set_head_compare_and_swap",
    "test_spawn_links_both_ways",
    "test_stamp_rewound_stamps_exactly_those_nodes_and_keeps_the_head",
    "test_store_made_ids_are_time_ordered",
    "test_the_index_handed_out_is_read_only",
    "test_to_networkx_is_a_read_only_view",
    "test_two_values_of_one_provider_never_overwrite_each_other",
    "test_unstamp_rewound_removes_exactly_those_stamps_for_every_handle",
]

StoreFactory = Callable[[], BaseStore]
"""Opens a handle onto the test's storage (the same storage on every call)."""


@pytest.fixture
def store_handles(store_factory: StoreFactory) -> Iterator[Callable[[], BaseStore]]:
    """Open handles onto the test's storage with ``store_handles()``; all are closed afterwards."""
    opened: list[BaseStore] = []

    def open_handle() -> BaseStore:
        s = store_factory()
        if all(s is not o for o in opened):
            opened.append(s)
        return s

    yield open_handle
    for s in reversed(opened):
        s.close()


@pytest.fixture
def store(store_handles: Callable[[], BaseStore]) -> BaseStore:
    """The first handle onto the test's (empty) storage."""
    return store_handles()


def build(store: BaseStore, spec: str, *, session: str = "s", head: str | None = None) -> str:
    """Create session ``session`` holding the DAG ``spec``; return its id.

    ``spec`` is segments separated by ``;``, each a chain of node labels joined by ``-``, e.g.
    ``"m1-m2-m3; m2-f1-f2"``. A segment whose first label already exists continues from it (a fork
    when it already has a child); otherwise its first label is a new root. Labels are the node ids and
    the text. Roles alternate by depth (user at the root), and the head ends on the last label of the
    last segment unless ``head`` says otherwise.
    """
    if not store.has_session(session):
        store.create_session(session, id=session)
    depth: dict[str, int] = {n: 0 for n in store.index(session).pred}
    last = None
    for segment in spec.split(";"):
        labels = [x.strip() for x in segment.split("-") if x.strip()]
        if not labels:
            continue
        prev = None
        if labels[0] in depth:
            prev, labels = labels[0], labels[1:]
        for label in labels:
            d = depth[prev] + 1 if prev is not None else 0
            store.append(
                session,
                label,
                role="user" if d % 2 == 0 else "assistant",
                predecessor=prev,
                id=label,
            )
            depth[label] = d
            prev = label
        last = prev
    if head is not None or last is not None:
        store.set_head(session, head or last)
    return session


def chain(prefix: str, first: int, last: int) -> str:
    """``chain("m", 1, 3)`` -> ``"m1-m2-m3"``."""
    return "-".join(f"{prefix}{i}" for i in range(first, last + 1))


def snapshot(store: BaseStore) -> list[Any]:
    """Everything a caller can read back, for every session.

    The sessions, their nodes (markers and rewound stamps included, in their metadata) and live tips.
    """
    out: list[Any] = []
    for s in sorted(store.sessions(), key=lambda s: s.id):
        nodes = store.nodes(s.id)
        out.append((s.model_dump(), [n.model_dump() for n in nodes], store.tips(s.id)))
    return out


def node(sid: str, nid: str, pred: str | None, text: str = "x", **kw: Any) -> Node:
    """A user message node of ``sid`` (kind, role, created_at overridable), for batch writes."""
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
    """Append moves the head and links the predecessor."""
    s = store.create_session("t")
    a = store.append(s.id, "hello", role="user")
    b = store.append(s.id, "hi", role="assistant")
    assert b.predecessor == a.id
    assert store.session(s.id).head == b.id
    c = store.append(s.id, "aside", role="user", predecessor=a.id, move_head=False)
    assert store.session(s.id).head == b.id
    assert store.index(s.id).children[a.id] == (b.id, c.id)


def test_store_made_ids_are_time_ordered(store: BaseStore) -> None:
    """Store made ids are time ordered."""
    s = store.create_session()
    ids = [store.append(s.id, str(i), role="user").id for i in range(50)]
    assert ids == sorted(ids)
    assert all(len(i) == 36 and i[14] == "7" for i in ids)


def test_content_blocks_round_trip_exactly(store: BaseStore) -> None:
    """Content blocks round trip exactly."""
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
    """Fork appends after a non head node."""
    sid = build(store, chain("m", 1, 4))
    f = store.fork(sid, "m2", "other", role="assistant", id="f1")
    assert f.predecessor == "m2"
    assert store.session(sid).head == "f1"
    assert [n.id for n in store.branch(sid)] == ["m1", "m2", "f1"]
    assert store.stats(sid).forks == 1


def test_set_head_compare_and_swap(store: BaseStore) -> None:
    """Set head compare and swap."""
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
    """Sessions most recently updated first."""
    old = store.create_session("old", created_at=datetime(2025, 1, 1, tzinfo=UTC))
    new = store.create_session("new", created_at=datetime(2025, 6, 1, tzinfo=UTC))
    assert [s.id for s in store.sessions()] == [new.id, old.id]
    store.append(old.id, "bump", role="user")
    assert [s.id for s in store.sessions()] == [old.id, new.id]
    assert [s.id for s in store.sessions(limit=1)] == [old.id]


def test_spawn_links_both_ways(store: BaseStore) -> None:
    """Spawn links both ways."""
    sid = build(store, "m1-m2")
    child = store.spawn(sid, "m2", title="sub-agent")
    assert (child.spawned_from, child.parent_session) == ("m2", sid)
    assert [c.id for c in store.spawns(sid)] == [child.id]
    store.append(child.id, "task", role="user")
    assert store.stats(sid).spawned == 1
    with pytest.raises(UnknownNodeError):
        store.spawn(sid, "elsewhere")


def test_link_spawn_settles_a_dangling_parent_note(
    store: BaseStore, store_handles: Callable[[], BaseStore]
) -> None:
    """Linking a spawn turns its root's ``dangling_parent`` note into ``parent_in_session``.

    A note naming no node of the parent session stays; metadata only (``updated_at`` kept), and
    another handle that read the node before reads the new note.
    """
    trunk = build(store, "t1-t2", session="trunk")
    child = store.create_session("agent", id="trunk/agent-1").id
    nodes = [
        node(child, "a1", None, metadata={"dangling_parent": "t2", "agent": "a"}),
        node(child, "a2", "a1", role=Role.ASSISTANT, metadata={"dangling_parent": "t1"}),
        node(child, "b1", None, metadata={"dangling_parent": "nowhere"}),
    ]
    store.add_nodes(child, nodes, head="a2")
    store.mark(child, ["a1"], "memory", "ws")
    other = store_handles()
    assert other.node("a1").metadata["dangling_parent"] == "t2"
    assert other.branch(child, "a2")[0].metadata["dangling_parent"] == "t2"  # kept decoded there
    before = store.session(child).updated_at
    store.link_spawn(child, "t2", trunk)
    for handle in (store, other, store_handles()):
        a1, a2, b1 = handle.nodes(child, ["a1", "a2", "b1"])
        assert "dangling_parent" not in a1.metadata
        assert a1.metadata["parent_in_session"] == {"node": "t2", "session": trunk}
        assert a1.metadata["agent"] == "a" and a1.is_written("memory", "ws")
        assert a2.metadata == {"dangling_parent": "t1"}, "not a root: not a spawn's note"
        assert b1.metadata == {"dangling_parent": "nowhere"}, "names no node of the trunk"
        assert handle.session(child).updated_at == before
        assert handle.session(child).spawned_from == "t2"
        assert handle.branch(child, "a2")[0].metadata == a1.metadata
    store.link_spawn(child, "t1", trunk)
    assert store.session(child).spawned_from == "t2", "a link is kept"


def test_link_spawn_gives_a_session_tied_to_its_parent_the_node_that_started_it(
    store: BaseStore, store_handles: Callable[[], BaseStore]
) -> None:
    """A session tied to its parent session without a node (its import found none yet) gets one."""
    trunk = build(store, "t1-t2", session="trunk")
    other_trunk = build(store, "o1", session="other")
    child = store.create_session("agent", id="trunk/agent-1", parent_session=trunk).id
    build(store, "a1-a2", session=child)
    before = store.session(child)
    assert store.link_spawn(child, None, trunk).spawned_from is None  # nothing to give yet
    assert store.link_spawn(child, "o1", other_trunk).parent_session == trunk  # tied elsewhere
    store.link_spawn(child, "t2", trunk)
    for handle in (store, store_handles()):
        got = handle.session(child)
        assert (got.spawned_from, got.parent_session) == ("t2", trunk)
        assert (got.updated_at, got.head) == (before.updated_at, before.head)


def test_note_cycle_parents_rewrites_only_matching_dangling_notes(
    store: BaseStore, store_handles: Callable[[], BaseStore]
) -> None:
    """A root's ``dangling_parent`` note naming the parent given becomes ``cycle_parent``."""
    sid = store.create_session("pi", id="s").id
    nodes = [
        node(sid, "r1", None, metadata={"dangling_parent": "c1", "line": 1}),
        node(sid, "c1", "r1", role=Role.ASSISTANT),
        node(sid, "r2", None, metadata={"dangling_parent": "elsewhere"}),
    ]
    store.add_nodes(sid, nodes, head="c1")
    other = store_handles()
    assert other.node("r1").metadata["dangling_parent"] == "c1"  # decoded there
    before = store.session(sid)
    assert store.note_cycle_parents(sid, {"r1": "c1", "r2": "c1", "c1": "r1"}) == ["r1"]
    for handle in (store, other, store_handles()):
        assert handle.node("r1").metadata == {"cycle_parent": "c1", "line": 1}
        assert handle.node("r2").metadata == {"dangling_parent": "elsewhere"}
        got = handle.session(sid)
        assert (got.updated_at, got.head) == (before.updated_at, before.head)
    snap = snapshot(store)
    with pytest.raises(UnknownNodeError):
        store.note_cycle_parents(sid, {"r2": "elsewhere", "ghost": "r1"})
    assert snapshot(store) == snap  # all or nothing


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
    """Add nodes takes any order and is idempotent."""
    s = store.create_session()
    nodes = [node(s.id, "c", "b"), node(s.id, "a", None), node(s.id, "b", "a")]
    added = store.add_nodes(s.id, nodes, head="c")
    assert [n.id for n in added] == ["a", "b", "c"]
    before, rev = snapshot(store), store.index(s.id).rev
    assert store.add_nodes(s.id, nodes, head="c") == []
    assert snapshot(store) == before
    assert store.index(s.id).rev == rev  # nothing written, not even the change counter


def _cold(store_handles: Callable[[], BaseStore]) -> BaseStore:
    """Another handle with no session index cached (as a store opened for one import is)."""
    h = store_handles()
    h._forget()
    return h


COLD_REJECTED: list[
    tuple[str, Callable[[str], list[Node]], Any, type[Exception], dict[str, Any]]
] = [
    (
        "unknown predecessor",
        lambda sid: [node(sid, "ok1", "m3"), node(sid, "bad", "ghost")],
        None,
        UnknownPredecessorError,
        {"node_id": "bad", "predecessor": "ghost"},
    ),
    (
        "predecessor in another session",
        lambda sid: [node(sid, "n1", "o1")],
        None,
        ForeignPredecessorError,
        {"node_id": "n1"},
    ),
    (
        "duplicate id, other content",
        lambda sid: [node(sid, "m2", "m1", "changed", role=Role.ASSISTANT)],
        None,
        DuplicateNodeError,
        {"node_id": "m2", "field": "content"},
    ),
    (
        "duplicate id in another session",
        lambda sid: [node(sid, "o1", None)],
        None,
        DuplicateNodeError,
        {"node_id": "o1", "field": "session"},
    ),
    (
        "cycle in a batch",
        lambda sid: [node(sid, "c1", "c2"), node(sid, "c2", "c1")],
        None,
        CycleError,
        {},
    ),
    (
        "head in another session",
        lambda sid: [node(sid, "n1", "m3")],
        "o1",
        UnknownNodeError,
        {"node_id": "o1"},
    ),
    (
        "unknown session",
        lambda sid: [node("nope", "n1", None)],
        None,
        UnknownSessionError,
        {},
    ),
]


@pytest.mark.parametrize(
    ("case", "batch", "head", "error", "facts"), COLD_REJECTED, ids=[r[0] for r in COLD_REJECTED]
)
def test_add_nodes_on_a_cold_handle_builds_no_index_and_rejects_the_same(
    store: BaseStore,
    store_handles: Callable[[], BaseStore],
    case: str,
    batch: Callable[[str], list[Node]],
    head: Any,
    error: type[Exception],
    facts: dict[str, Any],
) -> None:
    """A batch written with no index cached is checked by a lookup of the rows it names, as strictly."""
    sid = build(store, "m1-m2-m3; m1-b1", head="m3")
    build(store, "o1", session="other")
    before = snapshot(store)
    cold = _cold(store_handles)
    target = "nope" if case == "unknown session" else sid
    with pytest.raises(error) as e:
        if head is None:
            cold.add_nodes(target, batch(sid))
        else:
            cold.add_nodes(target, batch(sid), head=head)
    for k, v in facts.items():
        assert getattr(e.value, k) == v, k
    assert snapshot(store_handles()) == before


def test_add_nodes_on_a_cold_handle_extends_and_reimports(
    store: BaseStore, store_handles: Callable[[], BaseStore]
) -> None:
    """With no index cached, a batch extends stored nodes, skips the stored ones and moves the head."""
    sid = build(store, "m1-m2-m3", head="m3")
    cold = _cold(store_handles)
    batch = [node(sid, "n2", "n1"), node(sid, "m3", "m2", "m3"), node(sid, "n1", "m3")]
    assert [n.id for n in cold.add_nodes(sid, batch, head="n2")] == ["n1", "n2"]  # m3: stored
    assert sid not in cold._cache  # validated without building the session's index
    again = [node(sid, "n1", "m3"), node(sid, "n3", "n1"), node(sid, "f1", "m1")]
    cold = _cold(store_handles)
    assert [n.id for n in cold.add_nodes(sid, again, head="m2")] == ["n3", "f1"]
    assert sid not in cold._cache
    fresh = store_handles()
    assert fresh.session(sid).head == "m2"
    assert fresh.index(sid).pred == {
        "m1": None,
        "m2": "m1",
        "m3": "m2",
        "n1": "m3",
        "n2": "n1",
        "n3": "n1",
        "f1": "m1",
    }
    assert fresh.add_nodes(sid, again, head="m2") == []


def test_identical_reappend_is_a_no_op(store: BaseStore) -> None:
    """Identical reappend is a no op."""
    sid = build(store, "m1-m2")
    before = snapshot(store)
    again = store.append(sid, "m2", role="assistant", predecessor="m1", id="m2")
    assert again.id == "m2"
    assert snapshot(store) == before


def test_get_branch_and_unknown_ids(store: BaseStore) -> None:
    """Get branch and unknown ids."""
    sid = build(store, chain("m", 1, 3))
    assert [n.id for n in store.branch(sid, head="m2")] == ["m1", "m2"]
    with pytest.raises(UnknownNodeError):
        store.branch(sid, head="zz")
    with pytest.raises(UnknownSessionError):
        store.branch("no-session")
    with pytest.raises(UnknownNodeError):
        store.node("zz")


def test_to_networkx_is_a_read_only_view(store: BaseStore) -> None:
    """To networkx is a read only view."""
    nx = pytest.importorskip("networkx")
    from graph.networkx_views import to_networkx

    sid = build(store, "m1-m2-m3; m2-b1")
    store.mark(sid, ["m1"], "memory", "w")
    s = store.compact(sid, ["m1", "m2"], "sum", layout="inline")
    g = to_networkx(store, sid)
    assert g.number_of_nodes() == 5
    assert g.nodes["m1"]["written"] == {"memory": ("w",)}
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
    """Rejected writes raise typed errors and change nothing."""
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


# ------------------------------------------------------------------ primitives callers used to fake


def test_has_session_and_locate(store: BaseStore) -> None:
    """Has session and locate."""
    sid = build(store, "m1-m2")
    build(store, "o1", session="other")
    assert store.has_session(sid) and not store.has_session("nope")
    assert store.locate(["m2", "o1", "ghost", "m2"]) == {"m2": sid, "o1": "other"}
    assert store.locate([]) == {}


def test_nodes_without_ids_are_every_node_predecessors_first(store: BaseStore) -> None:
    """Nodes without ids are every node predecessors first."""
    s = store.create_session(id="s")
    store.add_nodes(s.id, [node(s.id, "c", "b"), node(s.id, "a", None), node(s.id, "b", "a")])
    assert [n.id for n in store.nodes(s.id)] == ["a", "b", "c"]
    assert [n.id for n in store.nodes(s.id, ["c", "a"])] == ["c", "a"]
    with pytest.raises(UnknownSessionError):
        store.nodes("nope")


def test_branch_ids_and_message_ids(store: BaseStore) -> None:
    """Branch ids and message ids."""
    sid = build(store, "m1-m2-m3-m4; m2-b1")
    store.set_head(sid, "m4")
    e = store.append(sid, "progress", role="system", kind="event", id="e1")
    assert store.branch_ids(sid) == ["m1", "m2", "m3", "m4", e.id]
    assert store.branch_ids(sid, head="b1") == ["m1", "m2", "b1"]
    assert store.message_ids(sid) == ["m1", "m2", "m3", "m4"]
    assert store.latest_message_id(sid) == "m4"
    store.rewind(sid, "m2")
    assert store.message_ids(sid) == ["m1", "m2"]
    assert store.latest_message_id(sid, head="e1") == "m2"  # rewound messages are on no branch
    with pytest.raises(UnknownNodeError):
        store.branch_ids(sid, head="zz")


def test_stamp_rewound_stamps_exactly_those_nodes_and_keeps_the_head(store: BaseStore) -> None:
    """Stamp rewound stamps exactly those nodes and keeps the head."""
    sid = build(store, "m1-m2-m3; m1-b1-b2", head="m3")
    reader = store.index(sid)
    rev = reader.rev
    assert store.stamp_rewound(sid, ["b1", "b2", "b1"]) == ["b1", "b2"]
    assert store.session(sid).head == "m3"
    assert store.index(sid).rev > rev  # other readers see the change
    assert [n.id for n in store.nodes(sid) if n.rewound] == ["b1", "b2"]
    assert store.tips(sid) == ["m3"]
    assert store.stamp_rewound(sid, ["b2"]) == []  # already stamped
    before = snapshot(store)
    with pytest.raises(UnknownNodeError):
        store.stamp_rewound(sid, ["m2", "ghost"])
    assert snapshot(store) == before  # all or nothing


def test_unstamp_rewound_removes_exactly_those_stamps_for_every_handle(
    store: BaseStore, store_handles: Any
) -> None:
    """Unstamp rewound removes exactly those stamps, metadata only, seen by every handle."""
    sid = build(store, "m1-m2-m3; m1-b1-b2", head="m3")
    store.stamp_rewound(sid, ["b1", "b2", "m3"])
    other = store_handles()
    assert other.node("b1").rewound and other.index(sid).is_rewound("b2")  # read there
    updated = store.session(sid).updated_at
    rev = store.index(sid).rev
    assert store.unstamp_rewound(sid, ["b2", "m2", "b1", "b2"]) == ["b2", "b1"]  # m2: not stamped
    assert store.index(sid).rev > rev
    for h in (store, other, store_handles()):
        assert [n.id for n in h.nodes(sid) if n.rewound] == ["m3"]
        assert not h.node("b1").rewound and not h.index(sid).is_rewound("b2")
        assert h.tips(sid) == ["b2", "m2"]  # (m3 is still rewound)
    assert store.session(sid).updated_at == updated  # a metadata-only write
    assert store.session(sid).head == "m3"
    assert other.unstamp_rewound(sid, ["b1"]) == []
    store.stamp_rewound(sid, ["b1"])  # stamped again after the removal: every handle sees it
    assert other.node("b1").rewound and other.index(sid).is_rewound("b1")
    before = snapshot(store)
    with pytest.raises(UnknownNodeError):
        store.unstamp_rewound(sid, ["m3", "ghost"])
    with pytest.raises(RuntimeError), store.atomic():
        store.unstamp_rewound(sid, ["m3"])
        raise RuntimeError("roll back")
    assert snapshot(store) == before  # all or nothing
    assert snapshot(other) == before


def test_set_artifact_flags_stored_nodes_for_every_handle(
    store: BaseStore, store_handles: Any
) -> None:
    """Set artifact flags and clears stored nodes' flags, metadata only, seen by every handle."""
    sid = build(store, "m1-m2-m3; m2-p1", head="m3")
    other = store_handles()
    assert sorted(other.tips(sid)) == ["m3", "p1"]  # the other handle's index is built now
    updated = store.session(sid).updated_at
    assert store.set_artifact(sid, {"p1": True, "m3": False}) == ["p1"]  # m3 is not flagged
    for h in (store, other, store_handles()):
        assert h.index(sid).is_artifact("p1") and not h.index(sid).is_artifact("m3")
        assert h.node("p1").metadata == {"artifact": True}
        assert h.tips(sid) == ["m3"]
        assert h.stats(sid).forks == 0
    assert store.session(sid).updated_at == updated  # a metadata-only write
    assert store.node("p1").content == "p1" and store.node("p1").predecessor == "m2"
    assert other.set_artifact(sid, {"p1": False}) == ["p1"]
    assert store.node("p1").metadata == {} and sorted(store.tips(sid)) == ["m3", "p1"]
    before = snapshot(store)
    with pytest.raises(UnknownNodeError):
        store.set_artifact(sid, {"m3": True, "ghost": True})
    with pytest.raises(RuntimeError), store.atomic():
        store.set_artifact(sid, {"m2": True})
        raise RuntimeError("roll back")
    assert snapshot(store) == before  # all or nothing
    assert snapshot(other) == before


def test_the_index_handed_out_is_read_only(store: BaseStore) -> None:
    """The index handed out is read only."""
    sid = build(store, "m1-m2; m1-b1")
    idx = store.index(sid)
    with pytest.raises(TypeError):
        idx.pred["x"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        idx.bits["m1"] = 0  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        idx.head = "b1"  # type: ignore[misc]
    assert idx.children["m1"] == ("m2", "b1")
    assert idx.kind_of("m1") == Kind.MESSAGE and idx.role_of("m2") == Role.ASSISTANT
    assert idx.is_message("m1") and not idx.is_summary("m1") and not idx.is_rewound("m1")
    s = store.compact(sid, ["m1", "b1"], "sum", layout="inline", id="s1")
    assert store.index(sid).is_summary(s.id) and not store.index(sid).is_message(s.id)
    assert idx.head == "s1"  # the face reads through to the refreshed index


# ------------------------------------------------------------------ markers per (provider, value)


def test_two_values_of_one_provider_never_overwrite_each_other(store: BaseStore) -> None:
    """Two values of one provider never overwrite each other."""
    sid = build(store, chain("m", 1, 4))
    assert store.mark(sid, ["m1", "m2"], "memory", "ws-a") == 2
    assert store.mark(sid, ["m1", "m2", "m3"], "memory", "ws-b") == 3
    assert [n.id for n in store.pending(sid, "memory", "ws-a")] == ["m3", "m4"]
    assert [n.id for n in store.pending(sid, "memory", "ws-b")] == ["m4"]
    assert store.node("m1").written == {"memory": ("ws-a", "ws-b")}
    assert store.node("m1").is_written("memory", "ws-a")
    assert store.mark(sid, ["m1", "m2"], "memory", "ws-a") == 0  # already there
    assert store.verify_markers(sid) == []
    assert store.verify_markers(sid, "memory", value="ws-a") == []


def test_a_marker_of_another_value_reads_as_unwritten(store: BaseStore) -> None:
    """A marker of another value reads as unwritten."""
    sid = build(store, chain("m", 1, 3))
    store.mark(sid, ["m1", "m2", "m3"], "memory", "old")
    assert [n.id for n in store.pending(sid, "memory", "new")] == ["m1", "m2", "m3"]
    with pytest.raises(MarkerGapError):
        store.mark(sid, ["m2"], "memory", "new")  # m1 is unwritten for "new"
    assert store.pending(sid, "memory", "old") == []


def test_markers_of_two_handles_stay_apart(store: BaseStore, store_handles: Any) -> None:
    """Markers of two handles stay apart."""
    sid = build(store, chain("m", 1, 4))
    other = store_handles()
    store.mark(sid, ["m1", "m2"], "memory", "ws-a")
    other.mark(sid, ["m1"], "memory", "ws-b")
    store.mark(sid, ["m3"], "memory", "ws-a")
    for h in (store, other):
        assert [n.id for n in h.pending(sid, "memory", "ws-a")] == ["m4"]
        assert [n.id for n in h.pending(sid, "memory", "ws-b")] == ["m2", "m3", "m4"]


def test_a_commit_is_visible_to_another_handle(store: BaseStore, store_handles: Any) -> None:
    """A commit is visible to another handle."""
    sid = build(store, chain("m", 1, 2))
    reader = store_handles()
    assert [n.id for n in reader.branch(sid)] == ["m1", "m2"]
    store.append(sid, "m3", role="user", id="m3")
    store.mark(sid, ["m1"], "memory", "w")
    assert [n.id for n in reader.branch(sid)] == ["m1", "m2", "m3"]
    assert reader.node("m1").written == {"memory": ("w",)}


def test_iter_nodes_and_node_count(store: BaseStore) -> None:
    """Iter nodes streams what nodes returns, chunk by chunk; node count counts the session."""
    sid = build(store, chain("m", 1, 7))
    assert [n.id for n in store.iter_nodes(sid, chunk=3)] == [n.id for n in store.nodes(sid)]
    assert [n.id for n in store.iter_nodes(sid, ["m5", "m1"], chunk=1)] == ["m5", "m1"]
    assert store.node_count(sid) == 7
    with pytest.raises(UnknownNodeError):
        list(store.iter_nodes(sid, ["m1", "ghost"]))
    with pytest.raises(UnknownSessionError):
        store.node_count("nope")


def test_pending_ids_by_tip_matches_pending_by_tip(store: BaseStore) -> None:
    """Pending ids by tip yields the ids of pending by tip, head first, marking between tips."""
    sid = build(store, "m1-m2-m3; m2-b1-b2", head="m3")
    store.mark(sid, ["m1"], "memory", "w")
    want = [(t, [n.id for n in ns]) for t, ns in store.pending_by_tip(sid, "memory", "w")]
    assert list(store.pending_ids_by_tip(sid, "memory", "w")) == want
    assert want[0][0] == "m3"
    seen = []
    for tip, ids in store.pending_ids_by_tip(sid, "memory", "w"):
        seen.append((tip, ids))
        store.mark(sid, ids, "memory", "w")
    assert seen == [("m3", ["m2", "m3"]), ("b2", ["b1", "b2"])]  # the shared m2 is handed out once


def test_reads_of_a_few_nodes_on_another_handle_equal_the_writers(
    store: BaseStore, store_handles: Any
) -> None:
    """Reads of a few nodes on another handle (no index built there) equal the writer's reads."""
    sid = build(store, "m1-m2-m3-m4; m2-b1", head="m4")
    store.mark(sid, ["m1", "m2"], "memory", "ws-a")
    store.mark(sid, ["m1"], "memory", "ws-b")
    store.rewind(sid, "m3")
    store.compact(sid, ["m1", "m2"], "sum", id="s1")
    want: dict[str, Node] = {n.id: n for n in store.nodes(sid)}
    other = store_handles()
    for nid, n in want.items():
        assert other.node(nid) == n
        assert other.nodes(sid, [nid]) == [n]
    assert other.nodes(sid, ["m4", "m1"]) == [want["m4"], want["m1"]]
    with pytest.raises(UnknownNodeError):
        other.nodes(sid, ["m1", "ghost"])
    with pytest.raises(UnknownSessionError):
        other.nodes("nope", ["m1"])
    assert other.latest_message_id(sid) == "m3"

"""Decoded nodes kept between reads: served as they are, never stale on markers, stamps or content."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from builder import build, chain

from graph import SessionStore
from graph.index import DECODED_NODE_BYTES, DECODED_PAYLOAD_BYTES, DecodedNodes, SessionIndex
from graph.models import Kind, Node, Role, from_micros
from graph.store.base import BaseStore
from graph.testing.contract import StoreFactory


def _warm(st: BaseStore, sid: str) -> list[Node]:
    """Read the session's branch and pending twice; the second read is served from the kept models."""
    first = st.branch(sid)
    again = st.branch(sid)
    assert all(a is b for a, b in zip(first, again, strict=True))  # kept, not decoded again
    st.pending(sid, "memory", "w")
    return again


def test_a_kept_node_is_the_same_object_until_its_markers_change(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 6))
    before = {n.id: n for n in _warm(store, sid)}
    store.mark(sid, ["m1", "m2"], "memory", "w")
    after = {n.id: n for n in store.branch(sid)}
    assert after["m1"].metadata["written"] == {"memory": ("w",)}
    assert after["m1"] is not before["m1"]
    assert after["m3"] is before["m3"]  # nothing changed on it: still the kept model
    assert [n.id for n in store.pending(sid, "memory", "w")] == ["m3", "m4", "m5", "m6"]


def test_another_handles_markers_are_seen_by_the_next_pending(store_factory: StoreFactory) -> None:
    st, other = store_factory(), store_factory()
    sid = build(st, chain("m", 1, 8))
    _warm(st, sid)
    assert [n.id for n in st.pending(sid, "memory", "w")][:2] == ["m1", "m2"]
    other.mark(sid, ["m1", "m2", "m3"], "memory", "w")
    other.mark(sid, ["m1"], "search", "x")
    got = st.pending(sid, "memory", "w")
    assert [n.id for n in got] == ["m4", "m5", "m6", "m7", "m8"]
    by_id = {n.id: n for n in st.branch(sid)}
    assert by_id["m1"].metadata["written"] == {"memory": ("w",), "search": ("x",)}
    assert by_id["m3"].written == {"memory": ("w",)}
    assert "written" not in by_id["m4"].metadata
    assert st.node("m2").written == {"memory": ("w",)}


def test_another_handles_rewind_stamps_are_seen(store_factory: StoreFactory) -> None:
    st, other = store_factory(), store_factory()
    sid = build(st, chain("m", 1, 8))
    _warm(st, sid)
    assert not st.node("m7").rewound
    other.rewind(sid, "m5")
    assert st.node("m7").rewound
    assert [n.rewound for n in st.nodes(sid, ["m5", "m6", "m8"])] == [False, True, True]
    assert [n.id for n in st.branch(sid)] == [f"m{i}" for i in range(1, 6)]
    assert [n.id for n in st.pending(sid, "memory", "w")][-1] == "m5"


def test_a_rolled_back_mark_leaves_no_marker_on_a_kept_node(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 4))
    _warm(store, sid)
    with pytest.raises(RuntimeError), store.atomic():
        store.mark(sid, ["m1", "m2"], "memory", "w")
        assert store.node("m1").written == {"memory": ("w",)}
        raise RuntimeError("roll back")
    assert [n.written for n in store.branch(sid)] == [{}, {}, {}, {}]
    assert [n.id for n in store.pending(sid, "memory", "w")] == ["m1", "m2", "m3", "m4"]


def test_a_session_stored_again_with_other_content_is_read_anew(
    store_factory: StoreFactory,
) -> None:
    st, other = store_factory(), store_factory()
    sid = build(st, chain("m", 1, 3))
    _warm(st, sid)
    other.delete_session(sid)
    other.create_session("again", id=sid)
    for i, text in enumerate(("new one", "new two", "new three"), start=1):
        other.append(sid, text, role="user" if i % 2 else "assistant", id=f"m{i}")
    assert [n.content for n in st.branch(sid)] == ["new one", "new two", "new three"]
    assert st.node("m2").content == "new two"


def test_a_large_node_is_decoded_on_every_read(store: BaseStore) -> None:
    sid = store.create_session("big").id
    store.append(sid, "x" * (DECODED_PAYLOAD_BYTES + 1), role="user", id="big")
    store.append(sid, "small", role="assistant", id="small")
    a, b = store.branch(sid), store.branch(sid)
    assert a[0] == b[0] and a[0] is not b[0]
    assert a[1] is b[1]


def test_another_process_marking_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 6))
    _warm(st, sid)
    script = (
        "import sys; from graph import SessionStore\n"
        "s = SessionStore(sys.argv[1]); s.mark('s', ['m1', 'm2'], 'memory', 'w')\n"
        "s.rewind('s', 'm5'); s.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True)
    assert [n.id for n in st.pending(sid, "memory", "w")] == ["m3", "m4", "m5"]
    by_id = {n.id: n for n in st.nodes(sid)}
    assert by_id["m2"].written == {"memory": ("w",)} and not by_id["m3"].written
    assert by_id["m6"].rewound and not by_id["m5"].rewound
    st.close()


def _node(i: int) -> Node:
    return Node(
        id=f"n{i}",
        session_id="s",
        predecessor=None,
        kind=Kind.MESSAGE,
        role=Role.USER,
        content=str(i),
        created_at=from_micros(0),
    )


def test_the_cache_keeps_the_most_recently_used_within_its_budget() -> None:
    idx, other = SessionIndex("s"), SessionIndex("s")
    kept = DecodedNodes(budget=2 * (DECODED_NODE_BYTES + 10))
    kept.put(idx, [(_node(1), 10), (_node(2), 10)])
    assert kept.take(idx, ["n1"])[1] == 0  # n1 is now the most recently used
    kept.put(idx, [(_node(3), 10)])
    assert len(kept) == 2 and kept.size == kept.budget
    found, missing = kept.take(idx, ["n1", "n2", "n3"])
    assert [n and n.id for n in found] == ["n1", None, "n3"] and missing == 1
    assert kept.take(other, ["n1"]) == ([None], 1)  # built from another index: not served
    idx.add_marks("memory", "w", ["n1"])  # the index it fed drops what it marks
    assert kept.take(idx, ["n1", "n3"])[1] == 1 and kept.size == DECODED_NODE_BYTES + 10
    kept.put(idx, [(_node(4), 10 * DECODED_NODE_BYTES)])  # alone over the budget: nothing stays
    assert len(kept) == 0 and kept.size == 0
    none = DecodedNodes(budget=0)
    none.put(idx, [(_node(3), 10)])
    assert len(none) == 0

"""Scenarios from public bug reports in this field, each reduced to the graph and checked on both stores.

Each test names the failure it guards against; the ordinal cursor (a position, not an identity) is run beside
the marker walk where it is the thing that fails.
"""

from __future__ import annotations

from builder import turns

from graph import BaseStore, Role
from graph.cursors import IdSetCursor, OrdinalCursor
from graph.testing import Consumer


def _write_all(store: BaseStore, sid: str, consumer: Consumer) -> list[str]:
    """A session-boundary pass with markers; returns the ids delivered, in delivery order."""
    got: list[str] = []
    for tip, batch in store.pending_by_tip(sid, consumer.provider, consumer.value):
        consumer.deliver(batch)
        consumer.acknowledge(store, sid, batch, head=tip)
        got += [n.id for n in batch]
    return got


def test_branch_switch_leaves_a_count_cursor_blind(store: BaseStore) -> None:
    """Switching the head to another branch: a count-based cursor sees nothing new there."""
    sid = store.create_session().id
    main = turns(store, sid, 6)
    other = turns(store, sid, 3, after=main[1], tag="b")
    store.set_head(sid, main[-1])
    ordinal = OrdinalCursor()
    claimed = ordinal.pending_positions(store, sid)
    ordinal.advance(claimed[-1][1].id, claimed[-1][0])
    store.mark(sid, [n for _, n in claimed], "memory", "ws")
    store.set_head(sid, other[-1])  # the user switches to the other branch
    assert ordinal.pending(store, sid) == []  # positions 3-5 <= 6: blind to the whole branch
    assert store.pending_ids(sid, "memory", "ws") == other


def test_compaction_summary_is_not_written_again(store: BaseStore) -> None:
    """A compaction summary restates what was written; it must not come back as new content."""
    sid = store.create_session().id
    m = turns(store, sid, 4)
    memory = Consumer("memory", "ws")
    assert _write_all(store, sid, memory) == m
    inline = store.compact(sid, m[:3], "the story so far", layout="inline")
    assert store.pending_ids(sid, "memory", "ws") == []
    sibling = store.compact(sid, m[1:3], "the middle, retold", layout="sibling")
    assert store.session(sid).head == sibling.id  # the head is on the summary's line
    assert store.pending_ids(sid, "memory", "ws") == []
    after = store.append(sid, "go on", role=Role.USER).id
    assert store.pending_ids(sid, "memory", "ws") == [after]
    assert _write_all(store, sid, memory) == [after]
    assert inline.id not in memory.delivered and sibling.id not in memory.delivered
    assert store.verify_markers(sid) == []


def test_unwritten_covered_turns_come_in_the_summary_place(store: BaseStore) -> None:
    """Sibling layout, nothing written yet: the covered turns are owed, the summary never is."""
    sid = store.create_session().id
    m = turns(store, sid, 4)
    s = store.compact(sid, m[1:], "summary", layout="sibling")
    assert store.pending_ids(sid, "memory", "ws") == m
    assert [n.id for n in IdSetCursor().pending(store, sid)] == m
    assert s.id not in store.pending_ids(sid, "memory", "ws")


def test_rewound_turns_do_not_come_back(store: BaseStore) -> None:
    """A rewind abandons turns; no later pass, head move or boundary pass delivers them."""
    sid = store.create_session().id
    m = turns(store, sid, 4)
    gone = store.rewind(sid, m[1])
    assert gone == m[2:]
    again = turns(store, sid, 2, tag="r")
    memory = Consumer("memory", "ws")
    assert _write_all(store, sid, memory) == [*m[:2], *again]
    assert set(store.tips(sid)) == {again[-1]}
    store.set_head(sid, m[-1])  # even with the head back on the rewound line
    assert store.pending_ids(sid, "memory", "ws") == []
    assert not set(gone) & set(memory.delivered)


def test_fork_that_copies_the_parent_entries_delivers_them_once(store: BaseStore) -> None:
    """A fork written as a copy of the parent's entries (same ids, as Codex forks do) plus new ones."""
    sid = store.create_session().id
    parent = turns(store, sid, 5)
    memory = Consumer("memory", "ws")
    assert _write_all(store, sid, memory) == parent
    copied = store.nodes(sid, parent[:3])
    fork = [
        copied[-1].model_copy(update={"id": f"f{i}", "predecessor": p, "content": f"fork {i}"})
        for i, p in ((4, copied[-1].id), (5, "f4"))
    ]
    added = store.add_nodes(sid, [*copied, *fork], head="f5")
    assert [n.id for n in added] == ["f4", "f5"]  # the copied prefix is already there: skipped
    assert _write_all(store, sid, memory) == ["f4", "f5"]
    assert all(times == 1 for times in memory.delivered.values())
    assert store.verify_markers(sid) == []


def test_memory_reset_makes_everything_pending_and_keeps_other_markers(store: BaseStore) -> None:
    """A new workspace id reads every turn as unwritten; another provider's markers stay."""
    sid = store.create_session().id
    m = turns(store, sid, 4)
    other = turns(store, sid, 2, after=m[1], tag="b")
    memory, search = Consumer("memory", "ws-1"), Consumer("search", "idx")
    _write_all(store, sid, memory)
    _write_all(store, sid, search)
    memory.reset("ws-2")
    assert store.pending_ids(sid, "memory", "ws-2") == [*m[:2], *other]
    assert set(_write_all(store, sid, memory)) == set(m) | set(other)
    assert all(times == 1 for times in memory.delivered.values())
    for tip in store.tips(sid):
        assert store.pending_ids(sid, "search", "idx", head=tip) == []
    assert store.verify_markers(sid, "search") == []
    assert {n.written["search"] for n in store.nodes(sid, [*m, *other])} == {("idx",)}

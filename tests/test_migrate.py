"""Migration from the reference cursors to written markers: only a continuous prefix of each branch."""

from __future__ import annotations

import random

from builder import turns
from hypothesis import given
from hypothesis import strategies as st

from graph import BaseStore, MemorySessionStore, Role
from graph.cursor_migration import claimed_by_ordinal, migrate_ids, migrate_ordinal
from graph.cursors import IdSetCursor, OrdinalCursor, effective_branch, oracle_eligible
from graph.testing import History, operations


def test_ordinal_on_one_line_marks_up_to_its_message(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 6)
    cursor = OrdinalCursor(ordinal=4, message_id=m[3])
    assert claimed_by_ordinal(store, sid, cursor) == set(m[:4])
    got = migrate_ordinal(store, sid, cursor, "memory", "ws")
    assert (got.marked, got.left) == (m[:4], [])
    assert store.pending_ids(sid, "memory", "ws") == m[4:]


def test_ordinal_reads_the_branch_it_moved_on(store: BaseStore) -> None:
    """The cursor moved on the main line; the head is now on a fork: the fork is not claimed."""
    sid = store.create_session().id
    main = turns(store, sid, 9)
    own = turns(store, sid, 2, after=main[2], tag="b")
    got = migrate_ordinal(store, sid, OrdinalCursor(9, main[-1]), "memory", "ws")
    assert got.marked == main and got.left == []
    assert store.pending_ids(sid, "memory", "ws") == own


def test_ordinal_without_a_known_message_reads_the_head(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    got = migrate_ordinal(store, sid, OrdinalCursor(2, "gone"), "memory", "ws")
    assert got.marked == m[:2]


def test_id_set_with_a_hole_marks_only_the_prefix(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 5)
    got = migrate_ids(store, sid, {m[0], m[1], m[3], "elsewhere"}, "memory", "ws")
    assert got.marked == m[:2]
    assert got.left == [m[3]]  # below the unwritten m2: marking it would strand m2
    assert store.verify_markers(sid) == []
    assert store.pending_ids(sid, "memory", "ws") == m[2:]


def test_id_set_after_a_fork_marks_each_branch_prefix(store: BaseStore) -> None:
    sid = store.create_session().id
    main = turns(store, sid, 4)
    own = turns(store, sid, 3, after=main[1], tag="b")
    got = migrate_ids(store, sid, {*main, own[0], own[2]}, "memory", "ws")
    assert set(got.marked) == {*main, own[0]} and got.left == [own[2]]
    assert store.pending_ids(sid, "memory", "ws") == own[1:]
    assert store.pending_ids(sid, "memory", "ws", head=main[-1]) == []


def test_migration_keeps_existing_markers_and_other_values(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    store.mark(sid, m[:2], "memory", "ws")
    got = migrate_ids(store, sid, {m[2]}, "memory", "ws")
    assert got.marked == [m[2]]
    assert migrate_ids(store, sid, set(m[:3]), "memory", "ws").marked == []  # idempotent


def test_migration_through_a_sibling_summary(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    s = store.compact(sid, m[1:3], "summary", layout="sibling")
    after = store.append(sid, "next", role=Role.USER).id
    got = migrate_ids(store, sid, {m[0], m[1], m[2], after}, "memory", "ws")
    assert set(got.marked) == {m[0], m[1], m[2], after} and s.id not in got.marked
    assert store.pending_ids(sid, "memory", "ws") == []
    assert store.pending_ids(sid, "memory", "ws", head=m[3]) == [m[3]]


@given(operations(max_size=20), st.randoms(use_true_random=False))
def test_migrating_any_id_set_leaves_no_gap_and_loses_nothing(
    ops: list, rnd: random.Random
) -> None:
    history = History(MemorySessionStore)
    for op in ops:
        op.apply(history)
    store, sid = history.store, history.sessions[0]
    nodes = store.nodes(sid, list(store.index(sid).pred))
    claimed = {n.id for n in nodes if rnd.random() < 0.6}
    got = migrate_ids(store, sid, claimed, "migrated", "v")
    assert set(got.marked) <= claimed and set(got.left) <= claimed
    assert store.verify_markers(sid, "migrated") == []
    oracle = IdSetCursor(set(got.marked))
    for tip in {*store.tips(sid), *([store.session(sid).head] if store.session(sid).head else [])}:
        pending = store.pending_ids(sid, "migrated", "v", head=tip)
        assert pending == [n.id for n in oracle.pending(store, sid, head=tip)]
        unclaimed = [
            n.id
            for n in effective_branch(store, sid, tip)
            if oracle_eligible(n) and n.id not in claimed
        ]
        assert set(unclaimed) <= set(pending)  # no turn the cursor did not claim is ever skipped

"""The reference cursors: the ordinal cursor's failures with the original writer's own figures, and
the id-set oracle's reading of summaries, rewinds and ineligible turns.

The ordinal cursor's known failure: a main line of 9 turns is written, the user goes back to m3 and forks. The
ordinal cursor holds 9, so a branch of 2 own turns (positions 4-5) gets nothing, and a branch of 8 own
turns (positions 4-11) gets only its last 2, after which the whole branch is recorded as written.
"""

from __future__ import annotations

import pytest
from builder import turns

from graph import BaseStore, Role
from graph.cursors import (
    CursorBackwardsError,
    IdSetCursor,
    OrdinalCursor,
    effective_branch,
    oracle_eligible,
)
from graph.errors import GraphError
from graph.models import ToolCallBlock


def _written_main_line(store: BaseStore) -> tuple[str, list[str], OrdinalCursor, IdSetCursor]:
    sid = store.create_session("seed").id
    main = turns(store, sid, 9)
    ordinal, ids = OrdinalCursor(), IdSetCursor()
    batch = ordinal.pending_positions(store, sid)
    ordinal.advance(batch[-1][1].id, batch[-1][0])
    ids.record(n for _, n in batch)
    store.mark(sid, [n for _, n in batch], "memory", "ws")
    return sid, main, ordinal, ids


def test_seed_main_line_written_to_nine(store: BaseStore) -> None:
    sid, main, ordinal, ids = _written_main_line(store)
    assert (ordinal.ordinal, ordinal.message_id) == (9, main[-1])
    assert ordinal.pending(store, sid) == ids.pending(store, sid) == []


def test_seed_short_branch_gets_nothing(store: BaseStore) -> None:
    sid, main, ordinal, ids = _written_main_line(store)
    own = turns(store, sid, 2, after=main[2], tag="b")
    assert ordinal.pending(store, sid) == []  # positions 4-5, both <= 9: the branch is missed
    assert [n.id for n in ids.pending(store, sid)] == own
    assert store.pending_ids(sid, "memory", "ws") == own


def test_seed_long_branch_gets_its_last_two_then_reads_written(store: BaseStore) -> None:
    sid, main, ordinal, ids = _written_main_line(store)
    own = turns(store, sid, 8, after=main[2], tag="b")
    claimed = ordinal.pending_positions(store, sid)
    assert [(i, n.id) for i, n in claimed] == [(10, own[-2]), (11, own[-1])]
    ordinal.advance(claimed[-1][1].id, claimed[-1][0])
    ids.record(n for _, n in claimed)
    assert ordinal.pending(store, sid) == []  # the whole branch is now recorded as written
    assert [n.id for n in ids.pending(store, sid)] == own[:-2]  # six turns were never written
    assert store.pending_ids(sid, "memory", "ws") == own  # the marker walk owes all eight


def test_ordinal_refuses_to_move_backwards() -> None:
    cursor = OrdinalCursor(ordinal=9, message_id="m9")
    with pytest.raises(CursorBackwardsError) as got:
        cursor.advance("b5", 5)
    assert (got.value.stored, got.value.requested) == (9, 5)
    assert isinstance(got.value, GraphError) and isinstance(got.value, ValueError)
    assert (cursor.ordinal, cursor.message_id) == (9, "m9")
    cursor.advance("m9", 9)  # the same position is not backwards
    assert cursor.ordinal == 9


def test_ordinal_positions_skip_rewound_rows(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    store.rewind(sid, m[1])
    c = store.append(sid, "again", role=Role.USER).id
    positions = [(i, n.id) for i, n in OrdinalCursor().positions(store, sid)]
    assert positions == [(1, m[0]), (2, m[1]), (3, c)]  # c takes the rewound m2's position


def test_ordinal_counts_ineligible_rows() -> None:
    from graph import MemorySessionStore

    store = MemorySessionStore()
    sid = store.create_session().id
    u = store.append(sid, "q", role=Role.USER).id
    store.append(sid, (ToolCallBlock(id="1", name="ls"),), role=Role.ASSISTANT)
    store.append(sid, "out", role=Role.TOOL)
    a = store.append(sid, "a", role=Role.ASSISTANT).id
    assert [(i, n.id) for i, n in OrdinalCursor().pending_positions(store, sid)] == [(1, u), (4, a)]


def test_id_set_skips_ineligibleturns(store: BaseStore) -> None:
    sid = store.create_session().id
    u = store.append(sid, "q", role=Role.USER).id
    store.append(sid, "", role=Role.ASSISTANT)
    store.append(sid, "sub-agent report", role=Role.USER, metadata={"scheduled": True})
    store.append(sid, "rules", role=Role.SYSTEM)
    store.append(sid, "progress", role=Role.SYSTEM, kind="event")
    a = store.append(sid, "a", role=Role.ASSISTANT).id
    assert [n.id for n in IdSetCursor().pending(store, sid)] == [u, a]
    assert IdSetCursor({u}).pending(store, sid)[0].id == a


@pytest.mark.parametrize("layout", ["inline", "sibling"])
def test_id_set_never_delivers_a_summary(store: BaseStore, layout: str) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    s = store.compact(sid, m[1:3], "summary", layout=layout)
    assert not oracle_eligible(s)
    path = [n.id for n in effective_branch(store, sid)]
    if layout == "inline":
        assert path == [*m, s.id]
        assert [n.id for n in IdSetCursor().pending(store, sid)] == m
    else:  # the head is on the summary's line: the covered nodes stand in its place, m3 is not on it
        assert path == [m[0], m[1], m[2], s.id]
        assert [n.id for n in IdSetCursor().pending(store, sid)] == m[:3]
    assert [n.id for n in IdSetCursor().pending(store, sid)] == store.pending_ids(
        sid, "memory", "w"
    )


def test_id_set_drops_rewound_nodes(store: BaseStore) -> None:
    sid = store.create_session().id
    m = turns(store, sid, 4)
    store.rewind(sid, m[1])
    store.set_head(sid, m[3])  # the head back on rewound nodes: they stay undeliverable
    assert [n.id for n in IdSetCursor().pending(store, sid)] == m[:2]
    assert store.pending_ids(sid, "memory", "w") == m[:2]

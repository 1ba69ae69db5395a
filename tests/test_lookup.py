"""Session look-up (memory.lookup): bounds, totals, the "older messages not returned" flag, paging."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from graph import Kind, NotOnBranchError, Role, UnknownNodeError, UnknownSessionError
from graph.store.base import BaseStore
from memory.caps import LOOKUP_DEFAULT_MESSAGES, LOOKUP_MAX_MESSAGES, LOOKUP_MAX_SESSIONS
from memory.lookup import (
    clamp_count,
    latest_message,
    open_session,
    read_transcript,
    recent_sessions,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def chat(store: BaseStore, n: int, title: str = "chat", start: datetime = T0) -> str:
    """A session of ``n`` alternating user/assistant messages "m0".."m{n-1}", one second apart."""
    sid = store.create_session(title, created_at=start).id
    for i in range(n):
        store.append(
            sid,
            f"m{i}",
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            created_at=start + timedelta(seconds=i + 1),
        )
    return sid


def texts(window) -> list[str]:
    return [m.text for m in window.messages]


@pytest.mark.parametrize(
    ("count", "used"),
    [(0, 1), (1, 1), (30, 30), (31, 30), (-5, 1), (None, 10), (7, 7)],
    ids=["zero", "one", "thirty", "thirty-one", "negative", "none", "seven"],
)
def test_count_is_clamped_and_window_is_the_newest_oldest_first(
    store: BaseStore, count: int | None, used: int
) -> None:
    sid = chat(store, 42)
    w = read_transcript(store, sid, count)
    assert w.count == used == w.returned == len(w.messages)
    assert w.requested == count
    assert w.total == 42
    assert texts(w) == [f"m{i}" for i in range(42 - used, 42)]
    assert w.older == 42 - used and w.newer == 0
    assert w.older_omitted
    assert f"{42 - used} older message" in w.note and "not returned" in w.note
    assert w.next_before == w.messages[0].id
    assert w.session_id == sid


def test_missing_count_reads_the_default_ten(store: BaseStore) -> None:
    sid = chat(store, 12)
    w = read_transcript(store, sid)
    assert w.returned == LOOKUP_DEFAULT_MESSAGES == 10
    assert w.requested == 10 and w.total == 12 and w.older == 2
    assert texts(w) == [f"m{i}" for i in range(2, 12)]


def test_clamping_is_said_in_the_note(store: BaseStore) -> None:
    sid = chat(store, 3)
    assert "clamped to 30" in read_transcript(store, sid, 31).note
    assert "clamped to 1" in read_transcript(store, sid, 0).note
    assert "clamped" not in read_transcript(store, sid, 5).note


def test_short_session_returns_everything_and_says_nothing_is_older(store: BaseStore) -> None:
    sid = chat(store, 5)
    w = read_transcript(store, sid, 10)
    assert texts(w) == ["m0", "m1", "m2", "m3", "m4"]
    assert (w.total, w.returned, w.older) == (5, 5, 0)
    assert not w.older_omitted and w.next_before is None
    assert "not returned" not in w.note and "no older messages" in w.note


def test_exactly_count_messages_is_not_flagged(store: BaseStore) -> None:
    sid = chat(store, 30)
    w = read_transcript(store, sid, 30)
    assert w.returned == w.total == 30 and not w.older_omitted


def test_one_past_the_window_is_flagged(store: BaseStore) -> None:
    sid = chat(store, 31)
    w = read_transcript(store, sid, 30)
    assert w.older == 1 and w.older_omitted
    assert "1 older message was not returned" in w.note


def test_empty_session(store: BaseStore) -> None:
    sid = store.create_session("empty").id
    w = read_transcript(store, sid)
    assert (w.total, w.returned, w.older, w.head) == (0, 0, 0, None)
    assert w.messages == () and not w.older_omitted
    assert w.note == "The session has no messages."
    assert latest_message(store, sid) is None


def test_only_messages_of_the_heads_branch_count(store: BaseStore) -> None:
    sid = chat(store, 4)
    branch = store.branch(sid)
    # an event after the last message, a fork off m1, and a rewound turn on the head's branch
    store.append(sid, "progress", role=Role.SYSTEM, kind=Kind.EVENT)
    head = store.session(sid).head
    store.fork(sid, branch[1].id, "other branch", role=Role.USER, move_head=False)
    store.append(sid, "regretted", role=Role.USER)
    store.rewind(sid, head)
    w = read_transcript(store, sid, 30)
    assert texts(w) == ["m0", "m1", "m2", "m3"]
    assert w.total == 4
    info = open_session(store, sid)
    assert info.messages == 4
    assert len(info.live_tips) == 2
    latest = latest_message(store, sid)
    assert latest is not None and latest.text == "m3"


def test_compaction_summary_is_not_a_message(store: BaseStore) -> None:
    sid = chat(store, 4)
    covered = [n.id for n in store.branch(sid)[:2]]
    store.compact(sid, covered, "summary of m0 and m1", layout="inline")
    store.append(sid, "m4", role=Role.USER)
    w = read_transcript(store, sid, 30)
    assert texts(w) == ["m0", "m1", "m2", "m3", "m4"]


def test_paging_back_with_before_reads_every_message_once(store: BaseStore) -> None:
    sid = chat(store, 23)
    seen: list[str] = []
    w = read_transcript(store, sid, 10)
    pages = 1
    while True:
        seen[:0] = texts(w)
        if w.next_before is None:
            break
        w = read_transcript(store, sid, 10, before=w.next_before)
        pages += 1
        assert w.total == 23
    assert seen == [f"m{i}" for i in range(23)]
    assert pages == 3
    assert w.older == 0 and w.newer == 20 and "20 newer messages" in w.note


def test_before_a_non_message_node(store: BaseStore) -> None:
    sid = chat(store, 3)
    event = store.append(sid, "progress", role=Role.SYSTEM, kind=Kind.EVENT)
    store.append(sid, "m3", role=Role.USER)
    w = read_transcript(store, sid, 10, before=event.id)
    assert texts(w) == ["m0", "m1", "m2"] and w.newer == 1


def test_before_the_first_message_returns_nothing(store: BaseStore) -> None:
    sid = chat(store, 3)
    first = store.branch(sid)[0]
    w = read_transcript(store, sid, 5, before=first.id)
    assert w.returned == 0 and w.total == 3 and w.newer == 3
    assert "No messages precede" in w.note


def test_before_must_be_on_the_heads_branch(store: BaseStore) -> None:
    sid = chat(store, 3)
    branch = store.branch(sid)
    off = store.fork(sid, branch[0].id, "side", role=Role.ASSISTANT)
    store.set_head(sid, branch[-1].id)
    with pytest.raises(NotOnBranchError) as e:
        read_transcript(store, sid, before=off.id)
    assert e.value.node_id == off.id
    with pytest.raises(UnknownNodeError):
        read_transcript(store, sid, before="no-such-node")


def test_unknown_session_is_the_graphs_error(store: BaseStore) -> None:
    for action in (read_transcript, latest_message, open_session):
        with pytest.raises(UnknownSessionError) as e:
            action(store, "no-such-session")
        assert e.value.session_id == "no-such-session"


def test_only_the_window_payloads_are_read(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = chat(store, 40)
    asked: list[int] = []
    real = type(store)._db_rows

    def counting(self: BaseStore, ids):  # type: ignore[no-untyped-def]
        asked.append(len(ids))
        return real(self, ids)

    monkeypatch.setattr(type(store), "_db_rows", counting)
    read_transcript(store, sid, 5)
    assert asked == [5]


def test_recent_sessions_newest_first_at_most_thirty(store: BaseStore) -> None:
    ids = [
        chat(store, i % 3, title=f"s{i}", start=T0 + timedelta(hours=i))
        for i in range(LOOKUP_MAX_SESSIONS + 5)
    ]
    got = recent_sessions(store)
    assert len(got) == 30
    assert [s.id for s in got] == ids[::-1][:30]
    assert [s.updated_at for s in got] == sorted((s.updated_at for s in got), reverse=True)
    assert [s.messages for s in got[:3]] == [34 % 3, 33 % 3, 32 % 3]
    assert len(recent_sessions(store, 100)) == 30
    assert len(recent_sessions(store, None)) == 30
    assert [s.id for s in recent_sessions(store, 0)] == [ids[-1]]
    assert len(recent_sessions(store, 4)) == 4


def test_recent_sessions_are_ordered_by_content_not_head_moves(store: BaseStore) -> None:
    old = chat(store, 3, "old", start=T0)
    new = chat(store, 3, "new", start=T0 + timedelta(days=1))
    store.set_head(old, store.branch(old)[0].id)  # a head move is not new content
    assert [s.id for s in recent_sessions(store)] == [new, old]
    store.append(old, "later", role=Role.USER, created_at=T0 + timedelta(days=2))
    assert [s.id for s in recent_sessions(store)] == [old, new]


def test_open_session_describes_it(store: BaseStore) -> None:
    sid = chat(store, 6, title="migration plan")
    root = store.branch(sid)[0]
    child = store.spawn(sid, root.id, title="sub-agent")
    info = open_session(store, sid)
    assert info.id == sid and info.title == "migration plan"
    assert info.messages == 6 and info.head == store.session(sid).head
    assert info.live_tips == (info.head,)
    assert info.updated_at == T0 + timedelta(seconds=6)
    assert open_session(store, child.id).parent_session == sid


def test_latest_message_skips_trailing_events(store: BaseStore) -> None:
    sid = chat(store, 3)
    store.append(sid, "tool progress", role=Role.TOOL, kind=Kind.EVENT)
    latest = latest_message(store, sid)
    assert latest is not None and latest.text == "m2" and latest.role == Role.USER


def test_clamp_count() -> None:
    assert [clamp_count(c) for c in (None, -1, 0, 1, 29, 30, 31, 10_000)] == [
        10,
        1,
        1,
        1,
        29,
        30,
        30,
        LOOKUP_MAX_MESSAGES,
    ]

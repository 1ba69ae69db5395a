"""What the PostgreSQL store's speed rests on, asserted as behaviour: round trips, not time.

A warm ``pending()`` with nothing changed costs one round trip (the revision check; the node rows
it returns are kept), a refresh after another connection's writes costs two whatever it reads, and
the kept rows never outlive what they describe: another connection's delete and re-create of a
session under the same ids, a rollback, this store's own delete. Round trips are counted from
libpq's protocol trace (each ``Sync`` or simple ``Query`` the client sends waits for the server).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import postgres_url

from graph import Node
from graph.errors import UnknownSessionError

pytest.importorskip("psycopg")

from graph.store.postgres import PostgresSessionStore  # noqa: E402


@pytest.fixture
def pair() -> Iterator[tuple[PostgresSessionStore, PostgresSessionStore]]:
    """Two connections onto one fresh schema (two processes, as far as the server can tell)."""
    url, schema = postgres_url(), f"t_{uuid.uuid4().hex[:16]}"
    a = PostgresSessionStore(url, schema=schema)
    b = PostgresSessionStore(url, schema=schema)
    try:
        yield a, b
    finally:
        b.close()
        a.drop_schema()
        a.close()


@contextmanager
def round_trips(store: PostgresSessionStore) -> Iterator[list[int]]:
    """Count the round trips ``store`` makes inside the block (appended to the list on exit)."""
    counted: list[int] = []
    with tempfile.TemporaryFile("w+") as f:
        store.conn.pgconn.trace(f.fileno())
        try:
            yield counted
        finally:
            store.conn.pgconn.untrace()
            f.seek(0)
            counted.append(sum(1 for line in f if line.split("\t")[1:2] == ["F"] and _waits(line)))


def _waits(line: str) -> bool:
    fields = line.rstrip("\n").split("\t")
    return len(fields) > 3 and fields[3] in ("Sync", "Query")


def _session(store: PostgresSessionStore, turns: int) -> tuple[str, list[str]]:
    sid = store.create_session("speed").id
    ids = [
        store.append(sid, f"turn {i}", role="user" if i % 2 == 0 else "assistant").id
        for i in range(turns)
    ]
    return sid, ids


def test_warm_pending_with_nothing_changed_is_one_round_trip(
    pair: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = pair
    sid, ids = _session(a, 30)
    a.mark(sid, ids[:20], "memory", "ws")
    b.index(sid)  # warm: without a cached index, pending walks the rows instead (a few trips)
    first = b.pending(sid, "memory", "ws")
    with round_trips(b) as counted:
        again = b.pending(sid, "memory", "ws")
    assert again == first and [n.id for n in again] == ids[20:]
    assert counted == [1]
    with round_trips(b) as counted:
        assert b.pending_ids(sid, "memory", "ws") == ids[20:]
    assert counted == [1]


def test_a_refresh_after_another_connections_writes_is_two_round_trips(
    pair: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = pair
    sid, ids = _session(a, 20)
    b.index(sid)
    more = [a.append(sid, f"more {i}", role="user").id for i in range(10)]
    a.mark(sid, ids, "memory", "ws")
    a.stamp_rewound(sid, [more[-1]])
    with round_trips(b) as counted:
        got = b.pending_ids(sid, "memory", "ws")
    assert counted == [2]
    assert got == more[:-1]
    assert b.index(sid).head == more[-1]
    assert b.index(sid).is_rewound(more[-1])


def test_a_warm_pending_sees_a_mark_committed_by_another_connection_at_once(
    pair: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = pair
    sid, ids = _session(a, 6)
    assert [n.id for n in b.pending(sid, "memory", "ws")] == ids
    a.mark(sid, ids[:4], "memory", "ws")
    assert [n.id for n in b.pending(sid, "memory", "ws")] == ids[4:]


def test_a_session_deleted_and_made_again_by_another_connection_is_read_afresh(
    pair: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, b = pair
    sid = a.create_session("again").id
    first = a.append(sid, "the first text", role="user")
    later = a.append(sid, "a later turn", role="assistant")
    a.mark(sid, [first.id, later.id], "memory", "ws")
    assert b.pending(sid, "memory", "ws") == []
    a.delete_session(sid)
    # The same id and node id, other content, no markers (a re-import elsewhere).
    a.create_session("again", id=sid)
    a.add_nodes(sid, [Node(**{**first.model_dump(), "content": "replaced text"})], head=first.id)
    assert [n.text for n in b.pending(sid, "memory", "ws")] == ["replaced text"]
    assert list(b.index(sid).pred) == [first.id]


def test_kept_rows_are_dropped_by_a_rollback_and_by_a_delete(
    pair: tuple[PostgresSessionStore, PostgresSessionStore],
) -> None:
    a, _ = pair
    sid = a.create_session("rolled back").id
    with pytest.raises(RuntimeError), a.atomic():
        a.append(sid, "never stored", role="user")
        assert [n.text for n in a.pending(sid, "memory", "ws")] == ["never stored"]
        raise RuntimeError("roll back")
    assert a.pending(sid, "memory", "ws") == []
    kept = a.append(sid, "stored", role="user")
    assert [n.id for n in a.pending(sid, "memory", "ws")] == [kept.id]
    a.delete_session(sid)
    with pytest.raises(UnknownSessionError):
        a.pending(sid, "memory", "ws")

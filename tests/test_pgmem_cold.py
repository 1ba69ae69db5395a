"""A fresh PostgreSQL store answers pending by a recursive walk of its rows, as the index would.

The scenario has forks, a rewind, both compaction layouts and markers of two values; from every node
as the head and for three predicates, a store with no index cached must give what a store with the
index gives, without building the index. Runs with ``$SESSIONGRAPH_TEST_POSTGRES`` (skipped without
it, required in CI).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from builder import build, chain
from test_speedr_cold import scenario

from graph import Eligible, Kind, Role, UnknownNodeError, UnknownSessionError
from graph.index import MEMORY_ELIGIBLE
from tests.conftest import postgres_url

WITH_SUMMARIES = Eligible(kinds=frozenset({Kind.MESSAGE, Kind.SUMMARY}))
ANY_ROLE = Eligible(roles=frozenset(Role), require_text=False, exclude_scheduled=False)

Opener = Callable[[], Any]


@pytest.fixture
def opener() -> Iterator[Opener]:
    """Opens new PostgresSessionStore handles on one fresh schema, dropped afterwards."""
    import psycopg

    from graph.store.postgres import PostgresSessionStore

    url = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    opened: list[Any] = []

    def open_one() -> Any:
        s = PostgresSessionStore(url, schema=schema)
        opened.append(s)
        return s

    yield open_one
    for s in opened:
        s.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


class _EveryReadFirst(set[str]):
    """Forgets the sessions walked cold, so every read is a process's first (walked on the rows)."""

    def add(self, session_id: str) -> None:
        pass


def _no_index(store: Any) -> None:
    """Make building any session's index fail, so an answer proves it was walked on the rows."""

    def refuse(session_id: str) -> Any:
        raise AssertionError(f"the index of {session_id} was built")

    store._index = refuse
    store._walked_cold = _EveryReadFirst()


@pytest.mark.parametrize("seed", range(3), ids=lambda s: f"seed{s}")
def test_cold_pending_equals_the_indexed_walk_from_every_node(opener: Opener, seed: int) -> None:
    warm = opener()
    sid, order = scenario(warm, seed)
    cold = opener()
    _no_index(cold)
    for eligible in (MEMORY_ELIGIBLE, WITH_SUMMARIES, ANY_ROLE):
        for head in [None, *order]:
            for value in ("w1", "w2", "never"):
                want = warm.pending_ids(sid, "memory", value, head=head, eligible=eligible)
                got = cold.pending_ids(sid, "memory", value, head=head, eligible=eligible)
                assert got == want, (eligible, head, value)
                nodes = cold.pending(sid, "memory", value, head=head, eligible=eligible)
                assert nodes == warm.pending(sid, "memory", value, head=head, eligible=eligible)
    assert sid not in cold._cache


def test_cold_pending_reads_the_walk_not_the_session(opener: Opener) -> None:
    st = opener()
    sid = build(st, chain("m", 1, 400))
    st.mark(sid, [f"m{i}" for i in range(1, 391)], "memory", "w")
    st.mark(sid, [f"m{i}" for i in range(1, 396)], "other", "x")
    cold = opener()
    _no_index(cold)
    got = cold.pending(sid, "memory", "w")
    assert [n.id for n in got] == [f"m{i}" for i in range(391, 401)]
    assert [n.id for n in got if n.written == {"other": ("x",)}] == [
        f"m{i}" for i in range(391, 396)
    ]
    assert cold.pending_ids(sid, "memory", "w") == [n.id for n in got]


def test_cold_pending_raises_for_unknown_sessions_and_heads(opener: Opener) -> None:
    st = opener()
    sid = build(st, chain("m", 1, 3))
    st.create_session("empty", id="empty")
    other = build(st, chain("o", 1, 2), session="t")
    cold = opener()
    _no_index(cold)
    with pytest.raises(UnknownSessionError):
        cold.pending("nope", "memory", "w")
    with pytest.raises(UnknownNodeError):
        cold.pending_ids(sid, "memory", "w", head="nope")
    with pytest.raises(UnknownNodeError):
        cold.pending(sid, "memory", "w", head="o1")  # a node of another session
    assert cold.pending("empty", "memory", "w") == []
    assert [n.id for n in cold.pending(other, "memory", "w")] == ["o1", "o2"]

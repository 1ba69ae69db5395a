"""Fork-history fuzzing: the marker walk against the id-set oracle on generated histories.

Every history of :mod:`graph.testing` (appends of every turn shape, forks, head moves, rewinds,
compactions in both layouts, spawns, consumer passes, crashes between write and mark, memory resets,
copies to another store) is checked after each step by :meth:`graph.testing.History.check`:

* the marker walk's pending equals the id-set oracle's, for the head and every live tip;
* a node is delivered exactly ``crashes + (1 if recorded)`` times: never twice except after a crash
  between write and mark, and then exactly once more;
* on every branch the marked eligible nodes are a prefix (``verify_markers`` and an independent scan);
* the walk visits no more nodes than those after the newest marker on the branch;
* after a boundary pass every eligible node on every live tip's branch is marked.

The same machine with the ordinal cursor must be falsified; the shortest history is printed.
Example counts follow the hypothesis profile (``HYPOTHESIS_PROFILE=ci|deep``, tests/conftest.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from conftest import postgres_url
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from graph import BaseStore, Kind, MemorySessionStore, Node, Role, SessionStore
from graph.testing import (
    Append,
    Compact,
    Consume,
    Copy,
    Fork,
    History,
    Op,
    Rewind,
    Turn,
    history_machine,
    operations,
    ops,
)

_PG_SCHEMAS: list[str] = []
"""Every schema the PostgreSQL stores of this module were given (dropped when the module ends)."""
_PG_FREE: list[str] = []
"""Schemas whose store was closed: emptied and reused, so tables are not created per example."""
_PG_EXAMPLES = 4
"""PostgreSQL runs a quarter of the profile's examples: each write costs a few loopback round trips."""


def _postgres() -> BaseStore:
    """A PostgreSQL store on an emptied schema that no open store uses."""
    from graph.store.postgres import PostgresSessionStore

    class Pooled(PostgresSessionStore):
        def close(self) -> None:
            super().close()
            _PG_FREE.append(str(self.schema))

    if _PG_FREE:
        store = Pooled(postgres_url(), schema=_PG_FREE.pop())
        store.conn.execute("TRUNCATE sessions, nodes, covers, marks, rewound")
        return store
    _PG_SCHEMAS.append(f"t_{uuid.uuid4().hex[:16]}")
    return Pooled(postgres_url(), schema=_PG_SCHEMAS[-1])


def _examples(name: str) -> int:
    n = settings().max_examples
    return max(10, n // _PG_EXAMPLES) if name == "postgres" else n


@pytest.fixture(autouse=True, scope="module")
def _drop_postgres_schemas() -> Iterator[None]:
    yield
    from graph.store.postgres import PostgresSessionStore

    for schema in _PG_SCHEMAS:
        cleanup = PostgresSessionStore(postgres_url(), schema=schema)
        cleanup.drop_schema()
        cleanup.close()


STORES: dict[str, Callable[[], BaseStore]] = {
    "sqlite": lambda: SessionStore(":memory:"),
    "memory": MemorySessionStore,
    "postgres": _postgres,
}


@pytest.fixture(autouse=True)
def _needs_postgres(request: pytest.FixtureRequest) -> None:
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("name") == "postgres":
        postgres_url()  # skips (locally) or fails (in CI) without a server


def _run(ops_: list[Op], factory: Callable[[], BaseStore], cursor: str = "marker") -> History:
    history = History(factory, cursor=cursor)
    try:
        for op in ops_:
            op.apply(history)
            history.check()
    finally:
        history.store.close()
    return history


@pytest.mark.parametrize("name", sorted(STORES))
def test_marker_walk_matches_the_oracle_stateful(name: str) -> None:
    runs: list[int] = []
    machine = history_machine(STORES[name])

    class Counted(machine):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__()
            runs.append(1)

    run_state_machine_as_test(Counted, settings=settings(max_examples=_examples(name)))
    print(f"\nstateful[{name}]: {len(runs)} histories run (max_examples={_examples(name)})")


@pytest.mark.parametrize("name", sorted(STORES))
def test_marker_walk_matches_the_oracle_programs(name: str) -> None:
    @settings(max_examples=_examples(name))
    @given(ops_=operations())
    def program(ops_: list[Op]) -> None:
        _run(ops_, STORES[name])

    program()


def _falsifies(ops_: list[Op]) -> bool:
    try:
        _run(ops_, MemorySessionStore, cursor="ordinal")
    except AssertionError:
        return True
    return False


_NO_SUMMARIES = st.lists(
    st.one_of(ops()["append"], ops()["fork"], ops()["consume"], ops()["set_head"], ops()["rewind"]),
    max_size=30,
)

# Derandomized: the same search every run, so the bound on the shortest counterexample is stable.
_FIND = settings(
    max_examples=2000,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.generate, Phase.shrink],
)


def test_ordinal_cursor_is_falsified_and_the_shortest_history_printed() -> None:
    shortest = find(operations(), _falsifies, settings=_FIND)
    fork_only = find(_NO_SUMMARIES, _falsifies, settings=_FIND)
    print("\nshortest ordinal-cursor counterexample:", shortest)
    print("shortest without compaction:", fork_only)
    assert len(shortest) <= 6 and len(fork_only) <= 6
    with pytest.raises(AssertionError, match="ordinal cursor says"):
        _run(shortest, MemorySessionStore, cursor="ordinal")
    _run(shortest, MemorySessionStore)  # the same history holds with markers


def test_ordinal_cursor_stateful_machine_fails() -> None:
    machine = history_machine(MemorySessionStore, cursor="ordinal")
    quick = settings(
        max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    with pytest.raises(AssertionError, match="ordinal cursor says") as got:
        run_state_machine_as_test(machine, settings=quick)
    print("\n".join(getattr(got.value, "__notes__", [])))


def test_fork_below_the_written_height_falsifies_the_ordinal_cursor() -> None:
    """The ordinal cursor's failure in four steps: written to 2, a fork at the first turn is at position 2."""
    said = Turn(Role.USER, text="hi")
    history = [Append(said), Append(said), Consume(k=2), Fork(at=0, turn=said)]
    assert _falsifies(history)
    _run(history, MemorySessionStore)


@pytest.mark.parametrize("name", sorted(STORES))
def test_copy_with_rewinds_and_summaries(name: str) -> None:
    """Copying reverses the insertion order (summaries before what they cover, children first)."""
    said = Turn(Role.USER, text="hi")
    steps: list[Op] = [
        Append(said),
        Append(said),
        Append(said),
        Compact(0, 2, "sibling"),
        Append(said),
    ]
    steps += [Fork(at=1, turn=said), Rewind(1), Append(said), Copy()]
    _run(steps, STORES[name])


def test_verify_markers_after_an_import_that_puts_a_summary_before_its_covers(
    store: BaseStore,
) -> None:
    """Regression (graph/walks.py marker_gaps): a sibling summary stored before the node it covers."""
    sid = store.create_session(id="s").id
    root = store.append(sid, "q", role=Role.USER)
    covered = root.model_copy(update={"id": "a", "predecessor": root.id, "content": "a"})
    summary = Node(
        id="S",
        session_id=sid,
        predecessor=root.id,
        kind=Kind.SUMMARY,
        role=Role.SYSTEM,
        content="summary",
        created_at=root.created_at,
        covers=("a",),
    )
    store.add_nodes(sid, [summary, covered], head="S")
    assert list(store.index(sid).pred) == [root.id, "S", "a"]
    store.mark(sid, [root.id, "a"], "memory", "ws")
    assert store.verify_markers(sid) == []
    store.rebuild_index(sid)
    assert store.verify_markers(sid) == []

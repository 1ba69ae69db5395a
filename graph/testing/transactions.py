"""The transaction contract for any backend: every mutator alone, in transactions and savepoints.

Each mutator runs alone, inside a committed transaction, inside a rolled-back one, and in a nested
savepoint that rolls back. It uses the ``store`` and ``store_handles`` fixtures of :mod:`graph.testing.contract` (exported here
too), so a backend supplies only the ``store_factory`` fixture; see that module for how. A committed write must be visible to another handle onto the same
storage, a rolled-back one must leave everything as it was, and the store must stay usable after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from graph.store.base import BaseStore
from graph.testing.contract import build, node, snapshot, store, store_handles

__all__ = [
    "MUTATORS",
    "store",
    "store_handles",
    "test_mutator_alone",
    "test_mutator_inside_a_committed_transaction",
    "test_mutator_inside_a_rolled_back_transaction",
    "test_nested_savepoint_rolls_back_alone",
    "txn_session",
]

MUTATORS: dict[str, Callable[[BaseStore, str], Any]] = {
    "create_session": lambda st, sid: st.create_session("new", id="new"),
    "append": lambda st, sid: st.append(sid, "x", role="user", id="x"),
    "fork": lambda st, sid: st.fork(sid, "m1", "x", role="assistant", id="x"),
    "add_nodes": lambda st, sid: st.add_nodes(sid, [node(sid, "x", "m3")], head="x"),
    "set_head": lambda st, sid: st.set_head(sid, "b1"),
    "rewind": lambda st, sid: st.rewind(sid, "m1"),
    "stamp_rewound": lambda st, sid: st.stamp_rewound(sid, ["b1"]),
    "compact": lambda st, sid: st.compact(sid, ["m1", "m2"], "sum", id="x"),
    "spawn": lambda st, sid: st.spawn(sid, "m2", id="new"),
    "mark": lambda st, sid: st.mark(sid, ["m1", "m2"], "memory", "w"),
    "mark another value": lambda st, sid: st.mark(sid, ["m1"], "memory", "w2"),
    "update_session": lambda st, sid: st.update_session(sid, title="renamed"),
}
"""Every public write, as ``write(store, session_id)`` on the :func:`txn_session` graph."""


@pytest.fixture
def txn_session(store: BaseStore) -> str:
    """Session ``s``: ``m1-m2-m3`` with a fork ``m1-b1``, head ``m3``, ``m1`` marked ``memory=w``."""
    sid = build(store, "m1-m2-m3; m1-b1", head="m3")
    store.mark(sid, ["m1"], "memory", "w")
    return sid


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_alone(store: BaseStore, store_handles: Any, txn_session: str, name: str) -> None:
    """Each mutator alone changes what readers see, and commits it for other handles."""
    before = snapshot(store)
    MUTATORS[name](store, txn_session)
    after = snapshot(store)
    assert after != before
    assert snapshot(store_handles()) == after  # committed: another handle reads it


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_inside_a_committed_transaction(
    store: BaseStore, store_handles: Any, txn_session: str, name: str
) -> None:
    """Mutator inside a committed transaction."""
    before = snapshot(store)
    with store.atomic():
        MUTATORS[name](store, txn_session)
        inside = snapshot(store)
    assert inside != before
    assert snapshot(store) == inside
    assert snapshot(store_handles()) == inside  # the outer commit wrote it for everyone


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_inside_a_rolled_back_transaction(
    store: BaseStore, store_handles: Any, txn_session: str, name: str
) -> None:
    """Mutator inside a rolled back transaction."""
    before = snapshot(store)
    with pytest.raises(RuntimeError), store.atomic():
        MUTATORS[name](store, txn_session)
        assert snapshot(store) != before
        raise RuntimeError("roll back")
    assert snapshot(store) == before
    assert snapshot(store_handles()) == before
    MUTATORS[name](store, txn_session)  # and the store is still usable for the same write
    assert snapshot(store) != before


@pytest.mark.parametrize("name", MUTATORS)
def test_nested_savepoint_rolls_back_alone(
    store: BaseStore, store_handles: Any, txn_session: str, name: str
) -> None:
    """Nested savepoint rolls back alone."""
    with store.atomic():
        store.append(txn_session, "kept", role="user", id="kept")
        kept = snapshot(store)
        with pytest.raises(RuntimeError), store.atomic():
            MUTATORS[name](store, txn_session)
            raise RuntimeError
        assert snapshot(store) == kept
        store.append(txn_session, "also kept", role="assistant", id="kept2")
    assert [n.id for n in store.branch(txn_session)][-2:] == ["kept", "kept2"]
    assert snapshot(store_handles()) == snapshot(store)

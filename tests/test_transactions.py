"""Every mutator alone, inside a committed outer transaction, and inside a rolled-back one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from builder import build
from test_store_contract import node, snapshot

from graph.store import BaseStore

MUTATORS: dict[str, Callable[[BaseStore, str], Any]] = {
    "create_session": lambda st, sid: st.create_session("new", id="new"),
    "append": lambda st, sid: st.append(sid, "x", role="user", id="x"),
    "fork": lambda st, sid: st.fork(sid, "m1", "x", role="assistant", id="x"),
    "add_nodes": lambda st, sid: st.add_nodes(sid, [node(sid, "x", "m3")], head="x"),
    "set_head": lambda st, sid: st.set_head(sid, "b1"),
    "rewind": lambda st, sid: st.rewind(sid, "m1"),
    "compact": lambda st, sid: st.compact(sid, ["m1", "m2"], "sum", id="x"),
    "spawn": lambda st, sid: st.spawn(sid, "m2", id="new"),
    "mark": lambda st, sid: st.mark(sid, ["m1", "m2"], "memory", "w"),
}


@pytest.fixture
def session(store: BaseStore) -> str:
    return build(store, "m1-m2-m3; m1-b1", head="m3")


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_alone(store: BaseStore, session: str, name: str) -> None:
    before = snapshot(store)
    MUTATORS[name](store, session)
    assert snapshot(store) != before


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_inside_a_committed_transaction(store: BaseStore, session: str, name: str) -> None:
    alone_store_state = None
    with store.atomic():
        MUTATORS[name](store, session)
        alone_store_state = snapshot(store)
    assert snapshot(store) == alone_store_state


@pytest.mark.parametrize("name", MUTATORS)
def test_mutator_inside_a_rolled_back_transaction(
    store: BaseStore, session: str, name: str
) -> None:
    before = snapshot(store)
    with pytest.raises(RuntimeError), store.atomic():
        MUTATORS[name](store, session)
        assert snapshot(store) != before
        raise RuntimeError("roll back")
    assert snapshot(store) == before
    MUTATORS[name](store, session)  # and the store is still usable for the same write
    assert snapshot(store) != before


def test_nested_savepoint_rolls_back_alone(store: BaseStore, session: str) -> None:
    with store.atomic():
        store.append(session, "kept", role="user", id="kept")
        with pytest.raises(RuntimeError), store.atomic():
            store.append(session, "dropped", role="assistant", id="dropped")
            raise RuntimeError
        store.append(session, "also kept", role="assistant", id="kept2")
    assert [n.id for n in store.branch(session)][-2:] == ["kept", "kept2"]
    with pytest.raises(KeyError):
        store.node("dropped")

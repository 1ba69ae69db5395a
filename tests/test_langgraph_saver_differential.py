"""SessionGraphSaver against SqliteSaver: any sequence of calls, odd values included, answers alike.

On every backend (SQLite, the in-memory twin, PostgreSQL when ``SESSIONGRAPH_TEST_POSTGRES`` is
set), each call sync or async as drawn: puts on nested namespaces with forks, channel values the
serializer encodes by extension (pydantic models, dataclasses, sets, datetimes), metadata with
nested, None and non-ASCII values, message lists without ids, with an id listed twice, a
``messages`` channel that is a dict or a str; pending writes on special and plain channels;
``get_tuple`` latest and by id; ``list`` with every combination of config, filter, ``before`` and
``limit``; ``delete_thread`` then reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="the langgraph extra is not installed")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite missing")

from conftest import postgres_store, postgres_url  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from graph import MemorySessionStore, SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402

__all__: list[str] = []


class Plan(BaseModel):
    step: int
    tags: list[str] = []


@dataclasses.dataclass
class Point:
    x: int
    y: float


def _values(kind: int, n: int) -> dict[str, Any]:
    """Channel values of one of the odd kinds LangGraph hands a saver."""
    return [
        {"messages": [HumanMessage(f"m{n}", id=f"m{n}")]},
        {"messages": [HumanMessage(f"no id {n}"), AIMessage(f"no id either {n}")]},
        {"messages": [HumanMessage("a", id="d"), AIMessage(f"b{n}", id="d")]},
        {"messages": {"k": n}},
        {"messages": "text"},
        {
            "plan": Plan(step=n, tags=["ü"]),
            "point": Point(n, 0.5),
            "seen": {1, n},
            "when": datetime(2024, 1, n % 28 + 1, tzinfo=UTC),
        },
        {"big": "x" * 20_000, "nested": {"a": [None, {"b": (1, 2)}]}},
    ][kind]


def _metadata(kind: int, n: int) -> dict[str, Any]:
    return [
        {"source": "loop", "step": n, "parents": {}},
        {"source": "update", "step": n, "parents": {}, "odd": None, "ü": {"日本": [1, None]}},
        {"source": "input", "step": -1, "parents": {}, "run_id": f"run{n % 3}"},
    ][kind]


_NAMESPACES = ["", "sub:1", "sub:1|inner:2"]
_FILTERS: list[dict[str, Any]] = [
    {"source": "update"},
    {"step": 3},
    {"odd": None},
    {"run_id": "run1"},
]

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "writes", "get", "list", "delete"]),
        st.integers(0, 1_000),  # thread, parent, checkpoint picks
        st.integers(0, 6),  # which values / channel / config
        st.integers(0, 2),  # which metadata / list argument
        st.sampled_from([0, 0, 1, 2]),  # namespace
        st.booleans(),  # async
    ),
    max_size=25,
)


def _view(t: CheckpointTuple | None) -> Any:
    if t is None:
        return None
    return (
        dict(t.config["configurable"]),
        (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        repr(sorted(t.checkpoint["channel_values"].items())),
        repr(sorted(t.metadata.items())),
        sorted(map(repr, t.pending_writes)),
    )


class _Calls:
    """One saver's calls, each run sync or through its async twin."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def __call__(self, name: str, is_async: bool, *args: Any, **kw: Any) -> Any:
        if not is_async:
            got = getattr(self.saver, name)(*args, **kw)
            return list(got) if name == "list" else got
        method = getattr(self.saver, "a" + name)
        if name == "list":

            async def collect() -> list[Any]:
                return [t async for t in method(*args, **kw)]

            return asyncio.run(collect())
        return asyncio.run(method(*args, **kw))


def _replay(saver: Any, ops: list[Any]) -> list[Any]:
    """What each call answers (errors by their type), with the checkpoints stored as it goes."""
    call = _Calls(saver)
    stored: list[tuple[str, str, str]] = []
    out: list[Any] = []
    for n, (op, pick, kind, arg, ns_i, is_async) in enumerate(ops, 1):
        thread, ns = f"t{pick % 2}", _NAMESPACES[ns_i]
        try:
            if op == "put":
                mine = [c for t, s, c in stored if (t, s) == (thread, ns)]
                parent = mine[pick % len(mine)] if mine and pick % 3 else (mine or [None])[-1]
                cp: Any = empty_checkpoint()
                cp["id"] = f"1ef00000-0000-6000-8000-{n:012d}"
                cp["channel_values"] = _values(kind, n)
                cp["channel_versions"] = {k: f"{n:032}.0" for k in cp["channel_values"]}
                config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
                if parent is not None:
                    config["configurable"]["checkpoint_id"] = parent
                meta = _metadata(arg, n)
                outer = ns.rsplit("|", 1)[0] if "|" in ns else ""
                above = [c for t, s, c in stored if (t, s) == (thread, outer)]
                if ns and above:
                    meta["parents"] = {outer: above[-1]}
                got = call("put", is_async, config, cp, meta, dict(cp["channel_versions"]))
                stored.append((thread, ns, cp["id"]))
                out.append(got)
            elif op == "writes" and stored:
                t, s, c = stored[pick % len(stored)]
                channel = ["x", "__error__", "__interrupt__", "messages"][kind % 4]
                writes = [(channel, _values(kind, n)), ("y", n)] if kind % 2 else [(channel, n)]
                at = {"configurable": {"thread_id": t, "checkpoint_ns": s, "checkpoint_id": c}}
                call("put_writes", is_async, at, writes, f"task{arg}", "path" if arg else "")
            elif op == "get":
                config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
                if stored and pick % 2:
                    config["configurable"]["checkpoint_id"] = stored[pick % len(stored)][2]
                out.append(_view(call("get_tuple", is_async, config)))
            elif op == "list":
                where: Any = [
                    None,
                    {"configurable": {"thread_id": thread}},
                    {"configurable": {"thread_id": thread, "checkpoint_ns": ns}},
                ][kind % 3]
                kw: dict[str, Any] = {}
                if arg == 1:
                    kw["limit"] = pick % 4
                if arg == 2 and stored:
                    c = stored[pick % len(stored)][2]
                    kw["before"] = {"configurable": {"thread_id": thread, "checkpoint_id": c}}
                if pick % 5 == 0:
                    kw["filter"] = _FILTERS[kind % len(_FILTERS)]
                out.append([_view(t) for t in call("list", is_async, where, **kw)])
            elif op == "delete":
                call("delete_thread", is_async, thread)
                stored = [k for k in stored if k[0] != thread]
        except Exception as e:  # both must fail alike, by type
            out.append((op, type(e).__name__))
    return out


def _stores(backend: str, where: Path) -> Iterator[BaseStore]:
    if backend == "postgres":
        yield from postgres_store()
    elif backend == "sqlite":
        store = SessionStore(where / "s.db")
        yield store
        store.close()
    else:
        yield MemorySessionStore()


@pytest.mark.parametrize("backend", ["sqlite", "memory", "postgres"])
@given(ops=_OPS)
def test_any_calls_answer_what_sqlite_saver_answers(
    ops: list[Any], backend: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if backend == "postgres":
        postgres_url()  # skips without a test database
    peer = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    want = _replay(peer, [(*op[:5], False) for op in ops])  # aiosqlite is not SqliteSaver's
    opened = _stores(backend, tmp_path_factory.mktemp("differential"))
    store = next(opened)
    try:
        assert _replay(SessionGraphSaver(store), ops) == want
    finally:
        opened.close()

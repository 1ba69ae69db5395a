"""SessionGraphSaver's read cache on SQLite: rows kept while nothing stored changes.

Every read must answer what the tables hold at that moment, whoever wrote them (this saver,
another saver on another connection, another process, a caller's open transaction), and every
answer must be the caller's own objects.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="the langgraph extra is not installed")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite missing")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.errors import CodecError  # noqa: E402

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _at(cid: str | None) -> Any:
    if cid is None:
        return _THREAD
    return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cid}}


def _put(saver: Any, n: int, parent: str | None, text: str = "") -> str:
    cp: Any = empty_checkpoint()
    cp["id"] = f"1ef00000-0000-6000-8000-{n:012d}"
    cp["channel_values"] = {
        "turn": text or f"turn {n}",
        "messages": [HumanMessage(f"m{n}", id=f"m{n}")],
    }
    cp["channel_versions"] = {"turn": f"{n:032}.0"}
    saver.put(_at(parent), cp, {"source": "loop", "step": n, "parents": {}}, {"turn": f"{n:032}.0"})
    return str(cp["id"])


def _view(t: CheckpointTuple | None) -> Any:
    """What a caller reads of a tuple: configs, state, metadata, writes (messages by content)."""
    if t is None:
        return None
    values = dict(t.checkpoint["channel_values"])
    values["messages"] = [(m.id, m.content) for m in values.get("messages", [])]
    return (
        t.config["configurable"]["checkpoint_id"],
        (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        values,
        dict(t.metadata),
        sorted((task, ch, repr(v)) for task, ch, v in t.pending_writes),
    )


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[SessionGraphSaver, SessionGraphSaver, Path]]:
    """Two savers on one file, each on its own store object (its own connection)."""
    path = tmp_path / "s.db"
    a, b = SessionStore(path), SessionStore(path)
    yield SessionGraphSaver(a), SessionGraphSaver(b), path
    a.close()
    b.close()


def test_another_connections_commits_are_read_at_once(
    two: tuple[SessionGraphSaver, SessionGraphSaver, Path],
) -> None:
    ours, other, _ = two
    first = _put(ours, 1, None)
    assert _view(ours.get_tuple(_THREAD))[0] == first
    assert [t.checkpoint["id"] for t in ours.list(_THREAD)] == [first]
    second = _put(other, 2, first)
    assert _view(ours.get_tuple(_THREAD))[0] == second
    assert [t.checkpoint["id"] for t in ours.list(_THREAD)] == [second, first]
    other.put_writes(_at(second), [("turn", "written elsewhere")], "task-1")
    assert _view(ours.get_tuple(_at(second)))[4] == [("task-1", "turn", "'written elsewhere'")]
    other.delete_thread("t")
    assert ours.get_tuple(_THREAD) is None
    assert list(ours.list(_THREAD)) == []


def test_another_processs_commits_are_read_at_once(
    two: tuple[SessionGraphSaver, SessionGraphSaver, Path],
) -> None:
    ours, _, path = two
    first = _put(ours, 1, None)
    assert ours.get_tuple(_THREAD) is not None  # kept
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_langgraph_read_cache import _put
        from graph import SessionStore
        from graph.checkpoint import SessionGraphSaver
        store = SessionStore({str(path)!r})
        _put(SessionGraphSaver(store), 2, {first!r}, "from another process")
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    got = _view(ours.get_tuple(_THREAD))
    assert got[1] == first and got[2]["turn"] == "from another process"


def test_reads_inside_a_transaction_see_its_writes_and_a_rollback_forgets_them(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    first = _put(saver, 1, None)
    assert _view(saver.get_tuple(_THREAD))[0] == first
    with pytest.raises(RuntimeError), store.atomic():
        second = _put(saver, 2, first)
        assert _view(saver.get_tuple(_THREAD))[0] == second
        assert len(list(saver.list(_THREAD))) == 2
        raise RuntimeError("roll back")
    assert _view(saver.get_tuple(_THREAD))[0] == first
    assert saver.get_tuple(_at(second)) is None
    assert len(list(saver.list(_THREAD))) == 1
    store.close()


def test_every_read_returns_the_callers_own_objects(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    cid = _put(saver, 1, None)
    saver.put_writes(_at(cid), [("turn", ["a list"])], "task-1")
    before = _view(saver.get_tuple(_THREAD))
    got = saver.get_tuple(_THREAD)
    assert got is not None
    got.checkpoint["channel_values"]["turn"] = "changed by the caller"
    got.checkpoint["channel_values"]["messages"][0].content = "edited"
    got.metadata["step"] = 99
    got.pending_writes[0][2].append("more")
    for t in saver.list(_THREAD):
        t.checkpoint["channel_values"].clear()
    assert _view(saver.get_tuple(_THREAD)) == before
    assert _view(next(saver.list(_THREAD))) == before
    store.close()


def test_the_cache_holds_at_most_its_size_and_answers_alike_past_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    ids, parent = [], None
    for n in range(1, 41):
        parent = _put(saver, n, parent, "x" * 2000)
        ids.append(parent)
    cache = saver._payloads.cache  # type: ignore[attr-defined]
    cache.size = 40_000  # about ten checkpoints' rows
    first = [_view(saver.get_tuple(_at(c))) for c in ids]
    assert cache.held <= cache.size and 0 < len(cache.kept) < len(ids)
    assert [_view(saver.get_tuple(_at(c))) for c in ids] == first
    assert cache.held <= cache.size
    assert [t.checkpoint["id"] for t in saver.list(_THREAD)] == ids[
        ::-1
    ]  # over a quarter: read afresh
    store.close()


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "writes", "latest", "by id", "list", "list 2"]),
        st.booleans(),  # which saver (and connection) does it
        st.integers(0, 1_000),  # picks a parent / a checkpoint among those stored
    ),
    max_size=30,
)


@given(ops=_OPS)
def test_two_savers_on_one_file_read_what_sqlite_saver_holds(
    ops: Any, tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("cache") / "s.db"
    stores = [SessionStore(path), SessionStore(path)]
    savers = [SessionGraphSaver(s) for s in stores]
    peer = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    stored: list[str] = []
    for n, (op, which, pick) in enumerate(ops, start=1):
        saver = savers[which]
        if op == "put":
            parent = stored[pick % len(stored)] if stored and pick % 4 else (stored or [None])[-1]
            _put(peer, n, parent)
            stored.append(_put(saver, n, parent))
        elif op == "writes" and stored:
            at = _at(stored[pick % len(stored)])
            writes = [("turn", f"w{n}"), ("other", n)]
            peer.put_writes(at, writes, f"task-{n % 3}")
            saver.put_writes(at, writes, f"task-{n % 3}")
        elif op in ("latest", "by id"):
            at = _at(stored[pick % len(stored)] if stored and op == "by id" else None)
            assert _view(saver.get_tuple(at)) == _view(peer.get_tuple(at))
        elif op.startswith("list"):
            limit = 2 if op == "list 2" else None
            assert [_view(t) for t in saver.list(_THREAD, limit=limit)] == [
                _view(t) for t in peer.list(_THREAD, limit=limit)
            ]
    for s in stores:
        s.close()


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_reads_leave_the_collector_as_they_found_it(tmp_path: Path, enabled: bool) -> None:
    import gc

    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    cid = _put(saver, 1, None)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert saver.get_tuple(_THREAD) is not None and list(saver.list(_THREAD))
        assert gc.isenabled() is enabled
        with store.atomic():  # a payload that no longer decodes, large enough to pause for
            store.conn.execute(
                "UPDATE lg_checkpoints SET checkpoint = ? WHERE checkpoint_id=?",
                (b"\xc1" + bytes(100_000), cid),
            )
        with pytest.raises(CodecError, match=f"checkpoint '{cid}'.*thread 't'") as caught:
            saver.get_tuple(_THREAD)
        assert isinstance(caught.value, ValueError)
        with pytest.raises(CodecError, match=f"checkpoint '{cid}'"):
            list(saver.list(_THREAD))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    store.close()

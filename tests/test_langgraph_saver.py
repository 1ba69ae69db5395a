"""SessionGraphSaver: LangGraph's conformance suite, a real StateGraph app, imports, two processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.graph", reason="the langgraph extra is not installed")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite missing")

from conftest import postgres_url  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage  # noqa: E402
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402

from graph import Kind, MemorySessionStore, SessionStore, UnknownSessionError  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.importers import detect_format, import_file  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402
from memory import PROVIDER, MemoryWorkspace, WritePipeline  # noqa: E402

BACKENDS = ["sqlite", "memory", "postgres"]


class _Backend:
    """Opens stores of one backend onto one storage (a file, a shared twin, a fresh schema)."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name, self.directory = name, directory
        self.schema = f"t_{uuid.uuid4().hex[:16]}"
        self.url = postgres_url() if name == "postgres" else ""
        self.shared = MemorySessionStore() if name == "memory" else None

    def open(self, **kw: Any) -> BaseStore:
        if self.shared is not None:
            return self.shared
        if self.name == "sqlite":
            return SessionStore(self.directory / "s.db", **kw)
        from graph.store.postgres import PostgresSessionStore

        return PostgresSessionStore(self.url, schema=self.schema)

    def drop(self) -> None:
        if self.name == "postgres":
            from graph.store.postgres import PostgresSessionStore

            cleanup = PostgresSessionStore(self.url, schema=self.schema)
            cleanup.drop_schema()
            cleanup.close()


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Backend]:
    """Each backend the saver runs on (PostgreSQL when SESSIONGRAPH_TEST_POSTGRES is set)."""
    b = _Backend(request.param, tmp_path)
    yield b
    b.drop()


# ---------------------------------------------------------------- conformance

conformance = pytest.importorskip(
    "langgraph.checkpoint.conformance", reason="langgraph-checkpoint-conformance missing"
)
from langgraph.checkpoint.conformance.capabilities import (  # noqa: E402
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

CAPABILITIES = sorted(c.value for c in BASE_CAPABILITIES | EXTENDED_CAPABILITIES)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_conformance_capability_passes(capability: str, backend: _Backend) -> None:
    @conformance.checkpointer_test(name=f"SessionGraphSaver[{backend.name}]")
    async def factory() -> AsyncIterator[SessionGraphSaver]:
        store = backend.open()
        yield SessionGraphSaver(store)
        store.close()

    report = asyncio.run(conformance.validate(factory, capabilities={capability}))
    result = report.results[capability]
    assert result.detected and result.passed, result.failures
    assert result.tests_passed > 0


# ---------------------------------------------------------------- a real app


class State(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    summary: str


def _model(state: State) -> State:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"echo {last.content}", id=f"ai-{last.id}")]}


def _lookup(state: State) -> State:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"looked up {last.content}", id=f"lookup-{last.id}")]}


def _summarize(state: State) -> State:
    messages = state["messages"]
    if len(messages) <= 6:
        return {}
    text = "; ".join(str(m.content) for m in messages[:-2])
    return {
        "summary": f"summary: {text}",
        "messages": [RemoveMessage(id=m.id) for m in messages[:-2]],
    }


def _build(saver: BaseCheckpointSaver[Any]) -> Any:
    sub = StateGraph(State)
    sub.add_node("lookup", _lookup)
    sub.add_edge(START, "lookup")
    sub.add_edge("lookup", END)
    app = StateGraph(State)
    app.add_node("research", sub.compile())
    app.add_node("model", _model)
    app.add_node("summarize", _summarize)
    app.add_edge(START, "research")
    app.add_edge("research", "model")
    app.add_edge("model", "summarize")
    app.add_edge("summarize", END)
    return app.compile(checkpointer=saver)


class Tee(SessionGraphSaver):
    """Our saver, also writing every checkpoint and write to a SqliteSaver (the same run twice)."""

    def __init__(self, store: BaseStore, other: SqliteSaver) -> None:
        super().__init__(store)
        self.other = other

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.other.put(config, checkpoint, metadata, new_versions)
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.other.put_writes(config, writes, task_id, task_path)
        super().put_writes(config, writes, task_id, task_path)


def _turn(app: Any, config: Any, text: str, mid: str) -> Any:
    return app.invoke({"messages": [HumanMessage(text, id=mid)]}, config)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Several turns, a time-travel fork, an update_state fork, a copied thread, a second thread.

    Run once on each persistent backend, a SqliteSaver writing the same run beside it.
    """
    d = tmp_path_factory.mktemp("lg")
    where = _Backend(request.param, d)
    store = where.open()
    conn = sqlite3.connect(d / "checkpoints.sqlite", check_same_thread=False)
    saver = Tee(store, SqliteSaver(conn))
    app = _build(saver)
    t1 = {"configurable": {"thread_id": "t1"}}
    for i in range(3):
        _turn(app, t1, f"q{i}", f"h{i}")
    history = list(app.get_state_history(t1))
    before_second = next(h for h in history if h.metadata["step"] == 4)
    _turn(
        app, before_second.config, "alt", "halt"
    )  # time travel: resume from an earlier checkpoint
    edited = app.update_state(before_second.config, {"messages": [HumanMessage("edit", id="hed")]})
    _turn(app, edited, "after edit", "h-after")
    saver.copy_thread("t1", "t1-copy")
    _turn(app, {"configurable": {"thread_id": "t2"}}, "other", "o0")
    conn.commit()
    yield {"store": store, "saver": saver, "app": app, "dir": d, "t1": t1, "fork": before_second}
    store.close()
    conn.close()
    where.drop()


def _texts(nodes: Sequence[Any]) -> list[str]:
    return [n.text for n in nodes]


def test_the_head_is_the_latest_checkpoint_and_state_reads_back(run: dict[str, Any]) -> None:
    store, app = run["store"], run["app"]
    latest = app.get_state(run["t1"])
    head = store.session("t1").head
    assert head == f"t1/{latest.config['configurable']['checkpoint_id']}"
    assert latest.values["messages"][-1].content == "echo looked up after edit"
    assert len(latest.values["messages"]) == 2  # the edit branch was summarized too
    assert latest.values["summary"].startswith("summary: q0; looked up q0; echo looked up q0; edit")


def test_messages_become_message_nodes_on_the_checkpoint_branch(run: dict[str, Any]) -> None:
    store = run["store"]
    branch = [n for n in store.branch("t1") if n.kind == Kind.MESSAGE]
    assert _texts(branch) == [
        "q0",
        "looked up q0",
        "echo looked up q0",
        "edit",
        "after edit",
        "looked up after edit",
        "echo looked up after edit",
    ]
    assert [n.role for n in branch[:3]] == ["user", "assistant", "assistant"]
    assert branch[0].id == "t1/m/h0"


def test_time_travel_and_update_state_make_forks_and_every_tip_is_pending(
    run: dict[str, Any],
) -> None:
    store = run["store"]
    fork_node = f"t1/{run['fork'].config['configurable']['checkpoint_id']}"
    children = store.index("t1").children[fork_node]
    assert len(children) == 3  # the original second turn, the time travel, the update_state edit
    pending = {tip: _texts(nodes) for tip, nodes in store.pending_by_tip("t1", "memory", "ws")}
    assert len(store.tips("t1")) == 3
    assert store.session("t1").head in pending  # the head first, then every live tip
    everything = sorted(t for texts in pending.values() for t in texts)
    assert everything.count("q0") == len(pending)  # the shared prefix, once per tip until marked
    assert any("alt" in texts for texts in pending.values())
    assert any("q2" in texts for texts in pending.values())


def test_a_summarization_step_becomes_a_compaction_summary(run: dict[str, Any]) -> None:
    store = run["store"]
    tips = dict(store.pending_by_tip("t1", "memory", "ws"))
    long_tip = next(t for t, nodes in tips.items() if "q2" in _texts(nodes))
    covers = store.index("t1").covers
    (summary_id,) = [s for s, span in covers.items() if "t1/m/h2" in span]
    context = store.context("t1", head=summary_id)
    # The summary stands where the removed span was, before the kept messages, as LangGraph's
    # summarization pattern puts the summary before the remaining messages.
    (summary,) = [n for n in context if n.kind == Kind.SUMMARY]
    assert summary.id == summary_id
    after = [n.text for n in context[context.index(summary) + 1 :] if n.kind == Kind.MESSAGE]
    assert summary.predecessor is not None
    assert summary.predecessor in store.index("t1").pred
    covered = {n.id for n in store.nodes("t1", list(summary.covers))}
    assert {"t1/m/h0", "t1/m/h2"} <= covered
    kept = [n.text for n in store.branch("t1", head=summary_id) if n.kind == Kind.MESSAGE][-2:]
    assert kept == ["looked up q2", "echo looked up q2"] == after
    assert not [n for n in context if n.kind == Kind.MESSAGE and n.text not in kept]
    # the removed messages are still delivered to consumers, the summary is not
    assert "q0" in _texts(tips[long_tip])
    assert summary.id not in {n.id for n in tips[long_tip]}


def test_subgraphs_are_spawned_sessions(run: dict[str, Any]) -> None:
    store = run["store"]
    spawned = store.spawns("t1")
    assert len(spawned) == 5  # one per subgraph run: 3 turns, the time travel, after the edit
    for s in spawned:
        assert s.id.startswith("t1#research:")
        assert s.spawned_from is not None and s.spawned_from.startswith("t1/")
        # the subgraph's own message; its input messages stay nodes of the parent session
        messages = [n for n in store.branch(s.id) if n.kind == Kind.MESSAGE]
        assert len(messages) == 1 and messages[0].text.startswith("looked up ")


def test_the_copied_thread_is_linked_and_reads_unwritten(run: dict[str, Any]) -> None:
    store, app = run["store"], run["app"]
    copy = store.session("t1-copy")
    assert copy.metadata["langgraph"]["copied_from"] == "t1"
    assert store.stats("t1-copy").nodes == store.stats("t1").nodes
    original = app.get_state(run["t1"]).values["messages"]
    copied = app.get_state({"configurable": {"thread_id": "t1-copy"}}).values["messages"]
    assert [m.content for m in copied] == [m.content for m in original]
    assert len(store.spawns("t1-copy")) == len(store.spawns("t1"))


def test_the_memory_writer_drains_every_branch(run: dict[str, Any], tmp_path: Path) -> None:
    store = run["store"]
    ws = MemoryWorkspace(tmp_path / "ws")
    with pytest.raises(_Undo), store.atomic():  # roll back: the other tests read the same run
        assert WritePipeline(ws, store, budget=40).write("t2", force=True) is None
        assert store.pending("t2", PROVIDER, ws.id) == []
        assert WritePipeline(ws, store, budget=40).write("t1", force=True) is None
        assert list(store.pending_by_tip("t1", PROVIDER, ws.id)) == []
        assert store.verify_markers("t1", PROVIDER) == []
        copy_pending = store.pending("t1-copy", PROVIDER, ws.id)  # a copy reads as unwritten
        assert _texts(copy_pending) == _texts(store.pending("t1", "memory", "another"))
        raise _Undo


class _Undo(Exception):
    pass


def _graph(store: BaseStore, sid: str) -> tuple[Any, ...]:
    idx = store.index(sid)
    nodes = store.nodes(sid, sorted(idx.pred))
    return (
        store.session(sid).head,
        store.session(sid).spawned_from,
        [(n.id, n.predecessor, n.kind, n.role, n.text, n.covers) for n in nodes],
    )


def test_the_sqlite_saver_database_of_the_run_imports_to_the_same_graph(
    run: dict[str, Any], tmp_path: Path
) -> None:
    db = run["dir"] / "checkpoints.sqlite"
    assert detect_format(db) == "langgraph"
    store = SessionStore(tmp_path / "imported.db")
    report = import_file(store, db)
    assert report.error is None and report.skipped == []
    live = run["store"]
    sids = sorted(s.id for s in live.sessions() if not s.id.startswith("t1-copy"))
    assert sorted(s.id for s in store.sessions()) == sids
    for sid in sids:
        assert _graph(store, sid) == _graph(live, sid), sid
    again = import_file(store, db)
    assert again.nodes_added == 0
    saver = SessionGraphSaver(store)
    got = saver.get_tuple(run["t1"])
    want = run["saver"].get_tuple(run["t1"])
    assert got is not None and want is not None
    assert got.checkpoint == want.checkpoint and got.pending_writes == want.pending_writes


# ---------------------------------------------------------------- store-level behaviour


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_delete_thread_deletes_its_sessions(backend: _Backend) -> None:
    store = backend.open()
    app = _build(SessionGraphSaver(store))
    _turn(app, {"configurable": {"thread_id": "a"}}, "hi", "h")
    _turn(app, {"configurable": {"thread_id": "b"}}, "hi", "h")
    assert len(store.spawns("a")) == 1
    app.checkpointer.delete_thread("a")
    assert [s.id for s in store.sessions() if s.id.startswith("a")] == []
    with pytest.raises(UnknownSessionError):
        store.session("a")
    assert app.get_state({"configurable": {"thread_id": "a"}}).values == {}
    assert store.session("b").head is not None
    _turn(app, {"configurable": {"thread_id": "a"}}, "again", "h2")  # the id is free again
    assert _texts(store.pending("a", "memory", "ws"))[0] == "again"


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_pending_writes_read_in_task_path_order_whatever_order_they_were_put(
    backend: _Backend,
) -> None:
    """LangGraph applies a checkpoint's writes in (task_path, task_id, idx) order (PostgresSaver's
    ORDER BY): the order the tasks ran in, which their random task ids do not follow."""
    saver = SessionGraphSaver(backend.open())
    cp: Any = empty_checkpoint()
    stored = saver.put({"configurable": {"thread_id": "w", "checkpoint_ns": ""}}, cp, {}, {})
    # put as tasks finish: the last task path first, its task id first in id order too
    saver.put_writes(stored, [("x", 1), ("y", 2)], "task-a", "~3")
    saver.put_writes(stored, [("x", 3)], "task-c", "~1")
    saver.put_writes(stored, [("x", 4), ("y", 5)], "task-b", "~2")
    want = [("task-c", "x", 3), ("task-b", "x", 4), ("task-b", "y", 5)]
    want += [("task-a", "x", 1), ("task-a", "y", 2)]
    for _ in range(2):  # read from the tables, then (SQLite) from what the first read kept
        got = saver.get_tuple(stored)
        assert got is not None and got.pending_writes == want
        (listed,) = saver.list({"configurable": {"thread_id": "w"}})
        assert listed.pending_writes == want
        latest = saver.get_tuple({"configurable": {"thread_id": "w", "checkpoint_ns": ""}})
        assert latest is not None and latest.pending_writes == want


def test_prune_keeps_the_nodes_and_the_latest_checkpoint(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    saver = SessionGraphSaver(store)
    app = _build(saver)
    config = {"configurable": {"thread_id": "p"}}
    _turn(app, config, "one", "h1")
    _turn(app, config, "two", "h2")
    nodes = store.stats("p").nodes
    saver.prune(["p"])
    assert len(list(saver.list({"configurable": {"thread_id": "p", "checkpoint_ns": ""}}))) == 1
    assert store.stats("p").nodes == nodes
    assert [m.content for m in app.get_state(config).values["messages"]][-1] == "echo looked up two"
    _turn(app, config, "three", "h3")
    assert _texts(store.pending("p", "memory", "ws"))[-1] == "echo looked up three"


def test_a_damaged_payload_is_skipped_with_its_row(tmp_path: Path) -> None:
    db = tmp_path / "cp.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    app = _build(SqliteSaver(conn))
    _turn(app, {"configurable": {"thread_id": "d"}}, "hi", "h")
    conn.execute(
        "UPDATE checkpoints SET type='msgpack', checkpoint=x'c1' WHERE checkpoint_id="
        "(SELECT max(checkpoint_id) FROM checkpoints WHERE checkpoint_ns='')"
    )
    conn.commit()
    conn.close()
    report = import_file(SessionStore(tmp_path / "s.db"), db)
    assert len(report.skipped) == 1 and "checkpoint" in report.skipped[0][1]


def test_a_plain_sqlite_file_is_not_a_checkpoint_database(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.close()
    from graph.importers import TranscriptError

    with pytest.raises(TranscriptError):
        detect_format(db)


# ---------------------------------------------------------------- two processes


def _writer(where: _Backend, name: str, count: int, barrier: Any) -> None:
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    saver = SessionGraphSaver(where.open(**({"timeout": 30} if where.name == "sqlite" else {})))
    barrier.wait()
    for i in range(count):
        config = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
        latest = saver.get_tuple(config)
        if latest is not None:
            config = latest.config
        saver.put(config, generate_checkpoint(), {"source": "loop", "step": i, "writer": name}, {})


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_two_processes_putting_on_one_thread_lose_nothing(backend: _Backend) -> None:
    store = backend.open()
    SessionGraphSaver(store)  # the payload tables exist before the writers start
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(backend, n, 25, barrier)) for n in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    saver = SessionGraphSaver(store)
    tuples = list(saver.list({"configurable": {"thread_id": "shared"}}))
    assert len(tuples) == 50
    assert sorted(t.metadata["writer"] for t in tuples).count("a") == 25
    ids = [t.config["configurable"]["checkpoint_id"] for t in tuples]
    head = store.session("shared").head
    assert head == f"shared/{max(ids)}"
    # the head's branch is a chain of checkpoints, each node following its parent checkpoint
    parent_of = {
        t.config["configurable"]["checkpoint_id"]: (t.parent_config or {}).get("configurable", {})
        for t in tuples
    }
    branch = [n.id.split("/", 1)[1] for n in store.branch("shared")]
    for earlier, later in zip(branch, branch[1:], strict=False):
        assert parent_of[later].get("checkpoint_id") == earlier
    assert parent_of[branch[0]] == {}
    assert len(store.index("shared")) == 50
    store.close()


def test_the_import_command_reads_a_checkpoint_database(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    _turn(_build(SqliteSaver(conn)), {"configurable": {"thread_id": "cli"}}, "hi", "h")
    conn.close()
    cmd = [sys.executable, "-c", "from graph.cli.commands import main; main()", "--db"]
    cmd += [str(tmp_path / "s.db"), "import", str(db), "--json"]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert '"format": "langgraph"' in got.stdout.replace('":"', '": "')
    store = SessionStore(tmp_path / "s.db")
    # the subgraph's answer is its spawned session's turn (the parent's node of it, a copy)
    assert _texts(store.pending("cli", "memory", "ws")) == ["hi", "echo looked up hi"]
    (sub,) = store.spawns("cli")
    assert _texts(store.pending(sub.id, "memory", "ws")) == ["looked up hi"]


def test_a_thread_id_taken_by_another_session_is_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    from graph import InvalidWriteError

    store = SessionStore(tmp_path / "s.db")
    store.create_session("a transcript", id="taken")
    saver = SessionGraphSaver(store)
    config = {"configurable": {"thread_id": "taken", "checkpoint_ns": ""}}
    with pytest.raises(InvalidWriteError, match="taken"):
        saver.put(config, generate_checkpoint(), {"source": "input", "step": -1}, {})
    assert saver.get_tuple(config) is None
    assert store.stats("taken").nodes == 0


@pytest.mark.parametrize(
    "thread, ns",
    [("", ""), ("t\ud800", ""), ("t", "sub:\udfff")],
    ids=["empty thread", "surrogate in the thread", "surrogate in the namespace"],
)
def test_a_thread_or_namespace_no_session_can_be_named_by_is_refused_naming_it(
    thread: str, ns: str
) -> None:
    """Before: "unknown session ''" for an empty thread id, a bare UnicodeEncodeError otherwise."""
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    from graph import InvalidWriteError

    store = SessionStore()
    saver = SessionGraphSaver(store)
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    with pytest.raises(InvalidWriteError, match="thread_id|checkpoint_ns"):
        saver.put(config, generate_checkpoint(), {"source": "input", "step": -1}, {})
    assert store.sessions() == []


def test_reads_of_a_key_with_a_lone_surrogate_find_nothing() -> None:
    """Nothing can be stored under such a key, so nothing is found (before: UnicodeEncodeError)."""
    saver = SessionGraphSaver(SessionStore())
    odd: Any = {"configurable": {"thread_id": "t\ud800", "checkpoint_ns": ""}}
    by_id: Any = {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "\udfff"}
    }
    assert saver.get_tuple(odd) is None and saver.get_tuple(by_id) is None
    assert list(saver.list(odd)) == [] and list(saver.list(by_id)) == []
    saver.delete_thread("t\ud800")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_database_failure_in_the_payload_tables_is_a_store_error(backend: _Backend) -> None:
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    from graph import StoreError

    store = backend.open()
    saver = SessionGraphSaver(store)
    config = {"configurable": {"thread_id": "w", "checkpoint_ns": ""}}
    stored = saver.put(config, generate_checkpoint(), {"source": "input", "step": -1}, {})
    store.conn.execute("DROP TABLE lg_writes")  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="lg_writes"):
        saver.put_writes(stored, [("x", 1)], "task")
    with pytest.raises(StoreError, match="lg_writes"):
        saver.get_tuple(stored)
    store.close()

"""SessionGraphSaver's message mapping: edits in place, a subgraph's turns, thread and session ids."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.graph", reason="the langgraph extra is not installed")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.graph import START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from test_langgraph_saver import _build  # noqa: E402

import graph.checkpoint as checkpoint_module  # noqa: E402
from graph import Kind, MemorySessionStore, SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver, session_id_of  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402


class State(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


def _echo(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"echo {last.content}", id=f"ai-{last.id}")]}


def _chat(store: BaseStore) -> Any:
    chat = StateGraph(State)
    chat.add_node("model", _echo)
    chat.add_edge(START, "model")
    return chat.compile(checkpointer=SessionGraphSaver(store))


def _drained(store: BaseStore, session_id: str) -> list[str]:
    """The texts pending on the head of ``session_id``, marked written."""
    got = store.pending(session_id, "memory", "ws")
    if got:
        store.mark(session_id, [n.id for n in got], "memory", "ws")
    return [n.text for n in got]


@pytest.mark.parametrize("make", [SessionStore, MemorySessionStore], ids=["sqlite", "memory"])
def test_a_message_edited_in_place_reaches_consumers_once_as_its_new_version(make: Any) -> None:
    """Before, the edit kept the first node's text: pending() never handed "Hi there"."""
    store = make()
    app = _chat(store)
    thread: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"messages": [HumanMessage("Hi thre", id="h1")]}, thread)
    assert _drained(store, "t") == ["Hi thre", "echo Hi thre"]
    edited = app.update_state(thread, {"messages": [HumanMessage("Hi there", id="h1")]})
    (new,) = store.pending("t", "memory", "ws")
    assert new.text == "Hi there"
    assert new.metadata["langgraph"]["replaces"] == "t/m/h1"
    assert store.node("t/m/h1").text == "Hi thre"  # node content is immutable
    assert _drained(store, "t") == ["Hi there"]
    # the next checkpoints list the new version: nothing is handed again
    nodes = store.stats("t").nodes
    tup = app.checkpointer.get_tuple(edited)
    app.checkpointer.put(
        {
            "configurable": {
                "thread_id": "t",
                "checkpoint_ns": "",
                "checkpoint_id": tup.parent_config["configurable"]["checkpoint_id"],
            }
        },
        tup.checkpoint,
        tup.metadata,
        {},
    )
    assert store.stats("t").nodes == nodes  # re-putting the checkpoint is idempotent
    app.invoke({"messages": [HumanMessage("Bye", id="h2")]}, thread)
    assert _drained(store, "t") == ["Bye", "echo Bye"]
    assert [m.content for m in app.get_state(thread).values["messages"]] == [
        "Hi there",
        "echo Hi thre",
        "Bye",
        "echo Bye",
    ]


def test_an_edit_on_a_list_that_also_lost_messages_is_a_new_version() -> None:
    """The general path (the parent's list is no prefix) tells an edit apart too."""
    store = SessionStore()
    saver = SessionGraphSaver(store)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    lists = [
        [HumanMessage("a", id="a"), AIMessage("b", id="b")],
        [AIMessage("b, fixed", id="b")],  # "a" removed, "b" rewritten
    ]
    for k, messages in enumerate(lists):
        cp: Any = empty_checkpoint()
        cp["id"] = f"1ef0000{k:02d}-0000-6000-8000-000000000000"
        cp["channel_values"] = {"messages": messages}
        config = saver.put(config, cp, {"step": k, "source": "loop"}, {})
    texts = [n.text for n in store.pending("t", "memory", "ws")]
    assert texts == ["a", "b", "b, fixed"]


@pytest.mark.parametrize("make", [SessionStore, MemorySessionStore], ids=["sqlite", "memory"])
def test_a_subgraphs_turn_is_delivered_once_over_the_threads_sessions(make: Any) -> None:
    """Before, "looked up q0" was a turn of the subgraph's session and again of the parent's."""
    store = make()
    app = _build(SessionGraphSaver(store))  # a "research" subgraph sharing ``messages``
    thread: Any = {"configurable": {"thread_id": "t"}}
    for i in range(2):
        app.invoke({"messages": [HumanMessage(f"q{i}", id=f"q{i}")]}, thread)
    sessions = ["t", *sorted(s.id for s in store.spawns("t"))]
    assert len(sessions) == 3
    texts = [t for sid in sessions for t in _drained(store, sid)]
    assert sorted(texts) == sorted(
        ["q0", "looked up q0", "echo looked up q0", "q1", "looked up q1", "echo looked up q1"]
    )
    # the parent's node is the copy: kept on its branch (the model's context), not a turn
    copies = [n for n in store.branch("t") if n.metadata.get("langgraph", {}).get("copy_of")]
    assert [n.text for n in copies] == ["looked up q0", "looked up q1"]
    assert all(store.node(n.metadata["langgraph"]["copy_of"]).text == n.text for n in copies)
    assert [n.text for n in store.context("t") if n.kind is Kind.MESSAGE][:3] == [
        "q0",
        "looked up q0",
        "echo looked up q0",
    ]


def _put(saver: SessionGraphSaver, thread: str, ns: str | None, k: int, text: str) -> Any:
    cp: Any = empty_checkpoint()
    cp["id"] = f"1ef0000{k:02d}-0000-6000-8000-000000000000"
    cp["channel_values"] = {"messages": [HumanMessage(text, id=f"m{k}")]}
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    return saver.put(config, cp, {"step": k, "source": "loop"}, {})


def test_a_namespace_and_a_thread_holding_the_separator_are_two_sessions() -> None:
    """Before, thread "a#x" mapped onto thread "a"'s namespace "x" and its put was refused."""
    store = SessionStore()
    saver = SessionGraphSaver(store)
    _put(saver, "a", "x", 0, "in a's namespace")
    _put(saver, "a#x", "", 1, "in thread a#x")
    _put(saver, "a#x", "x", 2, "in a#x's namespace")
    assert session_id_of("a", "x") == "a#x"
    assert session_id_of("a#x") == "#a%23x" != session_id_of("a%23x")
    assert [n.text for n in store.pending("a#x", "memory", "ws")] == ["in a's namespace"]
    assert [n.text for n in store.pending("#a%23x", "memory", "ws")] == ["in thread a#x"]
    assert [n.text for n in store.pending("#a%23x#x", "memory", "ws")] == ["in a#x's namespace"]
    for thread, ns, text in [("a", "x", "in a's namespace"), ("a#x", "", "in thread a#x")]:
        got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})
        assert got is not None and got.checkpoint["channel_values"]["messages"][0].content == text
    saver.copy_thread("a#x", "b")
    assert [n.text for n in store.pending("b", "memory", "ws")] == ["in thread a#x"]
    saver.delete_thread("a#x")
    assert store.has_session("a#x") and not store.has_session("#a%23x")


def test_a_thread_holding_the_separator_stored_before_keeps_its_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An older store's thread "a#x" (session "a#x") reads and continues in its own session."""
    store = SessionStore()
    with monkeypatch.context() as m:
        m.setattr(checkpoint_module, "session_id_of", lambda t, ns="": t if not ns else f"{t}#{ns}")
        first = _put(SessionGraphSaver(store), "a#x", "", 0, "before")
    saver = SessionGraphSaver(store)
    cp: Any = empty_checkpoint()
    cp["id"] = "1ef000001-0000-6000-8000-000000000000"
    cp["channel_values"] = {
        "messages": [HumanMessage("before", id="m0"), AIMessage("after", id="m1")]
    }
    saver.put(first, cp, {"step": 1, "source": "loop"}, {})
    assert not store.has_session("#a%23x")
    assert [n.text for n in store.pending("a#x", "memory", "ws")] == ["before", "after"]
    latest = saver.get_tuple({"configurable": {"thread_id": "a#x"}})
    assert latest is not None and latest.checkpoint["id"] == cp["id"]


def test_a_namespace_of_none_is_the_root_namespace() -> None:
    """Before, ``checkpoint_ns: None`` was stored as namespace "None" (session "t#None")."""
    store = SessionStore()
    saver = SessionGraphSaver(store)
    config = _put(saver, "t", None, 0, "hello")
    assert config["configurable"]["checkpoint_ns"] == ""
    assert [s.id for s in store.sessions()] == ["t"]
    got = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": None}})
    assert got is not None and got.checkpoint["channel_values"]["messages"][0].content == "hello"
    saver.put_writes(
        {"configurable": {**config["configurable"], "checkpoint_ns": None}}, [("x", 1)], "task"
    )
    got = saver.get_tuple(config)
    assert got is not None and got.pending_writes == [("task", "x", 1)]


def test_a_thread_continued_by_another_saver_hands_only_its_new_turns(tmp_path: Any) -> None:
    """A saver of a later process reads the stored texts: no old message counts as edited."""
    store = SessionStore(tmp_path / "s.db")
    thread: Any = {"configurable": {"thread_id": "t"}}
    app = _build(SessionGraphSaver(store))
    app.invoke({"messages": [HumanMessage("q0", id="q0")]}, thread)
    sessions = ["t", *sorted(s.id for s in store.spawns("t"))]
    assert sorted(t for sid in sessions for t in _drained(store, sid)) == [
        "echo looked up q0",
        "looked up q0",
        "q0",
    ]
    nodes = {n.id for n in store.nodes("t")}
    store.close()
    store = SessionStore(tmp_path / "s.db")
    app = _build(SessionGraphSaver(store))
    app.invoke({"messages": [HumanMessage("q1", id="q1")]}, thread)
    assert nodes <= {n.id for n in store.nodes("t")}
    assert _drained(store, "t") == ["q1", "echo looked up q1"]
    assert not any(
        n.metadata["langgraph"].get("replaces") for n in store.nodes("t") if n.kind is Kind.MESSAGE
    )


def test_a_copied_threads_links_name_the_copys_nodes() -> None:
    """Before, the copy's ``copy_of`` and ``replaces`` named the source thread's nodes."""
    store = SessionStore()
    app = _build(SessionGraphSaver(store))
    thread: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"messages": [HumanMessage("q0", id="q0")]}, thread)
    app.update_state(thread, {"messages": [HumanMessage("q0, fixed", id="q0")]})
    app.checkpointer.copy_thread("t", "c")
    links = [
        n.metadata["langgraph"][k]
        for n in store.nodes("c")
        for k in ("copy_of", "replaces")
        if k in n.metadata.get("langgraph", {})
    ]
    assert len(links) == 2
    assert all(link.startswith("c/") or link.startswith("c#") for link in links)
    assert set(store.locate(links).values()) <= {s.id for s in store.sessions()} - {"t"}


def test_the_texts_kept_to_tell_an_edit_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A saver stores many turns: it keeps at most its bound of texts and still sees an edit."""
    monkeypatch.setattr(checkpoint_module, "_TEXTS_KEPT", 4)
    store = SessionStore()
    app = _chat(store)
    thread: Any = {"configurable": {"thread_id": "t"}}
    for i in range(6):
        app.invoke({"messages": [HumanMessage(f"turn {i}", id=f"h{i}")]}, thread)
        assert len(app.checkpointer._texts) <= 4
    _drained(store, "t")
    app.update_state(thread, {"messages": [HumanMessage("turn zero", id="h0")]})
    (new,) = store.pending("t", "memory", "ws")  # the cleared text was read again from the store
    assert (new.text, new.metadata["langgraph"]["replaces"]) == ("turn zero", "t/m/h0")


@pytest.mark.parametrize(
    "ts",
    ["", "yesterday", "2024-13-01T00:00:00+00:00", "9999-12-31T23:59:59-01:00", 5, None],
    ids=repr,
)
def test_a_checkpoint_whose_ts_is_no_time_takes_its_ids_time(ts: Any) -> None:
    """Before, the put failed with pydantic's "created_at Field required" and stored nothing."""
    saver = SessionGraphSaver(SessionStore())
    checkpoint = empty_checkpoint()
    checkpoint["ts"] = ts
    checkpoint["channel_values"] = {"messages": [HumanMessage("hi", id="h1")]}
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saver.put(config, checkpoint, {}, {})
    put_at = saver.store.node(f"t/{checkpoint['id']}").created_at
    # LangGraph's checkpoint ids are UUID version 6: the time it was made, to 100 ns
    stamped = empty_checkpoint()
    assert abs((put_at - datetime.fromisoformat(stamped["ts"])).total_seconds()) < 5
    assert saver.store.node("t/m/h1").created_at == put_at
    # a re-put stores the same time: the node is unchanged, nothing is added
    saver.put(config, checkpoint, {}, {})
    assert saver.store.node(f"t/{checkpoint['id']}").created_at == put_at
    assert saver.store.stats("t").nodes == 2


def test_a_checkpoint_whose_ts_and_id_hold_no_time_is_stored_at_the_put() -> None:
    saver = SessionGraphSaver(SessionStore())
    checkpoint = empty_checkpoint()
    checkpoint["ts"] = "not a time"
    checkpoint["id"] = "checkpoint-1"
    before = datetime.now(UTC)
    saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {})
    assert before <= saver.store.node("t/checkpoint-1").created_at <= datetime.now(UTC)


def test_a_thread_another_process_made_again_is_not_read_as_edited(tmp_path: Any) -> None:
    """Before, the saver compared with the text it kept from the thread's first life: "hello" of
    the thread made again counted as an edit of "hi", a second node handed "hello" again."""
    path = tmp_path / "s.db"
    first = _chat(SessionStore(path))
    thread: Any = {"configurable": {"thread_id": "t"}}
    first.invoke({"messages": [HumanMessage("hi", id="h1")]}, thread)
    other_store = SessionStore(path)  # another process: deletes the thread, makes it again
    other = _chat(other_store)
    other.checkpointer.delete_thread("t")
    other.invoke({"messages": [HumanMessage("hello", id="h1")]}, thread)
    assert _drained(other_store, "t") == ["hello", "echo hello"]
    first.invoke({"messages": [HumanMessage("bye", id="h2")]}, thread)
    assert _drained(other_store, "t") == ["bye", "echo bye"]
    assert [m.content for m in first.get_state(thread).values["messages"]] == [
        "hello",
        "echo hello",
        "bye",
        "echo bye",
    ]

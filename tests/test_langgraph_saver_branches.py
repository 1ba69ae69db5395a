"""SessionGraphSaver graphs of tricky message lists: duplicate ids, and a regenerated message id on a second branch."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph

from graph import Kind, SessionStore
from graph.checkpoint import SessionGraphSaver


def _put(saver: SessionGraphSaver, parent: Any, k: int, messages: list[Any]) -> Any:
    cp: Any = empty_checkpoint()
    cp["id"] = f"1ef0000{k:02d}-0000-6000-8000-000000000000"
    cp["channel_values"] = {"messages": messages}
    return saver.put(parent, cp, {"step": k, "source": "loop"}, {})


def _context(lists: list[list[Any]]) -> list[tuple[str, str]]:
    store = SessionStore()
    saver = SessionGraphSaver(store)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for k, messages in enumerate(lists):
        config = _put(saver, config, k, messages)
    return [(n.kind.value, n.text) for n in store.context("t") if n.kind is not Kind.EVENT]


def test_removed_duplicate_id_messages_leave_the_context_whichever_path_listed_them() -> None:
    """An id listed twice keeps two nodes on either path, and a removal covers both."""
    w, dup, y = HumanMessage("w", id="w"), HumanMessage("dup", id="x"), AIMessage("y", id="y")
    extended = _context([[dup, dup], [dup, dup, y], [y]])  # the fast path lists both x nodes
    general = _context([[w, dup, dup], [dup, dup, y], [y]])  # w removed: the general path
    assert ("message", "dup") not in extended
    assert ("message", "dup") not in general


def test_a_regenerated_message_with_a_known_id_on_another_branch_is_stored() -> None:
    """A regenerated answer with a known id after the same checkpoint is a node of its own."""
    saver = SessionGraphSaver(SessionStore())
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    c0 = _put(saver, root, 0, [HumanMessage("q", id="q")])
    _put(saver, c0, 1, [HumanMessage("q", id="q"), AIMessage("first answer", id="r")])
    _put(saver, c0, 2, [HumanMessage("q", id="q"), AIMessage("edited answer", id="r")])
    texts = {n.text for n in saver.store.nodes("t")}
    assert {"first answer", "edited answer"} <= texts


class _Chat(TypedDict):
    messages: Annotated[list[Any], operator.add]


def _replying(reply: Any) -> tuple[SessionStore, Any, Any]:
    """A store, an app of one ``reply`` node over an ``operator.add`` channel on it, a thread."""
    chat = StateGraph(_Chat)
    chat.add_node("reply", reply)
    chat.add_edge(START, "reply")
    store = SessionStore()
    app = chat.compile(checkpointer=SessionGraphSaver(store))
    return store, app, {"configurable": {"thread_id": "t"}}


def test_messages_without_ids_are_pending_turns() -> None:
    """A ``messages`` channel merged by ``operator.add`` keeps LangChain's id-less messages."""

    def reply(state: _Chat) -> dict[str, Any]:
        return {"messages": [AIMessage(f"re: {state['messages'][-1].content}")]}

    store, app, thread = _replying(reply)
    app.invoke({"messages": [HumanMessage("Hi")]}, thread)
    app.invoke({"messages": [HumanMessage("Bye")]}, thread)
    assert [n.text for n in store.pending("t", "memory", "ws")] == [
        "Hi",
        "re: Hi",
        "Bye",
        "re: Bye",
    ]
    first = list(app.get_state_history(thread))[-2].config  # after "Hi" was put, before the reply
    app.invoke({"messages": [HumanMessage("Other")]}, first)  # time travel: a fork
    by_tip = [[n.text for n in nodes] for _, nodes in store.pending_by_tip("t", "memory", "ws")]
    assert ["Hi", "Other", "re: Other"] in by_tip
    assert ["Hi", "re: Hi", "Bye", "re: Bye"] in by_tip


def test_a_message_with_lone_surrogates_is_stored_as_sqlite_saver_stores_it() -> None:
    """Text decoded from JSON escapes may hold lone surrogates: the put succeeds, the node says U+FFFD."""
    saver = SessionGraphSaver(SessionStore())
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    odd = HumanMessage("a\ud800b", id="q\udfff")
    c0 = _put(saver, root, 0, [odd])
    cp: Any = empty_checkpoint()
    cp["id"] = "1ef000001-0000-6000-8000-000000000000"
    cp["channel_values"] = {"messages": [], "summary": "gone \ud83d"}
    saver.put(c0, cp, {"step": 1, "source": "loop"}, {})
    texts = [n.text for n in saver.store.nodes("t") if n.kind is not Kind.EVENT]
    assert texts == ["a\ufffdb", "gone \ufffd"]
    got = saver.get_tuple(c0)
    assert got is not None and got.checkpoint["channel_values"]["messages"][0].id is not None


def test_an_id_listed_twice_in_a_regenerated_list_keeps_a_node_each() -> None:
    """Both listings of a known id renamed for one checkpoint: before, both took one node id."""
    saver = SessionGraphSaver(SessionStore())
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    q = HumanMessage("q", id="q")
    c0 = _put(saver, root, 0, [q])
    _put(saver, c0, 1, [q, AIMessage("first", id="d"), AIMessage("second", id="d")])
    c2 = _put(saver, c0, 2, [q, AIMessage("other", id="d"), AIMessage("second", id="d")])
    head = c2["configurable"]["checkpoint_id"]
    branch = saver.store.branch("t", f"t/{head}")
    assert [n.text for n in branch if n.kind is Kind.MESSAGE] == ["q", "other", "second"]


def test_messages_kept_as_dicts_are_pending_turns() -> None:
    """A ``messages`` channel of OpenAI-style dicts (``role``, ``content``), merged by ``operator.add``."""

    def reply(state: _Chat) -> dict[str, Any]:
        return {
            "messages": [
                {"role": "assistant", "content": f"re: {state['messages'][-1]['content']}"}
            ]
        }

    store, app, thread = _replying(reply)
    app.invoke({"messages": [{"role": "user", "content": "Hi", "id": "u1"}]}, thread)
    app.invoke({"messages": [{"type": "human", "content": "Bye"}]}, thread)
    got = [(n.role.value, n.text) for n in store.pending("t", "memory", "ws")]
    assert got == [
        ("user", "Hi"),
        ("assistant", "re: Hi"),
        ("user", "Bye"),
        ("assistant", "re: Bye"),
    ]


def test_a_rolled_back_put_on_the_memory_store_leaves_no_checkpoint_behind() -> None:
    """Before, the payload outlived the rolled-back nodes and the next put failed (unknown predecessor)."""
    from graph import MemorySessionStore

    store = MemorySessionStore()
    saver = SessionGraphSaver(store)
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    a, b = HumanMessage("a", id="a"), AIMessage("b", id="b")
    c0 = _put(saver, root, 0, [a])
    saver.put_writes(c0, [("x", 1)], "task")
    with pytest.raises(RuntimeError), store.atomic():
        c1 = _put(saver, c0, 1, [a, b])
        saver.put_writes(c1, [("x", 2)], "task")
        saver.put_writes(c0, [("__error__", "boom")], "task")
        saver.delete_thread("t")
        raise RuntimeError("the caller's transaction fails")
    latest = saver.get_tuple(root)
    assert latest is not None and latest.config == c0
    assert latest.pending_writes == [("task", "x", 1)]
    _put(saver, latest.config, 2, [a, HumanMessage("c", id="c")])
    assert [n.text for n in store.pending("t", "memory", "ws")] == ["a", "c"]


def test_chunks_chat_and_function_messages_are_turns() -> None:
    """LangChain's other message types, as ``operator.add`` keeps them (``add_messages`` would
    turn chunks into messages): before, their types were no role and they were skipped."""
    from langchain_core.messages import AIMessageChunk, ChatMessage, FunctionMessage

    saver = SessionGraphSaver(SessionStore())
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    listed = [
        ChatMessage(role="user", content="asked", id="c"),
        AIMessageChunk("stre", id="s") + AIMessageChunk("amed", id="s"),
        FunctionMessage(name="f", content="called", id="f"),
        ChatMessage(role="assistant", content="answered", id="a"),
    ]
    _put(saver, root, 0, listed)
    got = [(n.role.value, n.text) for n in saver.store.nodes("t") if n.kind is Kind.MESSAGE]
    assert got == [
        ("user", "asked"),
        ("assistant", "streamed"),
        ("tool", "called"),
        ("assistant", "answered"),
    ]

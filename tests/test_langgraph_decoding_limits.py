"""MessageMemo on messages it must not keep (uncopyable fields) and its bound on decoded memory."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.serde.jsonplus")

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import PrivateAttr

from graph import SessionStore, checkpoint_memo
from graph.checkpoint import SessionGraphSaver
from graph.checkpoint_memo import MessageMemo


class GuardedMessage(HumanMessage):
    """A user's message subclass holding a lock (a client, a cache guard) as a private attribute."""

    _guard: Any = PrivateAttr(default_factory=threading.Lock)


def _payload(serde: JsonPlusSerializer, messages: list[Any]) -> tuple[str, bytes]:
    cp: Any = empty_checkpoint()
    cp["channel_values"] = {"messages": messages}
    return serde.dumps_typed(cp)


def test_a_message_holding_an_uncopyable_value_decodes() -> None:
    """A message subclass holding what cannot be copied (a lock) decodes as loads_typed does."""
    serde = JsonPlusSerializer()
    type_, data = _payload(serde, [GuardedMessage("hello", id="g1")])
    want = serde.loads_typed((type_, data))
    assert MessageMemo(serde).loads(type_, data)["channel_values"]["messages"][0].content == (
        want["channel_values"]["messages"][0].content
    )


def test_get_tuple_reads_a_thread_with_an_uncopyable_message() -> None:
    """The saver reads back a checkpoint holding such a message."""
    saver = SessionGraphSaver(SessionStore())
    cp: Any = empty_checkpoint()
    cp["channel_values"] = {"messages": [GuardedMessage("hello", id="g1")]}
    config = saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {"step": 0}, {}
    )
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["messages"][0].content == "hello"


def test_the_kept_messages_take_a_few_times_their_encoded_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Messages of many content blocks (small encoded, large decoded) stay within the bound."""
    monkeypatch.setattr(checkpoint_memo, "MEMO_BYTES", 512 * 1024)
    serde = JsonPlusSerializer()
    messages = [
        HumanMessage([{"type": "text", "text": "a"} for _ in range(100)], id=f"m{i}")
        for i in range(250)  # about 485 KiB encoded: just under the bound
    ]
    type_, data = _payload(serde, messages)
    memo = MessageMemo(serde)
    gc.collect()
    tracemalloc.start()
    try:
        memo.loads(type_, data)  # the result is dropped: what stays is what the memo keeps
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert checkpoint_memo.MEMO_BYTES // 2 < memo._size <= checkpoint_memo.MEMO_BYTES
    assert retained <= 4 * checkpoint_memo.MEMO_BYTES

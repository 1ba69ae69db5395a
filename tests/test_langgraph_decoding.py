"""MessageMemo: LangGraph payloads decoded as LangGraph's serializer does, each message once."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.serde.jsonplus")

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from graph import SessionStore, checkpoint_memo
from graph.checkpoint import SessionGraphSaver
from graph.checkpoint_memo import MessageMemo


class Plan(BaseModel):
    """A user's own pydantic state value: not a message, never kept."""

    steps: list[str]


def _messages() -> list[Any]:
    return [
        SystemMessage("be brief", id="s0"),
        HumanMessage(
            [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}],
            id="h1",
        ),
        AIMessage(
            "calling",
            id="a2",
            tool_calls=[{"name": "search", "args": {"q": ["a", "b"], "n": 2}, "id": "c1"}],
            additional_kwargs={"nested": {"deep": [1, {"x": 2}]}},
            response_metadata={"model": "m", "usage": {"in": 3}},
        ),
        ToolMessage("found it", tool_call_id="c1", id="t3", artifact={"rows": [1, 2]}),
    ]


def _payload(serde: JsonPlusSerializer, values: dict[str, Any]) -> tuple[str, bytes]:
    cp: Any = empty_checkpoint()
    cp["channel_values"] = values
    return serde.dumps_typed(cp)


def test_decoding_equals_the_serializer_and_repeats() -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    type_, data = _payload(serde, {"messages": _messages(), "plan": Plan(steps=["a"]), "n": 3})
    want = serde.loads_typed((type_, data))
    for _ in range(3):
        got = memo.loads(type_, data)
        assert got == want
        assert [type(m) for m in got["channel_values"]["messages"]] == [
            type(m) for m in want["channel_values"]["messages"]
        ]


def test_a_changed_message_changes_no_later_read() -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    type_, data = _payload(serde, {"messages": _messages()})
    want = serde.loads_typed((type_, data))
    for _ in range(2):  # the first read decodes, the second copies the kept messages
        got = memo.loads(type_, data)
        system, human, ai, tool = got["channel_values"]["messages"]
        system.content = "changed"
        human.content[1]["image_url"]["url"] = "changed"
        ai.tool_calls[0]["args"]["q"].append("c")
        ai.additional_kwargs["nested"]["deep"][1]["x"] = 99
        ai.response_metadata["usage"]["in"] = 0
        tool.artifact["rows"].append(3)
        assert memo.loads(type_, data) == want


def _mutables(value: Any, into: dict[int, Any]) -> dict[int, Any]:
    """Every dict, list and set reachable from ``value`` (through messages' fields), by id."""
    if isinstance(value, BaseMessage):
        for part in (
            vars(value),
            value.__pydantic_fields_set__,
            value.__pydantic_extra__,
            value.__pydantic_private__,
        ):
            if part is not None:
                into[id(part)] = part
                _mutables(list(part) if isinstance(part, set) else part, into)
    elif isinstance(value, dict):
        into[id(value)] = value
        for v in value.values():
            _mutables(v, into)
    elif isinstance(value, list | set):
        into[id(value)] = value
        for v in value:
            _mutables(v, into)
    return into


def test_no_two_reads_share_a_mutable_part() -> None:
    # flat fields (empty or of plain values: copied one level) beside nested ones (copied deep)
    messages = [
        *_messages(),
        HumanMessage("with an extra field", id="h6", origin={"via": ["mail"]}),
        AIMessage("plain", id="a4", response_metadata={"model": "m"}),
        HumanMessage(["just", "strings"], id="h5"),
    ]
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    type_, data = _payload(serde, {"messages": messages})
    reads = [memo.loads(type_, data)["channel_values"]["messages"] for _ in range(3)]
    seen = [_mutables(read, {}) for read in reads]
    for i, a in enumerate(seen):
        for b in seen[i + 1 :]:
            assert a.keys().isdisjoint(b.keys())
    # and a change at the first level of a flat field reaches no later read
    ai, human = reads[1][-2], reads[1][-1]
    ai.additional_kwargs["added"] = 1
    ai.response_metadata["model"] = "changed"
    ai.tool_calls.append({"name": "x", "args": {}, "id": "c9", "type": "tool_call"})
    ai.__pydantic_fields_set__.add("name")
    human.content.append("more")
    again = memo.loads(type_, data)["channel_values"]["messages"]
    assert again == serde.loads_typed((type_, data))["channel_values"]["messages"]
    assert again[-2].__pydantic_fields_set__ == reads[0][-2].__pydantic_fields_set__


class _Counting(JsonPlusSerializer):
    """A serializer of its own (so decoded by itself, not memoised) that counts its decodes."""

    decoded = 0

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type(self).decoded += 1
        return super().loads_typed(data)


def test_list_decodes_each_checkpoint_when_the_caller_reaches_it() -> None:
    saver = SessionGraphSaver(SessionStore(":memory:"), serde=_Counting())
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for i in range(5):
        cp: Any = empty_checkpoint()
        cp["id"] = f"1ef00000-0000-6000-8000-00000000000{i}"
        cp["channel_values"] = {"messages": _messages()[: i % 4 + 1]}
        config = saver.put(config, cp, {"step": i}, {})
    _Counting.decoded = 0
    listed = saver.list({"configurable": {"thread_id": "t"}})
    first = next(listed)
    # the five metadata payloads (read for the filter) and the first checkpoint alone
    assert _Counting.decoded == 5 + 1
    assert first.checkpoint["id"].endswith("4")
    assert [t.checkpoint["id"][-1] for t in listed] == ["3", "2", "1", "0"]
    assert _Counting.decoded == 5 + 5


def test_other_models_are_decoded_every_time() -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    type_, data = _payload(serde, {"plan": Plan(steps=["a"])})
    first = memo.loads(type_, data)["channel_values"]["plan"]
    second = memo.loads(type_, data)["channel_values"]["plan"]
    assert first == second == Plan(steps=["a"]) and first is not second


def test_another_serializer_decodes_for_itself() -> None:
    class Counting(JsonPlusSerializer):
        calls = 0

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            Counting.calls += 1
            return super().loads_typed(data)

    serde = Counting()
    type_, data = _payload(serde, {"messages": _messages()})
    assert MessageMemo(serde).loads(type_, data) == serde.loads_typed((type_, data))
    assert Counting.calls == 2


def test_the_memo_starts_again_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint_memo, "MEMO_BYTES", 5000)
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    payloads = [
        _payload(serde, {"messages": [HumanMessage(f"message {i} " * 20, id=f"m{i}")]})
        for i in range(10)
    ]
    for _ in range(2):
        for type_, data in payloads:
            assert memo.loads(type_, data) == serde.loads_typed((type_, data))
        assert 0 < memo._size <= 5000


def test_a_clone_with_another_allowlist_decodes_with_its_own_serializer() -> None:
    serde = JsonPlusSerializer(allowed_msgpack_modules=[("langchain_core.messages", "Other")])
    saver = SessionGraphSaver(SessionStore(), serde=serde)
    before = saver._codec
    clone = saver.with_allowlist([("tests.test_langgraph_decoding", "Plan")])
    assert clone is not saver and clone.serde is not saver.serde
    assert clone._codec.serde is clone.serde and saver._codec is before


def test_get_tuple_hands_out_messages_a_caller_may_change() -> None:
    saver = SessionGraphSaver(SessionStore())
    cp: Any = empty_checkpoint()
    cp["channel_values"] = {"messages": _messages()}
    config = saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {"step": 0}, {}
    )
    want = saver.serde.loads_typed(saver.serde.dumps_typed(cp))
    first = saver.get_tuple(config)
    assert first is not None
    first.checkpoint["channel_values"]["messages"][2].tool_calls[0]["args"]["n"] = 7
    again = saver.get_tuple(config)
    assert again is not None and again.checkpoint == want


_text = st.text(max_size=12)
_json: Any = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _text,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_text, kids, max_size=3),
    max_leaves=6,
)


@st.composite
def _message(draw: Any) -> Any:
    mid = draw(st.sampled_from(["a", "b", "c", "d"]))
    content = draw(_text)
    kwargs = draw(st.dictionaries(_text, _json, max_size=2))
    kind = draw(st.sampled_from([HumanMessage, AIMessage, SystemMessage]))
    return kind(content, id=mid, additional_kwargs=kwargs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_message(), max_size=5), min_size=1, max_size=4))
def test_any_sequence_of_payloads_decodes_as_the_serializer_does(lists: list[list[Any]]) -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    payloads = [_payload(serde, {"messages": msgs}) for msgs in lists]
    for type_, data in payloads + payloads:
        assert memo.loads(type_, data) == serde.loads_typed((type_, data))


def test_a_serializer_with_its_own_extension_hook_decodes_for_itself() -> None:
    calls: list[int] = []
    plain = JsonPlusSerializer()

    def hook(code: int, data: bytes) -> Any:
        calls.append(code)
        return plain._unpack_ext_hook(code, data)

    serde = JsonPlusSerializer(__unpack_ext_hook__=hook)
    type_, data = _payload(serde, {"messages": _messages()})
    memo = MessageMemo(serde)
    for _ in range(2):
        assert memo.loads(type_, data) == plain.loads_typed((type_, data))
    assert calls.count(5) == 2 * len(_messages())  # every message decoded by the hook, each read

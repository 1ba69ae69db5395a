"""MessageMemo.dumps: LangGraph payloads encoded byte for byte as LangGraph's serializer does,
each unchanged message once."""

from __future__ import annotations

import enum
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.serde.jsonplus")

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from graph import SessionStore, checkpoint_memo
from graph.checkpoint import SessionGraphSaver
from graph.checkpoint_memo import MessageMemo


class Mode(enum.Enum):
    """A user's enum: LangGraph's serializer encodes a member otherwise than its value."""

    FAST = "fast"


class NotedMessage(AIMessage):
    """A user's own message class: never kept (it may encode by rules of its own)."""


def _state(messages: list[Any]) -> Any:
    cp: Any = empty_checkpoint()
    cp["id"] = "1ef00000-0000-6000-8000-000000000000"
    cp["ts"] = "2025-01-01T00:00:00+00:00"
    cp["channel_values"] = {"messages": messages, "n": 1}
    return cp


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The messages LangGraph's own hook was asked to encode (through the memo), in order."""
    asked: list[Any] = []
    default = checkpoint_memo._DEFAULT
    checkpoint_memo._encoder_matches()  # its one check per process encodes a sample: not counted

    def counting(value: Any) -> Any:
        asked.append(value)
        return default(value)

    monkeypatch.setattr(checkpoint_memo, "_DEFAULT", counting)
    return asked


def test_an_unchanged_message_is_encoded_once(encodes: list[Any]) -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    messages: list[Any] = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    assert memo.dumps(_state(messages)) == serde.dumps_typed(_state(messages))
    messages.append(HumanMessage("more", id="h2"))
    assert memo.dumps(_state(messages)) == serde.dumps_typed(_state(messages))
    assert [m.id for m in encodes] == ["h1", "a1", "h2"]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda m: setattr(m, "content", "edited"), id="content"),
        pytest.param(lambda m: m.additional_kwargs.__setitem__("flag", 1), id="True-to-1"),
        pytest.param(lambda m: m.additional_kwargs.__setitem__("flag", 1.0), id="True-to-1.0"),
        pytest.param(
            lambda m: m.response_metadata.update(
                {"b": m.response_metadata.pop("a"), "a": m.response_metadata.pop("b")}
            ),
            id="key-order",
        ),
        pytest.param(lambda m: m.tool_calls[0]["args"]["q"].append("c"), id="nested-append"),
        pytest.param(lambda m: m.additional_kwargs.__setitem__("mode", Mode.FAST), id="enum"),
        pytest.param(lambda m: m.additional_kwargs.__setitem__("list", ("x",)), id="tuple"),
    ],
)
def test_a_message_changed_in_place_is_encoded_anew(change: Any) -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    ai = AIMessage(
        "calling",
        id="a1",
        additional_kwargs={"flag": True, "mode": "fast", "list": ["x"]},
        response_metadata={"a": 1, "b": 2},
        tool_calls=[{"name": "search", "args": {"q": ["a", "b"]}, "id": "c1"}],
    )
    memo.dumps(_state([ai]))
    change(ai)
    again = memo.dumps(_state([ai]))
    assert again == serde.dumps_typed(_state([ai]))  # (a tuple for a list encodes the same)
    assert serde.loads_typed(again) == serde.loads_typed(serde.dumps_typed(_state([ai])))


def test_a_new_message_with_a_known_id_and_other_values_is_encoded_anew() -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    memo.dumps(_state([AIMessage("first", id="x")]))
    for other in (AIMessage("second", id="x"), HumanMessage("first", id="x")):
        assert memo.dumps(_state([other])) == serde.dumps_typed(_state([other]))


def test_a_new_object_at_a_freed_objects_address_is_encoded_for_itself() -> None:
    """Python gives a freed message's id to the next object of its size: a message of another class
    or other values there gets its own encoding, not the freed one's."""
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    addresses = []
    for i in range(40):
        kind = (HumanMessage, NotedMessage, AIMessage)[i % 3]
        m = kind(f"turn {i // 2}", id=f"m{i // 6}")
        addresses.append(id(m))
        state = _state([m])
        assert memo.dumps(state) == serde.dumps_typed(state)
        del m, state
    assert len(set(addresses)) < len(addresses)  # the case this test is for did happen


def test_messages_of_other_classes_or_without_an_id_are_encoded_every_time(
    encodes: list[Any],
) -> None:
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    messages = [NotedMessage("mine", id="n1"), HumanMessage("no id"), SystemMessage("s", id="s1")]
    for _ in range(2):
        assert memo.dumps(_state(messages)) == serde.dumps_typed(_state(messages))
    assert [type(m).__name__ for m in encodes] == [
        "NotedMessage",
        "HumanMessage",
        "SystemMessage",
        "NotedMessage",
        "HumanMessage",
    ]


def test_another_serializer_encodes_for_itself(encodes: list[Any]) -> None:
    class Marked(JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            type_, data = super().dumps_typed(obj)
            return type_, b"marked" + data

    serde = Marked()
    state = _state([HumanMessage("hi", id="h1")])
    assert MessageMemo(serde).dumps(state) == serde.dumps_typed(state)
    assert encodes == []  # the memo's encoder was never used


def test_when_the_serializer_encodes_otherwise_it_encodes_everything(
    monkeypatch: pytest.MonkeyPatch, encodes: list[Any]
) -> None:
    monkeypatch.setattr(checkpoint_memo, "_encoder_matches", lambda: False)
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    state = _state([HumanMessage("hi", id="h1")])
    for _ in range(2):
        assert memo.dumps(state) == serde.dumps_typed(state)
    assert encodes == []


def test_payloads_that_are_not_msgpack_are_the_serializers(encodes: list[Any]) -> None:
    serde = JsonPlusSerializer(pickle_fallback=True)
    memo = MessageMemo(serde)
    for value in (None, b"raw", bytearray(b"raw"), {"z": 1 + 2j}):  # msgpack has no complex
        assert memo.dumps(value) == serde.dumps_typed(value)
    assert memo.dumps({"z": 1j})[0] == "pickle"
    with pytest.raises(TypeError):  # as the serializer raises without its pickle fallback
        MessageMemo(JsonPlusSerializer()).dumps({"z": 1j})


def test_the_kept_encodings_start_again_past_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint_memo, "MEMO_BYTES", 2000)
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    messages = [HumanMessage(f"turn {i}", id=f"h{i}") for i in range(20)]
    for n in range(1, 21):
        state = _state(messages[:n])
        assert memo.dumps(state) == serde.dumps_typed(state)
        assert memo._encoded_size <= 2000
    big = HumanMessage("x" * 5000, id="big")  # alone over the bound: encoded, never kept
    assert memo.dumps(_state([big])) == serde.dumps_typed(_state([big]))


_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
)
_json: Any = st.recursive(
    _leaf,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=6,
)
_edit = st.tuples(
    st.integers(0, 3),  # which message
    st.sampled_from(["content", "kwarg", "replace", "reorder"]),
    st.text(max_size=4),
    _json,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_edit, max_size=12))
def test_any_history_of_edits_encodes_as_the_serializer_does(edits: list[Any]) -> None:
    """Messages edited in place, replaced by new ones with the same id, or reordered inside,
    between payloads: every payload's bytes are the serializer's."""
    serde = JsonPlusSerializer()
    memo = MessageMemo(serde)
    kinds = [HumanMessage, AIMessage, ToolMessage, SystemMessage]
    messages: list[Any] = [
        (
            kinds[i](f"m{i}", id=f"id{i}", tool_call_id="c")
            if i == 2
            else kinds[i](f"m{i}", id=f"id{i}")
        )
        for i in range(4)
    ]
    for which, what, key, value in edits:
        m = messages[which]
        if what == "content":
            m.content = key
        elif what == "kwarg":
            m.additional_kwargs[key] = value
        elif what == "replace":
            fields = {k: v for k, v in vars(m).items() if k != "type"}
            fields["content"] = key
            messages[which] = type(m)(**fields)
        else:
            m.additional_kwargs = dict(reversed(list(m.additional_kwargs.items())))
        state = _state(messages[: which + 1] + messages[which + 1 :])
        assert memo.dumps(state) == serde.dumps_typed(state)


def test_a_saver_stores_the_serializers_bytes(tmp_path: Any) -> None:
    saver = SessionGraphSaver(SessionStore(tmp_path / "s.db"))
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    messages: list[Any] = []
    states = []
    for i in range(6):
        messages.append((HumanMessage if i % 2 == 0 else AIMessage)(f"turn {i}", id=f"m{i}"))
        if i == 4:
            messages[1].content = "edited in place"
        cp = _state(list(messages))
        cp["id"] = f"1ef00000-0000-6000-8000-00000000000{i}"
        cp["ts"] = f"2025-01-01T00:00:0{i}+00:00"
        config = saver.put(config, cp, {"step": i}, {})
        states.append(saver.serde.dumps_typed(cp))  # now: a later edit in place changes cp
    rows = saver.store.conn.execute(
        "SELECT type, checkpoint FROM lg_checkpoints ORDER BY checkpoint_id"
    ).fetchall()
    assert [(t, bytes(b)) for t, b in rows] == states

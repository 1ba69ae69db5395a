from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graph import CodecError
from graph.codec import FORMAT_VERSION, decode, decode_content, encode, encode_content
from graph.models import TextBlock, ToolCallBlock

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_json_shaped_values_round_trip(value: object) -> None:
    assert decode(encode(value)) == value


def test_content_encoding_is_deterministic() -> None:
    c = (TextBlock(text="a"), ToolCallBlock(id="1", name="t", arguments={"b": 1, "a": 2}))
    assert encode_content(c) == encode_content(tuple(c))
    assert decode_content(encode_content(c)) == c


@pytest.mark.parametrize(
    "payload",
    [
        msgpack.packb({"v": FORMAT_VERSION, "d": msgpack.ExtType(5, b"x")}),
        msgpack.packb({"v": FORMAT_VERSION + 1, "d": 1}),
        msgpack.packb([1, 2]),
        b"\xc1garbage",
    ],
    ids=["extension type", "newer version", "no envelope", "not msgpack"],
)
def test_undecodable_payloads_raise_codec_error(payload: bytes) -> None:
    with pytest.raises(CodecError):
        decode(payload)


def test_unknown_block_type_is_refused() -> None:
    with pytest.raises(CodecError):
        decode_content(encode([{"type": "python-object", "module": "os", "name": "system"}]))


def test_values_outside_the_allow_list_are_refused() -> None:
    with pytest.raises(CodecError) as e:
        encode({"when": {1, 2}})
    assert e.value.type_name == "set"


def test_dicts_differing_only_in_key_order_encode_to_equal_bytes() -> None:
    a = {"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": None}}
    b = {"a": {"x": None, "y": [1, {"p": 3, "q": 2}]}, "b": 1}
    assert list(a) != list(b)
    assert encode(a, canonical=True) == encode(b, canonical=True)
    assert decode(encode(a, canonical=True)) == a
    assert list(decode(encode(b))) == ["a", "b"] and list(decode(encode(a))) == ["b", "a"]
    ca = (ToolCallBlock(id="1", name="t", arguments={"b": 1, "a": {"d": 2, "c": 3}}),)
    cb = (ToolCallBlock(id="1", name="t", arguments={"a": {"c": 3, "d": 2}, "b": 1}),)
    assert encode_content(ca) == encode_content(cb)


@pytest.mark.parametrize("twin", ["sqlite", "memory"])
def test_re_adding_an_equal_node_with_reordered_dicts_is_a_no_op(
    twin: str, tmp_path: object
) -> None:
    from pathlib import Path

    from graph import MemorySessionStore, SessionStore

    store = SessionStore(Path(str(tmp_path)) / "s.db") if twin == "sqlite" else MemorySessionStore()
    s = store.create_session("t", id="s")
    first = (ToolCallBlock(id="c1", name="grep", arguments={"pattern": "x", "path": "/src"}),)
    again = (ToolCallBlock(id="c1", name="grep", arguments={"path": "/src", "pattern": "x"}),)
    store.append(s.id, first, role="assistant", predecessor=None, id="n1")
    rev = store.index(s.id).rev
    got = store.append(s.id, again, role="assistant", predecessor=None, id="n1")
    assert got.id == "n1" and store.index(s.id).rev == rev
    assert len(store.nodes(s.id)) == 1
    store.close()

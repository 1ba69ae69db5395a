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

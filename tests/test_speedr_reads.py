"""Reading stored nodes back without validating them again gives the models validation would give."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from builder import build, chain

from graph import CodecError, MemorySessionStore, Node, SessionStore
from graph.codec import FORMAT_VERSION, decode, decode_content, encode, encode_content
from graph.models import ImageBlock, TextBlock, ToolCallBlock, ToolResultBlock
from graph.store.base import BaseStore

BLOCKS = (
    TextBlock(text="hi"),
    ToolCallBlock(id="c1", name="grep", arguments={"b": 1, "a": [1, {"z": None}]}),
    ToolResultBlock(call_id="c1", text="found", is_error=True),
    ImageBlock(ref="sha256:00", media_type="image/png"),
)


def test_decoded_blocks_are_the_validated_models() -> None:
    got = decode_content(encode_content(BLOCKS))
    assert got == BLOCKS
    assert [type(b) for b in got] == [type(b) for b in BLOCKS]
    assert [list(b.model_dump()) for b in got] == [list(b.model_dump()) for b in BLOCKS]
    validated = [type(b).model_validate(b.model_dump()) for b in got]
    assert [repr(b) for b in got] == [repr(b) for b in validated]
    assert hash(got[0]) == hash(BLOCKS[0])
    with pytest.raises(Exception, match="frozen"):
        got[0].text = "changed"  # type: ignore[misc]


def _payload(data: Any) -> bytes:
    return msgpack.packb({"v": FORMAT_VERSION, "d": data}, use_bin_type=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "x", "extra": 1},
        {"type": "text"},
        {"type": "video", "ref": "x"},
        {"type": "text", "text": 5},
        "not a map",
    ],
    ids=["extra-field", "missing-field", "unknown-type", "wrong-type", "not-a-map"],
)
def test_a_stored_block_that_is_not_exactly_a_block_is_refused(block: Any) -> None:
    with pytest.raises(CodecError):
        decode_content(_payload([{"type": "text", "text": "ok"}, block]))


def test_payloads_of_another_shape_still_decode() -> None:
    assert decode(encode({"a": [1, 2]})) == {"a": [1, 2]}
    assert decode(msgpack.packb({"d": "x", "v": 1})) == "x"  # fields in the other order
    with pytest.raises(CodecError):
        decode(encode("x")[:6] + b"\xc1")  # the header, then a byte msgpack never writes
    with pytest.raises(CodecError):
        decode(encode("x") + b"\x00")  # trailing bytes


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest) -> BaseStore:
    return SessionStore(":memory:") if request.param == "sqlite" else MemorySessionStore()


def test_read_nodes_equal_their_validated_copies(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 6))
    store.append(sid, BLOCKS, role="assistant", id="b1", metadata={"k": {"x": [1]}})
    store.mark(sid, ["m1", "m2"], "memory", "w2")
    store.mark(sid, ["m1", "m2"], "memory", "w1")
    store.mark(sid, ["m1"], "indexer", "i")
    store.rewind(sid, "m5")
    store.append(sid, "after", role="assistant", id="a1")
    nodes = store.nodes(sid)
    again = [Node.model_validate(n.model_dump()) for n in nodes]
    assert nodes == again
    by_id = {n.id: n for n in nodes}
    assert by_id["m1"].written == {"indexer": ("i",), "memory": ("w1", "w2")}
    assert list(by_id["m1"].metadata["written"]) == ["indexer", "memory"]
    assert by_id["m6"].rewound and by_id["b1"].rewound and not by_id["a1"].rewound
    assert by_id["b1"].content == BLOCKS and by_id["b1"].metadata["k"] == {"x": [1]}
    assert by_id["m2"].created_at.tzinfo is not None
    assert [n.id for n in store.pending(sid, "memory", "w1")] == ["m3", "m4", "m5", "a1"]
    with pytest.raises(Exception, match="frozen"):
        by_id["m1"].id = "x"  # type: ignore[misc]

"""Payload codec: msgpack with a closed allow-list of types.

Node content is encoded canonically: every map is written with its keys sorted, so equal content
(dicts that differ only in key order included) always gives equal bytes, and the store compares stored
content by its bytes. Metadata keeps its key order. A payload is a msgpack map ``{"v": FORMAT_VERSION, "d": data}``. Encoding accepts ``None``, ``bool``,
``int``, ``float``, ``str``, ``bytes``, lists, tuples and string-keyed dicts, plus the content blocks
of :mod:`graph.models` (stored as their field maps). Decoding revives only those plain types and the
content blocks: no msgpack extension type is accepted and nothing is ever imported by name. A stored
block whose field map is exactly one block type's (what encoding wrote, after the model validated it)
is rebuilt without validating it again; any other map goes through the pydantic models, which refuse
what is not a block.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgpack
from pydantic import BaseModel, TypeAdapter, ValidationError

from graph.errors import CodecError
from graph.models import Block, Content, ImageBlock, TextBlock, ToolCallBlock, ToolResultBlock

__all__ = ["FORMAT_VERSION", "decode", "decode_content", "encode", "encode_content"]

FORMAT_VERSION = 1
"""The payload format version written into every payload."""


@cache
def _blocks() -> TypeAdapter[tuple[Block, ...]]:
    """The validator of block tuples, built on first use (building it costs a start-up)."""
    return TypeAdapter(tuple[Block, ...])


_BlockModel = type[TextBlock] | type[ToolCallBlock] | type[ToolResultBlock] | type[ImageBlock]


def _typed_fields(model: _BlockModel) -> tuple[tuple[str, type], ...]:
    """The fields of a block model declared ``str`` or ``bool``, with that type."""
    return tuple(
        (name, f.annotation)
        for name, f in model.model_fields.items()
        if f.annotation in (str, bool)
    )


_BLOCK_TYPES: dict[
    str, tuple[_BlockModel, tuple[str, ...], frozenset[str], tuple[tuple[str, type], ...]]
] = {
    model.model_fields["type"].default: (
        model,
        tuple(model.model_fields),
        frozenset(model.model_fields),
        _typed_fields(model),
    )
    for model in (TextBlock, ToolCallBlock, ToolResultBlock, ImageBlock)
}
"""A block's ``type`` -> its model, the exact field names encoding writes for it (in order, as a
set), and the ``str`` and ``bool`` fields with their types (checked before the block is rebuilt)."""


_BLOCK_MODELS = frozenset(model for model, *_ in _BLOCK_TYPES.values())
"""The block models: their fields are plain values or JSON-shaped data (a model found inside is
dumped by the canonical encoding, as ``model_dump`` would)."""


def _default(value: object) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="python")
    raise CodecError(type(value).__name__, "not in the allow-list")


_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def _canonical(value: Any) -> Any:
    """``value`` with every dict's keys in sorted order (models dumped to their field maps)."""
    t = type(value)
    if t is dict:
        items = value.items()
        if len(value) > 1:
            try:
                items = sorted(items)  # keys are unique: only they are ever compared
            except TypeError:
                pass  # mixed key types: msgpack's strict key check reports it on decode
        return {k: v if type(v) in _SCALARS else _canonical(v) for k, v in items}
    if t is list or t is tuple:
        return [v if type(v) in _SCALARS else _canonical(v) for v in value]
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="python"))
    if isinstance(value, dict):
        return _canonical(dict(value))
    return value


def _no_ext(code: int, data: bytes) -> Any:
    raise CodecError(f"msgpack extension type {code}", "not in the allow-list")


def encode(data: Any, *, canonical: bool = False) -> bytes:
    """Encode JSON-shaped ``data`` as a versioned msgpack payload.

    Args:
        data: The value.
        canonical: Write every map with its keys sorted, so equal data always gives equal bytes
            (node content is written so). Otherwise maps keep their order, which reads back.

    Raises:
        CodecError: ``data`` holds a value outside the allow-list (a datetime, a set, an object).
    """
    try:
        packed: bytes = msgpack.packb(
            {"v": FORMAT_VERSION, "d": _canonical(data) if canonical else data},
            default=_default,
            use_bin_type=True,
        )
        return packed
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, CodecError):
            raise
        raise CodecError(type(data).__name__, str(e)) from e


_PREFIX = msgpack.packb({"v": FORMAT_VERSION, "d": None})[:-1]
"""The bytes every payload of this format version starts with: a two-entry map, ``v``, ``d``."""


def decode(payload: bytes) -> Any:
    """Decode a payload written by :func:`encode` and return its data.

    Raises:
        CodecError: the payload is not msgpack, uses an extension type, or has a newer format version.
    """
    if payload[:6] == _PREFIX:
        # What encode writes: the data follows the fixed header, decoded without building the map.
        try:
            return msgpack.unpackb(payload[6:], raw=False, ext_hook=_no_ext, strict_map_key=True)
        except CodecError:
            raise
        except Exception as e:
            raise CodecError("payload", f"not valid msgpack ({e})") from e
    try:
        obj = msgpack.unpackb(payload, raw=False, ext_hook=_no_ext, strict_map_key=True)
    except CodecError:
        raise
    except Exception as e:  # msgpack raises several unrelated types for corrupt input
        raise CodecError("payload", f"not valid msgpack ({e})") from e
    if not isinstance(obj, dict) or "v" not in obj or "d" not in obj:
        raise CodecError("payload", "missing version or data field")
    if not isinstance(obj["v"], int) or obj["v"] > FORMAT_VERSION:
        raise CodecError("payload", f"format version {obj['v']!r} is newer than {FORMAT_VERSION}")
    return obj["d"]


def encode_content(content: Content) -> bytes:
    """Encode node content (text or blocks); equal content always gives equal bytes.

    Dicts inside blocks (a tool call's arguments, say) that differ only in key order are equal
    content and encode to the same bytes.
    """
    if isinstance(content, str):
        return encode(content)
    # A block model's field map is its __dict__ (canonical encoding copies it, keys sorted):
    # what model_dump returns, without pydantic's serializer (most of a block's encoding time).
    return encode(
        [b.__dict__ if type(b) in _BLOCK_MODELS else b.model_dump(mode="python") for b in content],
        canonical=True,
    )


def decode_content(payload: bytes) -> Content:
    """Decode node content written by :func:`encode_content`.

    Raises:
        CodecError: the payload is corrupt or a block is not one of the known block types.
    """
    data = decode(payload)
    if isinstance(data, str):
        return data
    if type(data) is list:
        blocks: list[TextBlock | ToolCallBlock | ToolResultBlock | ImageBlock] = []
        for item in data:
            kind = _BLOCK_TYPES.get(item.get("type", "")) if type(item) is dict else None
            if kind is None or item.keys() != kind[2]:
                break
            if any(type(item[f]) is not t for f, t in kind[3]):
                break
            block = kind[0].__new__(kind[0])
            object.__setattr__(block, "__dict__", {f: item[f] for f in kind[1]})  # field order
            object.__setattr__(block, "__pydantic_fields_set__", set(kind[1]))
            object.__setattr__(block, "__pydantic_extra__", None)
            object.__setattr__(block, "__pydantic_private__", None)
            blocks.append(block)
        else:
            return tuple(blocks)
    try:
        return _blocks().validate_python(data)
    except ValidationError as e:
        raise CodecError("content block", str(e).splitlines()[0]) from e

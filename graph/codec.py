"""Payload codec: msgpack with a closed allow-list of types.

Node content is encoded canonically: every map is written with its keys sorted, so equal content
(dicts that differ only in key order included) always gives equal bytes, and the store compares stored
content by its bytes. Metadata keeps its key order. A payload is a msgpack map ``{"v": FORMAT_VERSION, "d": data}``. Encoding accepts ``None``, ``bool``,
``int``, ``float``, ``str``, ``bytes``, lists, tuples and string-keyed dicts, plus the content blocks
of :mod:`graph.models` (stored as their field maps). Decoding revives only those plain types and the
content blocks, through their pydantic models: no msgpack extension type is accepted and nothing is
ever imported by name.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgpack
from pydantic import BaseModel, TypeAdapter, ValidationError

from graph.errors import CodecError
from graph.models import Block, Content

__all__ = ["FORMAT_VERSION", "decode", "decode_content", "encode", "encode_content"]

FORMAT_VERSION = 1
"""The payload format version written into every payload."""


@cache
def _blocks() -> TypeAdapter[tuple[Block, ...]]:
    """The validator of block tuples, built on first use (building it costs a start-up)."""
    return TypeAdapter(tuple[Block, ...])


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


def decode(payload: bytes) -> Any:
    """Decode a payload written by :func:`encode` and return its data.

    Raises:
        CodecError: the payload is not msgpack, uses an extension type, or has a newer format version.
    """
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
    return encode([b.model_dump(mode="python") for b in content], canonical=True)


def decode_content(payload: bytes) -> Content:
    """Decode node content written by :func:`encode_content`.

    Raises:
        CodecError: the payload is corrupt or a block is not one of the known block types.
    """
    data = decode(payload)
    if isinstance(data, str):
        return data
    try:
        return _blocks().validate_python(data)
    except ValidationError as e:
        raise CodecError("content block", str(e).splitlines()[0]) from e

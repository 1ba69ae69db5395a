"""Decoding LangGraph checkpoint payloads with each distinct message decoded once.

A LangGraph checkpoint of a conversation holds the whole ``messages`` list, so the checkpoints of one
thread repeat the same messages: checkpoint *k* and *k + 1* share *k* of them, byte for byte, as
LangGraph's msgpack serializer (``JsonPlusSerializer``) wrote them. Decoding a message there means
validating a LangChain pydantic model (about 5 µs); copying one already decoded costs a tenth of that.

:class:`MessageMemo` decodes a ``"msgpack"`` payload exactly as ``JsonPlusSerializer.loads_typed``
does (``ormsgpack.unpackb`` with the serializer's own extension hook), except that each pydantic
extension (LangGraph's ext code 5) that decodes to a LangChain ``BaseMessage`` is kept under its
encoded bytes, and later payloads holding the same bytes get a copy of it (about 0.5 µs): a new model
whose mutable fields (dicts and lists, nested) are new too, so a caller that changes a message it was handed changes
nothing another read returns. Every other extension and payload type, and any serializer other than a
plain ``JsonPlusSerializer`` (an encrypting one, a custom one), is decoded by the serializer itself.

Only messages of LangChain's own classes (``langchain_core.messages``) are kept: a subclass may hold
what a copy cannot share or copy (a lock, a client), and LangGraph's serializer reports the
decoding of types it does not know (its serde events) on every read, which a kept copy would skip.
A message whose copy fails is not kept either. The kept messages are bounded by an estimate of
their decoded size (:data:`MEMO_BYTES`: about 1.2 KiB per model, its encoded bytes for its text,
and 300 bytes per dict or list in its fields, as measured with ``tracemalloc``); past it the memo
starts empty again.
"""

from __future__ import annotations

import copy
from typing import Any

import ormsgpack
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["MEMO_BYTES", "MessageMemo"]

MEMO_BYTES = 32 * 1024 * 1024
"""Estimated decoded bytes of the messages a memo keeps (see the module docstring)."""

_MODEL_BYTES = 1200
"""About what a decoded LangChain message takes before its text and containers."""

_CONTAINER_BYTES = 300
"""About what each dict or list in a decoded message's fields takes."""

_EXT_PYDANTIC_V2 = 5
"""LangGraph's msgpack extension code for a pydantic v2 model (``EXT_PYDANTIC_V2``)."""

_KEPT_PACKAGE = "langchain_core.messages."
"""Where LangChain's own message classes live: only their messages are kept."""

_SHARED = frozenset({str, int, float, bool, bytes, type(None)})
"""Types whose values a copy shares (immutable); checked by exact type."""

_new = object.__new__
_set = object.__setattr__


def _tree(value: Any) -> Any:
    """A copy of a JSON-like value: new dicts and lists all the way down, immutable leaves shared."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SHARED else _tree(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SHARED else _tree(v) for v in value]
    if kind in _SHARED:
        return value
    return copy.deepcopy(value)


def _containers(value: Any) -> int:
    """How many dicts and lists ``value`` is made of (itself included)."""
    kind = type(value)
    if kind is dict:
        return 1 + sum(_containers(v) for v in value.values() if type(v) not in _SHARED)
    if kind is list:
        return 1 + sum(_containers(v) for v in value if type(v) not in _SHARED)
    return 0


def _weight(message: BaseMessage, encoded: int) -> int:
    """An estimate of the bytes a decoded message takes (see the module docstring)."""
    held = sum(_containers(v) for v in message.__dict__.values() if type(v) not in _SHARED)
    return _MODEL_BYTES + encoded + _CONTAINER_BYTES * held


class _Template:
    """A kept message, laid out to be copied fast: :meth:`copy` makes a message equal to it.

    A copy is what pydantic's ``model_copy`` makes (a new instance over a copy of the field values,
    the set of fields given and the extra and private values), with every dict and list new too,
    so it shares nothing mutable with the kept message or with any other copy.

    Its fields are split once by what a copy must do with them: immutable values are shared (one
    ``dict.copy`` takes them all), flat dicts and lists (of immutable values only, as most message
    fields are: empty ``additional_kwargs``, string content) are copied one level, and the rest
    (nested content blocks, tool calls) all the way down.
    """

    __slots__ = ("cls", "deep", "extra", "fields", "fields_set", "flat", "private")

    def __init__(self, message: BaseMessage) -> None:
        self.cls = type(message)
        self.fields = {k: v if type(v) in _SHARED else _tree(v) for k, v in vars(message).items()}
        mutable = [k for k, v in self.fields.items() if type(v) not in _SHARED]
        self.flat = tuple(k for k in mutable if _flat(self.fields[k]))
        self.deep = tuple(k for k in mutable if k not in self.flat)
        self.fields_set = set(message.__pydantic_fields_set__)
        extra, private = message.__pydantic_extra__, message.__pydantic_private__
        self.extra = None if extra is None else _tree(extra)
        self.private = None if private is None else _tree(private)

    def copy(self) -> BaseMessage:
        """A new message equal to the kept one, sharing nothing mutable with it or other copies."""
        fields = self.fields.copy()
        for k in self.flat:
            fields[k] = fields[k].copy()
        for k in self.deep:
            fields[k] = _tree(fields[k])
        new = _new(self.cls)
        _set(new, "__dict__", fields)
        _set(new, "__pydantic_fields_set__", self.fields_set.copy())
        _set(new, "__pydantic_extra__", None if self.extra is None else _tree(self.extra))
        _set(new, "__pydantic_private__", None if self.private is None else _tree(self.private))
        return new


def _flat(value: Any) -> bool:
    """Whether ``value`` is a dict or list holding immutable values only (one level to copy)."""
    kind = type(value)
    if kind is dict:
        return all(type(v) in _SHARED for v in value.values())
    if kind is list:
        return all(type(v) in _SHARED for v in value)
    return False


class MessageMemo:
    """Decodes payloads as a saver's serializer does, decoding each distinct message once.

    Args:
        serde: The saver's serializer (``BaseCheckpointSaver.serde``).
    """

    def __init__(self, serde: Any) -> None:
        self.serde = serde
        self._hook = getattr(serde, "_unpack_ext_hook", None)
        self._plain = (
            type(serde) is JsonPlusSerializer
            and callable(self._hook)
            and not getattr(serde, "_custom_unpack_ext_hook", True)
        )
        self._kept: dict[bytes, _Template] = {}
        self._size = 0

    def loads(self, type_: str, data: bytes) -> Any:
        """Decode one payload ``(type_, data)`` as ``serde.loads_typed((type_, data))`` would.

        Raises:
            Whatever the serializer raises for a payload it cannot decode.
        """
        if type_ != "msgpack" or not self._plain:
            return self.serde.loads_typed((type_, data))
        return ormsgpack.unpackb(data, ext_hook=self._ext, option=ormsgpack.OPT_NON_STR_KEYS)

    def _ext(self, code: int, data: bytes) -> Any:
        if code != _EXT_PYDANTIC_V2:
            return self._hook(code, data)  # type: ignore[misc]
        kept = self._kept.get(data)
        if kept is not None:
            return kept.copy()
        value = self._hook(code, data)  # type: ignore[misc]
        if not isinstance(value, BaseMessage) or not type(value).__module__.startswith(
            _KEPT_PACKAGE
        ):
            return value
        weight = _weight(value, len(data))
        if weight > MEMO_BYTES:
            return value
        try:
            template = _Template(value)
        except Exception:  # a field a copy cannot make: decoded on every read instead
            return value
        if self._size + weight > MEMO_BYTES:
            self._kept = {}
            self._size = 0
        self._kept[data] = template
        self._size += weight
        return value

"""Encoding and decoding LangGraph checkpoint payloads with each distinct message done once.

A LangGraph checkpoint of a conversation holds the whole ``messages`` list, so the checkpoints of one
thread repeat the same messages: checkpoint *k* and *k + 1* share *k* of them, byte for byte, as
LangGraph's msgpack serializer (``JsonPlusSerializer``) wrote them. Encoding a message there means
dumping a LangChain pydantic model and packing it (about 8 µs), decoding one validating it again
(about 5 µs); comparing or copying one kept from before costs a fraction of either.

:class:`MessageMemo` does both exactly as a plain ``JsonPlusSerializer`` does (``dumps_typed``,
``loads_typed``: ``ormsgpack`` with the serializer's own extension hooks), except for LangChain
messages (LangGraph's pydantic extension, code 5):

* Encoding: a message with a string ``id`` is kept with the bytes of its encoding and a fingerprint
  of its values (packed strictly: types and key order included), under its class and id and under
  the object itself. A later payload holding the same object, or another of that class and id,
  with exactly the fingerprinted values gets those bytes again; any change encodes it anew. The
  bytes are the serializer's either way (checked once per process against ``dumps_typed`` on a
  sample; when they differ, as another LangGraph version might make them, the serializer encodes
  everything).
* Decoding: each message is kept under its encoded bytes, and later payloads holding the same bytes
  get a copy of it: a new model whose mutable fields (dicts and lists, nested) are new too, so a
  caller that changes a message it was handed changes nothing another read returns.

Every other extension and payload type, and any serializer other than a plain ``JsonPlusSerializer``
(an encrypting one, a custom one), is handled by the serializer itself.

Only messages of LangChain's own classes (``langchain_core.messages``) are kept: a subclass may hold
what a copy cannot share or copy (a lock, a client), and LangGraph's serializer reports the
decoding of types it does not know (its serde events) on every read, which a kept copy would skip.
A message whose copy fails is not kept either. Each direction's kept messages are bounded by an
estimate of their decoded size (:data:`MEMO_BYTES`: about 1.2 KiB per model, its encoded bytes for
its text, and 300 bytes per dict or list in its fields, as measured with ``tracemalloc``); past it
that direction starts empty again.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import ormsgpack
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["MEMO_BYTES", "MessageMemo"]

MEMO_BYTES = 32 * 1024 * 1024
"""Estimated decoded bytes of the messages a memo keeps, per direction (see the module docstring)."""

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

_OPTION: int = getattr(jsonplus, "_option", 0)
"""The ``ormsgpack`` options LangGraph's serializer encodes with."""

_DEFAULT: Any = getattr(jsonplus, "_msgpack_default", None)
"""LangGraph's serializer's hook for the values msgpack cannot encode itself (models, sets...)."""


@cache
def _encoder_matches() -> bool:
    """Whether encoding here gives LangGraph's serializer's bytes (its private parts as assumed).

    Checked once per process on a message with every kind of field; when it fails (another
    LangGraph version encodes otherwise), payloads are encoded by the serializer itself.
    """
    if not callable(_DEFAULT):
        return False
    sample = {
        "messages": [
            AIMessage(
                "sample",
                id="m",
                tool_calls=[{"name": "t", "args": {"k": [1, 2.5, True, None]}, "id": "c"}],
                response_metadata={"model": "x"},
            )
        ],
        "n": 1,
    }
    try:
        return (
            ormsgpack.packb(sample, default=_DEFAULT, option=_OPTION)
            == (JsonPlusSerializer().dumps_typed(sample)[1])
        )
    except Exception:
        return False


_FINGERPRINT_OPTION = (
    ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_UUID
)
"""Every type but msgpack's own is refused when a message's values are fingerprinted."""

_ENTRY_BYTES = 300
"""About what one kept encoding takes beside its fingerprint and encoded bytes (key, tuple, Ext)."""

_OBJECT_BYTES = 150
"""About what noting one more object of a kept encoding takes (its id, a tuple, a dict slot)."""

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
        extra, private = self.extra, self.private
        # usually {} (messages allow extra fields and have none) and None (no private attributes)
        _set(new, "__pydantic_extra__", None if extra is None else _tree(extra) if extra else {})
        _set(new, "__pydantic_private__", None if private is None else _tree(private))
        return new


def _fingerprint(message: Any) -> bytes | None:
    """What a message's encoding is made of, packed strictly; None when it cannot be (not kept).

    Its field values and extra values, packed by ``ormsgpack`` with no hook for other types and
    every "pass through" option, so that values an encoding tells apart are told apart here too:
    ``True``, ``1`` and ``1.0``, keys in another order, a tuple for a list, an enum, a subclass of
    ``str`` or any other type (those make it fail: such a message is encoded every time).
    """
    try:
        return ormsgpack.packb(
            [vars(message), message.__pydantic_extra__], option=_FINGERPRINT_OPTION
        )
    except (TypeError, ormsgpack.MsgpackEncodeError):
        return None


def _flat(value: Any) -> bool:
    """Whether ``value`` is a dict or list holding immutable values only (one level to copy)."""
    kind = type(value)
    if kind is dict:
        return all(type(v) in _SHARED for v in value.values())
    if kind is list:
        return all(type(v) in _SHARED for v in value)
    return False


class MessageMemo:
    """Encodes and decodes payloads as a saver's serializer does, each distinct message once.

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
        self._encodes = self._plain and _encoder_matches()
        self._kept: dict[bytes, _Template] = {}
        self._size = 0
        self._encoded: dict[tuple[type, str], tuple[bytes, Any]] = {}
        self._by_object: dict[int, tuple[type, bytes, Any]] = {}
        self._encoded_size = 0

    def dumps(self, value: Any) -> tuple[str, bytes]:
        """Encode ``value`` as ``serde.dumps_typed(value)`` would, byte for byte.

        A LangChain message with a string ``id`` that holds exactly what it held when it was last
        encoded (same class, same values of the same types, keys in the same order: the inputs of
        its encoding) gets the bytes of that encoding again instead of being dumped anew. Checkpoints
        of a conversation repeat every earlier message, and LangGraph hands the same messages to
        every put, so each put encodes only the messages that are new or changed.

        Raises:
            Whatever the serializer raises for a value it cannot encode.
        """
        if not self._encodes or value is None or isinstance(value, bytes | bytearray):
            return self.serde.dumps_typed(value)  # type: ignore[no-any-return]
        try:
            return "msgpack", ormsgpack.packb(value, default=self._default, option=_OPTION)
        except ormsgpack.MsgpackEncodeError:
            return self.serde.dumps_typed(value)  # type: ignore[no-any-return]  # its fallback

    def _default(self, value: Any) -> Any:
        # The same object as before (LangGraph hands each put the messages of the last): its class
        # and fingerprint decide, as they do for another object of the same id below. An id that
        # Python gave to a new object since needs the same class and values to match.
        seen = self._by_object.get(id(value))
        if seen is not None and type(value) is seen[0] and _fingerprint(value) == seen[1]:
            return seen[2]
        cls = type(value)
        if not (isinstance(value, BaseMessage) and cls.__module__.startswith(_KEPT_PACKAGE)):
            return _DEFAULT(value)
        mid = vars(value).get("id")
        fingerprint = _fingerprint(value) if type(mid) is str else None
        if fingerprint is None:
            return _DEFAULT(value)
        key = (cls, str(mid))
        kept = self._encoded.get(key)
        if kept is not None and kept[0] == fingerprint:
            ext = kept[1]
            weight = _OBJECT_BYTES
        else:
            ext = _DEFAULT(value)
            weight = _ENTRY_BYTES + len(fingerprint) + len(ormsgpack.packb(ext))
            if weight > MEMO_BYTES:
                return ext
        if self._encoded_size + weight > MEMO_BYTES:
            self._encoded, self._by_object = {}, {}
            self._encoded_size = 0
        self._encoded[key] = (fingerprint, ext)
        self._by_object[id(value)] = (cls, fingerprint, ext)
        self._encoded_size += weight
        return ext

    def loads(self, type_: str, data: bytes) -> Any:
        """Decode one payload ``(type_, data)`` as ``serde.loads_typed((type_, data))`` would.

        Raises:
            Whatever the serializer raises for a payload it cannot decode.
        """
        if not self._plain:
            return self.serde.loads_typed((type_, data))
        if type_ == "msgpack":
            return ormsgpack.unpackb(data, ext_hook=self._ext, option=ormsgpack.OPT_NON_STR_KEYS)
        if type_ == "null":  # what JsonPlusSerializer writes for None (a write of no value)
            return None
        return self.serde.loads_typed((type_, data))

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

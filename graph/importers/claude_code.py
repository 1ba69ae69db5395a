"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as sessions.

How entries become nodes:

* Every entry with a ``uuid`` is a node with that id; ``parentUuid`` is its predecessor. The session id
  is the entries' ``sessionId``. Several assistant entries of one API response stay separate nodes
  (their ``message.id`` is in the metadata).
* ``user``/``assistant`` entries are ``message`` nodes. A user entry made only of tool results has the
  role ``tool``; an ``isMeta`` entry (a caveat the CLI injects) the role ``system``. Thinking blocks go
  to ``metadata["thinking"]``, never into the content. Every other field of the entry is kept in the
  metadata, except ``uuid``, ``parentUuid`` and ``message.content``.
* ``system``, ``progress`` and unknown entries with a uuid are ``event`` nodes (role ``system``).
* Entries without a uuid (``file-history-snapshot``, ``queue-operation``, ``summary``, titles, unknown
  types) are kept, with their line numbers, in the session metadata under ``entries``. A title comes
  from the newest ``custom-title``/``ai-title`` entry, else a ``summary`` entry whose ``leafUuid`` is in
  the file, else the first user prompt.
* Compaction: a ``system/compact_boundary`` entry (``parentUuid: null``) gets its ``logicalParentUuid``
  as predecessor when that node exists (the original null parent is kept in the metadata), so the
  session stays one tree. The following ``isCompactSummary`` entry becomes a ``summary`` node whose
  covers are the whole branch up to the boundary's predecessor (inline layout: they are its
  ancestors). With ``compactMetadata.preservedSegment`` the kept head follows the summary and the
  boundary follows the last replaced entry, so the summary covers only what it replaced and the kept
  tail stays live (the logical parent is then the kept tail: following it would be a cycle).
* Sub-agents: inline sidechains (``isSidechain: true``, older builds) and ``<session>/subagents/
  agent-*.jsonl`` (and ``agent-*.jsonl`` beside the session file) become spawned sessions, ids
  ``<session>/sidechain-<root uuid>`` and ``<session>/agent-<agentId>``, linked to the assistant node
  holding the ``Task`` tool call that started them (found through the ``agent-*.meta.json`` sidecar,
  the tool result's ``toolUseResult.agentId``, ``agent_progress`` entries, or the prompt text), else
  to the main node the agent's first entry names as parent. The compaction agent
  (``agent-acompact-*``) is linked to its boundary's logical parent; hook reminders replayed into an
  agent's file are artifacts. An agent file imported before its trunk is a session of its own until
  the trunk is imported, which links it as importing the trunk first would have.
* Rewinds: a node with two or more user-prompt children (text typed by the user, not tool results,
  progress or meta entries) at different times is a rewind; every branch below it except the one
  holding the head (else the newest) is stamped rewound, as :meth:`BaseStore.rewind` does. When
  later lines go on from a branch an import of the shorter file stamped (the head's branch passes
  through it now), the import of the grown file removes those stamps
  (:func:`~graph.importers._common.unstamp_kept`) and stamps the branch now left behind.
* Artifact forks: at a node with several children, every child off the kept branch (the head's, else
  the one written last) whose subtree holds no typed prompt (a progress or hook entry beside a tool
  result, a parallel tool call's result) is flagged ``metadata["artifact"]`` with its subtree: stored,
  but never a tip and not counted as a fork (:data:`graph.index.ARTIFACT`). A tool result left off the
  head's branch that way is named in the report's notes. Later lines move the flag of stored entries
  (a sibling written after a node makes a fork there; the head moving to another side of a fork moves
  the flag with it): every import gives the entries it reads the flag the whole file decides
  (:meth:`BaseStore.set_artifact`), so a file imported while it grows ends as one import of it.
  One difference is inherent: links are content, fixed once stored, and a preserved-segment
  compaction re-links its kept head, an entry written long before the boundary, under the summary.
  A file imported before its boundary was written keeps the head under its recorded parent (or,
  imported between the boundary and the summary, under the boundary); the rest of the layout (the
  boundary after the replaced span, the summary's covers, the head) is what one import gives.
* The head is the last message (``user``/``assistant`` entry) of the main conversation in file order:
  never an event written after it, never a sidechain entry.
* Damage (all reported; see :class:`~graph.importers.report.FileReport`): a self parent, a
  ``logicalParentUuid`` naming itself or nothing, and links closing a cycle are cut (``relinked``);
  a parent that is in no file read (and not stored) is dangling: the node becomes a root, the parent is
  kept as ``metadata["dangling_parent"]`` (``dangling``); a replayed uuid keeps its first copy
  (``dropped``). Every walk is bounded by the number of entries.
* Each file is its own session. Entries whose uuid another session holds (a ``/branch`` or
  ``--fork-session`` copy, a forked sub-agent repeating its trunk) are stored once: identical ones stay
  in the session holding them (``dropped``), the copy's next entry becomes a root with
  ``metadata["forked_from"]``, and the session metadata names the source (``forked_from``); one with
  another predecessor or content is stored apart as ``<uuid>@<session>`` (``relinked``). Importing a
  file never moves another session's head.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import orjson

from graph.importers._common import (
    EPOCH,
    ensure_session,
    file_import,
    image_block,
    parse_time,
    predecessors_first,
    preview,
    stamp_subtrees,
    stored_ids,
    unstamp_kept,
)
from graph.importers.jsonl import Line, LineProblems, LineReader, ReadPosition, read_jsonl
from graph.importers.report import FileReport, TranscriptError
from graph.importers.resume import FileState, resumed, save_state
from graph.index import IndexView
from graph.models import (
    Block,
    Content,
    Kind,
    Node,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    to_micros,
)
from graph.store.base import BaseStore, node_of_fields, paused_gc

__all__ = ["FORMAT", "agent_files", "import_file", "is_agent_file"]

FORMAT = "claude-code"
"""The format name :func:`graph.importers.detect_format` gives these files."""

# Entries are parsed JSON, so their objects are dicts: the rules test ``isinstance(x, dict)``, which
# costs a fraction of an ABC ``Mapping`` check, once per field read of every entry.

_TITLE_TYPES = ("custom-title", "ai-title")
_ENTRY_TYPES = {"summary", "file-history-snapshot", "queue-operation", "last-prompt", "mode"}
_ENTRY_TYPES |= {"agent-setting", "pr-link", "attachment", "content-replacement", "relocated"}
_ENTRY_TYPES |= set(_TITLE_TYPES)
"""Claude Code entry types written without a uuid (kept in the session metadata)."""


_MISSING: Any = object()
"""Stands for a field an entry does not have (told apart from one holding null)."""

_NO_TIME = -(2**63)
"""The time column's value for an entry whose time is missing or unreadable (it takes the time of
the entry before it)."""


def _micros(value: Any) -> int:
    """An entry's ``timestamp`` as microseconds since the epoch, :data:`_NO_TIME` when unreadable."""
    moment = parse_time(value, _UNREADABLE)
    return _NO_TIME if moment is _UNREADABLE else to_micros(moment)


_UNREADABLE = datetime(1, 1, 1, tzinfo=UTC)
"""What :func:`parse_time` gives back, as its fallback, for a time it cannot read (by identity)."""


def _moment(micros: int) -> datetime:
    """The UTC time ``micros`` microseconds after the epoch (any year a datetime holds)."""
    return EPOCH + timedelta(microseconds=micros)


def _iso_z(micros: int, digits: int) -> str:
    """``micros`` written as Claude Code writes times, ``2025-03-01T12:00:00.250Z``.

    ``digits`` is how many digits the fraction of a second has: 3 (what Claude Code writes), 6 or
    0 (no fraction). It is exactly the string :data:`_ISO_Z` matched, when that parses.
    """
    spec = "milliseconds" if digits == 3 else "microseconds" if digits == 6 else "seconds"
    return _moment(micros).isoformat(timespec=spec)[:-6] + "Z"  # (without its "+00:00")


_ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{3}|\.\d{6})?Z", re.ASCII).fullmatch
"""Whether a time has a form :func:`_iso_z` writes (then, when it parses, it is that of its
micros: every field sits at a fixed place)."""

_DIGITS = {20: 0, 24: 3, 27: 6}
"""The length of a time :data:`_ISO_Z` matches -> the digits of its fraction of a second."""

_ODD = 255
"""The digits column's value for a time kept as it is (not of :data:`_ISO_Z`'s form)."""


class _LineEntries(dict[str, Line]):
    """uuid -> entry, each held as its :class:`Line` (a sub-agent's file, a sidechain, a window).

    The rules read entries through :meth:`number`, :meth:`field`, :meth:`shape` and
    :meth:`micros`, which :class:`_SlimEntries` answers from its columns.
    """

    def number(self, u: str) -> int:
        """The entry's line number."""
        return self[u].number

    def field(self, u: str, key: str) -> Any:
        """``data.get(key)`` of the entry."""
        return self[u].data.get(key)

    def shape(self, u: str) -> Mapping[str, Any]:
        """The entry's fields (read only).

        Every field but ``uuid``, ``parentUuid`` and ``timestamp`` is there as the rules read it
        (those three: :meth:`field`).
        """
        return self[u].data

    def micros(self, u: str) -> int:
        """The entry's time in microseconds since the epoch (:data:`_NO_TIME`: none or unreadable)."""
        return _micros(self[u].data.get("timestamp"))

    def stamp_text(self, u: str) -> str:
        """``str(data.get("timestamp", ""))`` of the entry (how the rewind rule compares times)."""
        return str(self[u].data.get("timestamp", ""))

    def call_ids(self, u: str) -> Sequence[Any]:
        """The ``id`` of each ``tool_use`` block of the entry's message, in order."""
        return _call_ids(self[u].data)

    def where(self, u: str) -> tuple[int, int, int]:
        """(line number, byte offset, part) of the entry (see :class:`Line`)."""
        line = self[u]
        return line.number, line.offset, line.part

    def shapes(self) -> Iterator[Mapping[str, Any]]:
        """Every entry's :meth:`shape`, in file order."""
        return (line.data for line in self.values())


class _SlimEntries(Mapping[str, Line]):
    """uuid -> what the rules read of an entry, held column by column (a large session file).

    Per entry: its uuid (a key, with its position), its parent id (the string object of the entry
    it names when that was read before), line number, byte offset and time (machine integers), and
    its *shape*: the slim entry (:class:`_Slimmer`) without ``uuid``, ``parentUuid`` and
    ``timestamp``, one dict shared by every entry of the same shape (a plain prompt, a reply, a
    tool result, a hook's progress entry). A time in the form Claude Code writes is kept as its
    microseconds only, any other value as it is. ``self[u]`` makes the entry's :class:`Line` with
    its slim data, for the rare paths that want one; the rules read the columns.
    """

    __slots__ = (
        "_pos",
        "_uuids",
        "_parents",
        "_numbers",
        "_offsets",
        "_times",
        "_digits",
        "_shapes",
        "_parts",
        "_odd_times",
        "_calls",
    )

    def __init__(self) -> None:
        self._pos: dict[str, int] = {}
        self._uuids: list[str] = []
        self._parents: list[Any] = []
        self._numbers = array("q")
        self._offsets = array("q")
        self._times = array("q")
        self._digits = array("B")
        self._shapes: list[Mapping[str, Any]] = []
        self._parts: dict[int, int] = {}
        self._calls: dict[int, tuple[Any, ...]] = {}
        """Position -> the ids of the entry's tool calls (:meth:`call_ids`), where it has any."""
        self._odd_times: dict[int, Any] = {}
        """Position -> the raw ``timestamp`` of entries whose time is not in :func:`_iso_z`'s
        form (``_MISSING`` when there is none)."""

    def add(
        self,
        u: str,
        parent: Any,
        stamp: Any,
        shape: Mapping[str, Any],
        number: int,
        offset: int,
        part: int,
        calls: tuple[Any, ...] = (),
    ) -> None:
        """Append an entry (before :meth:`seal`).

        ``parent`` and ``stamp`` are its fields (``_MISSING`` when absent), ``calls`` the ids of
        its tool calls (:meth:`call_ids`), ``shape`` the rest (:meth:`shape`).
        """
        i = len(self._numbers)
        if calls:
            self._calls[i] = calls
        pos = self._pos
        pos[u] = i
        self._uuids.append(u)
        if isinstance(parent, str):
            j = pos.get(parent)
            if j is not None:
                parent = self._uuids[j]  # one string object for the id and the links to it
        self._parents.append(parent)
        self._numbers.append(number)
        self._offsets.append(offset)
        if part:
            self._parts[i] = part
        digits = _ODD
        if isinstance(stamp, str) and _ISO_Z(stamp):
            micros = _micros(stamp)
            if micros != _NO_TIME:
                digits = _DIGITS[len(stamp)]
        else:
            micros = _NO_TIME if stamp is _MISSING else _micros(stamp)
        if digits == _ODD:
            self._odd_times[i] = stamp
        self._times.append(micros)
        self._digits.append(digits)
        self._shapes.append(shape)

    def seal(self) -> None:
        """Say that every entry is added: what only :meth:`add` needs is let go."""
        self._uuids = []

    def __getitem__(self, u: str) -> Line:
        i = self._pos[u]
        data = {"uuid": u, **self._shapes[i]}
        ids = self._calls.get(i)
        if ids:  # the tool calls' blocks with their ids, as the slim entry had them
            calls = iter(ids)
            data["message"] = {
                "content": [
                    {**b, "id": next(calls, None)}
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                    else b
                    for b in data["message"]["content"]
                ]
            }
        parent = self._parents[i]
        if parent is not _MISSING:
            data["parentUuid"] = parent
        stamp = self._stamp(i)
        if stamp is not _MISSING:
            data["timestamp"] = stamp
        return Line(self._numbers[i], data, self._offsets[i], self._parts.get(i, 0))

    def __contains__(self, u: object) -> bool:
        return u in self._pos

    def __iter__(self) -> Iterator[str]:
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)

    def _stamp(self, i: int) -> Any:
        odd = self._odd_times
        if odd and i in odd:
            return odd[i]
        return _iso_z(self._times[i], self._digits[i])

    def number(self, u: str) -> int:
        """The entry's line number."""
        return self._numbers[self._pos[u]]

    def field(self, u: str, key: str) -> Any:
        """``data.get(key)`` of the entry's slim data."""
        i = self._pos[u]
        if key == "parentUuid":
            parent = self._parents[i]
            return None if parent is _MISSING else parent
        if key == "timestamp":
            stamp = self._stamp(i)
            return None if stamp is _MISSING else stamp
        if key == "uuid":
            return u
        return self._shapes[i].get(key)

    def shape(self, u: str) -> Mapping[str, Any]:
        """The entry's slim data but ``uuid``, ``parentUuid`` and ``timestamp`` (shared; read only)."""
        return self._shapes[self._pos[u]]

    def micros(self, u: str) -> int:
        """The entry's time in microseconds since the epoch (:data:`_NO_TIME`: none or unreadable)."""
        return self._times[self._pos[u]]

    def call_ids(self, u: str) -> Sequence[Any]:
        """The ``id`` of each ``tool_use`` block of the entry's message, in order.

        The shape's blocks leave them out, so that one shape serves every call of a tool.
        """
        return self._calls.get(self._pos[u], ())

    def stamp_text(self, u: str) -> str:
        """``str(data.get("timestamp", ""))`` of the entry (how the rewind rule compares times)."""
        stamp = self._stamp(self._pos[u])
        return "" if stamp is _MISSING else str(stamp)

    def where(self, u: str) -> tuple[int, int, int]:
        """(line number, byte offset, part) of the entry (see :class:`Line`)."""
        i = self._pos[u]
        return self._numbers[i], self._offsets[i], self._parts.get(i, 0)

    def shapes(self) -> Iterator[Mapping[str, Any]]:
        """Every entry's :meth:`shape`, in file order."""
        return iter(self._shapes)


_Entries = _LineEntries | _SlimEntries


@dataclass
class _Transcript:
    """One file's entries, split into uuid entries (in file order) and the rest."""

    path: Path
    entries: _Entries = field(default_factory=_LineEntries)
    other: list[Line] = field(default_factory=list)
    slim: bool = False
    """Whether ``entries`` hold only what the rules read (:class:`_Slimmer`), the full entries
    being read again from the file when their nodes are made (:meth:`reading`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.entries, _LineEntries | _SlimEntries):
            self.entries = _LineEntries(self.entries)

    @contextmanager
    def reading(self) -> Iterator[Callable[[str], Line]]:
        """Yield ``full(uuid) -> Line``: the entry as the file holds it, whole.

        Raises:
            TranscriptError: (from ``full``) the line no longer holds the entry (the file was
                rewritten while it was imported).
            OSError: the file cannot be read.
        """
        entries = self.entries
        if not self.slim:
            yield entries.__getitem__
            return
        with LineReader(self.path) as reader:

            def full(u: str) -> Line:
                number, offset, part = entries.where(u)
                if offset < 0:  # not read from the file (a resumed window's stored entry)
                    return entries[u]
                data = reader.data_at(offset, part, number)
                if data is None or data.get("uuid") != u:
                    raise TranscriptError(
                        self.path, f"line {number} changed while it was imported (entry {u})"
                    )
                return Line(number, data, offset, part)

            yield full

    @property
    def session_id(self) -> str:
        for shape in self.entries.shapes():
            sid = shape.get("sessionId")
            if isinstance(sid, str) and sid:
                return sid
        for line in self.other:
            sid = line.data.get("sessionId")
            if isinstance(sid, str) and sid:
                return sid
        return self.path.stem


def _names_a_session(t: _Transcript) -> bool:
    """Whether any line of the file carries a ``sessionId``."""
    return any(isinstance(o.data.get("sessionId"), str) and o.data["sessionId"] for o in t.other)


def _read(
    path: Path,
    problems: LineProblems,
    report: FileReport,
    position: ReadPosition | None = None,
    *,
    slim: bool = False,
) -> _Transcript:
    """Read a file's entries; with ``slim``, keep of each uuid entry only what the rules read.

    A slim read (:class:`_SlimEntries`, :class:`_Slimmer`) holds about two hundred bytes per
    entry whatever the entries' size (tool outputs, file contents): its uuid, parent, line, offset
    and time, and a reference to its shape, shared with every entry of that shape. The nodes are
    made from the file, read again a chunk at a time.
    """
    t = _Transcript(path, slim=slim)
    slimmer = _Slimmer()
    slims = _SlimEntries() if slim else None
    lines = _LineEntries()
    t.entries = lines if slims is None else slims
    for line in read_jsonl(path, problems, position):
        data = line.data
        uid = data.get("uuid")
        if isinstance(uid, str) and uid:
            if uid in t.entries:
                # a replayed entry: the earliest copy is kept
                first = t.entries.number(uid)
                report.dropped.append((line.number, uid, f"a replay of line {first}'s uuid"))
            elif slims is not None:
                shape = slimmer.shape(data)
                slims.add(
                    uid,
                    data.get("parentUuid", _MISSING),
                    data.get("timestamp", _MISSING),
                    shape,
                    line.number,
                    line.offset,
                    line.part,
                    slimmer.calls,
                )
            else:
                lines[uid] = line
        else:
            kind = data.get("type")
            if kind not in _ENTRY_TYPES:  # a message or event that lost its uuid, or no known entry
                report.dropped.append(
                    (
                        line.number,
                        "",
                        f"an entry of type {kind!r} without a uuid: not a node "
                        "(kept in the session metadata, under entries)",
                    )
                )
            t.other.append(line)
    if slims is not None:
        slims.seal()
    return t


_KEPT = (
    "logicalParentUuid",
    "type",
    "subtype",
    "compactMetadata",
    "forkedFrom",
    "agentId",
)
"""The entry fields the linking, fork, head, rewind, title and spawn rules read, kept as they are
(besides ``uuid``, ``parentUuid`` and ``timestamp``, which :class:`_SlimEntries` keeps apart)."""

_FLAGS = ("isMeta", "isCompactSummary", "isSidechain")
"""Flags the rules read by truth: kept only when set."""

_SHARED = frozenset(("type", "subtype"))
"""Kept fields whose values repeat from entry to entry: one string object serves them all."""

_CHANGES = ("cwd", "version", "gitBranch", "sessionId")
"""Entry fields kept in a slim entry only where their value changes from the entry before."""

_SCALARS = (str, bool, int, float)

_TEXT: dict[str, Any] = {"content": "x"}
_NO_TEXT: dict[str, Any] = {"content": ""}
_NO_CONTENT: dict[str, Any] = {}


class _Slimmer:
    """Makes the shapes of one file's slim entries (:meth:`shape`), sharing what repeats.

    Values that repeat (types, session ids, blocks and block lists without ids) are one object for
    every entry (never written to), and so is a whole shape made only of such values (most
    entries: a prompt, a reply, a tool result, a hook's progress entry); ``cwd``, ``version``,
    ``gitBranch`` and ``sessionId`` are kept only where they change (the session takes the newest
    of the first three and the first session id, and a resumed read checks each value it meets,
    so the result is the same). A progress entry's tool call ids are kept only when it names an
    agent (the one rule reading them links that agent).
    """

    def __init__(self) -> None:
        self.shared: dict[Any, Any] = {}
        self.origin: dict[str, Any] = {}
        self.calls: tuple[Any, ...] = ()
        """The ids of the tool calls of the entry :meth:`shape` saw last (its blocks leave them
        out, so that one block serves every call of a tool)."""
        self.interned: set[int] = {id(_TEXT), id(_NO_TEXT), id(_NO_CONTENT)}
        """The ids of the shared dicts (only those a shape may hold and still be shared)."""

    def _intern(self, key: Any, value: dict[str, Any]) -> dict[str, Any]:
        one: dict[str, Any] | None = self.shared.get(key)
        if one is None:
            one = self.shared[key] = value
            self.interned.add(id(one))
        return one

    def shape(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """What the rules read of an entry but its uuid, parent and time (see :class:`_Slimmer`).

        The result may be shared with other entries: it is never written to.
        """
        shared = self.shared
        self.calls = ()
        out: dict[str, Any] = {}
        for k in _KEPT:
            if k in data:
                v = data[k]
                if k in _SHARED and isinstance(v, str):
                    v = shared.setdefault(v, v)
                out[k] = v
        for k in _FLAGS:
            if data.get(k):
                out[k] = data[k]
        origin = self.origin
        for key in _CHANGES:
            v = data.get(key)
            if v and origin.get(key) != v:
                out[key] = origin[key] = v
        result = data.get("toolUseResult")
        agent = result.get("agentId") if isinstance(result, dict) else None
        if agent:
            out["toolUseResult"] = {"agentId": agent}
        d = data.get("data")
        if isinstance(d, dict):
            kept = tuple((k, d[k]) for k in ("type", "agentId") if k in d)
            if all(isinstance(v, str) for _, v in kept):
                out["data"] = self._intern(("data", kept), dict(kept))
            else:
                out["data"] = dict(kept)
            if d.get("agentId") and out.get("type") == "progress":
                for k in ("parentToolUseID", "toolUseID"):
                    if k in data:
                        out[k] = data[k]
        message = data.get("message")
        if isinstance(message, dict):
            out["message"] = self._message(message.get("content"), bool(agent))
        return self._shared_shape(out)

    def _shared_shape(self, out: dict[str, Any]) -> Mapping[str, Any]:
        """``out``, or the equal shape made before when every value of it repeats."""
        interned = self.interned
        key: list[Any] = ["shape"]
        for k, v in out.items():
            if v is None or type(v) in _SCALARS:
                key += (k, type(v), v)
            elif id(v) in interned:
                key += (k, id(v))
            else:
                return out  # a value of its own (a tool call's id, compaction metadata, ...)
        return self._intern(tuple(key), out)

    def _message(self, content: Any, agent: bool) -> dict[str, Any]:
        """A message's content as the rules read it (:func:`_is_prompt`, :func:`_tool_calls`).

        A string becomes ``"x"`` or ``""`` (whether it holds text); a list keeps each block's type,
        a tool call's id and name (and a ``Task``/``Agent`` call's prompt), and a tool result's call
        id when the entry names an agent. Texts, tool outputs and thinking stay in the file.
        """
        if isinstance(content, str):
            return _TEXT if content.strip() else _NO_TEXT
        if not isinstance(content, list):
            return _NO_CONTENT
        shared = self.shared
        blocks: list[dict[str, Any]] = []
        calls: list[Any] = []
        plain = True
        for b in content:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if isinstance(kind, str):
                kind = shared.setdefault(kind, kind)
                if kind == "tool_use":
                    calls.append(b.get("id"))
                    name = b.get("name")
                    args = b.get("input")
                    if name in ("Task", "Agent") and isinstance(args, dict):
                        block: dict[str, Any] = {"type": kind, "name": name}
                        block["input"] = {"prompt": args["prompt"]} if "prompt" in args else {}
                        blocks.append(block)
                        plain = False
                    elif isinstance(name, str):
                        blocks.append(self._intern(("call", name), {"type": kind, "name": name}))
                    else:
                        blocks.append({"type": kind, "name": name})
                        plain = False
                elif kind == "tool_result" and agent:
                    blocks.append({"type": kind, "tool_use_id": b.get("tool_use_id")})
                    plain = False
                else:
                    one = shared.get(("block", kind))
                    if one is None:
                        one = shared[("block", kind)] = {"type": kind}
                    blocks.append(one)
            else:
                blocks.append({"type": kind})
                plain = False
        self.calls = tuple(calls)
        if not plain:
            return {"content": blocks}
        return self._intern(("blocks", *map(id, blocks)), {"content": blocks})


def is_agent_file(path: Path) -> bool:
    """Whether ``path`` is a sub-agent transcript (``agent-<id>.jsonl``) rather than a session's."""
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def agent_files(path: Path) -> list[Path]:
    """The sub-agent transcripts that belong to the session file ``path``.

    They are ``<session>/subagents/agent-*.jsonl`` (2.1.x) and ``agent-*.jsonl`` beside the session
    file whose entries name the session (2.0.3x); the result is sorted by path.
    """
    found = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    for beside in sorted(path.parent.glob("agent-*.jsonl")):
        if _first_session_id(beside) == path.stem:
            found.append(beside)
    return found


def _first_session_id(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            for raw in f:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    return str(obj["sessionId"])
    except OSError:
        return None
    return None


# ------------------------------------------------------------------------------------- content


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                if b.get("type") == "text":
                    parts.append(str(b.get("text", "")))
                elif b.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return "" if content is None else orjson.dumps(content).decode()


_B = TypeVar("_B", TextBlock, ToolCallBlock, ToolResultBlock)


def _block(model: type[_B], **fields: Any) -> _B:
    """``model(**fields)``, built directly instead of validated (most of a block's making time).

    ``fields`` are the block's fields after ``type``, in field order, each already of its declared
    type (``str``, ``bool``; a tool call's arguments are parsed JSON): all the validation checks.
    """
    block = model.__new__(model)
    values = {"type": model.model_fields["type"].default, **fields}
    object.__setattr__(block, "__dict__", values)
    object.__setattr__(block, "__pydantic_fields_set__", set(values))
    object.__setattr__(block, "__pydantic_extra__", None)
    object.__setattr__(block, "__pydantic_private__", None)
    return block


def _content(message: Mapping[str, Any]) -> tuple[Content, list[str], list[Any]]:
    """Return (content, thinking texts, blocks of unknown type) of a message."""
    raw = message.get("content")
    if isinstance(raw, str):
        return raw, [], []
    blocks: list[Block] = []
    thinking: list[str] = []
    other: list[Any] = []
    for b in raw if isinstance(raw, list) else []:
        if not isinstance(b, dict):
            other.append(b)
            continue
        kind = b.get("type")
        if kind == "text":
            blocks.append(_block(TextBlock, text=str(b.get("text", ""))))
        elif kind == "tool_use":
            blocks.append(
                _block(
                    ToolCallBlock,
                    id=str(b.get("id", "")),
                    name=str(b.get("name", "")),
                    arguments=b.get("input"),
                )
            )
        elif kind == "tool_result":
            blocks.append(
                _block(
                    ToolResultBlock,
                    call_id=str(b.get("tool_use_id", "")),
                    text=_flatten(b.get("content")),
                    is_error=bool(b.get("is_error", False)),
                )
            )
        elif kind == "image":
            blocks.append(image_block(b.get("source")))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
        elif kind == "redacted_thinking":
            thinking.append("[redacted]")
        else:
            other.append(dict(b))
    return tuple(blocks), thinking, other


def _is_prompt(data: Mapping[str, Any]) -> bool:
    """Whether an entry is text the user typed (a rewind re-prompts with one)."""
    if data.get("type") != "user" or data.get("isMeta") or data.get("isCompactSummary"):
        return False
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list):
        return False
    kinds = {b.get("type") for b in content if isinstance(b, dict)}
    return "text" in kinds and "tool_result" not in kinds


def _event_text(data: Mapping[str, Any]) -> str:
    kind = str(data.get("type", ""))
    if kind == "system":
        content = data.get("content")
        subtype = data.get("subtype")
        text = content if isinstance(content, str) else ""
        return f"{subtype}: {text}" if subtype and text else text or str(subtype or "system")
    if kind == "progress":
        d = data.get("data")
        if isinstance(d, dict):
            what = d.get("hookName") or d.get("command") or d.get("agentId") or ""
            return f"{d.get('type', 'progress')} {what}".strip()
    return kind


def _node(
    sid: str,
    line: Line,
    predecessor: str | None,
    when: datetime,
    extra: Mapping[str, Any],
    node_id: str | None = None,
) -> Node:
    data = line.data
    meta = dict(data)  # a copy, then pops: the order of the fields left, at C speed
    meta.pop("uuid", None)
    meta.pop("parentUuid", None)
    meta["line"] = line.number
    meta.update(extra)
    kind, role = Kind.EVENT, Role.SYSTEM
    content: Content
    message = data.get("message")
    if not (data.get("type") in ("user", "assistant") and isinstance(message, dict)):
        content = _event_text(data)
    else:
        content, thinking, other = _content(message)
        kept = meta["message"] = dict(message)
        kept.pop("content", None)
        if thinking:
            meta["thinking"] = thinking
        if other:
            meta["other_blocks"] = other
        kind = Kind.MESSAGE
        if data["type"] == "assistant":
            role = Role.ASSISTANT
        elif data.get("isCompactSummary"):
            kind = Kind.SUMMARY
        elif data.get("isMeta"):
            role = Role.SYSTEM
        elif (
            isinstance(content, tuple)
            and content
            and all(isinstance(b, ToolResultBlock) for b in content)
        ):
            role = Role.TOOL
        else:
            role = Role.USER
    return node_of_fields(
        {
            "id": node_id or data["uuid"],
            "session_id": sid,
            "predecessor": predecessor,
            "kind": kind,
            "role": role,
            "content": content,
            "created_at": when,
            "metadata": meta,
            "covers": (),
        }
    )


# ------------------------------------------------------------------------------------- graph


@dataclass
class _Links:
    """The predecessor of each entry of one session's import, after the repairs, in uuid space.

    ``pred`` maps every imported uuid to its predecessor (None for a root); it is acyclic. ``extra``
    holds the metadata each repair adds to a node (``dangling_parent``, ``cycle_parent``, ...).
    """

    pred: dict[str, str | None] = field(default_factory=dict)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    logical: set[str] = field(default_factory=set)


class _LineNumbers(Mapping[str, int]):
    """uuid -> line number of a file's entries, read from them (no copy per entry)."""

    def __init__(self, entries: _Entries) -> None:
        self._entries = entries

    def __getitem__(self, u: str) -> int:
        return self._entries.number(u)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _is_boundary(data: Mapping[str, Any]) -> bool:
    return data.get("type") == "system" and data.get("subtype") == "compact_boundary"


def _link(
    t: _Transcript,
    uuids: Sequence[str],
    known: Mapping[str, Any],
    copied: Mapping[str, str],
    report: FileReport,
    outside: Mapping[str, Any] | None = None,
) -> _Links:
    """Resolve every entry's predecessor, repairing what would make the graph wrong or endless.

    * ``parentUuid: null`` with a ``logicalParentUuid`` (a compaction boundary) links to the logical
      parent when it is in the file or stored. One naming nothing or itself is reported, and the
      boundary links to the newest message written before it (what the logical parent names in a
      sound file: the last message before the compaction).
    * A preserved-segment compaction (``compactMetadata.preservedSegment``) is laid out as the runtime
      reads it back: the kept head follows the summary, and the boundary follows the last replaced
      entry (the head's recorded parent), so the summary covers exactly the replaced span.
    * A self parent, or a link closing a cycle, is cut (the entry becomes a root, the recorded parent
      kept as ``metadata["cycle_parent"]``) and reported with the ids and lines of the cycle.
    * A parent in no file read and not stored is dangling (``metadata["dangling_parent"]``); one held
      by another session as an identical copy makes a fork root (``metadata["forked_from"]``); one in
      ``outside`` (a sub-agent's trunk session) is kept as ``metadata["parent_in_session"]``.

    Every walk here is bounded by the number of entries.
    """
    # (uuids are distinct entries of t: as many as t holds are all of them)
    inside: Container[str] = t.entries if len(uuids) == len(t.entries) else set(uuids)
    out = _Links()
    pred, extra = out.pred, out.extra
    lines = _LineNumbers(t.entries)

    def stored(p: str) -> bool:
        return p in inside or p in known

    last_message: str | None = None  # the newest message before the entry, in file order
    entries = t.entries
    for u in uuids:
        data = entries.shape(u)
        parent = entries.field(u, "parentUuid")
        logical = data.get("logicalParentUuid")
        if parent is not None and not isinstance(parent, str):
            report.relinked.append((lines[u], u, f"parentUuid {parent!r} is not an id; a root"))
            parent = None
        if parent is None and isinstance(logical, str):
            extra.setdefault(u, {})["parentUuid"] = None
            parent = logical
            broken = None
            if logical == u:
                broken = "its own logicalParentUuid (a cycle of one)"
            elif stored(logical):
                out.logical.add(u)
            elif logical not in copied and not (outside and logical in outside):
                broken = f"logicalParentUuid {logical} names no entry"
            if broken is not None:
                extra[u]["logical_parent"] = logical
                parent = last_message if _is_boundary(data) else None
                where = f"linked after {parent}, the last message before it" if parent else "a root"
                report.relinked.append((lines[u], u, f"{broken}; {where}"))
        if data.get("type") in ("user", "assistant"):
            last_message = u
        if parent is None:
            pred[u] = None
        elif parent == u:
            extra.setdefault(u, {})["cycle_parent"] = u
            report.relinked.append((lines[u], u, "its own parent (a cycle of one); cut, a root"))
            pred[u] = None
        elif stored(parent):
            pred[u] = parent
        elif parent in copied:
            extra.setdefault(u, {})["forked_from"] = {"session": copied[parent], "node": parent}
            pred[u] = None
        elif outside is not None and parent in outside:
            extra.setdefault(u, {})["parent_in_session"] = {"node": parent}
            pred[u] = None
        else:
            extra.setdefault(u, {})["dangling_parent"] = parent
            report.dangling.append((u, parent))
            pred[u] = None
    _relink_preserved(t, uuids, out, report)
    _cut_cycles(out, lines, report)
    return out


def _relink_preserved(
    t: _Transcript, uuids: Sequence[str], links: _Links, report: FileReport
) -> None:
    """Lay out preserved-segment compactions as the runtime reads them back (see :func:`_link`)."""
    pred = links.pred
    entries = t.entries
    summary_of: dict[str, str] = {}
    for u in uuids:
        p = pred[u]
        if p is not None and entries.shape(u).get("isCompactSummary") and p not in summary_of:
            summary_of[p] = u
    position: dict[str, int] | None = None  # made for the first preserved segment
    for b in uuids:
        data = entries.shape(b)
        meta = data.get("compactMetadata")
        seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
        if not _is_boundary(data) or not isinstance(seg, dict):
            continue
        head, tail, anchor = seg.get("headUuid"), seg.get("tailUuid"), seg.get("anchorUuid")
        if not isinstance(head, str) or head not in pred or head == b:
            report.relinked.append(
                (entries.number(b), b, f"preservedSegment head {head!r} names no entry; ignored")
            )
            continue
        summary = summary_of.get(b)
        to = anchor if isinstance(anchor, str) and anchor in pred and anchor != head else b
        if to == b and summary is not None:
            to = summary  # the kept tail reads after the summary, as the runtime shows it
        kept: set[str] = set()
        n: str | None = tail if isinstance(tail, str) and tail in pred else head
        for _ in range(len(pred)):
            if n is None or n in kept or n not in pred:
                break
            kept.add(n)
            if n == head:
                break
            n = pred[n]
        kept.add(head)
        before = pred[head]
        if position is None:
            position = {u: i for i, u in enumerate(uuids)}
        if before is None or before in kept or before in (b, summary, to):
            # The file already re-linked the head: the replaced span ends at the newest entry
            # written before the boundary that is not kept.
            before = next(
                (
                    u
                    for u in reversed(uuids[: position[b]])
                    if u not in kept and entries.shape(u).get("type") in ("user", "assistant")
                ),
                None,
            )
        pred[head] = to
        links.extra.setdefault(head, {})["recorded_parent"] = entries.field(head, "parentUuid")
        report.relinked.append(
            (entries.number(head), head, f"preserved segment head, re-linked under {to}")
        )
        if pred[b] != before:
            pred[b] = before
            links.logical.discard(b)
            report.relinked.append(
                (
                    entries.number(b),
                    b,
                    f"compaction boundary linked after the replaced span ({before})",
                )
            )


def _cut_cycles(links: _Links, lines: Mapping[str, int], report: FileReport) -> None:
    """Cut every cycle of ``links.pred`` at one link, in one pass over the entries (linear time).

    The cut link is a compaction's logical link when the cycle has one (it is not causal), else the
    link of the entry written last.
    """
    pred = links.pred
    if all(p is None or p not in pred or lines[p] < lines[u] for u, p in pred.items()):
        return  # every link goes to an earlier line: none closes a cycle (the usual file)
    done: set[str] = set()
    for start in pred:
        if start in done:
            continue
        p = pred[start]
        if p is None or p in done or p not in pred:  # the usual entry: after one already walked
            done.add(start)
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        n: str | None = start
        while n is not None and n in pred and n not in done and n not in on_path:
            on_path[n] = len(path)
            path.append(n)
            n = pred[n]
        if n is not None and n in on_path:
            cycle = path[on_path[n] :]
            logical = [c for c in cycle if c in links.logical]
            cut = max(logical or cycle, key=lambda c: lines[c])
            links.extra.setdefault(cut, {})["cycle_parent"] = pred[cut]
            pred[cut] = None
            links.logical.discard(cut)
            members = ", ".join(
                f"{c} (line {lines[c]})" for c in sorted(cycle, key=lines.__getitem__)
            )
            report.relinked.append((lines[cut], cut, f"closes a cycle of {members}; cut, a root"))
        done.update(path)


def _order(uuids: Sequence[str], pred: Mapping[str, str | None]) -> list[str]:
    """``uuids`` with every entry after its predecessor (``pred`` is acyclic)."""
    inside = set(uuids)
    kids: dict[str, list[str]] = {}
    roots = []
    for u in uuids:
        p = pred[u]
        if p is not None and p in inside:
            kids.setdefault(p, []).append(u)
        else:
            roots.append(u)
    out: list[str] = []
    stack = list(reversed(roots))
    while stack:
        u = stack.pop()
        out.append(u)
        stack.extend(reversed(kids.get(u, ())))
    return out


def _times(t: _Transcript, uuids: Sequence[str]) -> dict[str, datetime]:
    out: dict[str, datetime] = {}
    last = EPOCH
    for u in uuids:
        last = parse_time(t.entries.field(u, "timestamp"), last)
        out[u] = last
    return out


def _covers(pred: Mapping[str, Any], known: Mapping[str, Any], last: str) -> list[str]:
    """The branch ending at ``last``, root first (at most as many steps as there are nodes)."""
    path = []
    n: Any = last
    for _ in range(len(pred) + len(known) + 1):
        if not isinstance(n, str):
            break
        path.append(n)
        n = pred[n] if n in pred else known.get(n)
    path.reverse()
    return path


def _head(t: _Transcript, uuids: Sequence[str]) -> str | None:
    """The entry the runtime resumes from: the last message of the main conversation in file order.

    Events (progress, hook and system entries) are never the head, however late their timestamps.
    """
    for u in reversed(uuids):
        if t.entries.shape(u).get("type") in ("user", "assistant"):
            return u
    return None


def _newest_leaf(uuids: Sequence[str], pred: Mapping[str, Any]) -> str | None:
    has_child = {p for p in pred.values() if isinstance(p, str)}
    for u in reversed(uuids):
        if u not in has_child:
            return u
    return uuids[-1] if uuids else None


def _rewinds(
    t: _Transcript, uuids: Sequence[str], pred: Mapping[str, Any], head: str | None
) -> list[tuple[str, list[str]]]:
    """(fork point, abandoned children) for every rewind among ``uuids``."""
    prompts: dict[str, list[str]] = {}
    entries = t.entries
    for u in uuids:
        p = pred[u]
        data = entries.shape(u)
        if isinstance(p, str) and data.get("type") == "user" and _is_prompt(data):
            prompts.setdefault(p, []).append(u)
    forks = {k for kids in prompts.values() if len(kids) > 1 for k in kids}
    on_head = _on_branch(pred, head, forks)
    out = []
    for point, kids in prompts.items():
        if len(kids) < 2:
            continue
        stamps = {k: entries.stamp_text(k) for k in kids}
        if len(set(stamps.values())) < 2:
            continue
        kept = next((k for k in kids if k in on_head), None)
        if kept is None:
            kept = max(kids, key=lambda k: (stamps[k], entries.number(k)))
        out.append((point, [k for k in kids if k != kept and stamps[k] != stamps[kept]]))
    return out


def _predecessors_first(uuids: Sequence[str], pred: Mapping[str, str | None]) -> Sequence[str]:
    """``uuids`` with every entry after its predecessor: as given when they are so already.

    A file's entries usually are (then no order is built); else :func:`_order` of them.
    ``pred``'s keys are ``uuids``.
    """
    placed: set[str] = set()
    for u in uuids:
        p = pred[u]
        if p is not None and p in pred and p not in placed:
            return _order(uuids, pred)
        placed.add(u)
    return uuids


def _on_branch(pred: Mapping[str, str | None], head: str | None, among: set[str]) -> set[str]:
    """Which of ``among`` lie on the branch ending at ``head`` (``pred`` acyclic; bounded walk).

    Only the entries asked about are kept, not the whole branch.
    """
    out: set[str] = set()
    n = head
    for _ in range(len(pred)):  # pred is acyclic: the walk ends at a root
        if n is None or n not in pred:
            break
        if n in among:
            out.add(n)
        n = pred[n]
    return out


def _artifacts(
    t: _Transcript, uuids: Sequence[str], pred: Mapping[str, str | None], head: str | None
) -> set[str]:
    """The entries on artifact forks: side branches the runtime's bookkeeping made, not a person.

    At every entry with two or more children, the child kept is the one on the head's branch (else
    the one whose subtree was written last); every other child whose subtree holds no user prompt
    (a progress or hook entry, a parallel tool call's result, a retried reply) is an artifact, with
    its whole subtree. A sibling subtree holding a prompt is a user branch (a rewind, a re-prompt).

    ``pred`` holds the predecessor of each of ``uuids`` (acyclic). Only forks keep their children:
    what a subtree holds is summed up from the leaves in one pass, each entry's figures handed to
    its predecessor and dropped, so a long branch holds no state per entry.
    """
    parents: set[str] = set()
    fork_points: set[str] = set()
    for u in uuids:
        p = pred[u]
        if p is not None:
            if p in parents:
                fork_points.add(p)
            parents.add(p)
    del parents
    if not fork_points:
        return set()
    forks: dict[str, list[str]] = {}  # fork point -> its children, in order
    for u in uuids:
        p = pred[u]
        if p in fork_points:
            forks.setdefault(p, []).append(u)
    at_fork = {c for below in forks.values() for c in below}
    order = _predecessors_first(uuids, pred)
    # (holds a prompt, newest line) of each subtree, handed up from the leaves
    pending: dict[str, tuple[bool, int]] = {}
    summary: dict[str, tuple[bool, int]] = {}
    entries = t.entries
    for u in reversed(order):
        prompt, newest = _is_prompt(entries.shape(u)), entries.number(u)
        kids = pending.pop(u, None)
        if kids is not None:
            prompt, newest = prompt or kids[0], max(newest, kids[1])
        if u in at_fork:
            summary[u] = (prompt, newest)
        p = pred[u]
        if p is not None:
            up = pending.get(p)
            pending[p] = (prompt, newest) if up is None else (up[0] or prompt, max(up[1], newest))
    on_head = _on_branch(pred, head, at_fork)
    roots: set[str] = set()
    for below in forks.values():
        keep = next((c for c in below if c in on_head), None) or max(
            below, key=lambda c: summary[c][1]
        )
        roots.update(c for c in below if c != keep and not summary[c][0])
    out: set[str] = set()
    if roots:
        for u in order:
            if u in roots or pred[u] in out:
                out.add(u)
    return out


def _foreign(store: BaseStore, ids: Sequence[str]) -> dict[str, str]:
    """Which of ``ids`` another session already holds: id -> that session."""
    return {str(i): str(s) for i, s in store.locate(ids).items()}


def _copies(
    store: BaseStore, t: _Transcript, sid: str, foreign: Mapping[str, str], report: FileReport
) -> tuple[dict[str, str], dict[str, str]]:
    """Split entries another session holds into identical copies and conflicting ones.

    An entry is a copy when it matches the held node (same predecessor, kind, role and content)
    and its own predecessor is no entry kept apart: a copied prefix runs unbroken from its root.
    An entry that only happens to match, after entries that differ (sanitized files whose ids are
    placeholders shared across sessions, each with its own compaction boundary of the same
    text), is kept apart with them rather than left out of its session.

    Returns:
        (uuid -> holding session) of identical copies (a ``/branch`` or ``--fork-session`` copy,
        stored once, in its source), and (uuid -> the id the entry is stored under here,
        ``<uuid>@<session>``) of conflicting ones, kept apart.
    """
    by_holder: dict[str, list[str]] = {}
    for u, holder in sorted(foreign.items(), key=lambda item: t.entries.number(item[0])):
        by_holder.setdefault(holder, []).append(u)
    matches: dict[str, tuple[str, str | None]] = {}  # uuid -> (holder, recorded predecessor)
    differ: dict[str, str] = {}  # uuid -> what differs
    with t.reading() as full:
        for holder, ids in by_holder.items():
            _sort_copies(store, t, sid, holder, ids, full, matches, differ)
    apart = {u: f"{u}@{sid}" for u in differ}
    moved = True
    while moved:  # bounded: each pass moves at least one entry out of ``matches``
        moved = False
        for u, (_, parent) in list(matches.items()):
            if parent is not None and parent in apart:
                del matches[u]
                apart[u] = f"{u}@{sid}"
                differ[u] = f"predecessor ({parent} is kept apart here)"
                moved = True
    for u in sorted(set(matches) | set(differ), key=t.entries.number):
        holder = matches[u][0] if u in matches else foreign[u]
        if u in matches:
            report.dropped.append(
                (t.entries.number(u), u, f"an identical copy of session {holder}'s node")
            )
        else:
            report.relinked.append(
                (
                    t.entries.number(u),
                    u,
                    f"session {holder} holds this id with another {differ[u]}; "
                    f"stored as {apart[u]}",
                )
            )
    return {u: holder for u, (holder, _) in matches.items()}, apart


def _sort_copies(
    store: BaseStore,
    t: _Transcript,
    sid: str,
    holder: str,
    ids: Sequence[str],
    full: Callable[[str], Line],
    matches: dict[str, tuple[str, str | None]],
    differ: dict[str, str],
) -> None:
    """Compare the entries ``holder`` holds with its nodes (see :func:`_copies`).

    Fills ``matches`` (uuid -> (holder, the entry's predecessor)) with the identical ones and
    ``differ`` (uuid -> what differs) with the others.
    """
    for u, there in zip(ids, store.nodes(holder, ids), strict=True):
        parent = t.entries.field(u, "parentUuid")
        logical = t.entries.field(u, "logicalParentUuid")
        if parent is None and isinstance(logical, str):
            parent = logical
        here = _node(sid, full(u), None, EPOCH, {})
        same = (there.kind, there.role, there.content) == (here.kind, here.role, here.content)
        if same and there.predecessor == parent:
            matches[u] = (holder, parent)
        else:
            differ[u] = (
                "content" if not same else f"predecessor ({parent} here, {there.predecessor} there)"
            )


# ------------------------------------------------------------------------------------- import


def import_file(store: BaseStore, path: Path, *, resume: bool = True) -> FileReport:
    """Import one Claude Code session file, with its sub-agent files, in one transaction.

    Re-importing changes nothing; a file that grew adds only its new entries (lines whose uuid is
    stored are not turned into nodes at all). An ``agent-*.jsonl`` file given alone is imported as a
    spawned session of its trunk session when that is stored, else as a session of its own, which
    the trunk's import links to the trunk later (:meth:`BaseStore.link_spawn`). Damage
    never stops the import: see the module docstring for what is repaired and reported.

    A file imported before is resumed from where that import stopped (:mod:`graph.importers.resume`):
    only the appended lines are read, with the last entries kept in the file's state, so a grown
    file costs about its new lines. A file truncated, rewritten or replaced since, and appended
    lines the resumed path does not take (a compaction, a sidechain, a new or changed agent file, an
    entry following a stored entry older than the kept window), are imported in full; the first
    three are named in the report's notes.

    Args:
        store: The store to import into.
        path: The session file (or an agent file).
        resume: False reads the whole file even when a recorded state would let it resume.

    Returns:
        The file's report (see :class:`~graph.importers.report.FileReport`).

    Raises:
        OSError: the file cannot be read.
        TranscriptError: the file is not empty but holds no Claude Code entry.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    path = Path(path)
    with file_import(path, FORMAT) as (report, problems):
        if resume and not is_agent_file(path):
            if resumed(store, path, FORMAT, report, problems, _resume):
                return report
        position = ReadPosition()
        t = _read(path, problems, report, position, slim=not is_agent_file(path))
        if not t.entries and not any(o.data.get("type") in _ENTRY_TYPES for o in t.other):
            if t.other or problems.skipped:
                raise TranscriptError(
                    path,
                    f"no Claude Code entry in it ({len(t.other)} objects of no known type, "
                    f"{len(problems.skipped)} lines skipped)",
                )
        if not t.entries and not _names_a_session(t) and t.other:
            # Only lines that name no session (a file-history snapshot, a summary: what Claude Code
            # writes first): a session named after the file would outlive the real one's arrival.
            report.notes.append("no entry names its session yet: nothing stored")
            return report
        if not is_agent_file(path):
            _check_one_conversation(t)
            _check_same_conversation(store, t)
        alone = is_agent_file(path) and t.session_id != path.stem
        # The plan is worked out from reads, outside the write lock: the lock is held only to
        # check that what it read still holds, and to write it.
        existed = store.has_session(t.session_id)
        plan = None if alone else _plan_main(store, t, report)
        with store.atomic():
            if alone:
                _import_agent(store, t, t.session_id, {}, report)
            else:
                assert plan is not None
                if not _still_true(store, plan, existed):
                    _rewind_report(report, plan.report_marks)
                    plan = _plan_main(store, t, report)
                main = _apply_main(store, t, plan, report)
                if main is not None:
                    sid, order, pred = main
                    others = [o.data for o in t.other]
                    spawned = [s for s in report.session_ids if s.startswith(f"{sid}/")]
                    state = _state(
                        t,
                        sid,
                        order,
                        pred,
                        agents=_agent_signatures(path),
                        origin=plan.origin,
                        settled=_settled(store, store.session(sid).title, others, t.entries)
                        and not _past(t.other, position),
                        unlinked=[s for s in spawned if store.session(s).spawned_from is None],
                    )
                    save_state(store, path, FORMAT, position, state)
    return report


class _Spec(NamedTuple):
    """A node a plan will write, as a few references: its model is made only when it is written."""

    uuid: str
    node_id: str
    predecessor: str | None
    when: datetime
    extra: dict[str, Any]
    covers: tuple[str, ...]
    """What the node covers when it is a compaction summary (else ignored)."""


_NO_EXTRA: dict[str, Any] = {}
"""The extra metadata of a node no repair touched (shared by every such spec, never written to)."""

_CHUNK = 500
"""Nodes made into models and handed to the store at a time (one transaction holds every chunk).

A chunk's parsed entries and models are most of what an import holds beyond the rules' columns
(about 4 KiB per node): 2,000 at a time peaked 7 MiB higher than 500, at the same CPU time.
"""

_CHUNK_BYTES = 512 << 10
"""A chunk also ends once its entries span this many bytes of the file (long tool outputs), so what
it holds follows the file's entries, not their size: 2e4 entries with texts 20 times as long (a
file 4.7x the bytes) peaked 1.1x as high beyond the index (4 MiB: 2.2x)."""

_PAUSE_GC_AT = 10_000
"""Nodes from which an import's writing pauses the cyclic collector."""


@dataclass
class _Specs:
    """The nodes a plan will write, held column by column: two references and a time per node.

    Most nodes have no extra metadata, no covers and their uuid as id, so those are kept only
    where they differ; each :class:`_Spec` is made when its chunk is written.
    """

    uuids: list[str] = field(default_factory=list)
    predecessors: list[str | None] = field(default_factory=list)
    """Each node's predecessor, unless ``links`` gives them."""
    links: Mapping[str, str | None] | None = None
    """uuid -> predecessor, when that is each node's predecessor (then ``predecessors`` is empty)."""
    whens: array[int] = field(default_factory=lambda: array("q"))
    """Each node's time, in microseconds since the epoch."""
    node_ids: dict[int, str] = field(default_factory=dict)
    """Position -> node id, where it is not the uuid (entries kept apart)."""
    extra: dict[int, dict[str, Any]] = field(default_factory=dict)
    covers: dict[int, tuple[str, ...]] = field(default_factory=dict)
    ordered: bool = True
    """Whether every node comes after its predecessor when that is one of these nodes."""
    where: Callable[[str], tuple[int, int, int]] | None = None
    """uuid -> (line number, byte offset, part) of its entry, when the file was read slim."""

    def append(self, spec: _Spec) -> None:
        """Add ``spec`` after the others."""
        self.add(
            spec.uuid,
            spec.node_id,
            spec.predecessor,
            to_micros(spec.when),
            spec.extra,
            spec.covers,
        )

    def add(
        self,
        u: str,
        node_id: str,
        predecessor: str | None,
        micros: int,
        extra: dict[str, Any],
        covers: tuple[str, ...],
    ) -> None:
        """Add a node after the others (``micros``: its time, microseconds since the epoch)."""
        i = len(self.uuids)
        self.uuids.append(u)
        if self.links is None:
            self.predecessors.append(predecessor)
        self.whens.append(micros)
        if node_id != u:
            self.node_ids[i] = node_id
        if extra:
            self.extra[i] = extra
        if covers:
            self.covers[i] = covers

    def __len__(self) -> int:
        return len(self.uuids)

    def _predecessor(self, i: int, u: str) -> str | None:
        return self.predecessors[i] if self.links is None else self.links[u]

    def spec(self, i: int) -> _Spec:
        """The node at position ``i``."""
        u = self.uuids[i]
        return _Spec(
            u,
            self.node_ids.get(i, u),
            self._predecessor(i, u),
            _moment(self.whens[i]),
            self.extra.get(i, _NO_EXTRA),
            self.covers.get(i, ()),
        )

    def __iter__(self) -> Iterator[_Spec]:
        return (self.spec(i) for i in range(len(self.uuids)))

    def chunks(self) -> Iterator[list[_Spec]]:
        """The nodes in chunks the store can check on its own (:func:`_in_chunks`), made lazily.

        In file order when that puts every predecessor first (the usual case), else as
        :func:`_in_chunks` orders them. There is always at least one chunk (it moves the head).
        """
        if not self.ordered:
            yield from _in_chunks(list(self))
            return
        n = len(self.uuids)
        links = self.links
        whens, ids, extra, covers = self.whens, self.node_ids, self.extra, self.covers
        start = 0
        while start < n:
            end = self._chunk_end(start)
            part = self.uuids[start:end]
            preds = self.predecessors[start:end] if links is None else [links[u] for u in part]
            yield [
                _Spec(
                    u,
                    ids.get(i, u),
                    p,
                    _moment(whens[i]),
                    extra.get(i, _NO_EXTRA),
                    covers.get(i, ()),
                )
                for i, (u, p) in enumerate(zip(part, preds, strict=True), start)
            ]
            start = end
        if n == 0:
            yield []

    def _chunk_end(self, start: int) -> int:
        """Where the chunk from ``start`` ends: after :data:`_CHUNK` nodes, or before.

        Fewer when its entries span :data:`_CHUNK_BYTES` of the file (by each entry's offset,
        known when the file was read slim).
        """
        end = min(start + _CHUNK, len(self.uuids))
        where = self.where
        if where is None:
            return end
        first = where(self.uuids[start])[1]
        for i in range(start + 1, end):
            if abs(where(self.uuids[i])[1] - first) >= _CHUNK_BYTES:
                return i
        return end


def _in_chunks(specs: list[_Spec]) -> list[list[_Spec]]:
    """``specs`` predecessors first, cut into chunks each the store can check on its own.

    A chunk's predecessors are then stored already or in the chunk. When the specs' links hold a
    cycle (which the store rejects), they stay one chunk, so the store names the cycle.
    """
    order = predecessors_first(
        [s.node_id for s in specs], {s.node_id: s.predecessor for s in specs}
    )
    if order is None:
        return [specs]
    ordered = [specs[i] for i in order]
    return [ordered[i : i + _CHUNK] for i in range(0, len(ordered), _CHUNK)] or [[]]


def _write_specs(
    store: BaseStore, t: _Transcript, sid: str, specs: _Specs, head: str | None
) -> int:
    """Make the planned nodes and add them chunk by chunk; return how many were added.

    Only one chunk's models and rows are held at a time, so the memory an import needs beyond the
    parsed file does not grow with the number of nodes. The head moves with the last chunk.
    """
    with paused_gc(len(specs) >= _PAUSE_GC_AT):
        return _write_chunks(store, t, sid, specs.chunks(), head)


def _write_chunks(
    store: BaseStore, t: _Transcript, sid: str, chunks: Iterable[list[_Spec]], head: str | None
) -> int:
    """Add each chunk's nodes in turn, the head moving with the last one; return how many were added."""
    added = 0
    with t.reading() as full:
        it = iter(chunks)
        chunk = next(it, None)
        while chunk is not None:
            nodes = []
            for spec in chunk:
                node = _node(
                    sid, full(spec.uuid), spec.predecessor, spec.when, spec.extra, spec.node_id
                )
                if spec.covers and node.kind is Kind.SUMMARY:
                    node = node.model_copy(update={"covers": spec.covers})
                nodes.append(node)
            chunk = next(it, None)
            if head is not None and chunk is None:
                added += len(store.add_nodes(sid, nodes, head=head))
            else:
                added += len(store.add_nodes(sid, nodes))
    return added


@dataclass
class _Plan:
    """What importing a session file will write, worked out from reads alone (no write lock held)."""

    sid: str
    main: list[str]
    side: list[str]
    pred: dict[str, str | None]
    head: str | None
    artifacts: set[str]
    nid: dict[str, str]
    """uuid -> the id the entry is stored under, for entries kept apart (``<uuid>@<session>``)."""
    nodes: _Specs
    title: str
    meta: dict[str, Any]
    created_at: datetime
    depends: tuple[Sequence[str], ...]
    """Every node id the plan depends on, in a few sequences (repeats allowed): what it read of the
    store is ``seen``."""
    seen: dict[str, str]
    """Node id -> session, for those of ``depends`` stored when the plan read them."""
    origin: dict[str, Any]
    """The newest ``cwd``, ``version`` and ``gitBranch`` of the file's entries (:func:`_origin`)."""
    report_marks: tuple[int, int, int, int]
    stored: list[str]
    """The main entries stored before this import (only their artifact flags can need a change)."""


def _report_marks(report: FileReport) -> tuple[int, int, int, int]:
    return len(report.dropped), len(report.relinked), len(report.dangling), len(report.notes)


def _rewind_report(report: FileReport, marks: tuple[int, int, int, int]) -> None:
    """Drop what a plan added to the report (it is worked out again)."""
    dropped, relinked, dangling, notes = marks
    del report.dropped[dropped:], report.relinked[relinked:]
    del report.dangling[dangling:], report.notes[notes:]


def _plan_main(store: BaseStore, t: _Transcript, report: FileReport) -> _Plan:
    """Work out a session file's import from reads of the store: links, repairs, nodes, metadata."""
    marks = _report_marks(report)
    sid = t.session_id
    main: list[str] = []
    side: list[str] = []
    entries = t.entries
    for u, shape in zip(entries, entries.shapes(), strict=True):
        (side if shape.get("isSidechain") else main).append(u)
    known = stored_ids(store, sid)
    # (a session stored before is re-read: only then can an entry be stored, or kept apart)
    fresh = [u for u in main if u not in known and f"{u}@{sid}" not in known] if known else main
    foreign = _foreign(store, fresh)
    copied, apart = _copies(store, t, sid, foreign, report) if fresh else ({}, {})
    if known:
        apart |= {u: f"{u}@{sid}" for u in main if f"{u}@{sid}" in known}  # kept apart before
    if copied:
        main = [u for u in main if u not in copied]
    links = _link(t, main, known, copied, report)
    pred = links.pred
    head = _head(t, main)
    artifacts = _artifacts(t, main, pred, head)
    origin = _origin(entries.shapes())
    meta = _session_meta(t, origin)
    source = _fork_source(t, main, links, copied)
    if source is not None:
        meta["forked_from"] = source
        kept = f"; {len(copied)} identical entries are stored there only" if copied else ""
        report.notes.append(
            f"a copy of session {source['session']} from node {source['node']}{kept}"
        )

    def nid(u: str) -> str:
        return apart.get(u, u)

    # (with no entry kept apart, a node's predecessor is its entry's: pred serves as the column)
    new = _Specs(links=None if apart else pred, where=t.entries.where if t.slim else None)
    created: int | None = None
    when = 0  # each entry's time (microseconds since the epoch), as _times gives it
    entries, extras = t.entries, links.extra
    where = entries.where
    for u in main:
        micros = entries.micros(u)
        if micros != _NO_TIME:
            when = micros
        if created is None or when < created:
            created = when
        if known and (u in known or nid(u) in known):
            continue
        extra = extras.get(u, _NO_EXTRA)
        if u in apart or u in artifacts:
            extra = dict(extra)
            if u in apart:
                extra["runtime_uuid"] = u
            if u in artifacts:
                extra["artifact"] = True
        cover: tuple[str, ...] = ()
        p = node_pred = pred[u]
        if p is not None and p in pred:  # an entry of this import
            node_pred = nid(p)
            boundary = pred[p]
            if boundary is not None and _is_boundary(entries.shape(p)):
                cover = tuple(nid(c) if c in pred else c for c in _covers(pred, known, boundary))
            if new.ordered and not (known and (p in known or nid(p) in known)):
                at, _, part = where(u)
                p_at, _, p_part = where(p)
                if (p_at, p_part) > (at, part):
                    new.ordered = False  # a node written before its predecessor's line
        new.add(u, apart.get(u, u), node_pred, when, extra, cover)
    dangling = {str(e["dangling_parent"]) for e in links.extra.values() if "dangling_parent" in e}
    # Every new node is a fresh entry, stored under its uuid or kept apart: what the plan depends
    # on is the fresh entries (located above), the apart ids and the dangling parents.
    others = [*new.node_ids.values(), *sorted(dangling)]
    seen = foreign | _located(store, others)
    if len(new) == len(main):  # every entry is new: one list of their ids serves both
        new.uuids = main
    return _Plan(
        sid=sid,
        main=main,
        side=side,
        pred=pred,
        head=head,
        artifacts=artifacts,
        nid=apart,
        nodes=new,
        title=_title(t, main),
        meta=meta,
        created_at=_moment(0 if created is None else created),
        depends=(fresh, others),
        seen=seen,
        origin=origin,
        report_marks=marks,
        stored=[u for u in main if apart.get(u, u) in known] if known else [],
    )


def _restamp(store: BaseStore, sid: str, ids: Iterable[str], artifacts: Container[str]) -> None:
    """Give the stored nodes of ``ids`` the artifact flag this import decided (``artifacts``).

    Later lines decide it for entries stored before them: a parallel call's sibling or a progress
    entry written after a node makes a fork there, and the head moving to another side of a fork
    moves the flag with it (:func:`_artifacts`). New nodes were written with it already.
    """
    stored = store.index(sid).pred
    store.set_artifact(sid, {n: n in artifacts for n in ids if n in stored})


def _located(store: BaseStore, ids: Iterable[str]) -> dict[str, str]:
    """Which session holds each of ``ids`` that is stored (the others are left out)."""
    return {str(i): str(s) for i, s in store.locate(ids).items()}


def _still_true(store: BaseStore, plan: _Plan, existed: bool) -> bool:
    """Whether what ``plan`` read still holds (checked under the write lock, before applying it).

    Another process may have imported the same file, or stored a parent or copy the plan depends
    on, in between: then the plan is worked out again under the lock.
    """
    if store.has_session(plan.sid) != existed:
        return False
    return _located(store, chain.from_iterable(plan.depends)) == plan.seen


def _apply_main(
    store: BaseStore, t: _Transcript, plan: _Plan, report: FileReport
) -> tuple[str, list[str], dict[str, str | None]] | None:
    """Write a planned session file import; return (session id, main entries, predecessors).

    None when no state should be kept (conflicting copies stored apart: resuming does not map them).
    """
    sid, main, pred, head, apart = plan.sid, plan.main, plan.pred, plan.head, plan.nid
    report.session_ids.append(sid)
    ensure_session(store, sid, title=plan.title, metadata=plan.meta, created_at=plan.created_at)

    def nid(u: str) -> str:
        return apart.get(u, u)

    report.nodes_added += _write_specs(
        store, t, sid, plan.nodes, nid(head) if head is not None else None
    )
    if plan.stored:  # (the nodes this import wrote have their flags already)
        _restamp(store, sid, [nid(u) for u in plan.stored], {nid(u) for u in plan.artifacts})
    rewinds = [
        (nid(point), [nid(a) for a in gone]) for point, gone in _rewinds(t, main, pred, head)
    ]
    for point, abandoned in rewinds:
        stamp_subtrees(store, sid, point, abandoned)
    unstamp_kept(store, sid, rewinds)  # (a shorter file's import stamped what goes on later)
    _note_off_branch(t, main, pred, head, plan.artifacts, report)
    tool_calls = _tool_calls(t, main)
    _import_sidechains(store, t, sid, plan.side, tool_calls, report)
    boundaries = _boundaries(t, main, pred)
    for agent in agent_files(t.path):
        # The report's line numbers are the session file's: an agent file's line problems and
        # repairs are told in notes naming that file.
        agent_problems, agent_report = LineProblems(), FileReport(agent, FORMAT)
        sub = _read(agent, agent_problems, agent_report)
        _import_agent(store, sub, sid, tool_calls, agent_report, boundaries=boundaries)
        _merge_agent_report(report, agent_report, agent_problems)
    _note_missing_agents(t, main, report)
    return None if apart else (sid, main, pred)


def _merge_agent_report(report: FileReport, sub: FileReport, problems: LineProblems) -> None:
    """Fold a sub-agent file's report into its session file's, its line items as notes."""
    report.session_ids += sub.session_ids
    report.nodes_added += sub.nodes_added
    report.dangling += sub.dangling
    name = Path(sub.path).name
    for line, what in problems.skipped:
        report.notes.append(f"{name} line {line}: skipped: {what}")
    for line, what in problems.repaired:
        report.notes.append(f"{name} line {line}: repaired: {what}")
    for line, node, what in sub.relinked:
        report.notes.append(f"{name} line {line}: {node}: {what}")
    for line, node, why in sub.dropped:
        report.notes.append(f"{name} line {line}: {node}: not stored: {why}")
    report.notes += sub.notes


def _fork_source(
    t: _Transcript, uuids: Sequence[str], links: _Links, copied: Mapping[str, str]
) -> dict[str, str] | None:
    """Where a copied session forked from its source: ``{"session", "node"}``, or None.

    The newest ``forkedFrom`` an entry carries (``/branch``), else the copied entry the first new
    entry follows (``--fork-session`` and resumed copies keep the uuids).
    """
    entries = t.entries
    for u in reversed(uuids):
        ff = entries.shape(u).get("forkedFrom")
        if isinstance(ff, dict) and isinstance(ff.get("sessionId"), str):
            return {"session": str(ff["sessionId"]), "node": str(ff.get("messageUuid", ""))}
    for u in uuids if links.extra else ():
        ff = links.extra.get(u, _NO_EXTRA).get("forked_from")
        if isinstance(ff, dict):
            return {"session": str(ff["session"]), "node": str(ff["node"])}
    if copied:
        last = max(copied, key=t.entries.number)
        return {"session": copied[last], "node": last}
    return None


def _boundaries(
    t: _Transcript, uuids: Sequence[str], pred: Mapping[str, str | None]
) -> list[tuple[str, str]]:
    """(timestamp, logical parent) of each compaction boundary, in file order."""
    out = []
    entries = t.entries
    for u in uuids:
        data = entries.shape(u)
        logical = data.get("logicalParentUuid")
        if isinstance(logical, str) and _is_boundary(data) and logical in pred:
            out.append((entries.stamp_text(u), logical))
    return out


def _note_off_branch(
    t: _Transcript,
    uuids: Sequence[str],
    pred: Mapping[str, str | None],
    head: str | None,
    artifacts: set[str],
    report: FileReport,
) -> None:
    """Name the tool results left off the head's branch (the next turn follows another entry)."""
    on_head = _on_branch(pred, head, {p for u in artifacts if (p := pred.get(u)) is not None})
    off = [
        f"{u} (line {t.entries.number(u)})"
        for u in uuids
        if u in artifacts and pred[u] in on_head and _is_tool_result(t.entries.shape(u))
    ]
    if off:
        report.notes.append(
            f"{len(off)} tool result(s) off the head's branch (the next turn follows a parallel "
            f"call or a progress entry; they are stored as artifact forks): {', '.join(off)}"
        )


def _call_ids(data: Mapping[str, Any]) -> list[Any]:
    """The ``id`` of each ``tool_use`` block of an entry's message, in order."""
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def _is_tool_result(data: Mapping[str, Any]) -> bool:
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _title(t: _Transcript, main: Sequence[str]) -> str:
    for line in reversed(t.other):
        kind = line.data.get("type")
        if kind in _TITLE_TYPES:
            for key in ("customTitle", "aiTitle", "title"):
                if isinstance(line.data.get(key), str) and line.data[key]:
                    return str(line.data[key])
    for line in reversed(t.other):
        if line.data.get("type") == "summary" and line.data.get("leafUuid") in t.entries:
            return str(line.data.get("summary", ""))
    with t.reading() as full:
        for u in main:
            if _is_prompt(t.entries.shape(u)):
                content, _, _ = _content(full(u).data["message"])
                text = preview(content)
                if text and not text.startswith(("<", "[Request interrupted")):
                    return text
    return ""


def _session_meta(t: _Transcript, origin: Mapping[str, Any]) -> dict[str, Any]:
    """The session metadata: runtime, path, the entries' ``origin`` (:func:`_origin`), the rest."""
    meta: dict[str, Any] = {"runtime": FORMAT, "path": str(t.path), **origin}
    meta["entries"] = [{"line": line.number, **line.data} for line in t.other]
    return meta


def _tool_calls(t: _Transcript, uuids: Sequence[str]) -> dict[str, Any]:
    """Links from sub-agents to the node that started them, keyed by what the agent is known by."""
    calls: dict[str, Any] = {"tool_use": {}, "agent": {}, "prompt": {}, "task_order": []}
    entries = t.entries
    for u in uuids:
        data = entries.shape(u)
        message = data.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        ids = iter(entries.call_ids(u)) if isinstance(blocks, list) and blocks else iter(())
        for b in blocks if isinstance(blocks, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                calls["tool_use"][next(ids, None)] = u
                args = b.get("input")
                if b.get("name") in ("Task", "Agent") and isinstance(args, dict):
                    calls["task_order"].append((entries.number(u), u))
                    if isinstance(args.get("prompt"), str):
                        calls["prompt"][args["prompt"].strip()] = u
            elif b.get("type") == "tool_result":
                result = data.get("toolUseResult")
                if isinstance(result, dict) and result.get("agentId"):
                    calls["agent"][str(result["agentId"])] = b.get("tool_use_id")
        d = data.get("data")
        if data.get("type") == "progress" and isinstance(d, dict) and d.get("agentId"):
            use = data.get("parentToolUseID") or data.get("toolUseID")
            calls["agent"].setdefault(str(d["agentId"]), use)
    return calls


def _spawn_point(
    calls: Mapping[str, Any], agent_id: str | None, prompt: str, line: int
) -> str | None:
    tool_use = calls["tool_use"]
    if agent_id and calls["agent"].get(agent_id) in tool_use:
        return str(tool_use[calls["agent"][agent_id]])
    if prompt.strip() in calls["prompt"]:
        return str(calls["prompt"][prompt.strip()])
    before = [u for n, u in calls["task_order"] if n < line]
    return str(before[-1]) if before else None


def _import_sidechains(
    store: BaseStore,
    t: _Transcript,
    sid: str,
    side: Sequence[str],
    calls: Mapping[str, Any],
    report: FileReport,
) -> None:
    inside = set(side)
    root_of: dict[str, str] = {}
    for u in side:
        path: list[str] = []
        seen: set[str] = set()
        n = u
        while n not in root_of:
            p = t.entries.field(n, "parentUuid")
            if not isinstance(p, str) or p not in inside or p in seen or p == n:
                break
            seen.add(n)
            path.append(n)
            n = p
        root = root_of.get(n, n)
        for m in [*path, n]:
            root_of[m] = root
    groups: dict[str, list[str]] = {}
    for u in side:
        groups.setdefault(root_of[u], []).append(u)
    for root, members in groups.items():
        with t.reading() as full:  # a sidechain is small: its entries are held whole
            sub = _Transcript(t.path, _LineEntries({u: full(u) for u in members}))
        _import_spawned(store, sub, sid, f"{sid}/sidechain-{root}", None, calls, report)


def _import_agent(
    store: BaseStore,
    t: _Transcript,
    parent_sid: str,
    calls: Mapping[str, Any],
    report: FileReport,
    *,
    boundaries: Sequence[tuple[str, str]] = (),
) -> None:
    agent_id = next(
        (str(line.data["agentId"]) for line in t.entries.values() if line.data.get("agentId")),
        t.path.stem.removeprefix("agent-"),
    )
    sidecar = t.path.with_name(t.path.stem + ".meta.json")
    use_id = None
    if sidecar.exists():
        try:
            meta = orjson.loads(sidecar.read_bytes())
            use_id = meta.get("toolUseId") if isinstance(meta, dict) else None
        except (OSError, orjson.JSONDecodeError):
            report.notes.append(f"{sidecar}: unreadable, ignored")
    if use_id and use_id in calls.get("tool_use", {}):
        calls = {**calls, "agent": {**calls["agent"], agent_id: use_id}}
    sid = f"{parent_sid}/agent-{agent_id}"
    compaction = _compaction_point(t, boundaries) if agent_id.startswith("acompact") else None
    _import_spawned(store, t, parent_sid, sid, agent_id, calls, report, compaction)


def _compaction_point(t: _Transcript, boundaries: Sequence[tuple[str, str]]) -> str | None:
    """The node a compaction agent summarised from: its boundary's logical parent.

    The agent's first entry names it as parent when the runtime linked it so; otherwise (a replayed
    hook reminder as parent) it is the logical parent of the first boundary written after the agent
    started.
    """
    if not t.entries or not boundaries:
        return None
    first = next(iter(t.entries.values())).data
    logical = {lp for _, lp in boundaries}
    if first.get("parentUuid") in logical:
        return str(first["parentUuid"])
    started = str(first.get("timestamp", ""))
    after = [lp for stamp, lp in boundaries if stamp >= started]
    return after[0] if after else boundaries[-1][1]


def _import_spawned(
    store: BaseStore,
    t: _Transcript,
    parent_sid: str,
    sid: str,
    agent_id: str | None,
    calls: Mapping[str, Any],
    report: FileReport,
    compaction: str | None = None,
) -> None:
    uuids = list(t.entries)
    if not uuids:
        return
    parent_nodes = stored_ids(store, parent_sid)
    known = stored_ids(store, sid)
    # A forked sub-agent's file repeats its parent's entries with their uuids: stored once, there.
    fresh = [u for u in uuids if u not in known and f"{u}@{sid}" not in known]
    copied, apart = _copies(store, t, sid, _foreign(store, fresh), report) if fresh else ({}, {})
    apart |= {u: f"{u}@{sid}" for u in uuids if f"{u}@{sid}" in known}  # kept apart before
    if copied:
        uuids = [u for u in uuids if u not in copied]
        if not uuids:
            return
    links = _link(t, uuids, known, copied, report, outside=parent_nodes)
    pred = links.pred
    when = _times(t, uuids)
    first = t.entries[uuids[0]]
    prompt = preview(_content(first.data.get("message") or {})[0], 10_000)
    spawned_from = compaction
    if spawned_from is None and calls.get("tool_use"):
        spawned_from = _spawn_point(calls, agent_id, prompt, first.number)
    for u in uuids:
        extra = links.extra.get(u, {})
        inside_parent = extra.get("parent_in_session")
        if isinstance(inside_parent, dict):
            inside_parent["session"] = parent_sid
            spawned_from = spawned_from or inside_parent["node"]
        forked = extra.get("forked_from")
        if isinstance(forked, dict) and forked["session"] == parent_sid:
            spawned_from = spawned_from or forked["node"]
    head = _head(t, uuids) or _newest_leaf(uuids, pred)
    artifacts = _artifacts(t, uuids, pred, head)
    has_child = {p for p in pred.values() if p is not None}
    for u in uuids:
        inside_parent = links.extra.get(u, {}).get("parent_in_session")
        if (
            isinstance(inside_parent, dict)
            and inside_parent["node"] != spawned_from
            and u not in has_child
        ):
            artifacts.add(u)  # a hook reminder the runtime replayed into the agent's file
    new = []
    for u in uuids:
        if u in known or apart.get(u) in known:
            continue
        extra = links.extra.get(u, {})
        if u in artifacts:
            extra = {**extra, "artifact": True}
        p = pred[u]
        if u in apart:
            extra = {**extra, "runtime_uuid": u}
        node_pred = apart.get(p, p) if p is not None else None
        new.append(_node(sid, t.entries[u], node_pred, when[u], extra, apart.get(u, u)))
    if spawned_from is None:
        report.notes.append(f"sub-agent session {sid}: the node that started it was not found")
    if spawned_from is not None and spawned_from not in parent_nodes:
        spawned_from = None
    meta = {"runtime": FORMAT, "path": str(t.path), "agent_id": agent_id}
    if not parent_nodes:
        meta["parent_session"] = parent_sid
    session = ensure_session(
        store,
        sid,
        title=preview(_content(first.data.get("message") or {})[0]),
        metadata=meta,
        created_at=min(when.values()),
        spawned_from=spawned_from,
        parent_session=parent_sid if parent_nodes else None,
    )
    if parent_nodes and session.spawned_from is None:
        # Its file was imported before the trunk, or before the trunk's line that started it.
        store.link_spawn(sid, spawned_from, parent_sid)
    head = apart.get(head, head) if head is not None else None
    report.nodes_added += len(store.add_nodes(sid, new, head=head))
    if known:
        _restamp(store, sid, [apart.get(u, u) for u in uuids], {apart.get(u, u) for u in artifacts})
    report.session_ids.append(sid)


def _note_missing_agents(t: _Transcript, main: Sequence[str], report: FileReport) -> None:
    linked = {s.rsplit("/agent-", 1)[-1] for s in report.session_ids if "/agent-" in s}
    seen: list[str] = []
    for u in main:
        d = t.entries.shape(u).get("data")
        if isinstance(d, dict) and d.get("type") == "agent_progress" and d.get("agentId"):
            a = str(d["agentId"])
            if a not in linked and a not in seen:
                seen.append(a)
    for a in seen:
        report.notes.append(
            f"sub-agent {a} has progress entries but no transcript file; no session was made"
        )


# ------------------------------------------------------------------------------------- resuming

_FRONTIER = 128
"""How many of the last entries a file's state keeps (with their links) for the fork rules."""


def _lite(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the fork, head and rewind rules read of an entry: its type, flags, time and block types.

    A prompt stays a prompt and a tool result a tool result (:func:`_is_prompt`,
    :func:`_is_tool_result`), in a few dozen bytes.
    """
    out = {k: data[k] for k in ("type", "subtype", "timestamp", "isMeta") if k in data}
    message = data.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, str):
            out["message"] = {"content": "x" if content.strip() else ""}
        elif isinstance(content, list):
            kinds = [{"type": b.get("type")} for b in content if isinstance(b, dict)]
            out["message"] = {"content": kinds}
        else:
            out["message"] = {}
    return out


def _agent_signatures(path: Path) -> dict[str, list[int]]:
    """(size in bytes, modification time in ns, inode) of each of the session file's agent files."""
    out: dict[str, list[int]] = {}
    for agent in agent_files(path):
        st = agent.stat()
        out[str(agent)] = [st.st_size, st.st_mtime_ns, st.st_ino]
    return out


_ORIGIN = (("cwd", "cwd"), ("version", "version"), ("gitBranch", "git_branch"))
"""Entry fields copied into the session metadata (entry key, metadata key); the last one wins."""


def _origin(
    shapes: Iterable[Mapping[str, Any]], into: dict[str, Any] | None = None
) -> dict[str, Any]:
    out = dict(into or {})
    for data in shapes:
        for key, name in _ORIGIN:
            if data.get(key):
                out[name] = data[key]
    return out


def _settled(
    store: BaseStore, title: str, entries: Sequence[Any], inside: Mapping[str, Any]
) -> bool:
    """Whether only a new line can change the session's title (see :func:`_title`).

    True when a title entry names it, or it has a title and every ``summary`` entry's leaf is
    stored (a summary names the session once its leaf arrives). ``entries`` are the lines without
    a uuid (as stored in the metadata, or their data); ``inside`` holds the uuids read with them.
    """
    if any(isinstance(e, dict) and e.get("type") in _TITLE_TYPES for e in entries):
        return True
    if not title:
        return False
    leaves = {
        e.get("leafUuid")
        for e in entries
        if isinstance(e, dict) and e.get("type") == "summary" and e.get("leafUuid") not in inside
    }
    if not leaves:
        return True
    named = {leaf for leaf in leaves if isinstance(leaf, str)}
    return len(named) == len(leaves) and len(store.locate(named)) == len(named)


def _state(
    t: _Transcript,
    sid: str,
    main: Sequence[str],
    pred: Mapping[str, str | None],
    *,
    agents: dict[str, list[int]],
    origin: dict[str, Any],
    settled: bool,
    unlinked: Sequence[str] = (),
) -> dict[str, Any]:
    """A session file's state after an import: its session, last entries with links, agent files.

    ``origin`` is the session metadata's cwd, version and git branch; ``settled`` says only a new
    line can change the title (:func:`_settled`). With both, a resumed import that brings neither a
    new value nor a line without a uuid never reads the session's metadata. ``unlinked`` names
    the spawned sessions stored without the node that started them (a line still to come may
    hold it: the next import is a full one, which links them).
    """
    last = list(main)[-_FRONTIER:]
    out = {
        "session": sid,
        "frontier": [[u, pred[u], t.entries.number(u), _lite(t.entries[u].data)] for u in last],
        "agents": agents,
        "origin": origin,
        "settled": settled,
    }
    if unlinked:
        out["unlinked"] = list(unlinked)
    return out


def _past(other: Sequence[Line], position: ReadPosition) -> bool:
    """Whether a record of the session's metadata came from a line after ``position``.

    Such a line is a torn last line, read again by the next import: the state is then not
    settled, so that import brings the metadata up to date (dropping the torn line's record).
    """
    return any(o.number > position.line for o in other)


def _check_one_conversation(t: _Transcript) -> None:
    """Refuse a file whose main conversation has a root of another ``sessionId`` (two in one file).

    A root (no parent, no compaction link, not a sidechain) under another session id than the
    file's first starts a second conversation; entries changing id along one chain (a replay
    going on under a new id) have parents and pass.

    Raises:
        TranscriptError: naming the line of the second root.
    """
    first = current = None
    for line in t.entries.values():
        d = line.data
        current = d.get("sessionId", current)  # slim entries keep it only where it changes
        first = first or current
        if d.get("parentUuid") is None and d.get("logicalParentUuid") is None:
            if current != first and not d.get("isSidechain") and not _is_boundary(d):
                raise TranscriptError(
                    t.path,
                    f"line {line.number}: a conversation of another session ({current}) starts "
                    f"here: two sessions in one file",
                )


def _check_same_conversation(store: BaseStore, t: _Transcript) -> None:
    """Refuse a file whose session is stored from another file sharing nothing with it.

    Another file of one session (an older build's ``--resume`` wrote a new file) replays stored
    entries or follows them. A file under a stored session id with no entry stored in that session
    and no parent there is another conversation sharing the id (a sanitizer's placeholder in
    place of every session id): joined to the stored session, the two would be one.

    Raises:
        TranscriptError: naming both files.
    """
    sid = t.session_id
    if not t.entries or not store.has_session(sid):
        return
    other = store.session(sid).metadata.get("path")
    if not isinstance(other, str) or other == str(t.path):
        return
    known = stored_ids(store, sid)
    for u in t.entries:
        if u in known or f"{u}@{sid}" in known:
            return
        for link in ("parentUuid", "logicalParentUuid"):
            parent = t.entries.field(u, link)
            if isinstance(parent, str) and parent in known:
                return
    raise TranscriptError(
        t.path,
        f"session {sid} is stored from {other}, which holds none of this file's entries nor "
        "what they follow: two conversations with one session id (a placeholder?); nothing of "
        f"{t.path} was stored",
    )


def _resumable(data: Mapping[str, Any], sid: str) -> bool:
    """Whether a new entry is one the resumed path imports as a full import would.

    Sidechains, compactions (their covers reach back to the root) and entries of another session
    are left to a full import.
    """
    if data.get("isSidechain") or data.get("isCompactSummary") or _is_boundary(data):
        return False
    if data.get("logicalParentUuid") is not None or "compactMetadata" in data:
        return False
    other = data.get("sessionId")
    return other is None or other == sid


def _resume(
    store: BaseStore, path: Path, saved: FileState, problems: LineProblems, report: FileReport
) -> bool:
    """Import the lines appended since ``saved``, inside the caller's transaction.

    The rules run over a window: the last entries the state keeps (as :func:`_lite` projections,
    with their links) and the new entries, so forks, artifacts and rewinds among recent entries are
    judged as a full import judges them; those entries are stored already and only the new ones are
    added. Nothing is written, and False returned, when the new lines need what the window does
    not hold: a new entry following a stored entry older than the window (its other children are
    not known), a sidechain, a compaction, a changed or new agent file, a spawned session stored
    without the node that started it, a new entry following a node stamped rewound, a session
    that is gone, or
    artifact flags of stored entries the window cannot judge (:func:`_window_flags`). The flags of
    the stored entries it judges are set as the whole file sets them.

    Returns:
        Whether the file was imported.
    """
    st = saved.state
    sid = st.get("session")
    frontier = st.get("frontier")
    if not isinstance(sid, str) or not isinstance(frontier, list) or not store.has_session(sid):
        return False
    agents = _agent_signatures(path)
    if agents != st.get("agents") or st.get("unlinked"):
        return False  # (a spawned session without its node: a full import links it)
    position = saved.position
    new = _read(path, problems, report, position, slim=True)
    if not all(_resumable(shape, sid) for shape in new.entries.shapes()):
        return False
    lines = _LineEntries()
    window = _Transcript(path, lines, slim=True)
    for u, p, number, lite in frontier:
        lines[str(u)] = Line(int(number), {**lite, "uuid": u, "parentUuid": p})
    ids: set[str] = set(window.entries)
    for u, line in new.entries.items():
        ids.add(u)
        p = line.data.get("parentUuid")
        if isinstance(p, str):
            ids.add(p)
    ids |= {f"{u}@{sid}" for u in list(ids)}
    located = store.locate(ids)
    if any(f"{u}@{sid}" in located for u in window.entries):
        return False
    known: dict[str, str | None] = {i: None for i, s in located.items() if s == sid}
    added: list[str] = []
    for u, line in new.entries.items():
        if u in window.entries or u in known:
            report.dropped.append((line.number, u, "a replay of a stored entry's uuid"))
            continue
        p = line.data.get("parentUuid")
        if isinstance(p, str) and p in known and p not in window.entries:
            return False
        if isinstance(p, str) and p in known and store.index(sid).is_rewound(p):
            return False  # a stamped branch goes on: a full import moves its stamps
        lines[u] = line
        added.append(u)
    window.other = new.other
    main = list(window.entries)
    fresh = set(added)
    foreign = {str(u): str(s) for u, s in located.items() if u in fresh and s != sid}
    copied, apart = _copies(store, window, sid, foreign, report) if foreign else ({}, {})
    if apart:
        return False
    main = [u for u in main if u not in copied]
    links = _link(window, main, known, copied, report)
    pred = links.pred
    when = _times(window, main)
    head = _head(window, main)
    artifacts = _artifacts(window, main, pred, head)
    restamped = _window_flags(store.index(sid), pred, head, fresh, artifacts)
    if restamped is None:
        return False
    added_ids = [u for u in main if u in fresh]
    origin = st.get("origin") if isinstance(st.get("origin"), dict) else {}
    now = _origin(new.entries.shapes(), origin)
    forked = any("forkedFrom" in window.entries[u].data for u in added_ids)
    settled = bool(st.get("settled"))
    if new.other or now != origin or forked or copied or not settled:
        settled = _update_session(store, sid, window, new, added_ids, links, copied, saved.line)
    nodes = []
    with window.reading() as full:
        for u in main:
            if u not in fresh:
                continue
            extra = dict(links.extra.get(u, {}))
            if u in artifacts:
                extra["artifact"] = True
            nodes.append(_node(sid, full(u), pred[u], when[u], extra))
    if head is not None and head in fresh:
        report.nodes_added += len(store.add_nodes(sid, nodes, head=head))
    else:
        report.nodes_added += len(store.add_nodes(sid, nodes))
    store.set_artifact(sid, restamped)
    report.session_ids.append(sid)
    parents_of_new = {pred[u] for u in fresh if u in pred}
    for point, abandoned in _rewinds(window, main, pred, head):
        if point in parents_of_new:
            stamp_subtrees(store, sid, point, abandoned)
    _note_off_branch(window, [u for u in main if u in fresh], pred, head, artifacts, report)
    settled = settled and not _past(new.other, position)
    state = _state(window, sid, main, pred, agents=agents, origin=now, settled=settled)
    save_state(store, path, FORMAT, position, state)
    return True


def _window_flags(
    index: IndexView,
    pred: Mapping[str, str | None],
    head: str | None,
    fresh: Container[str],
    artifacts: Container[str],
) -> dict[str, bool] | None:
    """The artifact flags the window's stored entries take, or None when the window cannot tell.

    New entries can move a stored entry's flag (:func:`_restamp`); the window decides it as the
    whole file would for the entries that lead, inside the window, to the entry where the head's
    branch enters it, when every new entry and the stored head lead there too (the forks above it
    keep that side, as before) and every child the store holds of those entries is in the window
    (their forks are seen whole). Otherwise a full import decides.

    Args:
        index: The session's index (its stored head and children).
        pred: The window's entries -> their predecessors (acyclic).
        head: The head the window's entries give.
        fresh: The new entries.
        artifacts: What :func:`_artifacts` decided over the window.

    Returns:
        Stored entry -> whether it is on an artifact fork, for the entries the window decides.
    """
    enters: dict[str, str] = {}

    def entry_of(u: str) -> str:
        path = []
        n = u
        for _ in range(len(pred) + 1):  # pred is acyclic: the walk leaves the window
            if n in enters:
                break
            path.append(n)
            p = pred[n]
            if p is None or p not in pred:
                enters[n] = n
                break
            n = p
        top = enters[n]
        for m in path:
            enters[m] = top
        return top

    if head is None or index.head is None or index.head not in pred:
        return None
    top = entry_of(head)
    if entry_of(index.head) != top or any(entry_of(u) != top for u in pred if u in fresh):
        return None
    kids = index.children
    flags: dict[str, bool] = {}
    for u in pred:
        if entry_of(u) != top:
            continue
        if any(c not in pred for c in kids.get(u, ())):
            return None
        if u not in fresh:
            flags[u] = u in artifacts
    return flags


def _update_session(
    store: BaseStore,
    sid: str,
    window: _Transcript,
    new: _Transcript,
    added: Sequence[str],
    links: _Links,
    copied: Mapping[str, str],
    read_before: int,
) -> bool:
    """Bring the session's title and metadata up to date with the new lines, as a full import would.

    ``read_before`` is the number of lines before the resumed offset: a record of a later line was
    made from a torn last line, which is read again now, so it is dropped.

    Returns:
        Whether only a new line can change the title now (:func:`_settled`).
    """
    current = store.session(sid)
    meta = _origin(new.entries.shapes(), dict(current.metadata))
    recorded = list(meta.get("entries") or [])
    entries = [
        e
        for e in recorded
        if not (isinstance(e, dict) and isinstance(e.get("line"), int) and e["line"] > read_before)
    ]
    if new.other or len(entries) != len(recorded):
        seen = {e.get("line") for e in entries if isinstance(e, dict)}
        entries += [{"line": o.number, **o.data} for o in new.other if o.number not in seen]
        meta["entries"] = entries
    forked = [u for u in added if isinstance(window.entries[u].data.get("forkedFrom"), dict)]
    source = _fork_source(window, forked or added, links, copied) if forked or copied else None
    if source is not None:
        meta["forked_from"] = source
    title = ""
    for line in reversed(new.other):
        if line.data.get("type") in _TITLE_TYPES:
            title = next(
                (
                    str(line.data[k])
                    for k in ("customTitle", "aiTitle", "title")
                    if line.data.get(k)
                ),
                "",
            )
            if title:
                break
    titled = any(
        isinstance(e, dict) and e.get("type") in _TITLE_TYPES for e in meta.get("entries", ())
    )
    if not title and not titled:  # a summary names the session only when no title entry does
        summaries = [
            e for e in meta.get("entries", ()) if isinstance(e, dict) and e.get("type") == "summary"
        ]
        leaves = {str(e["leafUuid"]) for e in summaries if isinstance(e.get("leafUuid"), str)}
        stored = {u for u, s in store.locate(leaves).items() if s == sid} if leaves else set()
        for e in reversed(summaries):
            if e.get("leafUuid") in window.entries or e.get("leafUuid") in stored:
                title = str(e.get("summary", ""))
                break
    if not title and not current.title:
        title = _title(_Transcript(window.path, window.entries, slim=window.slim), added)
    new_title = title if title and title != current.title else None
    new_meta = meta if meta != dict(current.metadata) else None
    if new_title is not None or new_meta is not None:
        store.update_session(sid, title=new_title, metadata=new_meta)
    return _settled(store, new_title or current.title, meta.get("entries") or [], window.entries)

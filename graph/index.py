"""The in-process index of one session: what every walk needs, and nothing decoded from payloads.

Ids, predecessors, kind, role and flags live in stored columns (kind, role and flags packed into one
integer, the ``bits`` column), so a full rebuild reads three columns per node and decodes no msgpack.
The index is cached by the store and refreshed from what changed since it was built.

The bit layout is this module's business: everything else asks the index (:meth:`SessionIndex.kind_of`,
:meth:`SessionIndex.is_summary`, :meth:`SessionIndex.is_message`, :meth:`SessionIndex.is_rewound`, ...)
or a :class:`NodeInfo`. A new flag is one more constant here, one more keyword of :func:`node_bits` and
one more question on :class:`IndexQueries`. Callers outside the store get :class:`IndexView`, a
read-only face of the cached index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from graph.models import Kind, Node, Role

__all__ = [
    "ARTIFACT",
    "DECODED_BYTES",
    "DECODED_NODE_BYTES",
    "DECODED_PAYLOAD_BYTES",
    "EMPTY",
    "DecodedNodes",
    "KIND_MASK",
    "MEMORY_ELIGIBLE",
    "ROLE_MASK",
    "SCHEDULED",
    "REWOUND",
    "SIBLING",
    "Eligibility",
    "Eligible",
    "IndexQueries",
    "IndexView",
    "NodeInfo",
    "SessionIndex",
    "SqlBitTests",
    "as_sibling",
    "is_summary_bits",
    "kind_of_bits",
    "is_artifact",
    "node_bits",
    "role_of_bits",
    "rewound_bits",
    "same_kind_and_role",
    "sql_bit_tests",
    "sql_live_message",
]

_KINDS = (Kind.MESSAGE, Kind.SUMMARY, Kind.EVENT)
_ROLES = (Role.USER, Role.ASSISTANT, Role.SYSTEM, Role.TOOL)
_KIND_CODE = {k: i for i, k in enumerate(_KINDS)}
_ROLE_CODE = {r: i << 2 for i, r in enumerate(_ROLES)}

KIND_MASK = 0b11
"""Bits 0-1: the kind (message 0, summary 1, event 2)."""
ROLE_MASK = 0b1100
"""Bits 2-3: the role (user, assistant, system, tool)."""
EMPTY = 1 << 4
"""Bit 4: the node has no text (no text block, no tool result text)."""
SCHEDULED = 1 << 5
"""Bit 5: a runtime-scheduled turn (``metadata["scheduled"]`` was true at append)."""
SIBLING = 1 << 6
"""Bit 6: a compaction summary in the sibling layout (its covered nodes are not its ancestors)."""
REWOUND = 1 << 7
"""Bit 7, in the index only: the node is stamped rewound (the ``rewound`` table is the record)."""

ARTIFACT = 1 << 8
"""Bit 8: a node on an artifact fork (``metadata["artifact"]`` is true; set at append, set or cleared
later by :meth:`graph.store.base.BaseStore.set_artifact`): a side branch a
runtime's bookkeeping made (Claude Code's progress and hook entries, a parallel tool call's result),
not a person. It is stored like any node but is never a live tip, and a fork whose other children are
all artifacts is not counted as one. Test it with :func:`is_artifact`."""

_SUMMARY = _KIND_CODE[Kind.SUMMARY]
_MESSAGE = _KIND_CODE[Kind.MESSAGE]


def is_artifact(bits: int) -> bool:
    """Whether a node with these ``bits`` is on an artifact fork (:data:`ARTIFACT`)."""
    return bool(bits & ARTIFACT)


def node_bits(
    kind: Kind,
    role: Role,
    *,
    empty: bool,
    scheduled: bool,
    sibling: bool = False,
    rewound: bool = False,
    artifact: bool = False,
) -> int:
    """Pack a node's kind, role and flags into the ``bits`` column (``rewound``: the index's flag)."""
    return (
        _KIND_CODE[kind]
        | _ROLE_CODE[role]
        | (EMPTY if empty else 0)
        | (SCHEDULED if scheduled else 0)
        | (SIBLING if sibling else 0)
        | (REWOUND if rewound else 0)
        | (ARTIFACT if artifact else 0)
    )


def kind_of_bits(bits: int) -> Kind:
    """The kind packed into a ``bits`` value."""
    return _KINDS[bits & KIND_MASK]


def role_of_bits(bits: int) -> Role:
    """The role packed into a ``bits`` value."""
    return _ROLES[(bits & ROLE_MASK) >> 2]


def same_kind_and_role(a: int, b: int) -> bool:
    """Whether two ``bits`` values hold the same kind and role (flags aside)."""
    mask = KIND_MASK | ROLE_MASK
    return a & mask == b & mask


def as_sibling(bits: int) -> int:
    """The ``bits`` value of a summary once it is known to be in the sibling layout."""
    return bits | SIBLING


def is_summary_bits(bits: int) -> bool:
    """Whether a ``bits`` value is a compaction summary's."""
    return bits & KIND_MASK == _SUMMARY


def rewound_bits(bits: int) -> int:
    """The index's ``bits`` of a stored node that is stamped rewound (:data:`REWOUND` set)."""
    return bits | REWOUND


class SqlBitTests(NamedTuple):
    """SQL expressions testing a stored ``bits`` column, for queries that walk rows in the database."""

    summary: str
    """The row is a compaction summary."""
    sibling: str
    """The row is a sibling-layout summary (with :attr:`summary`)."""
    eligible: str
    """The row's kind, role and flags match the predicate (its rewound stamp is tested apart)."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What an eligibility predicate sees of a node: its id and the indexed columns."""

    id: str
    """The node id."""
    bits: int
    """The packed kind, role and flags (see :func:`node_bits`)."""

    @property
    def kind(self) -> Kind:
        """The node's kind."""
        return _KINDS[self.bits & KIND_MASK]

    @property
    def role(self) -> Role:
        """The node's role."""
        return _ROLES[(self.bits & ROLE_MASK) >> 2]

    @property
    def has_text(self) -> bool:
        """Whether the node has non-empty text."""
        return not self.bits & EMPTY

    @property
    def scheduled(self) -> bool:
        """Whether the node is a runtime-scheduled turn."""
        return bool(self.bits & SCHEDULED)

    @property
    def artifact(self) -> bool:
        """Whether the node is on an artifact fork (see :data:`ARTIFACT`)."""
        return is_artifact(self.bits)

    @property
    def rewound(self) -> bool:
        """Whether the node is stamped rewound."""
        return bool(self.bits & REWOUND)


Eligibility = Callable[[NodeInfo], bool]
"""A provider's predicate over nodes; rewound nodes and summaries with covers are never eligible."""


@dataclass(frozen=True)
class Eligible:
    """An eligibility predicate by kind, role, text and scheduling, tested on ``bits`` alone.

    The walks test an :class:`Eligible` with one mask comparison per node instead of calling it.
    """

    kinds: frozenset[Kind] = frozenset({Kind.MESSAGE})
    """Kinds that are eligible."""
    roles: frozenset[Role] = frozenset({Role.USER, Role.ASSISTANT})
    """Roles that are eligible."""
    require_text: bool = True
    """Nodes with empty text are not eligible."""
    exclude_scheduled: bool = True
    """Runtime-scheduled turns are not eligible."""
    mask: int = field(init=False, repr=False, compare=False)
    """The bits the test looks at; rewound is always among them."""
    codes: frozenset[int] = field(init=False, repr=False, compare=False)
    """The values of ``bits & mask`` that are eligible."""

    def __post_init__(self) -> None:
        flags = (EMPTY if self.require_text else 0) | (SCHEDULED if self.exclude_scheduled else 0)
        codes = {_KIND_CODE[k] | _ROLE_CODE[r] for k in self.kinds for r in self.roles}
        object.__setattr__(self, "mask", KIND_MASK | ROLE_MASK | REWOUND | flags)
        object.__setattr__(self, "codes", frozenset(codes))

    def __call__(self, info: NodeInfo) -> bool:
        """Return whether ``info`` is eligible."""
        return self.test(info.bits)

    def test(self, bits: int) -> bool:
        """Return whether a node with these ``bits`` is eligible."""
        return (bits & self.mask) in self.codes


MEMORY_ELIGIBLE = Eligible()
"""The memory writer's default: user or assistant messages with text, not scheduled."""


def sql_bit_tests(column: str, eligible: Eligible) -> SqlBitTests:
    """The tests of :class:`SqlBitTests` on the SQL ``column`` holding a node's stored bits.

    Only integers from this module are written into the expressions (no parameters needed).
    """
    codes = ",".join(str(int(c)) for c in sorted(eligible.codes)) or "NULL"
    return SqlBitTests(
        summary=f"({column} & {KIND_MASK}) = {_SUMMARY}",
        sibling=f"({column} & {SIBLING}) != 0",
        eligible=f"({column} & {eligible.mask & ~REWOUND}) IN ({codes})",
    )


_LIVE_MASK = KIND_MASK | REWOUND | ARTIFACT  # bits & _LIVE_MASK == _MESSAGE: a live message


def sql_live_message(column: str) -> str:
    """The SQL test that the node whose stored bits are in ``column`` can be a live tip.

    True for a message on no artifact fork; a store keeps its rewound stamps in a table of their own,
    so the caller also tests that the node is not stamped. Only integers from this module are written
    into the expression.
    """
    return f"({column} & {_LIVE_MASK}) = {_MESSAGE}"


def _scan_live_tips(pred: dict[str, str | None], bits: dict[str, int]) -> list[str]:
    """The live tips, newest first, by one pass over the nodes in reverse insertion order."""
    below: set[str] = set()
    tips: list[str] = []
    for n in reversed(pred):
        live = bits[n] & _LIVE_MASK == _MESSAGE
        if live or n in below:
            if live and n not in below:
                tips.append(n)
            p = pred[n]
            if p is not None:
                below.add(p)
    return tips


Marks = dict[tuple[str, str], set[str]]
"""(provider, value) -> the ids of the nodes carrying that marker."""


class IndexQueries:
    """The questions every index answers about one node, read from its packed bits.

    Mixed into :class:`SessionIndex` and :class:`IndexView`; both supply ``bits``, ``covers`` and
    ``marks``. Every method raises ``KeyError`` for an id that is not a node of the session.
    """

    __slots__ = ()
    bits: Mapping[str, int]
    covers: Mapping[str, tuple[str, ...]]
    marks: Mapping[tuple[str, str], Set[str]]

    def kind_of(self, node_id: str) -> Kind:
        """The node's kind."""
        return _KINDS[self.bits[node_id] & KIND_MASK]

    def role_of(self, node_id: str) -> Role:
        """The node's role."""
        return _ROLES[(self.bits[node_id] & ROLE_MASK) >> 2]

    def info(self, node_id: str) -> NodeInfo:
        """What an eligibility predicate sees of the node."""
        return NodeInfo(node_id, self.bits[node_id])

    def is_message(self, node_id: str) -> bool:
        """Whether the node is of kind message (rewound or not)."""
        return self.bits[node_id] & KIND_MASK == _MESSAGE

    def is_summary(self, node_id: str) -> bool:
        """Whether the node is a compaction summary (with covers or without)."""
        return self.bits[node_id] & KIND_MASK == _SUMMARY

    def is_rewound(self, node_id: str) -> bool:
        """Whether the node is stamped rewound."""
        return bool(self.bits[node_id] & REWOUND)

    def is_artifact(self, node_id: str) -> bool:
        """Whether the node is on an artifact fork (see :data:`ARTIFACT`)."""
        return bool(self.bits[node_id] & ARTIFACT)

    def is_sibling(self, node_id: str) -> bool:
        """Whether the node is a sibling-layout summary (its covered nodes are not its ancestors)."""
        return bool(self.bits[node_id] & SIBLING)

    def is_live_message(self, node_id: str) -> bool:
        """Whether the node is a message that is not rewound."""
        return self.bits[node_id] & (KIND_MASK | REWOUND) == _MESSAGE

    def is_written(self, node_id: str, provider: str, value: str) -> bool:
        """Whether the node carries the marker ``(provider, value)``."""
        got = self.marks.get((provider, value))
        return got is not None and node_id in got

    def written(self, node_id: str) -> dict[str, tuple[str, ...]]:
        """The node's markers: provider -> its values, sorted (empty when none)."""
        out: dict[str, list[str]] = {}
        for (provider, value), ids in self.marks.items():
            if node_id in ids:
                out.setdefault(provider, []).append(value)
        return {p: tuple(sorted(vs)) for p, vs in sorted(out.items())}

    def marker_values(self, provider: str) -> list[str]:
        """The values ``provider`` has written markers with in this session, sorted."""
        return sorted(v for p, v in self.marks if p == provider and self.marks[(p, v)])


class SessionIndex(IndexQueries):
    """The cached walk structures of one session (the store's own, mutable copy).

    Callers outside the store see it through :class:`IndexView`.

    Attributes:
        session_id: The session.
        head: The stored head, or None.
        rev: The session's change counter when the index was last brought up to date.
        pred: node id -> predecessor id (None for roots), in insertion order (a topological order).
        bits: node id -> packed kind, role and flags (:data:`REWOUND` included).
        marks: (provider, value) -> ids of the nodes carrying that marker. A node carries any number
            of values of one provider; a marker of another value is no marker for this one.
        covers: summary id -> covered ids, oldest first.
        node_seq, mark_seq, rewound_seq, flag_seq: the newest change seen in each table (SQLite
            store; ``flag_seq``: the ``flagged`` table of artifact flags changed after append).
        deletions: how many session deletions the store had seen when the index was built (SQLite).
        rewound: how many nodes are stamped rewound (walks skip the check when none are).
        decoded: The store's cache of decoded nodes this index feeds, or None: every marker and
            rewound stamp recorded here drops its node from it (:meth:`changed`).
    """

    __slots__ = (
        "session_id",
        "head",
        "rev",
        "pred",
        "bits",
        "marks",
        "covers",
        "node_seq",
        "mark_seq",
        "rewound_seq",
        "flag_seq",
        "deletions",
        "rewound",
        "stale",
        "decoded",
        "_children",
        "_tips",
        "_tips_at",
    )

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.head: str | None = None
        self.rev = 0
        self.pred: dict[str, str | None] = {}
        self.bits: dict[str, int] = {}
        self.marks: Marks = {}
        self.covers: dict[str, tuple[str, ...]] = {}
        self.node_seq = 0
        self.mark_seq = 0
        self.rewound_seq = 0
        self.flag_seq = 0
        self.deletions = 0
        self.rewound = 0
        self.stale = False
        self.decoded: DecodedNodes | None = None
        self._children: dict[str, list[str]] | None = None
        self._tips: dict[str, None] | None = None  # live tips in insertion order, once asked for
        self._tips_at = 0  # len(pred) when _tips was last brought up to date

    def __len__(self) -> int:
        return len(self.pred)

    def add(self, node_id: str, predecessor: str | None, bits: int) -> None:
        """Record a node appended after the index was built (its predecessor is recorded already).

        The live tips, once asked for, are kept up to date: a live message becomes a tip and hides
        the first live message above it, the only tip its arrival can hide. Other nodes neither are
        tips nor hide one by arriving.
        """
        self.pred[node_id] = predecessor
        self.bits[node_id] = bits
        if self._children is not None and predecessor is not None:
            self._children.setdefault(predecessor, []).append(node_id)
        tips = self._tips
        if tips is None:
            return
        if self._tips_at != len(self.pred) - 1:
            self._tips = None  # nodes arrived without add(): scan again when asked
            return
        self._tips_at += 1
        if bits & _LIVE_MASK == _MESSAGE:
            pred, all_bits = self.pred, self.bits
            n = predecessor
            while n is not None:
                if all_bits[n] & _LIVE_MASK == _MESSAGE:
                    tips.pop(n, None)  # not a tip, or no longer one; everything above is hidden
                    break
                n = pred[n]
            tips[node_id] = None

    def live_tip_ids(self) -> list[str]:
        """The live tips, newest first (see :func:`graph.walks.live_tips`).

        Scanned once (one pass over the nodes), then kept up to date by :meth:`add`; a rewound stamp
        scans again on the next call.
        """
        if self._tips is None or self._tips_at != len(self.pred):
            self._tips = dict.fromkeys(reversed(_scan_live_tips(self.pred, self.bits)))
            self._tips_at = len(self.pred)
        return list(reversed(self._tips))

    def add_marks(self, provider: str, value: str, nodes: Iterable[str]) -> None:
        """Record markers written after the index was built."""
        if self.decoded is not None:
            nodes = list(nodes)
            self.decoded.discard(nodes)
        self.marks.setdefault((provider, value), set()).update(nodes)

    def reset(self) -> None:
        """Forget every node, marker and stamp (the session was deleted and made again elsewhere).

        The next catch-up is a full build; the decoded models this index fed are dropped.
        """
        self.changed(self.pred)
        self.head = None
        self.rev = self.node_seq = self.mark_seq = self.rewound_seq = self.flag_seq = 0
        self.rewound = 0
        self.pred, self.bits, self.marks, self.covers = {}, {}, {}, {}
        self._children = self._tips = None
        self._tips_at = 0

    def changed(self, nodes: Iterable[str]) -> None:
        """Say that the markers, stamps or row of ``nodes`` changed by a way other than this class's.

        Their decoded models, which carry markers and stamps in their metadata, are dropped from
        :attr:`decoded` (a backend's refresh that updates :attr:`marks` itself calls it).
        """
        if self.decoded is not None:
            self.decoded.discard(nodes)

    @property
    def children(self) -> dict[str, list[str]]:
        """Node id -> child ids in insertion order; built on first use, then kept up to date."""
        if self._children is None:
            kids: dict[str, list[str]] = {}
            for n, p in self.pred.items():
                if p is not None:
                    if p in kids:
                        kids[p].append(n)
                    else:
                        kids[p] = [n]
            self._children = kids
        return self._children

    def stamp_rewound(self, nodes: Iterable[str]) -> None:
        """Record rewound stamps written after the index was built."""
        bits = self.bits
        if self.decoded is not None:
            nodes = list(nodes)
            self.decoded.discard(nodes)
        for n in nodes:
            if n in bits and not bits[n] & REWOUND:
                bits[n] |= REWOUND
                self.rewound += 1
                self._tips = None

    def set_artifact(self, flags: Iterable[tuple[str, bool]]) -> None:
        """Record artifact flags set (True) or cleared (False) after the index was built."""
        bits = self.bits
        changed = []
        for n, on in flags:
            if n in bits and bool(bits[n] & ARTIFACT) != on:
                bits[n] = bits[n] | ARTIFACT if on else bits[n] & ~ARTIFACT
                changed.append(n)
        if changed:
            self.changed(changed)
            self._tips = None

    def unstamp_rewound(self, nodes: Iterable[str]) -> None:
        """Undo :meth:`stamp_rewound` (an in-memory rollback)."""
        bits = self.bits
        if self.decoded is not None:
            nodes = list(nodes)
            self.decoded.discard(nodes)
        for n in nodes:
            if n in bits and bits[n] & REWOUND:
                bits[n] &= ~REWOUND
                self.rewound -= 1
                self._tips = None

    def effective_pred(self, node_id: str) -> str | None:
        """The node before ``node_id`` on the walked path.

        It is the predecessor, except for a sibling-layout summary with covers, which leads to its last
        covered node: the walk then passes through the covered nodes instead of the summary.
        """
        if self.bits[node_id] & SIBLING:
            return self.covers[node_id][-1]
        return self.pred[node_id]


class _ChildrenView(Mapping[str, tuple[str, ...]]):
    """Node id -> child ids (a tuple), read-only, over the index's children lists."""

    __slots__ = ("_kids",)

    def __init__(self, kids: dict[str, list[str]]) -> None:
        self._kids = kids

    def __getitem__(self, node_id: str) -> tuple[str, ...]:
        return tuple(self._kids[node_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._kids)

    def __len__(self) -> int:
        return len(self._kids)


class _MarksView(Mapping[tuple[str, str], Set[str]]):
    """(provider, value) -> node ids (a frozenset), read-only."""

    __slots__ = ("_marks",)

    def __init__(self, marks: Marks) -> None:
        self._marks = marks

    def __getitem__(self, key: tuple[str, str]) -> frozenset[str]:
        return frozenset(self._marks[key])

    def get(self, key: tuple[str, str], default: object = None) -> Set[str] | None:  # type: ignore[override]
        got = self._marks.get(key)
        return default if got is None else got  # type: ignore[return-value]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._marks)

    def __len__(self) -> int:
        return len(self._marks)


DECODED_BYTES = 32 * 1024 * 1024
"""How many bytes of decoded nodes a store keeps by default (:class:`DecodedNodes`)."""

DECODED_NODE_BYTES = 1_600
"""What a decoded node takes beyond its row's encoded payload, counted against the budget.

Measured: a text turn of 100 characters (a 100-byte payload) takes about 1.7 KB as a kept model
(the frozen model, its field dict, id strings, datetime, metadata dict, the cache's entry)."""

DECODED_PAYLOAD_BYTES = 64 * 1024
"""A stored row whose encoded content and metadata exceed this many bytes is never kept decoded."""


class DecodedNodes:
    """A cache of decoded :class:`~graph.models.Node` models by node id, bounded in bytes, least recently used out.

    A node's content never changes once stored; what its model also carries, the markers and the
    rewound stamp in its metadata, comes from the session's index. So an entry is kept together with
    the :class:`SessionIndex` it was built from, and is served only while that same index object is
    the store's current one for the session: a rebuilt, reloaded or rolled-back index (a new object)
    never sees another's entries. That index drops a node's entry whenever it records a marker or a
    stamp on it, whether this store wrote it or a refresh read another process's write, and when the
    node's row arrives again (its session deleted and stored anew), so a served model always says
    what the index and the rows say. Models are frozen and shared between callers: treat their
    metadata as read-only.

    Size: each entry counts its row's encoded bytes (content and metadata) plus
    :data:`DECODED_NODE_BYTES`; the total stays within ``budget`` (by default :data:`DECODED_BYTES`,
    about 20,000 ordinary text turns). Decoded text takes about its encoded size; content blocks take
    more (a few hundred bytes per block model), so a session of many small blocks can hold up to about
    twice the budget. Rows over :data:`DECODED_PAYLOAD_BYTES` are decoded on every read.

    Args:
        budget: The most bytes counted for the kept models (0 keeps none).
    """

    __slots__ = ("budget", "size", "_entries")

    def __init__(self, budget: int = DECODED_BYTES) -> None:
        self.budget = budget
        self.size = 0
        self._entries: dict[str, tuple[SessionIndex, Node, int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, count: int) -> bool:
        """Whether ``count`` ordinary nodes fit the budget at once (a larger read is not kept)."""
        return count * DECODED_NODE_BYTES <= self.budget

    def entry(self, node_id: str) -> tuple[SessionIndex, Node] | None:
        """The kept model of ``node_id`` with the index it was built from, or None (no reordering)."""
        got = self._entries.get(node_id)
        return None if got is None else (got[0], got[1])

    def take(self, index: SessionIndex, ids: Iterable[str]) -> tuple[list[Node | None], int]:
        """The models of ``ids`` built from ``index`` (None where none is kept), and how many are None.

        Every model found becomes the most recently used.
        """
        entries = self._entries
        pop = entries.pop
        out: list[Node | None] = []
        missing = 0
        for i in ids:
            entry = pop(i, None)
            if entry is not None:
                entries[i] = entry
                if entry[0] is index:
                    out.append(entry[1])
                    continue
            out.append(None)
            missing += 1
        return out, missing

    def put(self, index: SessionIndex, nodes: Iterable[tuple[Node, int]]) -> None:
        """Keep ``nodes`` (each with its row's encoded bytes), built from ``index``.

        The least recently used go until the total is within the budget again.
        """
        if self.budget <= 0:
            return
        entries = self._entries
        index.decoded = self
        size = self.size
        for node, payload in nodes:
            old = entries.pop(node.id, None)
            if old is not None:
                size -= old[2]
            cost = payload + DECODED_NODE_BYTES
            entries[node.id] = (index, node, cost)
            size += cost
        if size > self.budget:
            drop = []
            for k, e in entries.items():
                if size <= self.budget:
                    break
                size -= e[2]
                drop.append(k)
            for k in drop:
                del entries[k]
        self.size = size

    def discard(self, ids: Iterable[str]) -> None:
        """Drop the models of ``ids`` (their markers, stamps or rows changed)."""
        entries = self._entries
        if entries:
            for i in ids:
                old = entries.pop(i, None)
                if old is not None:
                    self.size -= old[2]

    def clear(self) -> None:
        """Drop every model."""
        self._entries.clear()
        self.size = 0


class IndexView(IndexQueries):
    """A read-only face of a session's cached index, what :meth:`BaseStore.index` hands out.

    It reads through to the live index (so it is as fresh as the store's cache when used), and offers
    no way to change it: the maps are read-only proxies. Every walk of :mod:`graph.walks` accepts it.
    """

    __slots__ = ("_live",)

    def __init__(self, index: SessionIndex) -> None:
        self._live = index

    @property
    def session_id(self) -> str:
        """The session."""
        return self._live.session_id

    @property
    def head(self) -> str | None:
        """The stored head, or None."""
        return self._live.head

    @property
    def rev(self) -> int:
        """The session's change counter when the index was last brought up to date."""
        return self._live.rev

    @property
    def identity(self) -> int:
        """A number naming the cached index this view reads through (not the view itself).

        Views of one cached index share it however many are handed out; an index built anew (the
        first read in a process, after a rollback, :meth:`~graph.store.base.BaseStore.rebuild_index`)
        has another, so an answer kept under ``(identity, rev)`` is never served for a rebuilt index.
        """
        return id(self._live)

    @property
    def rewound(self) -> int:
        """How many nodes are stamped rewound."""
        return self._live.rewound

    @property
    def pred(self) -> Mapping[str, str | None]:
        """Node id -> predecessor id (None for roots), in insertion order (a topological order)."""
        return MappingProxyType(self._live.pred)

    @property
    def bits(self) -> Mapping[str, int]:  # type: ignore[override]
        """Node id -> packed kind, role and flags; ask :class:`IndexQueries` rather than decode them."""
        return MappingProxyType(self._live.bits)

    @property
    def covers(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        """Summary id -> covered ids, oldest first."""
        return MappingProxyType(self._live.covers)

    @property
    def marks(self) -> Mapping[tuple[str, str], Set[str]]:  # type: ignore[override]
        """(provider, value) -> ids of the nodes carrying that marker."""
        return _MarksView(self._live.marks)

    @property
    def children(self) -> Mapping[str, tuple[str, ...]]:
        """Node id -> child ids in insertion order."""
        return _ChildrenView(self._live.children)

    def __len__(self) -> int:
        return len(self._live)

    def effective_pred(self, node_id: str) -> str | None:
        """The node before ``node_id`` on the walked path (see :meth:`SessionIndex.effective_pred`)."""
        return self._live.effective_pred(node_id)

    def live_tip_ids(self) -> list[str]:
        """The live tips, newest first (see :meth:`SessionIndex.live_tip_ids`)."""
        return self._live.live_tip_ids()

    def __repr__(self) -> str:
        return f"IndexView({self.session_id!r}, {len(self)} nodes, head={self.head!r})"

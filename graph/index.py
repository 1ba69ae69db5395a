"""The in-process index of one session: what every walk needs, and nothing decoded from payloads.

DESIGN.md sections 3 and 7: ids, predecessors, kind, role and flags live in columns (packed into one
integer, :data:`bits`), so a full rebuild reads three columns per node and decodes no msgpack. The index
is cached by the store and refreshed from what changed since it was built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from graph.models import Kind, Role

__all__ = [
    "EMPTY",
    "KIND_MASK",
    "MEMORY_ELIGIBLE",
    "ROLE_MASK",
    "SCHEDULED",
    "REWOUND",
    "SIBLING",
    "Eligibility",
    "Eligible",
    "NodeInfo",
    "SessionIndex",
    "kind_of",
    "node_bits",
    "role_of",
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

_SUMMARY = _KIND_CODE[Kind.SUMMARY]


def node_bits(
    kind: Kind, role: Role, *, empty: bool, scheduled: bool, sibling: bool = False
) -> int:
    """Pack a node's kind, role and flags into the ``bits`` column."""
    return (
        _KIND_CODE[kind]
        | _ROLE_CODE[role]
        | (EMPTY if empty else 0)
        | (SCHEDULED if scheduled else 0)
        | (SIBLING if sibling else 0)
    )


def kind_of(bits: int) -> Kind:
    """Return the kind packed into a ``bits`` column value."""
    return _KINDS[bits & KIND_MASK]


def role_of(bits: int) -> Role:
    """Return the role packed into a ``bits`` column value."""
    return _ROLES[(bits & ROLE_MASK) >> 2]


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
"""The memory writer's default (DESIGN.md 2): user or assistant messages with text, not scheduled."""


class SessionIndex:
    """The cached walk structures of one session.

    Attributes:
        session_id: The session.
        head: The stored head, or None.
        rev: The session's change counter when the index was last brought up to date.
        pred: node id -> predecessor id (None for roots), in insertion order (a topological order).
        bits: node id -> packed kind, role and flags (:data:`REWOUND` included).
        marks: provider -> {node id -> marker value}.
        covers: summary id -> covered ids, oldest first.
        node_seq, mark_seq, rewound_seq: the newest change seen in each table (SQLite store).
        rewound: how many nodes are stamped rewound (walks skip the check when none are).
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
        "rewound",
        "stale",
        "_children",
    )

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.head: str | None = None
        self.rev = 0
        self.pred: dict[str, str | None] = {}
        self.bits: dict[str, int] = {}
        self.marks: dict[str, dict[str, str]] = {}
        self.covers: dict[str, tuple[str, ...]] = {}
        self.node_seq = 0
        self.mark_seq = 0
        self.rewound_seq = 0
        self.rewound = 0
        self.stale = False
        self._children: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.pred)

    def add(self, node_id: str, predecessor: str | None, bits: int) -> None:
        """Record a node appended after the index was built."""
        self.pred[node_id] = predecessor
        self.bits[node_id] = bits
        if self._children is not None and predecessor is not None:
            self._children.setdefault(predecessor, []).append(node_id)

    def add_marks(self, provider: str, value: str, nodes: Iterable[str]) -> None:
        """Record markers written after the index was built."""
        pm = self.marks.setdefault(provider, {})
        for n in nodes:
            pm[n] = value

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
        for n in nodes:
            if n in bits and not bits[n] & REWOUND:
                bits[n] |= REWOUND
                self.rewound += 1

    def effective_pred(self, node_id: str) -> str | None:
        """The node before ``node_id`` on the walked path (DESIGN.md 4).

        It is the predecessor, except for a sibling-layout summary with covers, which leads to its last
        covered node: the walk then passes through the covered nodes instead of the summary.
        """
        if self.bits[node_id] & SIBLING:
            return self.covers[node_id][-1]
        return self.pred[node_id]

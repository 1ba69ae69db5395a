"""The two reference cursors beside the written markers: the ordinal and the id set.

Neither is how sessiongraph tracks consumers; both exist for tests, benchmarks and migration.

* :class:`OrdinalCursor` is the position cursor a memory writer kept before written markers (a
  runtime's long-term memory writer, before its move to "the cursor: identity, not position"):
  ``{message_id, ordinal}`` per thread, where ``ordinal`` is a 1-based
  position in ``enumerate(get_branch(...))`` (the flattened branch, rewound rows filtered out, every
  other row counted), and only rows at a larger position are claimed. It refuses to move backwards.
  After a fork it misses a branch shorter than the stored ordinal, and of a longer one it claims only
  the part beyond the ordinal, then records the whole branch as written.
* :class:`IdSetCursor` is the set of written ids. Its pending is every eligible node of the head's
  effective branch that is not in the set, which is exact: it is the oracle the marker walk
  (:func:`graph.walks.walk_pending`) is checked against.

The oracle reads node models (kind, covers, predecessor, rewound stamp, text, metadata) and shares no
walk code with :mod:`graph.walks`; only the raw predecessor map comes from the store's index.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from graph.errors import GraphError
from graph.index import MEMORY_ELIGIBLE, Eligibility, NodeInfo, node_bits
from graph.models import Kind, Node
from graph.store.base import BaseStore

__all__ = [
    "CursorBackwardsError",
    "IdSetCursor",
    "OrdinalCursor",
    "effective_branch",
    "is_sibling_summary",
    "oracle_eligible",
]


class CursorBackwardsError(GraphError, ValueError):
    """An ordinal cursor was asked to move to a lower position.

    Such a cursor cannot move back, which is exactly the move a fork or a rewind needs.

    Attributes:
        stored: The ordinal the cursor holds.
        requested: The lower ordinal it was asked to move to.
    """

    def __init__(self, stored: int, requested: int) -> None:
        self.stored = stored
        self.requested = requested
        super().__init__(f"cursor cannot move backwards: stored {stored}, requested {requested}")


def oracle_eligible(node: Node, eligible: Eligibility = MEMORY_ELIGIBLE) -> bool:
    """Whether ``node`` may be delivered, decided from its model alone.

    A rewound node and a summary with covers are never eligible (a summary is never delivered
    while the nodes it covers exist); otherwise ``eligible``
    decides, on the node's kind, role, text, scheduling and rewound stamp packed as the store packs
    them (:func:`graph.index.node_bits`).
    """
    if node.rewound or node.covers:
        return False
    bits = node_bits(
        node.kind,
        node.role,
        empty=not node.text.strip(),
        scheduled=bool(node.metadata.get("scheduled")),
    )
    return eligible(NodeInfo(node.id, bits))


def is_sibling_summary(summary: Node, first_covered: Node) -> bool:
    """Whether a summary with covers is in the sibling layout (it shares the first covered node's predecessor).

    The inline layout (the span among its ancestors) cannot also share that predecessor: the first
    covered node would then be both its ancestor and its sibling.
    """
    return summary.predecessor == first_covered.predecessor


def effective_branch(store: BaseStore, session_id: str, head: str | None = None) -> list[Node]:
    """Return the branch of ``head`` as the pending walk reads it, root first, rewound nodes included.

    It is the predecessor path from the root to ``head`` (the stored head by default), except that a
    sibling-layout summary is preceded by the nodes it covers (recursively) instead of its own
    predecessor's line alone: the walk passes through the covered nodes in the summary's place
    (its covered nodes are delivered instead of it). Inline summaries and rewound nodes stay in the
    list; :func:`oracle_eligible` says they are never eligible.

    Raises:
        UnknownSessionError: no such session.
        UnknownNodeError: ``head`` is not a node of the session.
    """
    pred = store.index(session_id).pred
    start = store.session(session_id).head if head is None else head
    if start is not None:
        store.nodes(session_id, [start])
    chain: list[str] = []
    n = start
    while n is not None:
        chain.append(n)
        n = pred[n]
    chain.reverse()
    models: dict[str, Node] = {m.id: m for m in store.nodes(session_id, chain)}
    out: list[Node] = []
    for nid in chain:
        out.extend(_expanded(store, session_id, models[nid]))
    return out


def _expanded(store: BaseStore, session_id: str, node: Node) -> list[Node]:
    if node.kind is not Kind.SUMMARY or not node.covers:
        return [node]
    covered = store.nodes(session_id, node.covers)
    if not is_sibling_summary(node, covered[0]):
        return [node]
    out: list[Node] = []
    for c in covered:
        out.extend(_expanded(store, session_id, c))
    out.append(node)
    return out


@dataclass
class OrdinalCursor:
    """The position cursor a memory writer kept before markers, kept to reproduce its failures.

    Attributes:
        ordinal: The 1-based position in the flattened branch up to which the consumer has written;
            0 when nothing is.
        message_id: The node at that position when the cursor last moved (the original
            cursor's ``{message_id, ordinal}`` pair); the migration reads it.
    """

    ordinal: int = 0
    message_id: str | None = None

    def positions(
        self, store: BaseStore, session_id: str, head: str | None = None
    ) -> list[tuple[int, Node]]:
        """Return the flattened branch of ``head`` with 1-based positions, as the cursor counts.

        The branch is :meth:`~graph.store.base.BaseStore.branch` (root first, rewound rows filtered out,
        summaries, tool turns and events counted), enumerated from 1.
        """
        return list(enumerate(store.branch(session_id, head), 1))

    def pending_positions(
        self,
        store: BaseStore,
        session_id: str,
        head: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> list[tuple[int, Node]]:
        """Return ``(position, node)`` for the eligible rows the cursor claims: position > ordinal."""
        return [
            (i, n)
            for i, n in self.positions(store, session_id, head)
            if i > self.ordinal and eligible(NodeInfo(n.id, _bits(n)))
        ]

    def pending(
        self,
        store: BaseStore,
        session_id: str,
        head: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> list[Node]:
        """Return the eligible nodes of ``head``'s branch at a position above the ordinal, oldest first."""
        return [n for _, n in self.pending_positions(store, session_id, head, eligible)]

    def advance(self, message_id: str, ordinal: int) -> None:
        """Move the cursor to ``ordinal`` (the position of ``message_id``).

        Raises:
            CursorBackwardsError: ``ordinal`` is below the stored one; the cursor is unchanged. The
                old ``advance_cursor`` raises "cursor cannot move backwards" here, which is exactly
                the move a fork needs.
        """
        if ordinal < self.ordinal:
            raise CursorBackwardsError(self.ordinal, ordinal)
        self.ordinal = ordinal
        self.message_id = message_id


def _bits(node: Node) -> int:
    return node_bits(
        node.kind,
        node.role,
        empty=not node.text.strip(),
        scheduled=bool(node.metadata.get("scheduled")),
        rewound=node.rewound,
    )


@dataclass
class IdSetCursor:
    """The set of written ids: exact across forks, and the oracle for the marker walk.

    Attributes:
        written: The ids the consumer has written (recorded after it wrote them).
    """

    written: set[str] = field(default_factory=set)

    def record(self, nodes: Iterable[str | Node]) -> None:
        """Add the ids of ``nodes`` (ids or models) to the written set."""
        self.written.update(n.id if isinstance(n, Node) else n for n in nodes)

    def pending(
        self,
        store: BaseStore,
        session_id: str,
        head: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> list[Node]:
        """Return the eligible nodes of ``head``'s effective branch not in the set, oldest first.

        The branch is :func:`effective_branch`: a sibling-layout summary on it stands for its covered
        nodes, and summaries with covers are never delivered themselves. Cost: the whole
        branch on every call.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        return [
            n
            for n in effective_branch(store, session_id, head)
            if n.id not in self.written and oracle_eligible(n, eligible)
        ]

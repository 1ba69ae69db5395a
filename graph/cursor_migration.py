"""Migration from a reference cursor (an ordinal cursor or an id set) to written markers.

A cursor says which nodes a consumer claims to have written. The marker walk stops at the first marked
eligible node, so a marker is only safe where every eligible node above it on its branch is marked too
(the prefix rule). The migration therefore marks, of the claimed nodes, only those whose whole
effective branch above them is claimed (or already marked): a continuous prefix of each branch. A
claimed node below an unclaimed one stays unmarked and is delivered again: a duplicate rather than a
turn stranded below a marker, the side to err on (a turn written twice is
recoverable, a turn never written is lost).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from graph.cursors import OrdinalCursor
from graph.ids import NodeId
from graph.index import MEMORY_ELIGIBLE, Eligibility
from graph.store.base import BaseStore

__all__ = ["Migration", "claimed_by_ordinal", "migrate_ids", "migrate_ordinal"]


class Migration(NamedTuple):
    """What a migration did."""

    marked: list[NodeId]
    """Nodes newly marked, in the session's insertion order."""
    left: list[NodeId]
    """Claimed eligible nodes left unmarked because an unclaimed eligible node lies above them on a
    branch; they will be pending again (delivered a second time, never lost)."""


def claimed_by_ordinal(
    store: BaseStore,
    session_id: str,
    cursor: OrdinalCursor,
    eligible: Eligibility = MEMORY_ELIGIBLE,
) -> set[str]:
    """Return the ids an ordinal cursor claims as written.

    They are the eligible rows at positions ``1..ordinal`` of the branch the cursor last moved on: the
    branch of ``cursor.message_id`` when that node is in the session, else the stored head's branch.

    Raises:
        UnknownSessionError: no such session.
    """
    idx = store.index(session_id)
    head = cursor.message_id if cursor.message_id in idx.pred else None
    return {
        n.id
        for i, n in cursor.positions(store, session_id, head)
        if i <= cursor.ordinal and eligible(idx.info(n.id))
    }


def migrate_ids(
    store: BaseStore,
    session_id: str,
    written: Iterable[str],
    provider: str,
    value: str,
    eligible: Eligibility = MEMORY_ELIGIBLE,
) -> Migration:
    """Mark the claimed nodes that form a continuous prefix of each branch, in one transaction.

    A claimed node is marked when it is eligible and every eligible node above it on its effective
    branch (sibling-layout summaries stand for their covered nodes) is claimed or already carries
    ``written[provider] == value``. Ids not in the session are ignored (an id set may span sessions).

    Args:
        store: The store holding the session.
        session_id: The session.
        written: The ids the consumer recorded as written (an :class:`~graph.cursors.IdSetCursor`'s
            ``written``, or :func:`claimed_by_ordinal`).
        provider: The consumer's name.
        value: The consumer's marker value (for memory, the workspace id).
        eligible: The provider's predicate.

    Returns:
        The nodes marked and the claimed nodes left pending.

    Raises:
        UnknownSessionError: no such session.
    """
    claimed = set(written)
    with store.atomic():
        idx = store.index(session_id)
        pm = idx.marks.get((provider, value)) or frozenset()

        def is_eligible(n: str) -> bool:
            if idx.is_rewound(n) or (idx.is_summary(n) and n in idx.covers):
                return False
            return eligible(idx.info(n))

        clean: dict[
            str, bool
        ] = {}  # every eligible node from the root to here is claimed or marked

        def is_clean(node: str | None) -> bool:
            path: list[str] = []
            while node is not None and node not in clean:
                path.append(node)
                node = idx.effective_pred(node)
            ok = True if node is None else clean[node]
            for m in reversed(path):
                if is_eligible(m):
                    ok = ok and (m in claimed or m in pm)
                clean[m] = ok
            return ok

        marked: list[NodeId] = []
        left: list[NodeId] = []
        for n in idx.pred:
            if n not in claimed or not is_eligible(n) or n in pm:
                continue
            if is_clean(n):
                marked.append(NodeId(n))
            else:
                left.append(NodeId(n))
        if marked:
            store.mark(session_id, marked, provider, value, eligible)
        return Migration(marked, left)


def migrate_ordinal(
    store: BaseStore,
    session_id: str,
    cursor: OrdinalCursor,
    provider: str,
    value: str,
    eligible: Eligibility = MEMORY_ELIGIBLE,
) -> Migration:
    """Turn an ordinal cursor into markers: :func:`claimed_by_ordinal`, then :func:`migrate_ids`.

    Raises:
        UnknownSessionError: no such session.
    """
    claimed = claimed_by_ordinal(store, session_id, cursor, eligible)
    return migrate_ids(store, session_id, claimed, provider, value, eligible)

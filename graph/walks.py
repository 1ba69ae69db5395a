"""The graph walks, as free functions over a session's index.

They take a :class:`~graph.index.IndexView` (what the store hands out) or the store's own
:class:`~graph.index.SessionIndex`.

Every walk follows predecessors from a node back towards the root. Two rules hold for all of them:

* a compaction summary with covers is never delivered as new content: an inline-layout summary is
  stepped over (its covered nodes are its ancestors, so the walk meets them anyway), and a
  sibling-layout summary leads the walk to its last covered node, so the covered nodes are walked in
  its place (:meth:`SessionIndex.effective_pred`);
* a rewound node is never eligible and never on a branch.
"""

from __future__ import annotations

from typing import NamedTuple

from graph.index import (
    ARTIFACT,
    KIND_MASK,
    REWOUND,
    SIBLING,
    Eligibility,
    Eligible,
    IndexView,
    NodeInfo,
    SessionIndex,
    node_bits,
)
from graph.models import Kind, Role

__all__ = [
    "MarkerGap",
    "PendingWalk",
    "branch_ids",
    "branch_messages_after",
    "context_ids",
    "fork_count",
    "find_marker_gap",
    "is_ancestor",
    "live_tips",
    "marker_gaps",
    "pending_ids",
    "root_count",
    "summary_count",
    "walk_pending",
]

_MESSAGE = node_bits(Kind.MESSAGE, Role.USER, empty=False, scheduled=False) & KIND_MASK
_SUMMARY = node_bits(Kind.SUMMARY, Role.USER, empty=False, scheduled=False) & KIND_MASK
_EVENT_CODE = node_bits(Kind.EVENT, Role.SYSTEM, empty=False, scheduled=False) & KIND_MASK

Index = SessionIndex | IndexView
"""Any index a walk reads: the store's own or its read-only face."""


class PendingWalk(NamedTuple):
    """What :func:`walk_pending` found."""

    ids: list[str]
    """The pending node ids, oldest first."""
    visited: int
    """How many nodes the walk looked at (the marker it stopped on included)."""


class MarkerGap(NamedTuple):
    """A marked eligible node with an unmarked eligible node above it on its branch."""

    provider: str
    """The provider whose markers have the gap."""
    value: str
    """The marker value."""
    node_id: str
    """The marked node below the gap."""


def _test(eligible: Eligibility) -> tuple[Eligible | None, Eligibility]:
    return (eligible if isinstance(eligible, Eligible) else None), eligible


def _eligible(fast: Eligible | None, eligible: Eligibility, node_id: str, bits: int) -> bool:
    if fast is not None:
        return fast.test(bits)
    return not bits & REWOUND and eligible(NodeInfo(node_id, bits))


def walk_pending(
    index: Index, head: str | None, provider: str, value: str, eligible: Eligibility
) -> PendingWalk:
    """Walk back from ``head`` and collect the eligible nodes ``provider`` has not written.

    Ineligible nodes are stepped over; the first eligible node carrying ``written[provider] == value``
    stops the walk. Cost is proportional to the nodes walked since the newest marker.

    Returns:
        The pending ids oldest first, and how many nodes were visited.
    """
    pm = index.marks.get((provider, value)) or ()
    pred, bits, covers = index.pred, index.bits, index.covers
    fast = eligible if isinstance(eligible, Eligible) else None
    out: list[str] = []
    visited = 0
    n = head
    while n is not None:
        visited += 1
        b = bits[n]
        if b & KIND_MASK == _SUMMARY and n in covers:
            n = covers[n][-1] if b & SIBLING else pred[n]
            continue
        if fast.test(b) if fast is not None else _eligible(None, eligible, n, b):
            if n in pm:
                break
            out.append(n)
        n = pred[n]
    out.reverse()
    return PendingWalk(out, visited)


def pending_ids(
    index: Index, head: str | None, provider: str, value: str, eligible: Eligibility
) -> list[str]:
    """``walk_pending(...).ids``, without counting the nodes visited: the store's hot path.

    A session with no compaction summary to jump over, tested by an :class:`Eligible`, is walked
    with one mask test per node (the loop a bare dict walk would be); any other goes through
    :func:`walk_pending`. Raises what :func:`walk_pending` raises.
    """
    if index.covers or not isinstance(eligible, Eligible):
        return walk_pending(index, head, provider, value, eligible).ids
    pm = index.marks.get((provider, value)) or ()
    pred, bits = index.pred, index.bits
    mask, codes = eligible.mask, eligible.codes
    out: list[str] = []
    n = head
    while n is not None:
        if bits[n] & mask in codes:
            if n in pm:
                break
            out.append(n)
        n = pred[n]
    out.reverse()
    return out


def find_marker_gap(
    index: Index, nodes: list[str], provider: str, value: str, eligible: Eligibility
) -> tuple[str, str] | None:
    """Return ``(node, unmarked ancestor)`` if marking ``nodes`` would break the prefix rule, else None.

    The rule: on every branch the marked eligible nodes form a prefix. Marking a node is
    safe when every eligible node above it on its walked path is marked or in the batch. Each node is
    walked at most once, so the cost is the batch plus the distance to the newest marker.
    """
    pm = index.marks.get((provider, value)) or ()
    pred, bits, covers = index.pred, index.bits, index.covers
    fast, test = _test(eligible)
    batch = set(nodes)
    checked: set[str] = set()
    for start in nodes:
        if not _eligible(fast, test, start, bits[start]):
            continue
        n = index.effective_pred(start)
        while n is not None and n not in batch and n not in checked:
            checked.add(n)
            b = bits[n]
            if b & KIND_MASK == _SUMMARY and n in covers:
                n = covers[n][-1] if b & SIBLING else pred[n]
                continue
            if _eligible(fast, test, n, b):
                if n in pm:
                    break
                return start, n
            n = pred[n]
    return None


def marker_gaps(
    index: Index,
    eligible: Eligibility,
    provider: str | None = None,
    value: str | None = None,
) -> list[MarkerGap]:
    """Scan a whole session for prefix-rule violations, per (provider, value) pair present.

    ``provider`` and ``value`` restrict the scan. One pass over the nodes, each after its effective
    predecessor, per pair.
    """
    fast, test = _test(eligible)
    gaps: list[MarkerGap] = []
    order: list[str] | None = None
    for prov, val in sorted(index.marks):
        if (provider is not None and prov != provider) or (value is not None and val != value):
            continue
        pm = index.marks.get((prov, val)) or ()
        clean: dict[str, bool] = {}
        order = order if order is not None else _effective_order(index)
        for n in order:
            p = index.effective_pred(n)
            above = clean[p] if p is not None else True
            b = index.bits[n]
            if b & KIND_MASK == _SUMMARY and n in index.covers:
                clean[n] = above
            elif _eligible(fast, test, n, b):
                marked = n in pm
                if marked and not above:
                    gaps.append(MarkerGap(prov, val, n))
                clean[n] = above and marked
            else:
                clean[n] = above
    return gaps


def _effective_order(index: Index) -> list[str]:
    """The nodes with every node after its effective predecessor (:meth:`SessionIndex.effective_pred`).

    Insertion order puts predecessors first, but a bulk import may store a sibling-layout summary
    before the nodes it covers; such a summary (and what follows it) waits for its last covered node.
    """
    placed: set[str] = set()
    waiting: dict[str, list[str]] = {}
    out: list[str] = []
    for n in index.pred:
        p = index.effective_pred(n)
        if p is not None and p not in placed:
            waiting.setdefault(p, []).append(n)
            continue
        stack = [n]
        while stack:
            m = stack.pop()
            placed.add(m)
            out.append(m)
            stack.extend(waiting.pop(m, ()))
    return out


def branch_ids(index: Index, head: str | None) -> list[str]:
    """Return the branch of ``head``: root to head by predecessors, rewound nodes left out."""
    out: list[str] = []
    pred, bits = index.pred, index.bits
    n = head
    if not index.rewound:  # the common case: no rewind, no flag to test
        while n is not None:
            out.append(n)
            n = pred[n]
    else:
        while n is not None:
            if not bits[n] & REWOUND:
                out.append(n)
            n = pred[n]
    out.reverse()
    return out


def branch_messages_after(
    index: Index, head: str | None, stop: str | None
) -> tuple[list[str], bool]:
    """Return the messages of ``head``'s branch newer than ``stop``, oldest first, rewound ones left out.

    The walk goes back from ``head`` and ends at ``stop`` (not included) or at the root.

    Returns:
        The message ids, and whether the walk met ``stop`` (False: they are the whole branch's, what
        :func:`branch_ids` filtered to messages gives).
    """
    out: list[str] = []
    pred, bits = index.pred, index.bits
    live = KIND_MASK | REWOUND
    n = head
    while n is not None and n != stop:
        if bits[n] & live == _MESSAGE:
            out.append(n)
        n = pred[n]
    out.reverse()
    return out, n is not None


def root_count(index: Index) -> int:
    """How many nodes have no predecessor."""
    return list(index.pred.values()).count(None)


def summary_count(index: Index) -> int:
    """How many nodes are compaction summaries (with covers or without)."""
    return sum(1 for b in index.bits.values() if b & KIND_MASK == _SUMMARY)


def is_ancestor(index: Index, ancestor: str, node: str | None) -> bool:
    """Whether ``ancestor`` is ``node`` or one of its predecessors."""
    pred = index.pred
    n = node
    while n is not None:
        if n == ancestor:
            return True
        n = pred[n]
    return False


def live_tips(index: Index) -> list[str]:
    """Return the live tips, newest first.

    A live tip is a message that is not rewound and has no live message below it: event nodes (progress
    entries, snapshots) after a message do not hide it, rewound nodes do not count as children, and
    nodes on artifact forks (:data:`graph.index.ARTIFACT`) are neither tips nor hide one. One pass over
    the nodes in reverse insertion order the first time; the index then keeps the tips up to date as
    nodes arrive, so later calls cost the number of tips, not the session's size.
    """
    return index.live_tip_ids()


def fork_count(index: Index) -> int:
    """How many nodes have two or more children that are not on artifact forks."""
    bits = index.bits
    count = 0
    for kids in index.children.values():
        if len(kids) > 1 and sum(1 for c in kids if not bits[c] & ARTIFACT) > 1:
            count += 1
    return count


def context_ids(index: Index, head: str | None) -> list[str]:
    """Return the model-visible context of ``head``, root first.

    It is the branch of ``head`` with each covered span replaced by its latest summary, the summary
    standing where the span was: a summary of ``m1..m18`` appended after ``m20`` (pi's
    ``firstKeptEntryId`` keeps ``m19, m20``, written before the compaction entry) reads
    ``[s, m19, m20, ...]``, the order pi, Claude Code and Codex send to the model. A summary covered
    by a later one stands for nothing (its span belongs to the later summary too), and an older
    summary whose whole span a later one covers is left out. Events written between the span and the
    summary (Claude Code's ``compact_boundary``) stay before the summary, as Claude Code sends them:
    ``[boundary, summary, kept tail]``. A summary whose span is not on the
    branch (the sibling layout, the head below it) keeps its own place.

    Cost: two passes over the branch plus the covers of its summaries.
    """
    branch = branch_ids(index, head)
    covers = index.covers
    owner: dict[str, str] = {}  # covered node -> the latest summary standing for it
    dropped: set[str] = set()
    for n in reversed(branch):
        cv = covers.get(n)
        if cv is None:
            continue
        outer = owner.get(n)
        if outer is not None:  # a summary inside a later summary's span: its span is that one's
            for c in cv:
                owner.setdefault(c, outer)
        elif all(c in owner for c in cv):
            dropped.add(n)
        else:
            for c in cv:
                owner.setdefault(c, n)
    out: list[str] = []
    placed: set[str] = set()
    for n in branch:
        s = owner.get(n, n)
        if s in dropped or s in placed:
            continue
        placed.add(s)
        out.append(s)
    # Events written between a span and its summary (Claude Code's compact_boundary) stay before
    # the summary, as the runtime sends them: [boundary, summary, kept tail].
    where = {n: i for i, n in enumerate(branch)}
    bits = index.bits
    for i in range(len(out) - 1):
        s = out[i]
        if s not in covers or s not in where:
            continue
        k = i
        while (
            k + 1 < len(out)
            and bits[out[k + 1]] & KIND_MASK == _EVENT_CODE
            and out[k + 1] not in owner
            and where.get(out[k + 1], len(branch)) < where[s]
        ):
            out[k], out[k + 1] = out[k + 1], out[k]
            k += 1
    return out

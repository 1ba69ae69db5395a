"""Deterministic data for the benchmarks: forked sessions, markers and store files.

A *forked session* of ``n`` is a main chain of ``n`` nodes (user and assistant turns, every tenth one a
tool result, which the memory default does not find eligible) with a side branch of three turns
forking off every ``fork_every`` chain nodes, as a runtime leaves after a retry or an edit. The head is
the last chain node. Ids are zero-padded counters, so they sort in insertion order like the store's own
time-ordered ids. Everything derives from the arguments and a seeded RNG: the same
arguments give the same file.

Files are built through the public :meth:`~graph.store.base.BaseStore.add_nodes` (batches of
:data:`BATCH`) and :meth:`~graph.store.base.BaseStore.mark`, and cached by name in the scratch directory,
so ``run_all.py`` builds each file once for every script that needs it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from graph import Node, SessionStore
from graph.models import Kind, Role

__all__ = [
    "BATCH",
    "Forked",
    "build_forked",
    "cached_store",
    "finish_build",
    "forked_nodes",
    "forked_plan",
    "mark_prefix",
    "pending_store",
]

PENDING = 10
"""Unwritten eligible nodes left at the head of the pending benchmark's session."""

BATCH = 50_000
"""Nodes per ``add_nodes`` transaction when building large sessions."""

_T0 = datetime(2025, 1, 1, tzinfo=UTC)
_WORDS = (
    "the index walks predecessors back from the head and stops at the newest marker of the provider"
).split()


@dataclass
class Forked:
    """What was generated for one forked session."""

    session_id: str
    head: str
    chain: list[str] = field(default_factory=list)
    """Main-chain node ids, root first."""
    rows: list[tuple[str, str | None, Role]] = field(default_factory=list)
    """Every node as (id, predecessor, role) in insertion order (a topological order)."""
    eligible: list[str] = field(default_factory=list)
    """Eligible ids (memory default) in insertion order."""
    tail: list[str] = field(default_factory=list)
    """The tail fork's ids, oldest first; the head is the last."""
    position: dict[str, int] = field(default_factory=dict)
    """Node id -> the index in :attr:`chain` of its chain node (side nodes: of their fork)."""


def _text(rng: random.Random, i: int) -> str:
    return f"turn {i}: " + " ".join(rng.choices(_WORDS, k=8))


def forked_plan(
    session_id: str, n: int, *, fork_every: int = 100, side: int = 3, tail: int = PENDING
) -> Forked:
    """Return the shape of a forked session of ``n`` chain nodes (ids, predecessors, roles).

    Besides the side branches, the head sits on a *tail fork*: ``tail`` user and assistant turns
    forking off the chain ``2 * tail`` nodes before its end (a user who edited a message and went on),
    so the head's branch is shorter than the old chain.
    """
    plan = Forked(session_id, head="")
    prev: str | None = None
    for i in range(n):
        nid = f"{session_id}:{i:08d}"
        role = Role.TOOL if i % 10 == 9 else (Role.USER if i % 2 == 0 else Role.ASSISTANT)
        plan.chain.append(nid)
        plan.rows.append((nid, prev, role))
        plan.position[nid] = i
        if role is not Role.TOOL:
            plan.eligible.append(nid)
        if i % fork_every == fork_every // 2 and i < n - 1:
            sp = nid
            for j in range(side):
                sid = f"{nid}/{j}"
                plan.rows.append((sid, sp, Role.USER if j % 2 == 0 else Role.ASSISTANT))
                plan.eligible.append(sid)
                plan.position[sid] = i
                sp = sid
        prev = nid
    at = max(0, n - 1 - 2 * tail)
    prev = plan.chain[at] if tail else prev
    for j in range(tail):
        tid = f"{session_id}:tail/{j:04d}"
        plan.rows.append((tid, prev, Role.USER if j % 2 == 0 else Role.ASSISTANT))
        plan.eligible.append(tid)
        plan.tail.append(tid)
        plan.position[tid] = at
        prev = tid
    plan.head = prev or ""
    return plan


def forked_nodes(plan: Forked, seed: int = 7) -> Iterator[Node]:
    """The plan's nodes in insertion order, with seeded text."""
    rng = random.Random(seed)
    sid = plan.session_id
    for nid, pred, role in plan.rows:
        yield Node.model_construct(
            id=nid,
            session_id=sid,
            predecessor=pred,
            kind=Kind.MESSAGE,
            role=role,
            content=_text(rng, len(nid)),
            created_at=_T0,
            metadata={},
            covers=(),
        )


def build_forked(store: SessionStore, session_id: str, n: int, **kw: int) -> Forked:
    """Create ``session_id`` in ``store`` as a forked session of ``n`` chain nodes; head at the end."""
    store.create_session(f"forked {n}", id=session_id, created_at=_T0)
    plan = forked_plan(session_id, n, **kw)
    batch: list[Node] = []
    for node in forked_nodes(plan):
        batch.append(node)
        if len(batch) >= BATCH:
            store.add_nodes(session_id, batch)
            batch = []
    store.add_nodes(session_id, batch, head=plan.head)
    return plan


def mark_prefix(
    store: SessionStore, plan: Forked, provider: str, value: str, unwritten: int
) -> list[str]:
    """Mark every eligible node except the last ``unwritten`` eligible chain nodes (and side branches
    forking below them); return the eligible chain ids left unwritten, oldest first."""
    chain_eligible = [e for e in plan.eligible[-(2 * unwritten + 100) :] if "/" not in e]
    left = chain_eligible[-unwritten:] if unwritten else []
    cut = plan.position[left[0]] if left else len(plan.chain)
    todo = [e for e in plan.eligible if plan.position[e] < cut]
    for i in range(0, len(todo), BATCH):
        store.mark(plan.session_id, todo[i : i + BATCH], provider, value)
    return left


def pending_store(directory: Path, n: int) -> tuple[SessionStore, Forked, list[str]]:
    """The store of :mod:`bench_pending` and :mod:`bench_mark`: session ``"p"``, a forked session of
    ``n`` chain nodes whose eligible nodes carry ``written["memory"] = "ws"`` (side branches and the
    old chain's end included: each was the head once and was written then) except the
    :data:`PENDING` turns of the tail fork at the head. Returns the store, the plan and those ids."""
    store, done = cached_store(directory, f"pending-{n}.db")
    plan = forked_plan("p", n)
    if not done:
        build_forked(store, "p", n)
        tail = set(plan.tail)
        todo = [e for e in plan.eligible if e not in tail]
        for i in range(0, len(todo), BATCH):
            store.mark("p", todo[i : i + BATCH], "memory", "ws")
        finish_build(store)
    return store, plan, list(plan.tail)


def cached_store(directory: Path, name: str) -> tuple[SessionStore, bool]:
    """Open ``directory/name``; the flag says whether it already held a finished build.

    A build is finished when its ``meta`` table carries ``bench_done``; a half-built file (a run
    interrupted while generating) is removed and rebuilt.
    """
    path = directory / name
    if path.exists():
        store = SessionStore(path)
        row = store.conn.execute("SELECT value FROM meta WHERE key='bench_done'").fetchone()
        if row is not None:
            return store, True
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    return SessionStore(path), False


def finish_build(store: SessionStore) -> None:
    """Record that the store's benchmark data is complete (see :func:`cached_store`)."""
    store.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('bench_done', '1')")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

"""The write pipeline: pending turns -> batches -> archive -> writer -> validate -> install -> mark.

One pass writes one batch:

1. ``archive``: the batch's turns go into the append-only source archive (a repeat is a no-op);
2. ``write``: the writer gets the batch and the current records and answers with changes;
3. ``validate``: the changes are planned against the baseline read before step 2; a rejection gets one
   repair attempt (the baseline is read again first); a second rejection is ``COMMIT_REJECTED``;
4. ``install``: one SQLite transaction (which also checks the archive against the baseline);
5. ``mark``: ``written["memory"] = <workspace id>`` on exactly the batch's nodes.

When a call installed anything, the views are rendered and swapped in once, as the call ends (also
when it ends in a failure after some batches). Rendering after every batch rewrote each growing topic
file once per batch, which made a long session's write quadratic; a crash before the render leaves
views that name an older revision, and opening the workspace renders them again.

Nothing is marked unless the transaction installed and changed something, with one exception: a
batch in which the writer found nothing worth remembering (its change set changes nothing and lists
every source of the batch as ``skipped``) is marked without an install; that is a valid outcome, not
a failure. A writer that changes nothing without accounting for every turn that way is the
``NO_PROGRESS`` failure and nothing is marked. Archiving before writing and
marking last means a crash between any two steps loses nothing: the turns stay pending and the batch is
written again at worst; a batch installed but not marked is recognized from the workspace's install
journal and only marked. The whole call holds the workspace's cross-process write lock, taken with a
1 second timeout (busy: the retryable ``CONCURRENT_UPDATE``).

Return contract of :meth:`WritePipeline.write`: ``None`` when everything owed
was written or nothing is owed yet; otherwise a :class:`WriteFailure` whose ``retryable`` says whether
the same call may succeed later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from graph.errors import StoreError, UnknownSessionError
from graph.ids import NodeId
from graph.models import Node
from graph.store.base import BaseStore
from memory import caps
from memory.errors import (
    RejectedError,
    Rejection,
    WorkspaceBusyError,
    WorkspaceStoreError,
    WriterUnavailableError,
)
from memory.workspace import MemoryWorkspace, approx_tokens

if TYPE_CHECKING:  # the writers are imported by a pipeline (`memory status` counts without one)
    from memory.writers import Writer

__all__ = [
    "PROVIDER",
    "STEPS",
    "MAX_BATCH_TURNS",
    "FailureReason",
    "WriteFailure",
    "WritePipeline",
    "owed_ids",
    "split_batches",
    "write_tips",
]

log = logging.getLogger(__name__)

PROVIDER = "memory"
"""The provider name of the memory layer's markers."""

STEPS = ("archived", "written", "validated", "installed", "marked", "rendered")
"""The points between steps at which :class:`WritePipeline`'s ``hook`` is called, in order
(``rendered`` once per call, after its last batch)."""


class FailureReason(StrEnum):
    """Why a :meth:`WritePipeline.write` call did not finish (a closed set)."""

    CONCURRENT_UPDATE = "CONCURRENT_UPDATE"
    """Another writer holds the workspace lock. Retryable."""
    WRITER_UNAVAILABLE = "WRITER_UNAVAILABLE"
    """The writer could not run (model unreachable). Retryable."""
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    """The session store or the workspace database failed (locked, full). Retryable."""
    COMMIT_REJECTED = "COMMIT_REJECTED"
    """The writer's changes were rejected twice. Not retryable: the same turns give the same answer."""
    NO_PROGRESS = "NO_PROGRESS"
    """The writer answered with changes that change nothing, yet did not list every source of the
    batch as skipped; nothing was marked. Not retryable."""
    UNKNOWN_SESSION = "UNKNOWN_SESSION"
    """No such session. Not retryable."""
    INTERNAL = "INTERNAL"
    """An unclassified error. Not retryable (unclassified means not retryable: retrying it
    would repeat it)."""


_RETRYABLE = {
    FailureReason.CONCURRENT_UPDATE,
    FailureReason.WRITER_UNAVAILABLE,
    FailureReason.STORE_UNAVAILABLE,
}


class WriteFailure(NamedTuple):
    """A :meth:`WritePipeline.write` call that did not write everything it owed."""

    reason: FailureReason
    """The reason code."""
    retryable: bool
    """Whether the same call may succeed later (the idle watcher retries those and records the rest)."""
    detail: str
    """What happened, for logs (never a secret's value)."""


def _failure(reason: FailureReason, detail: str) -> WriteFailure:
    return WriteFailure(reason, reason in _RETRYABLE, detail)


MAX_BATCH_TURNS = caps.MAX_CHANGES_PER_TRANSACTION
"""The most turns in one batch (200): a writer that makes one change per turn (the default writer
makes one record per request) then stays within ``MAX_CHANGES_PER_TRANSACTION``, however short the
turns are."""


def split_batches(
    nodes: Sequence[Node],
    budget: int,
    count_tokens: Callable[[str], int] = approx_tokens,
    max_turns: int = MAX_BATCH_TURNS,
) -> list[list[Node]]:
    """Cut pending nodes, oldest first, into batches of at most ``budget`` tokens and ``max_turns`` turns.

    Greedy from the oldest: a node joins the current batch while the batch stays within the budget
    and the turn count; a node larger than the budget alone forms its own batch. So the first batch
    of a pending list is the same however many turns were appended after it.

    Args:
        nodes: The pending turns, oldest first (``store.pending``'s order).
        budget: Tokens per batch, as ``count_tokens`` counts them.
        count_tokens: Tokens of one turn's text (``node.text``); the default counts one per four
            characters (:func:`~memory.workspace.approx_tokens`).
        max_turns: Turns per batch at most (200 by default: a writer's changes per transaction).

    Returns:
        The batches, oldest first, each a non-empty list; ``[]`` for no nodes.
    """
    batches: list[list[Node]] = []
    used = 0
    for n in nodes:
        cost = count_tokens(n.text)
        if batches and used + cost <= budget and len(batches[-1]) < max_turns:
            batches[-1].append(n)
            used += cost
        else:
            batches.append([n])
            used = cost
    return batches


def write_tips(store: BaseStore, session_id: str) -> list[NodeId]:
    """Return the nodes a full write walks from: the head first, then every other live tip."""
    head = store.session(session_id).head
    tips: list[NodeId] = [head] if head is not None else []
    return tips + [t for t in store.tips(session_id) if t != head]


def owed_ids(store: BaseStore, session_id: str, workspace_id: str) -> list[NodeId]:
    """Return the ids of every turn a session owes a workspace, on every live tip, head first.

    A turn shared by several branches is counted once. This is what ``force=True`` writes and what
    ``memory status`` counts: the head's branch alone would miss the turns of the other live tips
    (a fork whose writing was interrupted, say).

    Raises:
        UnknownSessionError: no such session.
    """
    seen: set[str] = set()
    out: list[NodeId] = []
    for tip in write_tips(store, session_id):
        for n in store.pending_ids(session_id, PROVIDER, workspace_id, head=tip):
            if n not in seen:
                seen.add(n)
                out.append(n)
    return out


class _Turns:
    """The pending turns of one tip, read from the store in chunks as batches take them."""

    _CHUNK = 256

    def __init__(self, store: BaseStore, session_id: str, ids: Sequence[str]) -> None:
        self._store, self._session_id, self._ids = store, session_id, ids
        self._read: list[Node] = []
        self._next = 0  # index into ids of the first turn not read yet
        self._at = 0  # index into _read of the first turn not written yet

    def left(self) -> bool:
        return self._at < len(self._read) or self._next < len(self._ids)

    def _more(self) -> bool:
        if self._next >= len(self._ids):
            return False
        chunk = self._ids[self._next : self._next + self._CHUNK]
        self._read = self._read[self._at :] + self._store.nodes(self._session_id, chunk)
        self._at, self._next = 0, self._next + len(chunk)
        return True

    def batch(self, budget: int, count_tokens: Callable[[str], int]) -> tuple[list[Node], bool]:
        """Return the next batch (as :func:`split_batches` cuts it) and whether it is full.

        Full means the turns owed reach ``budget`` tokens or :data:`MAX_BATCH_TURNS` turns: the
        batch was cut because the next turn did not fit, or it holds ``budget`` tokens exactly.
        """
        out: list[Node] = []
        used = 0
        k = self._at
        while True:
            if k >= len(self._read):
                if not self._more():
                    return out, used >= budget
                k = len(out)  # _more dropped the turns already written
                continue
            n = self._read[k]
            cost = count_tokens(n.text)
            if out and (used + cost > budget or len(out) >= MAX_BATCH_TURNS):
                return out, True
            out.append(n)
            used += cost
            k += 1

    def consume(self, count: int) -> None:
        self._at += count


class _Stop(Exception):
    def __init__(self, failure: WriteFailure) -> None:
        self.failure = failure


class WritePipeline:
    """Writes a session's pending turns into a workspace.

    Args:
        workspace: The memory workspace; its id is the marker value.
        store: The session store the turns and markers live in.
        writer: The writer (default :class:`~memory.writers.DigestWriter`).
        budget: Tokens per batch (default ``caps.MAX_BATCH_TOKENS``, 8000).
        count_tokens: The token counter (default :func:`~memory.workspace.approx_tokens`).
        lock_timeout: Seconds to wait for the workspace's write lock (default 1).
        hook: Called with each name of :data:`STEPS` after that step (tests inject crashes here).
    """

    def __init__(
        self,
        workspace: MemoryWorkspace,
        store: BaseStore,
        writer: Writer | None = None,
        *,
        budget: int = caps.MAX_BATCH_TOKENS,
        count_tokens: Callable[[str], int] = approx_tokens,
        lock_timeout: float = 1.0,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.store = store
        from memory.writers import DigestWriter

        self.writer: Writer = writer or DigestWriter()
        self.budget = budget
        self.count_tokens = count_tokens
        self.lock_timeout = lock_timeout
        self.hook = hook
        self.batches_written = 0
        """Batches installed and marked by this object so far (for reports and tests)."""
        self.batches_skipped = 0
        """Batches marked without an install because the writer skipped every one of their turns
        (nothing worth remembering: slash commands and their output, say)."""
        self._installed = False

    def write(self, session_id: str, force: bool = False) -> WriteFailure | None:
        """Write what the session owes; the two entry points differ only in ``force``.

        Args:
            session_id: The session.
            force: False after each turn: write only while a full batch (``budget`` tokens, or
                :data:`MAX_BATCH_TURNS` turns) is owed on the head's branch. True at the session boundary: write until nothing is
                owed, on every live tip, the head first.

        Returns:
            None on success or when nothing is owed yet; else a :class:`WriteFailure`. Never raises
            for a failure it can classify; an unclassified exception is returned as ``INTERNAL``.
        """
        try:
            with self.workspace.write_lock(self.lock_timeout):
                self._installed = False
                try:
                    self.store.session(session_id)
                    if force:
                        for tip in write_tips(self.store, session_id):
                            self._drain(session_id, tip, force=True)
                    else:
                        self._drain(session_id, None, force=False)
                finally:
                    if self._installed:
                        self.workspace.render_views()
                        self._step("rendered")
        except _Stop as stop:
            return stop.failure
        except WorkspaceBusyError as e:
            return _failure(FailureReason.CONCURRENT_UPDATE, str(e))
        except UnknownSessionError as e:
            return _failure(FailureReason.UNKNOWN_SESSION, str(e))
        except (WorkspaceStoreError, StoreError) as e:
            return _failure(FailureReason.STORE_UNAVAILABLE, str(e))
        except Exception as e:
            log.exception("memory write of session %s failed", session_id)
            return _failure(FailureReason.INTERNAL, f"{type(e).__name__}: {e}")
        return None

    def owed(self, session_id: str, head: str | None = None) -> list[Node]:
        """Return the pending turns of ``head``'s branch (the stored head by default) for this workspace.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: ``head`` is not a node of the session.
        """
        return self.store.pending(session_id, PROVIDER, self.workspace.id, head=head)

    def _drain(self, session_id: str, tip: str | None, *, force: bool) -> None:
        """Write ``tip``'s pending turns batch by batch, reading each turn's payload once.

        The pending ids are walked once (no payload is decoded) and the turns are read in chunks as
        the batches consume them, so a pass costs its batch, not the rest of the branch: writing a
        session of N turns decodes each of them once.
        """
        ids = self.store.pending_ids(session_id, PROVIDER, self.workspace.id, head=tip)
        turns = _Turns(self.store, session_id, ids)
        while turns.left():
            batch, full = turns.batch(self.budget, self.count_tokens)
            if not force and not full:
                return
            done = self._pass(session_id, batch)
            if not done or not self._marked(session_id, batch[done - 1].id):
                raise _Stop(
                    _failure(FailureReason.INTERNAL, "a pass finished without marking its batch")
                )
            turns.consume(done)

    def _marked(self, session_id: str, node_id: str) -> bool:
        return self.store.index(session_id).is_written(node_id, PROVIDER, self.workspace.id)

    def _step(self, name: str) -> None:
        if self.hook is not None:
            self.hook(name)

    def _pass(self, session_id: str, batch: list[Node]) -> int:
        """Write one batch; return how many of its turns (a prefix) are now marked."""
        from memory.writers import WriteRequest

        ws = self.workspace
        sources = ws.archive(batch)
        self._step("archived")
        node_ids = [n.id for n in batch]
        done = ws.installed_prefix(session_id, node_ids)
        if done:
            # Installed by a pass that stopped before marking: mark it, do not write it again.
            self.store.mark(session_id, done, PROVIDER, ws.id)
            self._step("marked")
            return len(done)
        batch_ids = [s.id for s in sources]
        rejection: RejectedError | None = None
        for attempt in (1, 2):
            base = ws.baseline()
            request = WriteRequest(session_id, tuple(sources), base.state, rejection)
            try:
                try:
                    changes = self.writer.write(request)
                except WriterUnavailableError as e:
                    raise _Stop(_failure(FailureReason.WRITER_UNAVAILABLE, str(e))) from e
                self._step("written")
                _check_skipped(changes.skipped, batch_ids)
                plan = ws.plan(changes, batch=batch_ids, baseline=base)
                self._step("validated")
                if not plan.changed:
                    if set(batch_ids) <= set(changes.skipped):
                        return self._skip(session_id, node_ids)
                    raise _Stop(
                        _failure(
                            FailureReason.NO_PROGRESS,
                            f"writer {self.writer.name!r} answered with changes that change "
                            f"nothing and skipped {len(set(changes.skipped))} of the batch's "
                            f"{len(batch_ids)} sources",
                        )
                    )
                ws.install(plan, base, batch_sources=batch_ids, journal=(session_id, node_ids))
            except RejectedError as e:
                log.info("memory write of %s: attempt %d rejected: %s", session_id, attempt, e)
                if attempt == 2:
                    raise _Stop(
                        _failure(
                            FailureReason.COMMIT_REJECTED,
                            f"rejected twice; first: {rejection}; then: {e}",
                        )
                    ) from e
                rejection = e
                continue
            break
        self._step("installed")
        self._installed = True
        self.store.mark(session_id, node_ids, PROVIDER, ws.id)
        self.batches_written += 1
        self._step("marked")
        return len(batch)

    def _skip(self, session_id: str, node_ids: list[NodeId]) -> int:
        """Mark a batch the writer found nothing worth remembering in; nothing is installed."""
        log.info("memory write of %s: nothing to remember in %d turns", session_id, len(node_ids))
        self.store.mark(session_id, node_ids, PROVIDER, self.workspace.id)
        self.batches_skipped += 1
        self._step("marked")
        return len(node_ids)


def _check_skipped(skipped: Sequence[str], batch: Sequence[str]) -> None:
    """Refuse a change set that lists as skipped a source that is not one of the batch's."""
    allowed = set(batch)
    for sid in skipped:
        if sid not in allowed:
            raise RejectedError(
                Rejection.SOURCE_NOT_IN_BATCH,
                f"skipped names {sid}, not a source of this batch; list only the batch's source ids",
                source_id=sid,
            )

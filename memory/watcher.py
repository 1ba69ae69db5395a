"""The idle watcher: finishes sessions that went quiet (the session boundary's write).

Every ``poll`` seconds it looks at the sessions whose ``updated_at`` is older than ``idle`` seconds and
calls ``write(session_id, force=True)`` (every live tip, the head first) on each it has not finished as of
that ``updated_at``. A success or a non-retryable failure is recorded durably in the workspace (``done`` /
``failed``, with the reason) and not tried again until the session gets new content; a retryable failure
is not recorded, so the next poll tries again. Each attempt emits ``memory.ingest_started`` and
``memory.ingest_ended`` (``{session_id, ok, retryable, reason}``) to the event callback.

A session whose head moved to another branch (a rewind, or a fork the head followed: the head seen
last is no longer on the head's branch) is written at the next poll, idle or not: the branch it left
is a finished boundary. The heads seen are kept durably in the workspace (table ``watch_heads``), so a
restarted watcher still notices; a session seen for the first time is only remembered. The outcome and
its bookkeeping are the same as an idle write's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from graph.lineage import is_abandoned
from graph.models import to_micros, utcnow
from graph.store.base import BaseStore
from memory.branches import alternatives
from memory.errors import MemoryLayerError
from memory.organizer import (
    OfflineOrganizer,
    Organizer,
    OrganizeResult,
    OrganizeSchedule,
    run_if_due,
)
from memory.pipeline import FailureReason, WriteFailure
from memory.workspace import MemoryWorkspace

__all__ = ["EventSink", "IdleWatcher", "SessionWriter", "WatchOutcome"]

log = logging.getLogger(__name__)

EventSink = Callable[[str, dict[str, Any]], None]
"""Receives ``(event name, payload)``."""


class SessionWriter(Protocol):
    """Anything with the pipeline's ``write`` (a :class:`~memory.pipeline.WritePipeline`, a provider)."""

    def write(self, session_id: str, force: bool = False) -> WriteFailure | None:
        """Write what the session owes (see :meth:`memory.pipeline.WritePipeline.write`)."""
        ...


@dataclass(frozen=True)
class WatchOutcome:
    """What one poll did for one session."""

    session_id: str
    status: str
    """``done``, ``failed`` (recorded, not retried) or ``retry`` (not recorded, tried next poll)."""
    reason: str
    """The failure's reason code, or empty."""


class IdleWatcher:
    """Calls ``write(force=True)`` on idle sessions and keeps durable done/failed bookkeeping.

    Args:
        store: The session store.
        writer: What writes (its ``write(session_id, force=True)`` is called).
        workspace: Where the done/failed bookkeeping is kept (so a reset starts it afresh).
        idle: Seconds without new content after which a session is idle (default 30 minutes).
        poll: Seconds between polls in :meth:`run` (default 5 minutes).
        clock: Returns the current time (aware UTC); injectable for tests.
        on_event: Receives ``memory.ingest_started`` / ``memory.ingest_ended`` events.
        limit: The most recently updated sessions looked at per poll.
        schedule: When an organizer pass is due (:class:`~memory.organizer.OrganizeSchedule`);
            None: the loop never organizes.
        organizer: What plans those passes (default: the offline organizer, keeping alternatives
            from exclusive branches apart).
    """

    def __init__(
        self,
        store: BaseStore,
        writer: SessionWriter,
        workspace: MemoryWorkspace,
        *,
        idle: float = 30 * 60,
        poll: float = 5 * 60,
        clock: Callable[[], datetime] = utcnow,
        on_event: EventSink | None = None,
        limit: int = 1000,
        schedule: OrganizeSchedule | None = None,
        organizer: Organizer | None = None,
    ) -> None:
        self.store = store
        self.writer = writer
        self.workspace = workspace
        self.idle = idle
        self.poll = poll
        self.clock = clock
        self.on_event = on_event
        self.limit = limit
        self.schedule = schedule
        self.organizer = organizer

    def _emit(self, name: str, payload: dict[str, Any]) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(name, payload)
        except Exception:  # an observer never takes the watcher down
            log.exception("memory event callback failed on %s", name)

    def poll_once(self) -> list[WatchOutcome]:
        """Write every idle session not yet finished as of its ``updated_at``; return what happened."""
        cutoff = self.clock() - timedelta(seconds=self.idle)
        outcomes = []
        for session in self.store.sessions(self.limit):
            if is_abandoned(self.store, session):
                continue  # a sub-agent of a rewound node: abandoned work
            moved = self._head_moved(session.id, session.head)
            if session.updated_at > cutoff and not moved:
                continue  # not idle yet, and its head stayed on the branch it was on
            stamp = to_micros(session.updated_at)
            seen = self.workspace.watch_status(session.id)
            if seen is not None and seen[0] == stamp and not moved:
                continue
            self._emit("memory.ingest_started", {"session_id": session.id})
            try:
                failure = self.writer.write(session.id, force=True)
            except Exception as e:  # write() returns failures; anything else is unclassified
                log.exception("memory write of %s raised", session.id)
                failure = WriteFailure(FailureReason.INTERNAL, False, f"{type(e).__name__}: {e}")
            ok = failure is None
            retryable = bool(failure and failure.retryable)
            reason = failure.reason.value if failure is not None else ""
            self._emit(
                "memory.ingest_ended",
                {"session_id": session.id, "ok": ok, "retryable": retryable, "reason": reason},
            )
            if retryable:
                outcomes.append(WatchOutcome(session.id, "retry", reason))
                continue
            status = "done" if ok else "failed"
            self.workspace.set_watch_status(session.id, stamp, status, reason)
            self._seen_head(session.id, session.head)
            outcomes.append(WatchOutcome(session.id, status, reason))
        return outcomes

    def organize_if_due(self) -> tuple[str, OrganizeResult] | None:
        """Run an organizer pass when the schedule says one is due; return why and what it did.

        Emits ``memory.organized`` (``{reason, files}``); a refused plan or an unreachable model is
        logged and emitted as ``memory.organize_failed`` (``{reason, error}``), never raised.
        """
        if self.schedule is None:
            return None
        try:
            organizer = self.organizer or OfflineOrganizer(
                apart=alternatives(self.workspace, self.store)
            )
            done = run_if_due(self.workspace, self.schedule, self.clock(), organizer)
        except MemoryLayerError as e:
            log.warning("memory organizer pass failed: %s", e)
            self._emit("memory.organize_failed", {"error": str(e)})
            return None
        if done is not None:
            self._emit("memory.organized", {"reason": done[0], "files": done[1].changed_files})
        return done

    def _head_moved(self, session_id: str, head: str | None) -> bool:
        """Whether the head left the branch of the head seen last (remembering growth and firsts)."""
        row = self.workspace.db.execute(
            "SELECT head FROM watch_heads WHERE session_id = ?", (session_id,)
        ).fetchone()
        seen = None if row is None else (row[0] or None)
        if row is not None and seen == head:
            return False
        if row is None or seen is None or self._on_branch(session_id, head, seen):
            self._seen_head(session_id, head)
            return False
        return True

    def _on_branch(self, session_id: str, head: str | None, node: str) -> bool:
        pred = self.store.index(session_id).pred
        at = head
        while at is not None:
            if at == node:
                return True
            at = pred.get(at)
        return False

    def _seen_head(self, session_id: str, head: str | None) -> None:
        with self.workspace.atomic() as c:
            c.execute(
                "INSERT INTO watch_heads (session_id, head) VALUES (?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET head = excluded.head",
                (session_id, head or ""),
            )

    def run(self, stop: threading.Event) -> None:
        """Poll every ``poll`` seconds until ``stop`` is set (run it in a thread)."""
        while not stop.is_set():
            try:
                self.poll_once()
                self.organize_if_due()
            except Exception:
                log.exception("memory idle watcher poll failed")
            stop.wait(self.poll)

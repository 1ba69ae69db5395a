"""The idle watcher: done / retry / failed bookkeeping, durable across restarts, and its events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graph import SessionStore
from memory import (
    ChangeSet,
    IdleWatcher,
    MemoryWorkspace,
    WritePipeline,
    WriteRequest,
    WriterUnavailableError,
)
from memory.writers import DigestWriter

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


class PerSession:
    """Digest-writes, except: 'flaky' sessions are unreachable once, 'broken' ones change nothing."""

    name = "per-session"

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.flaked: set[str] = set()

    def write(self, request: WriteRequest) -> ChangeSet:
        title = self.store.session(request.session_id).title
        if title == "flaky" and request.session_id not in self.flaked:
            self.flaked.add(request.session_id)
            raise WriterUnavailableError(self.name, "model endpoint timed out")
        if title == "broken":
            return ChangeSet()
        return DigestWriter().write(request)


def test_watcher_done_retry_failed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "graph.db")
    sessions = {}
    for title, at in [
        ("fine", T0),
        ("flaky", T0),
        ("broken", T0),
        ("busy", T0 + timedelta(minutes=50)),
    ]:
        s = store.create_session(title, created_at=at)
        store.append(s.id, f"A {title} question about the build?", role="user", created_at=at)
        store.append(s.id, f"A {title} answer about the build.", role="assistant", created_at=at)
        sessions[title] = s.id
    ws = MemoryWorkspace(tmp_path / "ws")
    now = [T0 + timedelta(minutes=60)]
    events: list[tuple[str, dict[str, Any]]] = []
    writer = PerSession(store)  # the model comes back between polls
    pipe = WritePipeline(ws, store, writer)
    watcher = IdleWatcher(
        store, pipe, ws, clock=lambda: now[0], on_event=lambda n, p: events.append((n, p))
    )

    got = {o.session_id: (o.status, o.reason) for o in watcher.poll_once()}
    assert got == {
        sessions["fine"]: ("done", ""),
        sessions["flaky"]: ("retry", "WRITER_UNAVAILABLE"),
        sessions["broken"]: ("failed", "NO_PROGRESS"),
    }  # "busy" was updated 10 minutes ago: not idle yet
    ended = [p for n, p in events if n == "memory.ingest_ended"]
    assert {(p["session_id"], p["ok"], p["retryable"], p["reason"]) for p in ended} == {
        (sessions["fine"], True, False, ""),
        (sessions["flaky"], False, True, "WRITER_UNAVAILABLE"),
        (sessions["broken"], False, False, "NO_PROGRESS"),
    }
    assert [n for n, _ in events].count("memory.ingest_started") == 3

    # A restarted watcher (new objects, same files): done and failed are not tried again, the
    # retryable one is, and the session that went idle meanwhile is written.
    ws.close()
    ws = MemoryWorkspace(tmp_path / "ws")
    now[0] = T0 + timedelta(minutes=90)
    events.clear()
    watcher = IdleWatcher(
        store,
        WritePipeline(ws, store, writer),
        ws,
        clock=lambda: now[0],
        on_event=lambda n, p: events.append((n, p)),
    )
    got = {o.session_id: (o.status, o.reason) for o in watcher.poll_once()}
    assert got == {sessions["flaky"]: ("done", ""), sessions["busy"]: ("done", "")}
    assert watcher.poll_once() == []
    assert ws.watch_status(sessions["broken"])[1:] == ("failed", "NO_PROGRESS")

    # New content makes a finished session eligible again once it is idle.
    store.append(
        sessions["fine"], "One more thing about the build?", role="user", created_at=now[0]
    )
    assert watcher.poll_once() == []
    now[0] += timedelta(minutes=31)
    assert [(o.session_id, o.status) for o in watcher.poll_once()] == [(sessions["fine"], "done")]
    assert WritePipeline(ws, store).owed(sessions["fine"]) == []
    store.close()
    ws.close()

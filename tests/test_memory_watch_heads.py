"""The idle watcher reacts to head changes: a rewind or a fork the head follows is written at once, not
only after the idle time; plain growth waits; the heads seen survive a restart. Injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graph import SessionStore
from memory import IdleWatcher, MemoryWorkspace, WritePipeline
from memory.pipeline import PROVIDER
from memory.watcher import WatchOutcome

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def _setup(tmp_path: Path) -> tuple[SessionStore, MemoryWorkspace, str, list[str]]:
    store = SessionStore(tmp_path / "graph.db")
    s = store.create_session("busy", created_at=T0)
    ids = []
    for n, (role, text) in enumerate(
        [
            ("user", "Should the service use Flask?"),
            ("assistant", "Flask is fine for this."),
            ("user", "And for the API layer?"),
            ("assistant", "Use Flask blueprints."),
        ]
    ):
        ids.append(store.append(s.id, text, role=role, created_at=T0 + timedelta(minutes=n)).id)
    return store, MemoryWorkspace(tmp_path / "ws"), s.id, ids


def _watcher(
    store: SessionStore, ws: MemoryWorkspace, now: list[datetime], events: list[Any]
) -> IdleWatcher:
    return IdleWatcher(
        store,
        WritePipeline(ws, store),
        ws,
        idle=30 * 60,
        clock=lambda: now[0],
        on_event=lambda name, payload: events.append((name, payload)),
    )


def test_a_rewind_is_written_at_once_growth_waits_for_idle(tmp_path: Path) -> None:
    store, ws, sid, ids = _setup(tmp_path)
    now = [T0 + timedelta(minutes=5)]  # busy: 30 idle minutes are far away
    events: list[Any] = []
    watcher = _watcher(store, ws, now, events)

    assert watcher.poll_once() == []  # first sight: the head is remembered, nothing written
    store.append(sid, "Thanks.", role="user", created_at=T0 + timedelta(minutes=5))
    assert watcher.poll_once() == []  # growth on the same branch waits for the idle time
    abandoned_tip = store.session(sid).head

    store.rewind(sid, ids[1])  # back to "Flask is fine", then another road
    store.append(sid, "Actually, what about FastAPI?", role="user")
    outcomes = watcher.poll_once()

    assert outcomes == [WatchOutcome(sid, "done", "")]
    assert [name for name, _ in events] == ["memory.ingest_started", "memory.ingest_ended"]
    assert events[1][1] == {"session_id": sid, "ok": True, "retryable": False, "reason": ""}
    assert store.pending(sid, PROVIDER, ws.id, head=abandoned_tip) == []  # the left branch is in
    assert ws.records()
    assert watcher.poll_once() == []  # seen: not again

    now[0] = T0 + timedelta(hours=2)  # idle now, but nothing new since the write
    assert watcher.poll_once() == []


def test_a_fork_the_head_follows_is_written_and_a_restart_still_notices(tmp_path: Path) -> None:
    store, ws, sid, ids = _setup(tmp_path)
    now = [T0 + timedelta(minutes=5)]
    assert _watcher(store, ws, now, []).poll_once() == []

    store.fork(sid, ids[1], "What about FastAPI instead?", role="user")  # the head moves there
    restarted = _watcher(store, ws, now, [])  # a new process: the heads seen are durable
    assert restarted.poll_once() == [WatchOutcome(sid, "done", "")]
    assert store.pending(sid, PROVIDER, ws.id, head=ids[3]) == []
    assert restarted.poll_once() == []

    store.append(sid, "Fine, FastAPI.", role="assistant", predecessor=ids[3], move_head=False)
    assert restarted.poll_once() == []  # a new tip the head did not follow is not a boundary

"""The PostgreSQL store's writes check what they read under the session's row lock.

An import into a store that has no index of the session cached validates its batch against the
head and the rows it names, read by a bounded lookup; those reads happen under the session's row
lock, so a writer that moved the head meanwhile is waited for and its head is kept, not put back.
These need a server: ``SESSIONGRAPH_TEST_POSTGRES`` names a database; without it they skip.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from conftest import postgres_url

from graph import Kind, Node, Role
from graph.models import utcnow
from graph.store.postgres import PostgresSessionStore


@pytest.fixture
def schema() -> Iterator[tuple[str, str]]:
    url, name = postgres_url(), f"t_{uuid.uuid4().hex[:16]}"
    yield url, name
    cleanup = PostgresSessionStore(url, schema=name)
    cleanup.drop_schema()
    cleanup.close()


def _waiting_for_a_lock(watcher: PostgresSessionStore, pid: int) -> bool:
    row = watcher.conn.execute(
        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone()
    return row is not None and row[0] == "Lock"


def test_an_import_batch_waits_for_a_head_move_and_keeps_it(schema: tuple[str, str]) -> None:
    url, name = schema
    writer, mover, importer, watcher = (PostgresSessionStore(url, schema=name) for _ in range(4))
    writer.create_session(id="s")
    root = writer.append("s", "root", role="user")
    tip = writer.append("s", "tip", role="assistant")
    batch = [
        Node(
            id="imported",
            session_id="s",
            predecessor=tip.id,
            kind=Kind.MESSAGE,
            role=Role.USER,
            content="imported turn",
            created_at=utcnow(),
        )
    ]
    failures: list[BaseException] = []

    def run_import() -> None:
        try:
            importer.add_nodes("s", batch)  # the head stays where it is
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)

    thread = threading.Thread(target=run_import)
    with mover.atomic():
        mover.set_head("s", root.id)  # uncommitted: the session's row is locked
        thread.start()
        deadline = time.monotonic() + 120  # a bound for an import that never waits
        while not _waiting_for_a_lock(watcher, importer.conn.info.backend_pid):
            assert time.monotonic() < deadline, "the import never waited for the row lock"
            time.sleep(0.01)
    thread.join(120)
    assert not thread.is_alive() and not failures
    assert writer.session("s").head == root.id  # the mover's head, not the one read before it
    assert writer.node("imported").predecessor == tip.id
    for s in (writer, mover, importer, watcher):
        s.close()

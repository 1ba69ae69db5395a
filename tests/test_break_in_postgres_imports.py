"""Two processes importing one transcript into one PostgreSQL store at once: both succeed.

PostgreSQL writers lock a session's row, which does not exist before the session does: two
imports of a new session both saw no session, and the second one's ``INSERT`` waited for the
first and then failed with ``DuplicateSessionError`` (the file reported as failed, a watcher's
pass lost). Asking whether a session exists inside a write transaction now takes a lock on that
session id held to the end of the transaction, so the second import waits, sees the session and
imports the file as a re-import.

The interleaving is made, not hoped for: the first import runs inside a transaction held open
until the second import is seen waiting on a lock (``pg_stat_activity``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import postgres_url

from graph.importers import import_file
from graph.importers.report import FileReport
from graph.store.base import BaseStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    ROOT
    / "tests"
    / "fixtures"
    / "claude-code"
    / "agents"
    / "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a.jsonl",
    ROOT / "tests" / "fixtures" / "pi" / "v3-digest.jsonl",
    ROOT / "tests" / "fixtures" / "codex" / "rollout-parent.jsonl",
]


@pytest.fixture
def two() -> Iterator[tuple[BaseStore, BaseStore]]:
    """Two connections onto one fresh schema."""
    from graph.store.postgres import PostgresSessionStore

    url, schema = postgres_url(), f"t_{uuid.uuid4().hex[:16]}"
    a = PostgresSessionStore(url, schema=schema)
    b = PostgresSessionStore(url, schema=schema)
    yield a, b
    b.close()
    a.drop_schema()
    a.close()


def _waiting(watcher: Any, pid: int) -> bool:
    row = watcher.conn.execute(
        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone()
    return bool(row and row[0] == "Lock")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_the_second_of_two_imports_at_once_waits_and_succeeds(
    two: tuple[BaseStore, BaseStore], path: Path
) -> None:
    a, b = two
    got: dict[str, Any] = {}

    def second() -> None:
        try:
            got["report"] = import_file(b, path)
        except Exception as e:  # the test reports it below
            got["error"] = e

    with a.atomic():
        import_file(a, path)
        thread = threading.Thread(target=second)
        thread.start()
        deadline = time.monotonic() + 120
        while not _waiting(a, b.conn.info.backend_pid):  # type: ignore[attr-defined]
            assert thread.is_alive(), got
            assert time.monotonic() < deadline, "the second import never waited for the first"
            time.sleep(0.01)
    thread.join(120)
    assert "error" not in got, got.get("error")
    report: FileReport = got["report"]
    assert report.error is None and report.nodes_added == 0
    assert dump(b) == dump(a)

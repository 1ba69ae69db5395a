"""The PostgreSQL store beyond the shared suites: many writer processes, kills, URLs, refreshes.

These need a server: ``SESSIONGRAPH_TEST_POSTGRES`` names a database (``.ci/run`` starts Debian's
PostgreSQL and sets it); without it they skip, and in CI they fail instead.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import postgres_store, postgres_url

from graph import MEMORY_ELIGIBLE, HeadConflictError, SessionStore
from graph.errors import StoreBusyError
from graph.store import open_store
from graph.store.base import BaseStore

ROOT = Path(__file__).resolve().parents[1]

WORKER = textwrap.dedent(
    """
    import json, random, sys
    from graph.store.postgres import PostgresSessionStore
    from graph.errors import HeadConflictError, MarkerGapError, StoreBusyError
    url, schema, seed, n, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    rng = random.Random(seed)
    store = PostgresSessionStore(url, schema=schema)
    sessions = [s.id for s in store.sessions()]
    counts = {"append": 0, "fork": 0, "cas": 0, "cas_lost": 0, "mark": 0, "busy": 0}
    with open(log, "a") as out:
        for i in range(n):
            sid = rng.choice(sessions)
            op = rng.random()
            try:
                if op < 0.45:
                    node = store.append(sid, f"p{seed} turn {i}", role=rng.choice(["user", "assistant"]))
                    out.write(json.dumps([sid, node.id]) + "\\n")
                    counts["append"] += 1
                elif op < 0.6:
                    ids = list(store.index(sid).pred)
                    at = rng.choice(ids) if ids else None
                    node = store.append(sid, f"p{seed} fork {i}", role="user", predecessor=at,
                                        move_head=False)
                    out.write(json.dumps([sid, node.id]) + "\\n")
                    counts["fork"] += 1
                elif op < 0.75:
                    seen = store.session(sid).head
                    tips = store.tips(sid)
                    if tips:
                        try:
                            store.set_head(sid, rng.choice(tips), expected=seen)
                            counts["cas"] += 1
                        except HeadConflictError:
                            counts["cas_lost"] += 1
                else:
                    provider = rng.choice(["memory", "indexer"])
                    with store.atomic():
                        owed = store.pending_ids(sid, provider, "ws")
                        if owed:
                            store.mark(sid, owed[: rng.randint(1, len(owed))], provider, "ws")
                    counts["mark"] += 1
            except StoreBusyError:
                counts["busy"] += 1
            out.flush()
    print(json.dumps(counts))
    """
)


@pytest.fixture
def pg() -> Iterator[BaseStore]:
    yield from postgres_store()


def _oracle(store: BaseStore, sid: str, tip: str, provider: str) -> list[str]:
    """The id-set answer: eligible nodes of the tip's branch that carry no marker of ours."""
    idx = store.index(sid)
    return [
        n.id
        for n in store.branch(sid, tip)
        if MEMORY_ELIGIBLE.test(idx.bits[n.id]) and not n.is_written(provider, "ws")
    ]


def test_four_processes_of_500_operations_keep_every_invariant(
    pg: BaseStore, tmp_path: Path
) -> None:
    url, schema = postgres_url(), pg.schema  # type: ignore[attr-defined]
    for k in range(2):
        s = pg.create_session(f"shared {k}")
        pg.append(s.id, "root", role="user")
    log = tmp_path / "appended.jsonl"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, schema, str(seed), "500", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for seed in range(4)
    ]
    counts = []
    for p in procs:
        out, errs = p.communicate(timeout=300)
        assert p.returncode == 0, errs
        counts.append(json.loads(out.splitlines()[-1]))
    appended = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(c["append"] + c["fork"] for c in counts) == len(appended)
    assert len({nid for _, nid in appended}) == len(appended)  # no node twice
    fresh = open_store(url, schema=schema)
    for s in fresh.sessions():
        idx = fresh.index(s.id)
        mine = {nid for sid, nid in appended if sid == s.id}
        assert mine <= set(idx.pred)  # nothing lost
        assert len(idx.pred) == len(mine) + 1
        for p in idx.pred.values():
            assert p is None or p in idx.pred
        assert s.head in idx.pred
        assert fresh.verify_markers(s.id) == []
        for provider in ("memory", "indexer"):
            for tip in fresh.tips(s.id):
                assert fresh.pending_ids(s.id, provider, "ws", head=tip) == _oracle(
                    fresh, s.id, tip, provider
                )
    fresh.close()
    assert sum(c["mark"] for c in counts) > 0 and sum(c["cas"] for c in counts) > 0


KILLED = textwrap.dedent(
    """
    import sys
    from graph.store.postgres import PostgresSessionStore
    url, schema, sid = sys.argv[1], sys.argv[2], sys.argv[3]
    store = PostgresSessionStore(url, schema=schema)
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        with store.atomic():
            a = store.append(sid, f"question {i}", role="user")
            store.append(sid, f"answer {i}", role="assistant")
        owed = store.pending_ids(sid, "memory", "ws")
        if owed and i % 3 == 0:
            store.mark(sid, owed, "memory", "ws")
    """
)


def test_a_writer_killed_at_random_moments_leaves_a_consistent_store(pg: BaseStore) -> None:
    url, schema = postgres_url(), pg.schema  # type: ignore[attr-defined]
    sid = pg.create_session("killed").id
    rng = random.Random(11)
    for _trial in range(20):
        p = subprocess.Popen(
            [sys.executable, "-c", KILLED, url, schema, sid],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.3))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        check = open_store(url, schema=schema)
        idx = check.index(sid)
        users = [n for n in check.nodes(sid, list(idx.pred)) if n.role.value == "user"]
        assert len(idx.pred) == 2 * len(users)  # each pair committed whole, or not at all
        assert check.verify_markers(sid) == []
        check.append(sid, "after the kill", role="user")  # a rerun proceeds
        check.append(sid, "fine", role="assistant")
        check.close()


def test_another_process_writes_are_read_incrementally(pg: BaseStore) -> None:
    other = open_store(postgres_url(), schema=pg.schema)  # type: ignore[attr-defined]
    s = pg.create_session("shared")
    a = pg.append(s.id, "first", role="user")
    idx = other._index(s.id)  # the store's own cached index
    assert list(idx.pred) == [a.id]
    b = pg.append(s.id, "second", role="assistant")
    pg.mark(s.id, [a.id, b.id], "memory", "ws")
    again = other._index(s.id)
    assert again is idx  # refreshed in place, not rebuilt
    assert list(again.pred) == [a.id, b.id] and other.pending_ids(s.id, "memory", "ws") == []
    other.close()


def test_a_flag_changed_by_another_process_is_read_incrementally(pg: BaseStore) -> None:
    other = open_store(postgres_url(), schema=pg.schema)  # type: ignore[attr-defined]
    s = pg.create_session("flags")
    a = pg.append(s.id, "ask", role="user")
    b = pg.append(s.id, "progress", role="system", kind="event")
    pg.append(s.id, "answer", role="assistant", predecessor=a.id)
    idx = other._index(s.id)
    assert not idx.is_artifact(b.id)
    pg.set_artifact(s.id, {b.id: True})
    again = other._index(s.id)
    assert again is idx and again.is_artifact(b.id)  # refreshed in place, not rebuilt
    assert other.node(b.id).metadata == {"artifact": True}
    other.close()


def test_a_version_2_schema_gains_the_flagged_table(pg: BaseStore) -> None:
    from graph.store.postgres import SCHEMA_VERSION, PostgresSessionStore

    schema = pg.schema  # type: ignore[attr-defined]
    s = pg.create_session("old")
    a = pg.append(s.id, "ask", role="user")
    pg.conn.execute("DROP TABLE flagged")  # type: ignore[attr-defined]
    pg.conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")  # type: ignore[attr-defined]
    pg.conn.commit()  # type: ignore[attr-defined]
    reopened = PostgresSessionStore(postgres_url(), schema=schema)
    try:
        assert reopened.schema_version == SCHEMA_VERSION == 3
        assert reopened.set_artifact(s.id, {a.id: True}) == [a.id]
    finally:
        reopened.close()


def test_a_cas_head_move_against_a_stale_head_is_refused(pg: BaseStore) -> None:
    other = open_store(postgres_url(), schema=pg.schema)  # type: ignore[attr-defined]
    s = pg.create_session()
    a = pg.append(s.id, "a", role="user")
    b = pg.append(s.id, "b", role="assistant")
    seen = other.session(s.id).head
    pg.set_head(s.id, a.id)
    with pytest.raises(HeadConflictError):
        other.set_head(s.id, b.id, expected=seen)
    assert pg.session(s.id).head == a.id
    other.close()


def test_a_lock_held_past_the_timeout_is_a_retryable_error(pg: BaseStore) -> None:
    other = open_store(postgres_url(), schema=pg.schema, lock_timeout=0.2)  # type: ignore[attr-defined]
    s = pg.create_session()
    pg.append(s.id, "a", role="user")
    with pg.atomic():
        pg.append(s.id, "held", role="user")
        with pytest.raises(StoreBusyError) as e:
            other.append(s.id, "blocked", role="user")
        assert e.value.retryable
    assert [n.text for n in pg.branch(s.id)] == ["a", "held"]
    other.close()


def test_open_store_reads_urls_and_paths(tmp_path: Path) -> None:
    assert isinstance(open_store(tmp_path / "x.db"), SessionStore)
    store = open_store(postgres_url(), schema=f"t_{uuid.uuid4().hex[:12]}")
    assert type(store).__name__ == "PostgresSessionStore"
    store.drop_schema()  # type: ignore[attr-defined]
    store.close()


def test_the_command_line_works_against_a_url() -> None:
    url = postgres_url()
    env = {**os.environ, "SESSIONGRAPH_DB": url}
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = open_store(url, schema=schema)
    sid = store.create_session("over the network").id
    store.append(sid, "hello there", role="user")
    store.close()
    sep = "&" if "?" in url else "?"
    env["SESSIONGRAPH_DB"] = f"{url}{sep}options=-csearch_path%3D{schema}"
    run = subprocess.run(
        [sys.executable, "-c", "from graph.cli.commands import main; main()", "sessions", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert [s["id"] for s in json.loads(run.stdout)] == [sid]
    cleanup = open_store(url, schema=schema)
    cleanup.drop_schema()  # type: ignore[attr-defined]
    cleanup.close()

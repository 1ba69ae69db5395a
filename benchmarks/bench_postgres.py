"""SQLite against PostgreSQL (loopback) in one run: appends, marks, pending, rebuilds, refreshes.

Subject: the PostgreSQL store keeps the in-process index, so ``pending()`` stays within 2x of
SQLite's, a refresh after another process's 10 appends costs under 1% of a full rebuild, and four
writer processes append at least twice as fast as one (each process its own session, as machines of
a team would).

- durable single appends: one node per transaction, from 1 process and from 4 at once;
- ``mark`` of a batch of 100 nodes;
- ``pending()`` with 10 owed at the head of a forked session of 1e5 nodes (1e4 quick);
- a full index rebuild of that session;
- the refresh of a cached index after another connection appends 10 nodes.

The PostgreSQL server is ``--url``, else ``$SESSIONGRAPH_BENCH_POSTGRES``, else
``$SESSIONGRAPH_TEST_POSTGRES``; without one the script says so and measures nothing. It works in a
schema of its own, dropped at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import PENDING, build_forked  # noqa: E402
from _harness import Bench, console, parse_args, scratch_db, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.backends import open_store  # noqa: E402
from graph.store import BaseStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APPENDS = 200

_APPENDER = """
import sys, time
from graph.backends import open_store
target, schema, sid, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = open_store(target, schema=schema) if schema else open_store(target)
t = time.perf_counter()
for i in range(n):
    store.append(sid, f"turn {i}", role="user")
print(time.perf_counter() - t)
"""


def _url() -> str | None:
    for name in ("SESSIONGRAPH_BENCH_POSTGRES", "SESSIONGRAPH_TEST_POSTGRES"):
        if os.environ.get(name):
            return os.environ[name]
    return None


def _appenders(target: str, schema: str, sessions: list[str], n: int) -> float:
    """Appends per second of len(sessions) processes at once, each appending n to its own session."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, target, schema, sid, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for sid in sessions
    ]
    start = time.perf_counter()
    for p in procs:
        p.communicate(timeout=600)
    return len(sessions) * n / (time.perf_counter() - start)


def _backend(bench: Bench, name: str, store: BaseStore, target: str, schema: str, n: int) -> None:
    sid = "p"
    with bench.timed(f"generate {name} {n:.0e}"):
        plan = build_forked(store, sid, n)  # type: ignore[arg-type]
        tail = set(plan.tail)
        todo = [e for e in plan.eligible if e not in tail]
        for i in range(0, len(todo), 50_000):
            store.mark(sid, todo[i : i + 50_000], "memory", "ws")
    assert len(store.pending(sid, "memory", "ws")) == PENDING
    bench.measure("pending() with 10 owed", name, n, lambda: store.pending(sid, "memory", "ws"))
    bench.measure("full index rebuild", name, n, lambda: store.rebuild_index(sid))
    other = open_store(target, schema=schema) if schema else open_store(target)
    side = store.create_session("side").id
    store.append(side, "root", role="user")
    other.index(side)

    def ten_more() -> None:
        for i in range(10):
            store.append(side, f"more {i}", role="user")

    bench.measure(
        "refresh after another connection's 10 appends",
        name,
        n,
        lambda: other.index(side),
        setup=ten_more,
    )
    batch_session = store.create_session("marks").id
    ids = [store.append(batch_session, f"t{i}", role="user").id for i in range(100 * 12)]
    chunks = iter(range(12))
    chunk: list[str] = []

    def next_chunk() -> None:
        k = next(chunks)
        chunk[:] = ids[100 * k : 100 * (k + 1)]

    bench.measure(
        "mark 100",
        name,
        n,
        lambda: store.mark(batch_session, chunk, "memory", "ws"),
        setup=next_chunk,
        repeats=5,
    )
    singles = store.create_session("singles").id
    counter = iter(range(10**9))
    bench.measure(
        "durable single append",
        name,
        n,
        lambda: store.append(singles, f"s{next(counter)}", role="user"),
    )
    one = [store.create_session("one").id]
    four = [store.create_session(f"four {k}").id for k in range(4)]
    store.close()
    other.close()
    rate1 = _appenders(target, schema, one, APPENDS)
    rate4 = _appenders(target, schema, four, APPENDS)
    bench.timings[f"{name}: appends/s, 1 process"] = rate1
    bench.timings[f"{name}: appends/s, 4 processes"] = rate4
    bench.target(f"{name}: 4-process appends / 1-process appends", rate4 / rate1, ">=", 2)


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the SQLite-vs-PostgreSQL benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    n = 10_000 if args.quick else 100_000
    bench = Bench("SQLite vs PostgreSQL", args.quick, args.repeats)
    url = _url()
    if url is None:
        console.print(
            "PostgreSQL benchmarks skipped: set SESSIONGRAPH_BENCH_POSTGRES to a database URL"
        )
        bench.timings["postgres absent: skipped"] = 0.0
        return bench.finish(args.json)
    from graph.postgres_store import PostgresSessionStore

    with scratch_dir(args.dir) as directory:
        path = scratch_db(directory, f"pg-compare-{n}.db")
        _backend(bench, "sqlite", SessionStore(path), str(path), "", n)
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        pg = PostgresSessionStore(url, schema=schema)
        try:
            _backend(bench, "postgres", pg, url, schema, n)
        finally:
            PostgresSessionStore(url, schema=schema).drop_schema()
    for group, bound in (("pending() with 10 owed", 2.0),):
        bench.target(
            f"postgres / sqlite: {group}", bench.ratio(group, "postgres", "sqlite", n), "<=", bound
        )
    for name in ("sqlite", "postgres"):
        bench.target(
            f"{name}: refresh after 10 appends / full rebuild (%)",
            100
            * bench.get("refresh after another connection's 10 appends", name, n).median
            / bench.get("full index rebuild", name, n).median,
            "<=",
            1,
            "%",
        )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

"""SQLite against PostgreSQL (loopback) in one run: appends, marks, pending, rebuilds, refreshes.

Subject: the PostgreSQL store keeps the in-process index, so ``pending()`` stays within 2x of
SQLite's, a refresh after another connection's 10 appends costs under 1% of a full rebuild, and four
writer processes append at least twice as fast as one (each process its own session, as machines of
a team would). Both stores hold the same data and every comparison runs the two round-robin:

- ``pending()`` with 10 owed at the head of a forked session of 1e5 nodes (1e4 quick), warm, and
  beside it the one round trip a warm PostgreSQL ``pending()`` adds to the walk (the read of the
  session's revision that tells whether another connection wrote);
- a full index rebuild of that session;
- the refresh of another connection's cached index of it after 10 appends;
- ``mark`` of a batch of 100 nodes;
- a durable single append (one node per transaction: SQLite WAL with ``synchronous=NORMAL``,
  PostgreSQL with ``synchronous_commit=on``, so each commit waits for the WAL flush);
- durable appends per second from 1 and from 4 processes at once: each process connects and makes
  its session first, then all start together on a signal and time only their appends; the figure is
  every append over the wall time from the first start to the last end. Beside it: how busy the
  machine's CPUs were meanwhile (``/proc/stat``) and how many cores the writer processes used, so a
  machine that cannot show the scaling says why.

The PostgreSQL server is ``--url``, else ``$SESSIONGRAPH_BENCH_POSTGRES``, else
``$SESSIONGRAPH_TEST_POSTGRES``; without one the script says so and measures nothing. It works in a
schema of its own, dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import PENDING, build_forked  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.store import open_store  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

_APPENDER = """
import sys, time
from graph.store import open_store
target, schema, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(target, schema=schema) if schema else open_store(target)
sid = store.create_session("appender").id
store.append(sid, "warm-up", role="user")
print("ready", flush=True)
sys.stdin.readline()
start, cpu = time.monotonic(), time.process_time()
for i in range(n):
    store.append(sid, f"turn {i}", role="user")
print(start, time.monotonic(), time.process_time() - cpu, flush=True)
store.close()
"""


def _url_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        help="the PostgreSQL database URL (default: $SESSIONGRAPH_BENCH_POSTGRES, "
        "else $SESSIONGRAPH_TEST_POSTGRES)",
    )


def _url(given: str | None = None) -> str | None:
    if given:
        return given
    for name in ("SESSIONGRAPH_BENCH_POSTGRES", "SESSIONGRAPH_TEST_POSTGRES"):
        if os.environ.get(name):
            return os.environ[name]
    return None


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU so far, from ``/proc/stat`` ((0, 0) without it)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _appenders(target: str, schema: str, processes: int, n: int) -> tuple[float, float, float]:
    """Run ``processes`` writers of ``n`` appends each, started together.

    Returns:
        (seconds per append over all of them, the fraction of the machine's CPU time that was busy
        meanwhile, the cores the writers' own code used).
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, target, schema, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(processes)
    ]
    for p in procs:
        assert p.stdout is not None
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"an appender process did not start (exit {p.wait()})")
    busy0, total0 = _cpu_ticks()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=600)[0] for p in procs]
    busy1, total1 = _cpu_ticks()
    if any(p.returncode for p in procs):
        raise RuntimeError(f"an appender process failed: {[p.returncode for p in procs]}")
    got = [tuple(float(x) for x in out.split()) for out in outs]
    wall = max(g[1] for g in got) - min(g[0] for g in got)
    busy = (busy1 - busy0) / (total1 - total0) if total1 > total0 else float("nan")
    return wall / (processes * n), busy, sum(g[2] for g in got) / wall


def _chunks(store: BaseStore, session: str, count: int) -> Iterator[list[str]]:
    ids = [store.append(session, f"t{i}", role="user").id for i in range(100 * count)]
    for k in range(count):
        yield ids[100 * k : 100 * (k + 1)]


def _build(store: BaseStore, n: int) -> None:
    plan = build_forked(store, "p", n)  # type: ignore[arg-type]
    tail = set(plan.tail)
    todo = [e for e in plan.eligible if e not in tail]
    for i in range(0, len(todo), 50_000):
        store.mark("p", todo[i : i + 50_000], "memory", "ws")
    assert len(store.pending("p", "memory", "ws")) == PENDING


def _compare(
    bench: Bench, stores: dict[str, BaseStore], readers: dict[str, BaseStore], n: int
) -> None:
    pg = stores["postgres"]
    bench.compare(
        "pending() with 10 owed",
        n,
        [
            *(Alt(k, lambda s=s: s.pending("p", "memory", "ws")) for k, s in stores.items()),  # type: ignore[misc]
            # What a warm pending() on PostgreSQL adds to the walk: the one indexed read of the
            # session's revision that tells whether another connection wrote (the same statement).
            Alt(
                "postgres: the revision check alone",
                lambda: pg.conn.execute(  # type: ignore[attr-defined]
                    "SELECT rev FROM sessions WHERE id = %s", ("p",)
                ).fetchone(),
            ),
        ],
    )
    bench.compare(
        "full index rebuild",
        n,
        [Alt(k, lambda s=s: s.rebuild_index("p")) for k, s in stores.items()],  # type: ignore[misc]
    )
    for r in readers.values():
        r.index("p")
    turn = iter(range(10**9))

    def ten_more(store: BaseStore) -> None:
        for _ in range(10):
            store.append("p", f"more {next(turn)}", role="user")

    bench.compare(
        "refresh after another connection's 10 appends",
        n,
        [
            Alt(k, lambda r=readers[k]: r.index("p"), lambda s=s: ten_more(s))  # type: ignore[misc]
            for k, s in stores.items()
        ],
    )
    sessions = {k: s.create_session("marks").id for k, s in stores.items()}
    chunks = {k: _chunks(s, sessions[k], bench.repeats + 2) for k, s in stores.items()}
    current: dict[str, list[str]] = {}

    def next_chunk(k: str) -> None:
        current[k] = next(chunks[k])

    bench.compare(
        "mark 100",
        n,
        [
            Alt(
                k,
                lambda k=k, s=s: s.mark(sessions[k], current[k], "memory", "ws"),  # type: ignore[misc]
                lambda k=k: next_chunk(k),  # type: ignore[misc]
            )
            for k, s in stores.items()
        ],
    )
    singles = {k: s.create_session("singles").id for k, s in stores.items()}
    bench.compare(
        "durable single append",
        n,
        [
            Alt(k, lambda k=k, s=s: s.append(singles[k], f"s{next(turn)}", role="user"))  # type: ignore[misc]
            for k, s in stores.items()
        ],
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the SQLite-vs-PostgreSQL benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv, _url_option)
    n = 1_000 if args.smoke else 10_000 if args.quick else 100_000
    appends, rounds = (20, 1) if args.smoke else (100, 3) if args.quick else (300, 5)
    bench = Bench("SQLite vs PostgreSQL", args.quick, args.repeats)
    url = _url(args.url)
    if url is None:
        bench.skip(
            "PostgreSQL benchmarks",
            "no PostgreSQL: pass --url or set SESSIONGRAPH_TEST_POSTGRES to a database URL",
        )
        return bench.finish(args.json)
    from graph.store.postgres import PostgresSessionStore

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with scratch_dir(args.dir) as directory:
        path = scratch_db(directory, f"pg-compare-{n}.db")
        targets = {"sqlite": (str(path), ""), "postgres": (url, schema)}
        stores: dict[str, BaseStore] = {
            "sqlite": SessionStore(path),
            "postgres": PostgresSessionStore(url, schema=schema),
        }
        try:
            for k, s in stores.items():
                with bench.timed(f"generate {k} {n:.0e}"):
                    _build(s, n)
            readers = {
                k: open_store(t, schema=sc) if sc else open_store(t)
                for k, (t, sc) in targets.items()
            }
            _compare(bench, stores, readers, n)
            for s in [*stores.values(), *readers.values()]:
                s.close()
            for k, (t, sc) in targets.items():
                runs: dict[str, list[float]] = {"1 process": [], "4 processes": []}
                busy: dict[str, list[float]] = {"1 process": [], "4 processes": []}
                cores: dict[str, list[float]] = {"1 process": [], "4 processes": []}
                for _ in range(rounds):
                    for name, procs in (("1 process", 1), ("4 processes", 4)):
                        per, b, c = _appenders(t, sc, procs, appends)
                        runs[name].append(per)
                        busy[name].append(b)
                        cores[name].append(c)
                notes = {
                    f"{k}, {name}": (
                        f"{1 / sorted(runs[name])[len(runs[name]) // 2]:,.0f} appends/s; "
                        f"machine CPU {100 * sorted(busy[name])[len(busy[name]) // 2]:.0f}% busy; "
                        f"writers used {sorted(cores[name])[len(cores[name]) // 2]:.2f} cores"
                    )
                    for name in runs
                }
                bench.record(
                    f"durable appends, {k}",
                    n,
                    {f"{k}, {name}": r for name, r in runs.items()},
                    notes=notes,
                )
        finally:
            PostgresSessionStore(url, schema=schema).drop_schema()
    bench.target(
        "postgres / sqlite: pending() with 10 owed",
        bench.ratio("pending() with 10 owed", "postgres", "sqlite", n),
        "<=",
        2,
    )
    for k in targets:
        bench.target(
            f"{k}: refresh after 10 appends / full rebuild (%)",
            100
            * bench.get("refresh after another connection's 10 appends", k, n).median
            / bench.get("full index rebuild", k, n).median,
            "<=",
            1,
            "%",
            floor="full index rebuild",
        )
    bench.target(
        "postgres: appends/s from 4 processes / from 1",
        bench.ratio("durable appends, postgres", "postgres, 1 process", "postgres, 4 processes", n),
        ">=",
        2,
        floor="one writer process",
    )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

"""Marking a batch of 100 nodes on sessions of 1e3..1e6 nodes (1e3..1e4 in quick mode).

Subject: the cost of ``store.mark`` must not grow with the session. The session is
the forked session of :mod:`bench_pending` (a copy of it); a second provider, ``indexer``, has written
everything but the newest ``100 x (runs + 2)`` eligible nodes, and each run marks the next 100 of them
in one transaction (prefix rule checked). The floor is a bare ``sqlite3`` transaction inserting the same
100 marker rows into a table of the same shape, on the same file, with the same settings (WAL,
``synchronous=NORMAL``).
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import mark_prefix, pending_store  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402

BATCH = 100


def _run(bench: Bench, directory: Path, n: int) -> None:
    reserve = BATCH * (bench.repeats + 3)
    with bench.timed(f"generate {n:.0e}"):
        source, plan, _ = pending_store(directory, n)
        source.close()
        path = directory / f"mark-{n}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        shutil.copy(source.path, path)
        store = SessionStore(path)
        mark_prefix(store, plan, "indexer", "ws", reserve)
    done = set(store.index("p").marks.get(("indexer", "ws")) or ())
    todo = iter([e for e in plan.eligible if e not in done])
    batch: list[str] = []

    def next_batch() -> None:
        batch[:] = [next(todo) for _ in range(BATCH)]

    def mark() -> None:
        assert store.mark("p", batch, "indexer", "ws") == BATCH

    bare = sqlite3.connect(path, isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=NORMAL")
    bare.execute(
        "CREATE TABLE bench_marks (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,"
        " node_id TEXT NOT NULL, provider TEXT NOT NULL, value TEXT NOT NULL,"
        " UNIQUE (node_id, provider))"
    )
    bare.execute("CREATE INDEX bench_marks_by_session ON bench_marks (session_id, seq)")
    counter = iter(range(10**9))
    rows: list[tuple[str, str, str, str]] = []

    def next_rows() -> None:
        k = next(counter)
        rows[:] = [("p", f"bare-{k}-{i}", "indexer", "ws") for i in range(BATCH)]

    def floor() -> None:
        bare.execute("BEGIN IMMEDIATE")
        bare.executemany(
            "INSERT OR REPLACE INTO bench_marks (session_id, node_id, provider, value)"
            " VALUES (?, ?, ?, ?)",
            rows,
        )
        bare.execute("UPDATE sessions SET rev=rev+1 WHERE id='p'")
        bare.execute("COMMIT")

    g = "mark a batch of 100"
    bench.compare(
        g,
        n,
        [
            Alt("bare sqlite3: 100 marker rows, one transaction", floor, next_rows),
            Alt("store.mark(100 nodes)", mark, next_batch),
        ],
    )
    bare.close()
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the marking benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    sizes = (
        [300, 1_000]
        if args.smoke
        else [1_000, 10_000]
        if args.quick
        else [1_000, 10_000, 100_000, 1_000_000]
    )
    bench = Bench("mark()", args.quick, args.repeats)
    g = "mark a batch of 100"
    with scratch_dir(args.dir) as directory:
        for n in sizes:
            _run(bench, directory, n)
    small, big = sizes[0], sizes[-1]
    bench.target(
        f"store.mark(100) {big:.0e} / {small:.0e}",
        bench.get(g, "store.mark(100 nodes)", big).median
        / bench.get(g, "store.mark(100 nodes)", small).median,
        "<=",
        2,
    )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

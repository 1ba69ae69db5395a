"""Appends: durable single-node transactions and batched imports, against bare ``sqlite3`` INSERTs.

Subjects:

* ``store.append``: one node per transaction (each commit durable across a process crash: WAL,
  ``synchronous=NORMAL``, the store's setting), against a bare ``sqlite3`` connection committing one
  INSERT of the same row (same columns, same encoded payloads, a table with the same schema and
  indexes) per transaction with the same settings; then the same with the session row's UPDATE (head,
  ``updated_at``, ``rev``), what every append also writes; then also with the node's search row:
  written straight into the FTS5 index (one segment per transaction), and queued as the store
  writes it (a ``node_text_queue`` row, the queue moved into the index once it holds
  ``SEARCH_QUEUE_AT`` rows), the like-for-like floor;
* ``store.add_nodes``: a batch of nodes in one transaction (the import path; the ``Node`` objects are
  built before the clock starts, as an importer hands them over), against one bare ``executemany`` of
  the same rows in one transaction.

Every run appends to a new session, so both sides grow their tables alike.
"""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402

from graph import Node, SessionStore  # noqa: E402
from graph.codec import encode, encode_content  # noqa: E402
from graph.index import node_bits  # noqa: E402
from graph.models import Kind, Role, to_micros  # noqa: E402
from graph.store.sqlite import SEARCH_QUEUE_AT  # noqa: E402

_T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _bare(path: Path) -> sqlite3.Connection:
    """A bare connection to a file holding the store's schema (made by the store, then left alone)."""
    SessionStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _text(i: int) -> str:
    return f"turn {i}: the quick brown fox jumps over the lazy dog, and then appends another node"


def _rows(sid: str, n: int) -> list[tuple[str, str, str | None, int, int, bytes, bytes, str]]:
    """The rows of ``n`` chained turns, as the nodes table holds them, then their indexed text."""
    meta = encode({})
    out = []
    prev = None
    for i in range(n):
        nid = f"{sid}:{i:08d}"
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        bits = node_bits(Kind.MESSAGE, role, empty=False, scheduled=False)
        out.append((nid, sid, prev, bits, to_micros(_T0), encode_content(_text(i)), meta, _text(i)))
        prev = nid
    return out


def _nodes(sid: str, n: int) -> list[Node]:
    out = []
    prev = None
    for i in range(n):
        nid = f"{sid}:{i:08d}"
        out.append(
            Node(
                id=nid,
                session_id=sid,
                predecessor=prev,
                kind=Kind.MESSAGE,
                role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                content=_text(i),
                created_at=_T0,
            )
        )
        prev = nid
    return out


_INSERT = (
    "INSERT INTO nodes (id, session_id, predecessor, bits, created_at, content, metadata)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE sessions SET head=?, updated_at=max(updated_at, ?), rev=rev+1 WHERE id=? RETURNING rev"
)


def _singles(bench: Bench, directory: Path, n: int) -> None:
    store = SessionStore(scratch_db(directory, "append-store.db"))
    bare = _bare(scratch_db(directory, "append-bare.db"))
    runs = iter(range(10**6))
    state: dict[str, object] = {}

    def setup_store() -> None:
        state["sid"] = store.create_session("singles", id=f"s{next(runs)}").id

    def store_appends() -> None:
        sid = str(state["sid"])
        for i in range(n):
            store.append(sid, _text(i), role="user" if i % 2 == 0 else "assistant")

    def setup_bare() -> None:
        sid = f"b{next(runs)}"
        bare.execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, rev) VALUES (?, '', 0, 0, 0)",
            (sid,),
        )
        state["rows"] = _rows(sid, n)

    def bare_appends() -> None:
        for row in state["rows"]:  # type: ignore[attr-defined]
            bare.execute("BEGIN IMMEDIATE")
            bare.execute(_INSERT, row[:7])
            bare.execute("COMMIT")

    def bare_with_session() -> None:
        for row in state["rows"]:  # type: ignore[attr-defined]
            bare.execute("BEGIN IMMEDIATE")
            bare.execute(_INSERT, row[:7])
            bare.execute(_UPDATE, (row[0], row[4], row[1])).fetchone()
            bare.execute("COMMIT")

    def bare_with_text() -> None:
        for row in state["rows"]:  # type: ignore[attr-defined]
            bare.execute("BEGIN IMMEDIATE")
            seq = bare.execute(_INSERT, row[:7]).lastrowid
            bare.execute("INSERT INTO node_text (rowid, text) VALUES (?, ?)", (seq, row[7]))
            bare.execute(_UPDATE, (row[0], row[4], row[1])).fetchone()
            bare.execute("COMMIT")

    queued = {"n": 0}

    def bare_with_queued_text() -> None:
        for row in state["rows"]:  # type: ignore[attr-defined]
            bare.execute("BEGIN IMMEDIATE")
            seq = bare.execute(_INSERT, row[:7]).lastrowid
            bare.execute("INSERT INTO node_text_queue (seq, text) VALUES (?, ?)", (seq, row[7]))
            queued["n"] += 1
            if queued["n"] >= SEARCH_QUEUE_AT:
                bare.execute(
                    "INSERT INTO node_text (rowid, text) SELECT seq, text FROM node_text_queue"
                )
                bare.execute("DELETE FROM node_text_queue")
                queued["n"] = 0
            bare.execute(_UPDATE, (row[0], row[4], row[1])).fetchone()
            bare.execute("COMMIT")

    g = "one node per transaction"
    results = bench.compare(
        g,
        n,
        [
            Alt("bare sqlite3 INSERT + COMMIT", bare_appends, setup_bare, per=n),
            Alt("bare INSERT + session UPDATE + COMMIT", bare_with_session, setup_bare, per=n),
            Alt(
                "bare INSERT + FTS5 row + session UPDATE + COMMIT",
                bare_with_text,
                setup_bare,
                per=n,
            ),
            Alt(
                "bare INSERT + queued search row + session UPDATE + COMMIT",
                bare_with_queued_text,
                setup_bare,
                per=n,
            ),
            Alt("store.append", store_appends, setup_store, per=n),
        ],
    )
    for r in results:
        r.note = f"{n / r.median:,.0f} commits/s"
    s = results[-1]
    for floor, bound in (
        ("bare sqlite3 INSERT + COMMIT", 50),
        ("bare INSERT + session UPDATE + COMMIT", 70),
        ("bare INSERT + queued search row + session UPDATE + COMMIT", 70),
    ):
        bench.target(
            f"store.append throughput / {floor} (%)",
            100 * bench.get(g, floor, n).median / s.median,
            ">=",
            bound,
            "%",
        )
    store.close()
    bare.close()


def _batched(bench: Bench, directory: Path, n: int) -> None:
    store = SessionStore(scratch_db(directory, "batch-store.db"))
    bare = _bare(scratch_db(directory, "batch-bare.db"))
    runs = iter(range(10**6))
    state: dict[str, object] = {}

    def setup_store() -> None:
        sid = store.create_session("batched", id=f"s{next(runs)}").id
        state["sid"] = sid
        state["nodes"] = _nodes(sid, n)

    def store_batch() -> None:
        store.add_nodes(str(state["sid"]), state["nodes"])  # type: ignore[arg-type]

    def setup_bare() -> None:
        sid = f"b{next(runs)}"
        bare.execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, rev) VALUES (?, '', 0, 0, 0)",
            (sid,),
        )
        state["rows"] = _rows(sid, n)

    def bare_batch() -> None:
        bare.execute("BEGIN IMMEDIATE")
        bare.executemany(_INSERT, [r[:7] for r in state["rows"]])  # type: ignore[attr-defined]
        bare.execute("COMMIT")

    g = "batched, one transaction"
    for r in bench.compare(
        g,
        n,
        [
            Alt("bare sqlite3 executemany", bare_batch, setup_bare, per=n),
            Alt("store.add_nodes", store_batch, setup_store, per=n),
        ],
    ):
        r.note = f"{n / r.median:,.0f} nodes/s"
    bench.target(
        f"store.add_nodes({n:.0e}) throughput / bare executemany (%)",
        100 * bench.ratio(g, "bare sqlite3 executemany", "store.add_nodes", n),
        ">=",
        50,
        "%",
    )
    store.close()
    bare.close()


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the append benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    bench = Bench("appends", args.quick, args.repeats)
    with scratch_dir(args.dir) as directory:
        _singles(bench, directory, 50 if args.smoke else 500 if args.quick else 2_000)
        for n in [1_000] if args.smoke else [10_000] if args.quick else [10_000, 100_000]:
            _batched(bench, directory, n)
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

"""``pending()`` by the marker walk, against the id-set oracle, the ordinal cursor and a bare dict walk.

Subjects: a branch of 1e3..1e6 chain nodes (1e3..1e4 in quick mode) with a side branch of
three turns forking every 100 nodes, every eligible node written by the consumer (side branches and
the old chain's end too: each was the head once), and the head on a *tail fork*: 10 new turns forking
off 20 nodes before the old chain's end (a user edited a message and went on). For each size:

* bare dict walk: the floor, an inline loop over the index's plain dicts that stops at the first
  marker, over the same nodes the marker walk visits;
* ``graph.walks.walk_pending`` on the cached index (the marker walk alone);
* ``store.pending_ids``: the walk plus the index freshness check (one read of the WAL-index header);
  its bar is 3x the bare walk, the others' 5x;
* ``store.pending``: the same, plus the 10 pending nodes as models, served warm from the store's kept
  decoded nodes (``graph.index.DecodedNodes``: what a repeated call costs while nothing changed);
* ``store.pending`` with nothing kept: the kept models dropped before each call, so it reads and
  decodes the 10 rows (what the first call, or the call after those nodes changed, costs);
* the id-set oracle and the ordinal cursor on the index (no payloads read: their cheapest form);
  the ordinal cursor's position is the old chain's length, beyond the head's new, shorter branch, so
  it returns nothing (wrong);
* the reference cursors of ``graph.cursors`` (``IdSetCursor``, ``OrdinalCursor``), which read every
  node of the branch as models: up to 1e4 nodes only (1e3 in quick mode; about 0.1 ms per node).

Cold (a fresh process: open the file, then ask): ``store.pending`` and ``store.pending_ids`` on a new
store object, against the floor of one ``sqlite3`` connection running a recursive query from the head
to the newest marker, and against opening, building the index and walking it (what a fresh store did
before it walked its rows).

Live tips (what an end-of-session write lists before writing every branch): ``store.tips`` with the
tips kept in the index, against the scan of every node it replaced.

The note column says how many nodes each returned; the right answer is 10.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import PENDING, pending_store  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import MEMORY_ELIGIBLE, SessionStore, walks  # noqa: E402
from graph.cursors import IdSetCursor, OrdinalCursor  # noqa: E402
from graph.index import REWOUND, IndexView, _scan_live_tips  # noqa: E402


def _id_set(index: IndexView, head: str, written: set[str]) -> list[str]:
    """The id-set oracle on the index (no payloads): the branch's eligible nodes not in ``written``."""
    test, bits, pred = MEMORY_ELIGIBLE.test, index.bits, index.pred
    out: list[str] = []
    n: str | None = head
    while n is not None:
        if test(bits[n]) and n not in written:
            out.append(n)
        n = pred[n]
    out.reverse()
    return out


def _ordinal(index: IndexView, head: str, ordinal: int) -> list[str]:
    """The ordinal cursor on the index: the branch's eligible nodes at a 1-based position > ordinal."""
    test, bits = MEMORY_ELIGIBLE.test, index.bits
    branch = walks.branch_ids(index, head)
    return [n for n in branch[ordinal:] if test(bits[n])]


REFERENCE_UP_TO = 10_000
"""The largest size the ``graph.cursors`` reference cursors run at (they read every node)."""


def _run(bench: Bench, directory: Path, n: int) -> None:
    with bench.timed(f"generate {n:.0e}"):
        store, plan, unwritten = pending_store(directory, n)
    index = store.index("p")
    head = plan.head
    written = set(index.marks.get(("memory", "ws")) or ())
    # The consumer wrote the old chain (n rows, no rewinds) while it was the head: its ordinal is n.
    ordinal = len(plan.chain)
    mask, codes = MEMORY_ELIGIBLE.mask, MEMORY_ELIGIBLE.codes
    raw = store._index("p")  # the floor reads the store's own dicts, not the read-only view
    pred, bits = raw.pred, raw.bits

    def bare() -> list[str]:
        out: list[str] = []
        node: str | None = head
        while node is not None:
            if bits[node] & mask in codes:
                if node in written:
                    break
                out.append(node)
            node = pred[node]
        out.reverse()
        return out

    runs = {
        "bare dict walk (floor)": bare,
        "walks.walk_pending(index)": lambda: (
            walks.walk_pending(index, head, "memory", "ws", MEMORY_ELIGIBLE).ids
        ),
        "store.pending_ids": lambda: store.pending_ids("p", "memory", "ws"),
        "store.pending (reads 10 nodes)": lambda: store.pending("p", "memory", "ws"),
        "store.pending, nothing kept (decodes 10 rows)": lambda: (
            store._decoded.clear(),
            store.pending("p", "memory", "ws"),
        )[1],
        "id-set oracle on the index (no payloads)": lambda: _id_set(index, head, written),
        "ordinal cursor on the index": lambda: _ordinal(index, head, ordinal),
    }
    if n <= (1_000 if bench.quick else REFERENCE_UP_TO):
        runs["IdSetCursor.pending (graph.cursors)"] = lambda: IdSetCursor(written).pending(
            store, "p"
        )
        runs["OrdinalCursor.pending (graph.cursors)"] = lambda: OrdinalCursor(ordinal).pending(
            store, "p"
        )
    visited = walks.walk_pending(index, head, "memory", "ws", MEMORY_ELIGIBLE).visited
    alts = []
    for name, fn in runs.items():
        got = fn()
        ids = [g if isinstance(g, str) else g.id for g in got]
        right = ids == unwritten
        note = f"returned {len(ids)}" + ("" if right else f" (WRONG, expected {PENDING})")
        if name.startswith("bare"):
            note += f"; walks {visited} nodes"
        alts.append(Alt(name, fn, note=note))
    bench.compare("pending, 10 unwritten at the head", n, alts)
    store.tips("p")
    tips = len(_scan_live_tips(raw.pred, raw.bits))
    bench.compare(
        "live tips (what an end-of-session write lists)",
        n,
        [
            Alt("scan of every node (before)", lambda: _scan_live_tips(raw.pred, raw.bits)),
            Alt(
                "store.tips, kept in the index",
                lambda: store.tips("p"),
                per=tips,
                note=f"{tips} tips (a side branch every 100 nodes): per unit is per tip",
            ),
        ],
    )
    path = store.path
    store.close()
    _cold(bench, path, n, unwritten)


_FLOOR_WALK = (
    "WITH RECURSIVE up(id, predecessor, stop) AS ("
    " SELECT id, predecessor, 0 FROM nodes WHERE id = :head"
    " UNION ALL SELECT n.id, n.predecessor,"
    " (n.bits & :mask) IN (SELECT value FROM json_each(:codes))"
    " AND EXISTS (SELECT 1 FROM marks m WHERE m.node_id = n.id AND m.provider = 'memory'"
    " AND m.value = 'ws')"
    " FROM up JOIN nodes n ON n.id = up.predecessor WHERE NOT up.stop)"
    " SELECT id, stop FROM up"
)


def _cold(bench: Bench, path: str, n: int, unwritten: list[str]) -> None:
    """A fresh process's first pending: open the file and ask, against one recursive query."""
    codes = json.dumps(sorted(MEMORY_ELIGIBLE.codes))
    mask = MEMORY_ELIGIBLE.mask & ~REWOUND

    def floor() -> list[str]:
        conn = sqlite3.connect(path)
        (head,) = conn.execute("SELECT head FROM sessions WHERE id='p'").fetchone()
        rows = conn.execute(_FLOOR_WALK, {"head": head, "mask": mask, "codes": codes}).fetchall()
        conn.close()
        return [nid for nid, stop in rows if not stop]

    def cold(ids_only: bool) -> list[Any]:
        store = SessionStore(path)
        got: list[Any] = (
            store.pending_ids("p", "memory", "ws")
            if ids_only
            else [x.id for x in store.pending("p", "memory", "ws")]
        )
        store.close()
        return got

    def built() -> list[str]:
        store = SessionStore(path)
        store.index("p")
        got = store.pending_ids("p", "memory", "ws")
        store.close()
        return got

    g = "cold pending: open the file, then pending"
    alts = []
    for name, fn in (
        ("floor: connect + recursive query from the head", floor),
        ("store open + pending (reads 10 nodes)", lambda: cold(False)),
        ("store open + pending_ids", lambda: cold(True)),
        ("store open + index build + pending_ids (before)", built),
    ):
        ids = fn()
        note = "" if name.startswith("floor") or ids == unwritten else " (WRONG)"
        alts.append(Alt(name, fn, note=f"returned {len(ids)}{note}"))
    bench.compare(g, n, alts, repeats=max(bench.repeats, 15))  # each run opens a file: noisy
    bench.target(
        f"cold store.pending {n:.0e} / recursive query",
        bench.ratio(
            g,
            "store open + pending (reads 10 nodes)",
            "floor: connect + recursive query from the head",
            n,
        ),
        "<=",
        2,
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the pending benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    sizes = (
        [300, 1_000]
        if args.smoke
        else [1_000, 10_000]
        if args.quick
        else [1_000, 10_000, 100_000, 1_000_000]
    )
    bench = Bench("pending()", args.quick, args.repeats)
    g = "pending, 10 unwritten at the head"
    with scratch_dir(args.dir) as directory:
        for n in sizes:
            _run(bench, directory, n)
    small, big = sizes[0], sizes[-1]
    tips = "live tips (what an end-of-session write lists)"
    kept = [bench.get(tips, "store.tips, kept in the index", size) for size in (big, small)]
    bench.target(
        f"store.tips per tip {big:.0e} / {small:.0e} (flat in session size)",
        (kept[0].median / kept[0].per) / (kept[1].median / kept[1].per),
        "<=",
        2,
    )
    for name in ("store.pending", "store.pending_ids"):
        full = name if name.endswith("_ids") else "store.pending (reads 10 nodes)"
        bench.target(
            f"{name} {big:.0e} / {small:.0e} (flat)",
            bench.get(g, full, big).median / bench.get(g, full, small).median,
            "<=",
            2,
        )
    for name in (
        "walks.walk_pending(index)",
        "store.pending_ids",
        "store.pending (reads 10 nodes)",
    ):
        bench.target(
            f"{name} / bare dict walk at {big:.0e}",
            bench.ratio(g, name, "bare dict walk (floor)", big),
            "<=",
            3 if name == "store.pending_ids" else 5,  # the ids alone: a tighter bar
        )
    for oracle, name in (
        ("id-set oracle on the index (no payloads)", "store.pending_ids"),
        ("id-set oracle on the index (no payloads)", "store.pending (reads 10 nodes)"),
    ):
        bench.target(
            f"{oracle} / {name} at {big:.0e}",
            bench.ratio(g, oracle, name, big),
            ">=",
            10_000 if big >= 1_000_000 else 1_000,
        )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

"""Writing a session of 1e4 and 1e5 turns into memory (1e3 and 3e3 with ``--quick``).

Subject: a memory write must be linear in the session's length. Each run writes a
whole session, ``force=True``, into a fresh workspace (a new workspace id, so every turn is owed again)
with the default writer and budget: turns alternate user and assistant, about 15 tokens each, so a
batch holds ``MAX_BATCH_TURNS`` (200) turns and the default writer makes 100 records per batch.

Alternatives, in the same run:

* ``WritePipeline.write``: the pipeline as it is (the pending ids walked once, turns read in chunks
  as batches take them);
* ``re-read pending per batch``: the drain the pipeline had before, which read and decoded every
  remaining pending turn twice per batch (run at the smaller size only: it is quadratic).

The figure that matters is the cost per turn: linear means it stays flat from the small size to the
big one (the target: at most 2x). What still grows per batch is small: a shallow copy of the records
(a dict and a list per topic) and SQLite's index depth; the views are rendered once per call. The
``before`` row keeps every other fix and differs only in the drain, so it understates the old cost.
Measured here (two shared cores, CPU seconds): 1.6 s for 1e4 turns, 29.5 s for 1e5 (1.9x per turn).

A write of 1e5 turns takes a minute, so each alternative runs once per size after no warm-up
(``--repeats`` is ignored here); the data is generated untimed.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Bench, Result, parse_args, scratch_db, scratch_dir  # noqa: E402

from graph import Kind, Node, Role, SessionStore  # noqa: E402
from graph.ids import new_id  # noqa: E402
from graph.models import utcnow  # noqa: E402
from memory import MemoryWorkspace, WritePipeline  # noqa: E402
from memory.pipeline import split_batches  # noqa: E402


class _RereadPipeline(WritePipeline):
    """The drain before the fix: pending read (payloads decoded) before and after every batch."""

    def _drain(self, session_id: str, tip: str | None, *, force: bool) -> None:
        while True:
            pending = self.owed(session_id, tip)
            if not pending:
                return
            batch = split_batches(pending, self.budget, self.count_tokens)[0]
            self._pass(session_id, batch)
            self.owed(session_id, tip)


def _session(path: Path, n: int) -> str:
    store = SessionStore(path)
    s = store.create_session("bench")
    nodes, prev, now = [], None, utcnow()
    for i in range(n):
        nid = new_id()
        user = i % 2 == 0
        text = (
            f"Turn {i}: how do we ship item {i} of the release checklist today?"
            if user
            else f"Answer {i}: run the smoke test, then tick item {i}."
        )
        nodes.append(
            Node(
                id=nid,
                session_id=s.id,
                predecessor=prev,
                kind=Kind.MESSAGE,
                role=Role.USER if user else Role.ASSISTANT,
                content=text,
                created_at=now,
            )
        )
        prev = nid
    store.add_nodes(s.id, nodes, head=prev)
    store.close()
    return s.id


def _write(db: Path, ws_dir: Path, session: str, cls: type[WritePipeline]) -> tuple[float, int]:
    shutil.rmtree(ws_dir, ignore_errors=True)
    store = SessionStore(db)
    ws = MemoryWorkspace(ws_dir)
    pipe = cls(ws, store)
    t = time.perf_counter()
    failure = pipe.write(session, force=True)
    seconds = time.perf_counter() - t
    assert failure is None, failure
    batches = pipe.batches_written
    ws.close()
    store.close()
    return seconds, batches


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the memory-write benchmark and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    sizes = [200, 400] if args.smoke else [1_000, 3_000] if args.quick else [10_000, 100_000]
    bench = Bench("memory write", args.quick, 1)
    g = "write a whole session"
    with scratch_dir(args.dir) as directory:
        for n in sizes:
            db = scratch_db(directory, f"memory-write-{n}.db")
            with bench.timed(f"generate {n:.0e}"):
                session = _session(db, n)
            alts: list[tuple[str, type[WritePipeline]]] = [("WritePipeline.write", WritePipeline)]
            if n == sizes[0]:
                alts.append(("re-read pending per batch (before)", _RereadPipeline))
            for name, cls in alts:
                seconds, batches = _write(db, directory / f"ws-{n}", session, cls)
                bench.results.append(Result(g, name, n, [seconds], n, f"{batches} batches"))
    small, big = sizes
    per_small = bench.get(g, "WritePipeline.write", small).median / small
    per_big = bench.get(g, "WritePipeline.write", big).median / big
    bench.target(f"seconds per turn, {big:.0e} / {small:.0e}", per_big / per_small, "<=", 2)
    bench.target(
        f"re-read pending / WritePipeline.write at {small:.0e}",
        bench.ratio(g, "re-read pending per batch (before)", "WritePipeline.write", small),
        ">=",
        1,
    )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

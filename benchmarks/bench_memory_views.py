"""Installing one record into a workspace of 1,000 records in 50 topics, views included.

Subject: a write must cost its batch, not the memory. Each timed run installs one new record (one
validated transaction) into one topic and renders the views, as the write pipeline does at the end of a call.

Alternatives, in the same run and on the same workspace:

* ``incremental render``: the views as rendered now: the changed topic file and ``views.json`` are
  written, the 49 other topic files and ``core.md`` are hard-linked from the previous rendering;
* ``full render (before)``: the rendering is forgotten before each render, so every topic file and
  ``core.md`` are rendered, written and fsynced again, as after every install before.

The install itself (planning, the SQLite transaction) is in both figures; the difference is the
views. Quick mode uses the same workspace (it is small) with fewer runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import MemorySessionStore  # noqa: E402
from memory import MemoryWorkspace  # noqa: E402
from memory.changes import ChangeSet, CreateRecord, Destination, SourceRef  # noqa: E402
from memory.records import CORE_TOPIC  # noqa: E402
from memory.views import forget_rendering  # noqa: E402

RECORDS = 1_000
TOPICS = 50


def _workspace(path: Path) -> tuple[MemoryWorkspace, str]:
    ws = MemoryWorkspace(path)
    store = MemorySessionStore()
    sid = store.create_session("bench").id
    store.append(sid, "Notes for the benchmark workspace.", role="user")
    (source,) = ws.archive(store.pending(sid, "memory", ws.id))
    topics = [CORE_TOPIC] + [f"projects/p{n:02d}" for n in range(TOPICS - 1)]
    changes = [
        _create(
            source.id,
            topics[k % TOPICS],
            f"Record {k}: the build of project {k % TOPICS} runs the smoke test, then the "
            f"integration suite, and publishes the wheel when both pass (item {k}).",
        )
        for k in range(RECORDS)
    ]
    for k in range(0, len(changes), 200):
        _install(ws, changes[k : k + 200])
    ws.render_views()
    return ws, source.id


def _create(source: str, topic: str, text: str) -> CreateRecord:
    return CreateRecord(
        content=text,
        sources=(SourceRef(source=source, label="note", snippet="notes"),),
        destination=Destination(topic_path=topic, headings=("2026-03",)),
    )


def _install(ws: MemoryWorkspace, changes: list[CreateRecord]) -> None:
    base = ws.baseline()
    ws.install(ws.plan(ChangeSet(changes=tuple(changes)), baseline=base), base)


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the views benchmark and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    bench = Bench("memory views", args.quick, 5 if args.quick else 20)
    g = f"install one record + render, {RECORDS} records in {TOPICS} topics"
    with scratch_dir(args.dir) as directory:
        with bench.timed("generate the workspace"):
            ws, source = _workspace(directory / "ws")
        count = [0]

        def write_one() -> None:
            count[0] += 1
            _install(ws, [_create(source, "projects/p07", f"One more fact, number {count[0]}.")])
            ws.render_views()

        def write_one_full() -> None:
            forget_rendering(ws.path)
            write_one()

        bench.compare(
            g,
            RECORDS,
            [
                Alt("incremental render", write_one, note="1 topic file + views.json written"),
                Alt("full render (before)", write_one_full, note="every file written"),
            ],
        )
        ws.close()
    bench.target(
        "full render / incremental render",
        bench.ratio(g, "full render (before)", "incremental render", RECORDS),
        ">=",
        3,
    )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

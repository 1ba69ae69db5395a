"""Import of Claude Code, pi and Codex transcripts, against reading and parsing the same files with orjson.

Subject: For each format, generated transcripts of 1e4 and 1e5 entries (quick mode:
2e3) and, when present, the real corpus (``../shared/corpus``, read in place, never copied). Each
import runs into a fresh SQLite store file (made before the clock starts); the floors are reading the
same file and parsing every line with ``orjson``, and that plus a bare ``executemany`` of the rows the
import stored (nodes and their search text) into the same schema, in one transaction.

Generated transcripts are seeded and shaped like the corpus: Claude Code entries with ``uuid`` and
``parentUuid`` (user and assistant turns, tool calls with their results, a ``progress`` entry every
tenth line, a file-history snapshot every fiftieth); pi v3 entries with ``id``/``parentId`` after a
``session`` header; Codex rollout lines after ``session_meta`` (user and assistant messages, function
calls and outputs, token counts). The note column says how many nodes the import stored.

Re-import of a grown file, in each format: the file imported once, then 10 lines appended before each
timed run; a full re-read of the file (``resume=False``, what every re-import did before) against
resuming from the stored offset, warm and cold, and the floor of parsing the new lines.

Peak memory: a Claude Code file of 2e4, 5e4 and 1e5 entries (quick mode: 5e3, 2e4 and 5e4)
imported in a process of its own: the process's peak resident size during the import minus its
resident size before it, beside the size of the session's index, with the growth per 1e4 entries
(``--memory-only`` runs this part alone, ``--memory-sizes`` sets its sizes); then the middle size
again with every text twenty times as long (the file's bytes grow, the entry count does not). pi
and Codex files the same way at the first two sizes, the second again with 20x texts
(``--memory-formats`` picks the formats).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.importers import claude_code, codex, import_paths, pi  # noqa: E402
from graph.store.sqlite import _INSERT_NODE  # noqa: E402

CORPUS = Path(
    os.environ.get("SESSIONGRAPH_CORPUS")
    or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)
"""The shared corpus of real transcripts: ``$SESSIONGRAPH_CORPUS``, else beside the repository."""

_T0 = datetime(2025, 3, 1, tzinfo=UTC)
_WORDS = (
    "please refactor the parser so that malformed lines are skipped and reported with their"
    " line numbers while the rest of the transcript still imports into the session graph"
).split()


def _stamp(i: int) -> str:
    return (_T0 + timedelta(milliseconds=250 * i)).isoformat().replace("+00:00", "Z")


def _uuid(rng: random.Random) -> str:
    return "%08x-%04x-4%03x-8%03x-%012x" % (  # noqa: UP031
        rng.getrandbits(32),
        rng.getrandbits(16),
        rng.getrandbits(12),
        rng.getrandbits(12),
        rng.getrandbits(48),
    )


def _say(rng: random.Random, scale: int = 1) -> str:
    """A text of 6 to 30 words, ``scale`` times over (the memory runs' 20x texts)."""
    said = " ".join(rng.choices(_WORDS, k=rng.randint(6, 30)))
    return " ".join([said] * scale) if scale > 1 else said


def claude_code_lines(n: int, seed: int = 1, scale: int = 1) -> list[dict[str, Any]]:
    """``n`` Claude Code entries of one session, each text (prompt, reply, tool output) ``scale`` times over."""
    rng = random.Random(seed)
    sid = _uuid(rng)
    out: list[dict[str, Any]] = []
    prev: str | None = None
    call = ""
    for i in range(n):
        common = {
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/app",
            "sessionId": sid,
        }
        common |= {"version": "2.0.13", "gitBranch": "main", "timestamp": _stamp(i)}
        u = _uuid(rng)
        if i % 50 == 49:
            out.append(
                {
                    "type": "file-history-snapshot",
                    "messageId": u,
                    "snapshot": {"messageId": u, "trackedFileBackups": {}, "timestamp": _stamp(i)},
                    "isSnapshotUpdate": False,
                }
            )
            continue
        if i % 10 == 9:
            entry = {"type": "progress", "data": {"type": "hook_progress", "hookName": "lint"}}
        elif i % 4 == 0:
            entry = {"type": "user", "message": {"role": "user", "content": _say(rng, scale)}}
        elif i % 4 == 1:
            call = "toolu_" + _uuid(rng).replace("-", "")[:24]
            entry = {
                "type": "assistant",
                "message": {
                    "id": "msg_" + u[:8],
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "text", "text": _say(rng, scale)},
                        {"type": "tool_use", "id": call, "name": "Read", "input": {"path": "a.py"}},
                    ],
                },
            }
        elif i % 4 == 2:
            entry = {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call, "content": _say(rng, scale)}
                    ],
                },
            }
        else:
            entry = {
                "type": "assistant",
                "message": {
                    "id": "msg_" + u[:8],
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": _say(rng, scale)}],
                },
            }
        out.append({"parentUuid": prev, **common, **entry, "uuid": u})
        prev = u
    return out


def pi_lines(n: int, seed: int = 2, scale: int = 1) -> list[dict[str, Any]]:
    """A pi v3 session: a header and ``n - 1`` entries, each text ``scale`` times over."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": _uuid(rng), "timestamp": _stamp(0), "cwd": "/work"}
    ]
    prev: str | None = None
    call = ""
    seen: set[str] = set()
    for i in range(1, n):
        eid = "%08x" % rng.getrandbits(32)  # noqa: UP031
        while (
            eid in seen
        ):  # pi's 8-hex ids collide by chance in 1e5 entries; a runtime re-draws too
            eid = "%08x" % rng.getrandbits(32)  # noqa: UP031
        seen.add(eid)
        if i % 3 == 1:
            msg: dict[str, Any] = {
                "role": "user",
                "content": [{"type": "text", "text": _say(rng, scale)}],
            }
        elif i % 3 == 2:
            call = "toolu_" + eid
            msg = {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": _say(rng, scale)},
                    {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "a"}},
                ],
            }
        else:
            msg = {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": "read",
                "content": [{"type": "text", "text": _say(rng, scale)}],
                "isError": False,
            }
        out.append(
            {"type": "message", "id": eid, "parentId": prev, "timestamp": _stamp(i), "message": msg}
        )
        prev = eid
    return out


def codex_lines(n: int, seed: int = 3, scale: int = 1) -> list[dict[str, Any]]:
    """A Codex rollout: ``session_meta`` and ``n - 1`` lines, each text ``scale`` times over."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {
            "timestamp": _stamp(0),
            "type": "session_meta",
            "payload": {
                "id": _uuid(rng),
                "timestamp": _stamp(0),
                "cwd": "/work",
                "cli_version": "0.89.0",
            },
        }
    ]
    call = ""
    for i in range(1, n):
        k = i % 5
        if k == 1:
            p: dict[str, Any] = {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": _say(rng, scale)}],
            }
        elif k == 2:
            call = "call_" + _uuid(rng).replace("-", "")[:24]
            p = {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"ls"}',
                "call_id": call,
            }
        elif k == 3:
            p = {"type": "function_call_output", "call_id": call, "output": _say(rng, scale)}
        elif k == 4:
            p = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": _say(rng, scale)}],
            }
        else:
            out.append(
                {
                    "timestamp": _stamp(i),
                    "type": "event_msg",
                    "payload": {"type": "token_count", "info": None},
                }
            )
            continue
        out.append({"timestamp": _stamp(i), "type": "response_item", "payload": p})
    return out


FORMATS: dict[str, tuple[Callable[[int], list[dict[str, Any]]], Any]] = {
    "claude-code": (claude_code_lines, claude_code.import_file),
    "pi": (pi_lines, pi.import_file),
    "codex": (codex_lines, codex.import_file),
}


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _read_parse(paths: list[Path]) -> int:
    count = 0
    for p in paths:
        with open(p, "rb") as f:
            for line in f:
                if line.strip():
                    orjson.loads(line)
                    count += 1
    return count


def _run(
    bench: Bench, directory: Path, label: str, size: int, files: list[Path], importer: Any
) -> None:
    state: dict[str, Any] = {}
    k = iter(range(10**6))

    def fresh() -> None:
        if "store" in state:
            state["store"].close()
        state["store"] = SessionStore(scratch_db(directory, f"import-{next(k) % 2}.db"))

    def do_import() -> None:
        state["nodes"] = sum(importer(state["store"], f).nodes_added for f in files)

    def do_paths() -> None:
        report = import_paths(state["store"], files)
        bad = [f.error for f in report.files if f.error]
        assert not bad, bad
        state["nodes"] = sum(f.nodes_added for f in report.files)

    run = do_paths if importer is None else do_import
    fresh()
    rows: list[Any] = []
    real_insert = state["store"]._db_insert_nodes
    state["store"]._db_insert_nodes = lambda batch: (rows.extend(batch), real_insert(batch))
    run()
    nodes = state["nodes"]
    sessions = sorted({r.session_id for r in rows})
    node_rows = [r[:7] for r in rows]
    said = [(r.text, r.id) for r in rows if r.text]

    def floor_store() -> None:
        fresh()
        for sid in sessions:
            state["store"].create_session("", id=sid)

    def parse_and_insert() -> None:
        _read_parse(files)
        conn = state["store"].conn  # autocommit mode: the transaction is opened here
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_INSERT_NODE, node_rows)
        conn.executemany(
            "INSERT INTO node_text (rowid, text) SELECT seq, ? FROM nodes WHERE id=?", said
        )
        conn.execute("COMMIT")

    g = f"import {label}"
    alts = [
        Alt("import into a fresh store", run, fresh, per=size),
        Alt("floor: read + orjson.loads every line", lambda: _read_parse(files), per=size),
        Alt(
            "floor: read + parse + bare executemany of its rows",
            parse_and_insert,
            floor_store,
            per=size,
        ),
    ]
    imp, *_ = bench.compare(g, size, alts)
    imp.note = f"{nodes:,} nodes stored"
    state["store"].close()
    bench.target(
        f"import {label} {size:,} / read-and-parse",
        bench.ratio(g, "import into a fresh store", "floor: read + orjson.loads every line", size),
        "<=",
        3,
    )
    bench.target(
        f"import {label} {size:,} / read, parse and bare executemany",
        bench.ratio(g, "import into a fresh store", alts[2].name, size),
        "<=",
        2,
    )


_GROWTH = 10
"""Lines appended before each timed re-import."""


def _run_grown(bench: Bench, directory: Path, size: int, fmt: str = "claude-code") -> None:
    """Re-import a file of ``size`` entries of ``fmt`` after it grew by :data:`_GROWTH` lines.

    Before: the whole file read and every rule re-run (``resume=False``). After: resumed from the
    stored offset and state, with the store warm (a watcher's long-lived store) and cold (a store
    opened just before, as one ``sessiongraph import`` run). The floor reads and parses the new lines.
    """
    repeats = max(5, bench.repeats)
    make, importer = FORMATS[fmt]
    lines = make(size + _GROWTH * 4 * (repeats + 2))
    path = _write(directory / f"grown-{fmt}-{size}.jsonl", lines[:size])
    db = scratch_db(directory, f"grown-{fmt}-{size}.db")
    state: dict[str, Any] = {"store": SessionStore(db), "at": size}
    with bench.timed(f"import {fmt} {size:.0e} before growing it"):
        importer(state["store"], path)

    def grow() -> None:
        new = lines[state["at"] : state["at"] + _GROWTH]
        state["at"] += _GROWTH
        with path.open("ab") as f:
            f.write(b"".join(orjson.dumps(line) + b"\n" for line in new))

    def cold() -> None:
        state["store"].close()
        state["store"] = SessionStore(db)
        grow()

    def reimport(resume: bool) -> Callable[[], None]:
        def run() -> None:
            report = importer(state["store"], path, resume=resume)
            assert report.nodes_added > 0, report

        return run

    sample = b"".join(orjson.dumps(line) + b"\n" for line in lines[size : size + _GROWTH])

    def parse_new() -> None:
        for raw in sample.splitlines():
            orjson.loads(raw)

    g = f"re-import {fmt} grown by 10 lines"
    before, warm, cold_r, _ = bench.compare(
        g,
        size,
        [
            Alt("before: read the whole file, re-run every rule", reimport(False), grow),
            Alt("after: resume from the stored offset (warm store)", reimport(True), grow),
            Alt("after: resume, store opened just before (cold)", reimport(True), cold),
            Alt("floor: parse the new lines", parse_new),
        ],
        repeats=repeats,
    )
    state["store"].close()
    floor = bench.get(g, "floor: parse the new lines", size).median
    warm.note = f"{before.median / warm.median:.0f}x faster than before"
    cold_r.note = "includes the store's cold index build (add_nodes)"
    bench.target(
        f"re-import {fmt} grown {size:,}: resumed (warm) minus parsing the new lines",
        (warm.median - floor) * 1e3,
        "<=",
        10,
        "ms",
    )


_PEAK = """
import sys, tracemalloc
from pathlib import Path
from graph import SessionStore
from graph.importers import claude_code, codex, pi

importer = {"claude-code": claude_code, "pi": pi, "codex": codex}[sys.argv[3]]

def status(field):
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(field + ":"):
            return int(row.split()[1])  # KiB
    raise SystemExit(f"no {field} in /proc/self/status")

store = SessionStore(Path(sys.argv[2]))
before = status("VmRSS")
report = importer.import_file(store, Path(sys.argv[1]))
peak = status("VmHWM")  # this process's own high-water mark (ru_maxrss would count the parent's)
store.close()
store = SessionStore(Path(sys.argv[2]))
tracemalloc.start()
store.index(report.session_ids[0])
index = tracemalloc.get_traced_memory()[0] // 1024
print(before, peak, index, report.nodes_added)
"""


def _peak_mib(path: Path, db: Path, fmt: str = "claude-code") -> tuple[float, float, int]:
    """In a process of its own: (peak resident memory the import added, the index's size, nodes).

    Both in MiB: ``VmHWM`` after the import minus ``VmRSS`` before it (``ru_maxrss`` is not used:
    a child process inherits its parent's figure), and the memory a fresh build of the session's
    index allocates (traced by ``tracemalloc``).
    """
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path), str(db), fmt],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    before, peak, index, nodes = (int(x) for x in out)
    return (peak - before) / 1024, index / 1024, nodes


def _run_memory(bench: Bench, directory: Path, sizes: list[int], fmt: str = "claude-code") -> None:
    """Peak memory of importing a file of format ``fmt``, at each size, each in a fresh process.

    The peak resident size during the import minus the resident size before it (the store open,
    the modules loaded): what the import itself holds at its peak, the session's index included;
    the index's own size is measured beside it. The bar: at most 100 MiB beyond the index, flat in
    file size. Each size's line says how much the figure grew per 10,000 more entries.
    """
    figures: list[tuple[int, float, float]] = []

    def peak(n: int, scale: int = 1) -> tuple[Path, float, float, int]:
        path = directory / f"peak-{fmt}-{n}-x{scale}.jsonl"
        # Written by a child too: the lines generated here would stay in this process's memory.
        subprocess.run(
            [sys.executable, __file__, "--write", fmt, str(n), str(path), str(scale)],
            check=True,
        )
        db = scratch_db(directory, f"peak-{fmt}-{n}-x{scale}.db")
        return path, *_peak_mib(path, db, fmt)

    for n in sizes:
        path, mib, index, nodes = peak(n)
        growth = ""
        if figures:
            n0, mib0, index0 = figures[-1]
            per = 1e4 / (n - n0)
            beyond = ((mib - index) - (mib0 - index0)) * per
            growth = (
                f"; per 1e4 more entries: +{(mib - mib0) * per:.1f} MiB,"
                f" +{beyond:.1f} MiB beyond the index ({beyond * 2**20 / 1e4:.0f} B per entry)"
            )
        figures.append((n, mib, index))
        print(
            f"peak memory, {fmt} import of {n:,} entries"
            f" ({path.stat().st_size / 2**20:.1f} MiB of file, {nodes:,} nodes):"
            f" +{mib:.0f} MiB, the index {index:.0f} MiB of it{growth}"
        )
    n, mib, index = figures[-1]
    bench.target(
        f"peak memory importing {fmt} {n:,} entries, beyond the index",
        mib - index,
        "<=",
        100,
        "MiB",
    )
    first = figures[0][1] - figures[0][2]
    bench.target(
        f"peak memory beyond the index, {fmt} {sizes[0]:,} -> {n:,} entries"
        f" (size x{n / sizes[0]:.3g}; flat is 1x)",
        (mib - index) / max(first, 1.0),
        "<=",
        1.5,
    )
    # The same entries with every text twenty times as long: the file's bytes grow, its entries not.
    n, mib, index = figures[len(figures) // 2]
    path, big, big_index, _ = peak(n, 20)
    small_bytes = (directory / f"peak-{fmt}-{n}-x1.jsonl").stat().st_size
    print(
        f"peak memory, {fmt} import of {n:,} entries with 20x texts"
        f" ({path.stat().st_size / 2**20:.1f} MiB of file against {small_bytes / 2**20:.1f}):"
        f" +{big:.0f} MiB, the index {big_index:.0f} MiB of it"
    )
    bench.target(
        f"peak memory beyond the index, {fmt} {n:,} entries, file bytes"
        f" x{path.stat().st_size / small_bytes:.2g}"
        " (the same entries, longer texts; flat is 1x)",
        (big - big_index) / max(mib - index, 1.0),
        "<=",
        1.5,
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the import benchmarks and return the JSON-shaped results."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--write"]:  # the memory runs' files, written in a child process
        make = FORMATS[argv[1]][0]
        _write(Path(argv[3]), make(int(argv[2]), scale=int(argv[4])))
        return {}
    args = parse_args(__doc__.splitlines()[0], argv, _memory_options)
    sizes = [200] if args.smoke else [2_000] if args.quick else [10_000, 100_000]
    bench = Bench("import", args.quick, args.repeats)
    peak_sizes = [2_000, 5_000] if args.smoke else [5_000, 20_000, 50_000]
    peak_sizes = peak_sizes if args.quick else [20_000, 50_000, 100_000]
    if args.memory_sizes:
        peak_sizes = [int(float(x)) for x in args.memory_sizes.split(",")]
    memory_formats = (args.memory_formats or ",".join(FORMATS)).split(",")

    def run_memory(directory: Path) -> None:
        for fmt in memory_formats:
            # pi and Codex at two sizes: their rows add the format, not another size.
            _run_memory(
                bench, directory, peak_sizes if fmt == "claude-code" else peak_sizes[:2], fmt
            )

    with scratch_dir(args.dir) as directory:
        if args.memory_only:
            run_memory(directory)
            return bench.finish(args.json)
        if CORPUS.is_dir():
            files = sorted(CORPUS.glob("*/*.jsonl"))
            entries = _read_parse(files)
            _run(bench, directory, f"corpus ({len(files)} files)", entries, files, None)
        else:
            bench.skip("the real corpus", f"corpus not found at {CORPUS}")
        for fmt, (make, importer) in FORMATS.items():
            for n in sizes:
                with bench.timed(f"generate {fmt} {n:.0e}"):
                    path = _write(directory / f"gen-{fmt}-{n}.jsonl", make(n))
                _run(bench, directory, f"{fmt} generated", n, [path], importer)
        for fmt in FORMATS:
            for n in sizes:
                _run_grown(bench, directory, n, fmt)
        run_memory(directory)
    return bench.finish(args.json)


def _memory_options(p: Any) -> None:
    p.add_argument("--memory-only", action="store_true", help="run only the peak-memory part")
    p.add_argument(
        "--memory-formats",
        metavar="FMT,...",
        help="the formats of the peak-memory part (default: claude-code,pi,codex)",
    )
    p.add_argument(
        "--memory-sizes",
        metavar="N,N,...",
        help="the entry counts of the peak-memory part, smallest first (default: 2e4,5e4,1e5; "
        "quick: 5e3,2e4,5e4); the flatness target compares the first with the last",
    )


if __name__ == "__main__":
    main()

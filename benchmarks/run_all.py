"""Run every benchmark in turn, sharing one scratch directory, and collect their JSON.

``python benchmarks/run_all.py --quick`` finishes in a few minutes at most (each script under a minute
on an idle machine); without ``--quick`` it runs the full sizes (1e6-node sessions, 1e5-entry
transcripts) and takes several minutes. ``--json PATH`` writes one file holding every script's
results, the targets table and the machine; ``--only index,pending`` runs a subset.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_append  # noqa: E402
import bench_import  # noqa: E402
import bench_index  # noqa: E402
import bench_mark  # noqa: E402
import bench_peer  # noqa: E402
import bench_pending  # noqa: E402
import bench_search  # noqa: E402
from _harness import console, machine, scratch_dir  # noqa: E402
from rich.table import Table  # noqa: E402

SCRIPTS = {
    "index": bench_index.main,
    "pending": bench_pending.main,
    "mark": bench_mark.main,
    "append": bench_append.main,
    "import": bench_import.main,
    "peer": bench_peer.main,
    "search": bench_search.main,
}


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the selected benchmarks; return (and optionally write) the combined results."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dir", help="scratch directory (kept, so generated files are reused)")
    p.add_argument("--only", help="comma-separated subset of: " + ", ".join(SCRIPTS))
    args = p.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(SCRIPTS)
    unknown = [c for c in chosen if c not in SCRIPTS]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}")
    out: dict[str, object] = {"machine": machine(), "mode": "quick" if args.quick else "full"}
    seconds: dict[str, float] = {}
    targets: list[dict[str, object]] = []
    failed: list[str] = []
    with scratch_dir(args.dir) as directory:
        for name in chosen:
            argv_one = ["--repeats", str(args.repeats), "--dir", str(directory)]
            if args.quick:
                argv_one.append("--quick")
            start = time.perf_counter()
            try:
                got = SCRIPTS[name](argv_one)
            except Exception as e:  # one failing script must not lose the others' figures
                console.print_exception()
                out[name] = {"error": f"{type(e).__name__}: {e}"}
                failed.append(name)
                continue
            finally:
                seconds[name] = time.perf_counter() - start
            out[name] = got
            targets += [{"bench": name, **t} for t in got["targets"]]  # type: ignore[dict-item]
            if args.json:  # written after every script, so an interrupted run keeps what it has
                Path(args.json).parent.mkdir(parents=True, exist_ok=True)
                Path(args.json).write_text(json.dumps(out, indent=2))
    out["seconds"] = seconds
    out["targets"] = targets
    out["failed"] = failed
    table = Table(title="every target")
    for col in ("bench", "target", "measured", "bound", "met"):
        table.add_column(col)
    for t in targets:
        table.add_row(
            str(t["bench"]),
            str(t["name"]),
            f"{t['ratio']:.3g}{t['unit']}",
            f"{t['op']} {t['limit']:g}{t['unit']}",
            "[green]met[/]" if t["met"] else "[red]missed[/]",
        )
    console.print(table)
    console.print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
        raise SystemExit(1)
    return out


if __name__ == "__main__":
    main()

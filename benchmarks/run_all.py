"""Run every benchmark in turn, sharing one scratch directory, and print one table of every target.

``python benchmarks/run_all.py --quick`` runs every script at its small sizes (a few minutes on two
shared cores); without ``--quick`` it runs the full sizes (1e6-node sessions, 1e5-entry
transcripts) and takes much longer. ``--json PATH`` writes one file holding every script's results,
the targets and the machine with the load it ran under; ``--only index,pending`` runs a subset;
``--readme`` also prints the Markdown table the README's performance section shows;
``--from-json PATH`` prints the tables of a saved run without running anything.

``--smoke`` runs every script at its smallest sizes with two timed runs per measurement (under 30 s
for all of them on an idle two-core machine): every alternative is measured and every target gets a
verdict, so the test suite can check that every script works. Smoke figures mean nothing and never
go into the README (``--readme`` refuses them).

Every target gets a verdict: ``met``, ``missed``, or ``noisy`` when the spread of its figure
(p25-p75 of the interleaved runs) straddles its bound, so this run cannot judge it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_append  # noqa: E402
import bench_cli_start  # noqa: E402
import bench_import  # noqa: E402
import bench_index  # noqa: E402
import bench_langgraph_saver  # noqa: E402
import bench_mark  # noqa: E402
import bench_memory_views  # noqa: E402
import bench_memory_write  # noqa: E402
import bench_peer  # noqa: E402
import bench_pending  # noqa: E402
import bench_postgres  # noqa: E402
import bench_read  # noqa: E402
import bench_search  # noqa: E402
import bench_serve  # noqa: E402
import crash_memory_write  # noqa: E402
from _harness import (  # noqa: E402
    VERDICT_STYLE,
    Bench,
    console,
    load,
    machine,
    parse_args,
    scratch_dir,
)
from rich.table import Table  # noqa: E402

__all__ = ["SCRIPTS", "main", "readme_table"]


def crash_main(argv: list[str] | None = None) -> dict[str, Any]:
    """``crash_memory_write`` as a benchmark: kill-and-rerun trials, every one must pass the oracle.

    Smoke mode runs 1 trial, quick mode 5, full mode 30 (the script's own default).
    """
    args = parse_args("memory write killed at random moments", argv)
    trials = 1 if args.smoke else 5 if args.quick else 30
    bench = Bench("memory write, SIGKILL at random moments", args.quick, 1)
    with tempfile.TemporaryDirectory(prefix="sg-crash-", dir=args.dir) as d:
        with bench.timed(f"{trials} trials"):
            got = crash_memory_write.run_trials(Path(d), trials, 1)
    killed = sum(t.killed for t in got)
    bench.target(
        f"trials failing the oracle (of {len(got)}, {killed} killed mid-write)",
        sum(not t.ok for t in got),
        "<=",
        0,
        " trials",
        floor="the id-set oracle",
    )
    return bench.finish(args.json)


SCRIPTS: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "index": bench_index.main,
    "pending": bench_pending.main,
    "mark": bench_mark.main,
    "append": bench_append.main,
    "import": bench_import.main,
    "peer": bench_peer.main,
    "cli_start": bench_cli_start.main,
    "search": bench_search.main,
    "read": bench_read.main,
    "serve": bench_serve.main,
    "langgraph_saver": bench_langgraph_saver.main,
    "memory_write": bench_memory_write.main,
    "memory_views": bench_memory_views.main,
    "crash_memory_write": crash_main,
    "postgres": bench_postgres.main,
}
"""Every script of ``benchmarks/``, by the name ``--only`` takes."""


def _bar(t: dict[str, Any]) -> str:
    return f"{t['op']} {t['limit']:g}{t['unit']}"


def _figure(t: dict[str, Any]) -> str:
    return f"{t['ratio']:.3g}{t['unit']}"


def _spread(t: dict[str, Any]) -> str:
    if t.get("low") is None or t.get("high") is None:
        return ""
    return f"{t['low']:.3g}-{t['high']:.3g}{t['unit']}"


def _verdict(t: dict[str, Any]) -> str:
    if "verdict" in t:
        return str(t["verdict"])
    return "met" if t["met"] else "missed"  # a JSON file written before verdicts existed


def _load(loads: list[float] | None) -> str:
    return ", ".join(f"{x:.2f}" for x in loads) if loads else "unknown"


def readme_table(out: dict[str, Any]) -> str:
    """The Markdown the README's performance section shows: the run's facts, then every target.

    Raises:
        ValueError: ``out`` is a smoke run, whose figures never go into the README.
    """
    if out["mode"] == "smoke":
        raise ValueError("a smoke run's figures only show the scripts run: not for the README")
    m = out["machine"]
    lines = [
        f"`python benchmarks/run_all.py{' --quick' if out['mode'] == 'quick' else ''}` "
        f"({out['mode']} mode) on {m['nproc']} CPUs ({m['cpu'] or 'unknown CPU'}), Python "
        f"{m['python']}, SQLite {m['sqlite']}, {m['platform']}; load average (1, 5, 15 min) "
        f"{_load(out.get('load', {}).get('start'))} at the start, "
        f"{_load(out.get('load', {}).get('end'))} at the end. Figures are medians of interleaved "
        "runs; the spread is their p25-p75; *noisy* means the spread straddles the bar.",
        "",
        "| bench | measure | figure | spread | against | bar | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    icon = {"met": "met ✅", "missed": "missed ❌", "noisy": "too noisy to judge ⚠️"}
    for t in out["targets"]:
        cells = [
            str(t["bench"]),
            str(t["name"]),
            _figure(t),
            _spread(t),
            str(t.get("floor", "")),
            _bar(t),
            icon[_verdict(t)],
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    for name in out.get("failed", []):
        lines.append(f"| {name} | the script failed: {out[name]['error']} | | | | | ❌ |")
    for name, why in out.get("skipped", {}).items():
        lines.append(f"| {name} | skipped: {why} | | | | | |")
    return "\n".join(lines)


def _print(out: dict[str, Any], readme: bool) -> None:
    table = Table(title=f"every target ({out['mode']} mode)")
    for col in ("bench", "measure", "figure", "p25-p75", "against", "bar", "verdict"):
        table.add_column(col)
    for t in out["targets"]:
        table.add_row(
            str(t["bench"]),
            str(t["name"]),
            _figure(t),
            _spread(t),
            str(t.get("floor", "")),
            _bar(t),
            VERDICT_STYLE[_verdict(t)],
        )
    console.print(table)
    for name, why in out.get("skipped", {}).items():
        console.print(f"{name}: skipped: {why}")
    m = out["machine"]
    console.print(
        f"machine: {m['nproc']} CPUs, {m['cpu']}; load average "
        f"{_load(out.get('load', {}).get('start'))} at the start, "
        f"{_load(out.get('load', {}).get('end'))} at the end"
    )
    if "seconds" in out:
        console.print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in out["seconds"].items()))
    if readme:
        print(readme_table(out))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the selected benchmarks; return (and optionally write) the combined results."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--smoke", action="store_true", help="smallest sizes, 2 runs: check every script runs"
    )
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dir", help="scratch directory (kept, so generated files are reused)")
    p.add_argument("--only", help="comma-separated subset of: " + ", ".join(SCRIPTS))
    p.add_argument("--readme", action="store_true", help="also print the README's Markdown table")
    p.add_argument("--from-json", metavar="PATH", help="print the tables of a saved run")
    args = p.parse_args(argv)
    if args.from_json:
        saved: dict[str, Any] = json.loads(Path(args.from_json).read_text())
        if args.readme and saved.get("mode") == "smoke":
            p.error("--readme: a smoke run's figures never go into the README")
        _print(saved, args.readme)
        return saved
    chosen = args.only.split(",") if args.only else list(SCRIPTS)
    unknown = [c for c in chosen if c not in SCRIPTS]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}")
    if args.smoke and args.readme:
        p.error("--readme: a smoke run's figures never go into the README")
    out: dict[str, Any] = {
        "machine": machine(),
        "mode": "smoke" if args.smoke else "quick" if args.quick else "full",
        "load": {"start": list(load())},
    }
    seconds: dict[str, float] = {}
    targets: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    failed: list[str] = []

    def save() -> None:
        if args.json:  # written after every script, so an interrupted run keeps what it has
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(out, indent=2))

    with scratch_dir(args.dir) as directory:
        for name in chosen:
            argv_one = ["--repeats", str(args.repeats), "--dir", str(directory)]
            if args.smoke:
                argv_one.append("--smoke")
            elif args.quick:
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
            targets += [{"bench": name, **t} for t in got["targets"]]
            skipped |= {f"{name}: {what}": why for what, why in got.get("skipped", {}).items()}
            save()
    out["load"]["end"] = list(load())
    out["seconds"] = seconds
    out["targets"] = targets
    out["skipped"] = skipped
    out["failed"] = failed
    out["verdicts"] = {
        v: sum(_verdict(t) == v for t in targets) for v in ("met", "missed", "noisy")
    }
    _print(out, args.readme)
    save()
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
        raise SystemExit(1)
    return out


if __name__ == "__main__":
    main()

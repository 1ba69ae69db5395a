"""Shared benchmark harness: repeats, median/min/max, a rich table, targets and JSON output.

Every script measures alternatives inside one run, so the figures that matter are ratios (this store
against its floor or its peer) and hold on a noisy machine. Each measurement runs a warm-up, then at
least five timed runs; the table shows the median with the min and max.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = [
    "Alt",
    "Bench",
    "Result",
    "Target",
    "fmt_seconds",
    "interleaved",
    "machine",
    "measure",
    "parse_args",
    "scratch_db",
    "scratch_dir",
]

console = Console(width=max(Console().width, 150))


@dataclass
class Result:
    """One measured subject: the runs in seconds and what was measured."""

    group: str
    """What is compared (the rows of one group are alternatives to each other)."""
    name: str
    """The alternative."""
    size: int
    """The data size the measurement ran on (nodes, entries, checkpoints)."""
    runs: list[float]
    """Seconds per run, warm-up excluded."""
    per: int = 1
    """Units one run handles (for per-unit figures: nodes walked, rows inserted)."""
    note: str = ""
    """A fact to print beside the time (how many nodes a pending variant returned)."""

    @property
    def median(self) -> float:
        """The median run, in seconds."""
        return statistics.median(self.runs)

    @property
    def min(self) -> float:
        """The fastest run, in seconds."""
        return min(self.runs)

    @property
    def max(self) -> float:
        """The slowest run, in seconds."""
        return max(self.runs)


@dataclass
class Target:
    """One target of the issue with its measured ratio."""

    name: str
    ratio: float
    """The measured figure (a ratio unless ``unit`` says otherwise)."""
    limit: float
    """The target's bound."""
    op: str
    """``"<="``: the ratio must stay at or under the limit; ``">="``: at or over it."""
    unit: str = "x"

    @property
    def met(self) -> bool:
        """Whether the measured figure meets the target."""
        return self.ratio <= self.limit if self.op == "<=" else self.ratio >= self.limit


@dataclass
class Bench:
    """A benchmark run: its results, targets and the facts of the machine."""

    title: str
    quick: bool
    repeats: int
    results: list[Result] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent on untimed work (data generation), reported so full mode stays practical."""

    def measure(
        self,
        group: str,
        name: str,
        size: int,
        fn: Callable[[], Any],
        *,
        per: int = 1,
        setup: Callable[[], Any] | None = None,
        note: str = "",
        repeats: int | None = None,
    ) -> Result:
        """Time ``fn`` (after ``setup`` each run, untimed) and record the result."""
        runs = measure(fn, repeats=repeats or self.repeats, setup=setup)
        r = Result(group, name, size, runs, per, note)
        self.results.append(r)
        return r

    def compare(
        self, group: str, size: int, alts: list[Alt], *, repeats: int | None = None
    ) -> list[Result]:
        """Time alternatives round-robin (see :func:`interleaved`) and record their results."""
        got = interleaved(alts, repeats=repeats or self.repeats)
        out = [
            Result(group, a.name, size, r, a.per, a.note) for a, r in zip(alts, got, strict=True)
        ]
        self.results.extend(out)
        return out

    def get(self, group: str, name: str, size: int) -> Result:
        """Return a recorded result."""
        for r in self.results:
            if (r.group, r.name, r.size) == (group, name, size):
                return r
        raise KeyError((group, name, size))

    def ratio(self, group: str, name: str, base: str, size: int) -> float:
        """Median of ``name`` over median of ``base`` in the same group and size."""
        return self.get(group, name, size).median / self.get(group, base, size).median

    def target(self, name: str, ratio: float, op: str, limit: float, unit: str = "x") -> None:
        """Record a target and its measured ratio."""
        self.targets.append(Target(name, ratio, limit, op, unit))

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        """Time an untimed phase (data generation) and keep the seconds in :attr:`timings`."""
        t = time.perf_counter()
        yield
        self.timings[what] = self.timings.get(what, 0.0) + time.perf_counter() - t

    def print(self) -> None:
        """Print the results, grouped, with each row's ratio to the group's first row, then the targets."""
        table = Table(title=f"{self.title} ({'quick' if self.quick else 'full'} mode)")
        for col, just in (
            ("group", "left"),
            ("size", "right"),
            ("alternative", "left"),
            ("median", "right"),
            ("min", "right"),
            ("max", "right"),
            ("per unit", "right"),
            ("vs first", "right"),
            ("note", "left"),
        ):
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        first: dict[tuple[str, int], float] = {}
        last_group = None
        for r in self.results:
            key = (r.group, r.size)
            base = first.setdefault(key, r.median)
            if last_group is not None and key != last_group:
                table.add_section()
            last_group = key
            table.add_row(
                r.group,
                f"{r.size:,}",
                r.name,
                fmt_seconds(r.median),
                fmt_seconds(r.min),
                fmt_seconds(r.max),
                fmt_seconds(r.median / r.per) if r.per > 1 else "",
                f"{r.median / base:.3g}x",
                r.note,
            )
        console.print(table)
        if self.targets:
            t = Table(title="targets")
            for col in ("target", "measured", "bound", "met"):
                t.add_column(col)
            for g in self.targets:
                t.add_row(
                    g.name,
                    f"{g.ratio:.3g}{g.unit}",
                    f"{g.op} {g.limit:g}{g.unit}",
                    "[green]met[/]" if g.met else "[red]missed[/]",
                )
            console.print(t)
        if self.timings:
            console.print(
                "untimed: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items())
            )

    def to_json(self) -> dict[str, Any]:
        """The run as a JSON-shaped dict (machine, results with median/min/max, targets)."""
        return {
            "title": self.title,
            "mode": "quick" if self.quick else "full",
            "repeats": self.repeats,
            "machine": machine(),
            "results": [
                {**asdict(r), "median": r.median, "min": r.min, "max": r.max} for r in self.results
            ],
            "targets": [{**asdict(t), "met": t.met} for t in self.targets],
            "untimed_seconds": self.timings,
        }

    def finish(self, json_path: str | None) -> dict[str, Any]:
        """Print the tables and write the JSON file when asked; return the JSON-shaped dict."""
        self.print()
        data = self.to_json()
        if json_path:
            Path(json_path).parent.mkdir(parents=True, exist_ok=True)
            Path(json_path).write_text(json.dumps(data, indent=2))
        return data


@dataclass
class Alt:
    """One alternative of a comparison."""

    name: str
    fn: Callable[[], Any]
    """What is timed."""
    setup: Callable[[], Any] | None = None
    """Run before each timed call, untimed (fresh data for a write)."""
    per: int = 1
    note: str = ""


def measure(
    fn: Callable[[], Any], *, repeats: int = 5, setup: Callable[[], Any] | None = None
) -> list[float]:
    """Run ``fn`` once to warm up, then ``repeats`` times; return the timed runs in seconds."""
    return interleaved([Alt("", fn, setup)], repeats=repeats)[0]


def interleaved(alts: list[Alt], *, repeats: int = 5) -> list[list[float]]:
    """Warm each alternative up, then time them round-robin; return each one's runs in seconds.

    Round-robin (A, B, A, B, ...) spreads the load of a busy machine over every alternative alike, so
    their ratio holds even when the absolute figures drift. Very fast functions run in a loop so each
    timed run lasts at least ~2 ms, and the figure is the time of one call. The cyclic GC is collected
    before each run so one run's garbage does not land in the next.
    """
    loops: list[int] = []
    for a in alts:
        if a.setup is not None:
            a.setup()
        t = time.perf_counter()
        a.fn()
        once = time.perf_counter() - t
        fast = a.setup is None and once < 2e-3
        loops.append(max(1, int(2e-3 / max(once, 1e-7))) if fast else 1)
    runs: list[list[float]] = [[] for _ in alts]
    for _ in range(max(5, repeats)):
        for a, k, out in zip(alts, loops, runs, strict=True):
            if a.setup is not None:
                a.setup()
            gc.collect()
            t = time.perf_counter()
            for _ in range(k):
                a.fn()
            out.append((time.perf_counter() - t) / k)
    return runs


def fmt_seconds(s: float) -> str:
    """Format seconds with a unit that keeps three significant digits."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def machine() -> dict[str, Any]:
    """The facts of the machine a run happened on."""
    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the common options: ``--quick``, ``--json PATH``, ``--repeats N``, ``--dir``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--quick", action="store_true", help="small sizes, finishes in well under a minute"
    )
    p.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (min 5)")
    p.add_argument("--dir", help="where to put the scratch databases (default: a temporary dir)")
    args = p.parse_args(argv)
    args.repeats = max(5, args.repeats)
    return args


@contextmanager
def scratch_dir(where: str | None) -> Iterator[Path]:
    """``where`` (created, kept: its files are reused by later runs), or a temporary directory."""
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        yield Path(where)
        return
    with tempfile.TemporaryDirectory(prefix="sg-bench-") as d:
        yield Path(d)


def scratch_db(directory: Path, name: str) -> Path:
    """A fresh database path in ``directory`` (any old file and its WAL removed)."""
    p = directory / name
    for suffix in ("", "-wal", "-shm"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    return p

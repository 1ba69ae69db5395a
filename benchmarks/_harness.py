"""Shared benchmark harness: repeats, medians with their spread, a rich table, targets and JSON.

Every script measures alternatives inside one run, so the figures that matter are ratios (this store
against its floor or its peer) and hold on a noisy machine. Each measurement runs a warm-up, then at
least five timed runs, the alternatives of a comparison round-robin (floors too); the table shows
the median with its interquartile spread (p25-p75) and the min and max.

A target's figure carries its spread: :meth:`Bench.ratio` and :attr:`Result.median` return a
:class:`Figure`, a float that keeps the samples it is the median of (the per-round ratios of two
interleaved alternatives), and arithmetic with plain numbers or other figures keeps them. A target
whose spread straddles its bound gets the verdict ``noisy`` ("too noisy to judge") instead of
``met`` or ``missed``.

Smoke mode (``--smoke``, which implies ``--quick``) runs each script's whole code path, every
alternative measured and every target computed and judged, at the smallest sizes and with
:data:`SMOKE_REPEATS` timed runs per measurement, so a test can run every script in seconds. Its
figures only show that the code runs: they are never what the README reports.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import operator
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = [
    "Alt",
    "Bench",
    "Figure",
    "Result",
    "SMOKE_REPEATS",
    "Target",
    "VERDICT_STYLE",
    "fmt_seconds",
    "interleaved",
    "load",
    "machine",
    "measure",
    "parse_args",
    "quartiles",
    "scratch_db",
    "scratch_dir",
    "smoke",
]

console = Console(width=max(Console().width, 150))

SMOKE_REPEATS = 2
"""Timed runs per measurement in smoke mode, whatever a script asks for (quick and full: at least 5)."""

_smoke = False
"""Whether the running script was started with ``--smoke`` (set by :func:`parse_args`)."""


def smoke() -> bool:
    """Whether the running script is in smoke mode (``--smoke``: see the module docstring)."""
    return _smoke


def quartiles(samples: list[float] | tuple[float, ...]) -> tuple[float, float]:
    """The 25th and 75th percentiles of ``samples`` (inclusive method; one sample: itself twice)."""
    if len(samples) < 2:
        return (samples[0], samples[0]) if samples else (math.nan, math.nan)
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return q[0], q[2]


class Figure(float):
    """A measured figure (a median, a ratio of medians) that keeps the samples behind it.

    It is a float, so scripts use it as one; its :attr:`low` and :attr:`high` are the 25th and
    75th percentiles of :attr:`samples`. Multiplying or dividing by a plain number scales the
    samples; dividing one figure by another pairs their samples when both have as many (the rounds
    of one interleaved comparison), and otherwise takes the ratio of every pair of samples. Addition and subtraction
    return plain floats.
    """

    samples: tuple[float, ...]
    rounds: int
    """Which interleaved comparison the samples come from (0: none); equal ones pair by round."""
    floor: str
    """What a ratio is measured against (the base of :meth:`Bench.ratio`), ``""`` otherwise."""

    def __new__(
        cls, value: float, samples: Iterable[float] = (), rounds: int = 0, floor: str = ""
    ) -> Figure:
        f = super().__new__(cls, value)
        f.samples = tuple(samples)
        f.rounds = rounds
        f.floor = floor
        return f

    @property
    def low(self) -> float:
        """The 25th percentile of the samples (the figure itself without samples)."""
        return min(quartiles(self.samples)[0], float(self)) if self.samples else float(self)

    @property
    def high(self) -> float:
        """The 75th percentile of the samples (the figure itself without samples)."""
        return max(quartiles(self.samples)[1], float(self)) if self.samples else float(self)

    def _combine(self, other: object, op: Callable[[float, float], float]) -> Figure | float:
        value = op(float(self), float(other))  # type: ignore[arg-type]
        if isinstance(other, Figure):
            a, b = self.samples, other.samples
            if not a or not b:
                return Figure(value)
            paired = self.rounds and self.rounds == other.rounds and len(a) == len(b)
            pairs = zip(a, b, strict=True) if paired else itertools.product(a, b)
            return Figure(
                value,
                [op(x, y) for x, y in pairs if y or op is operator.mul],
                self.rounds if paired else 0,
                self.floor or other.floor,
            )
        if isinstance(other, int | float):
            return Figure(
                value, [op(x, float(other)) for x in self.samples], self.rounds, self.floor
            )
        return NotImplemented

    def __mul__(self, other: object) -> Figure | float:  # type: ignore[override]
        return self._combine(other, operator.mul)

    __rmul__ = __mul__  # type: ignore[assignment]

    def __truediv__(self, other: object) -> Figure | float:  # type: ignore[override]
        return self._combine(other, operator.truediv)

    def __rtruediv__(self, other: object) -> Figure | float:  # type: ignore[override]
        if isinstance(other, int | float):
            return Figure(
                float(other) / float(self),
                [other / x for x in self.samples if x],
                self.rounds,
                self.floor,
            )
        return NotImplemented

    def __reduce__(self) -> tuple[Any, ...]:
        return (Figure, (float(self), self.samples, self.rounds, self.floor))


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
    rounds: int = 0
    """The interleaved comparison the runs belong to (results of one comparison share it)."""

    @property
    def median(self) -> Figure:
        """The median run, in seconds (a :class:`Figure` keeping every run)."""
        return Figure(statistics.median(self.runs), self.runs, self.rounds)

    @property
    def p25(self) -> float:
        """The 25th percentile of the runs, in seconds."""
        return quartiles(self.runs)[0]

    @property
    def p75(self) -> float:
        """The 75th percentile of the runs, in seconds."""
        return quartiles(self.runs)[1]

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
    """One target of the issue with its measured ratio and that ratio's spread."""

    name: str
    ratio: float
    """The measured figure (a ratio unless ``unit`` says otherwise)."""
    limit: float
    """The target's bound."""
    op: str
    """``"<="``: the ratio must stay at or under the limit; ``">="``: at or over it."""
    unit: str = "x"
    low: float | None = None
    """The 25th percentile of the figure's samples (from a :class:`Figure` when not given)."""
    high: float | None = None
    """The 75th percentile of the figure's samples."""
    floor: str = ""
    """What the figure is measured against (the floor or peer of a ratio; from a
    :meth:`Bench.ratio` figure when not given), for the tables."""

    def __post_init__(self) -> None:
        if isinstance(self.ratio, Figure):
            if self.low is None and self.ratio.samples:
                self.low, self.high = self.ratio.low, self.ratio.high
            self.floor = self.floor or self.ratio.floor
            self.ratio = float(self.ratio)
        for name in ("limit", "low", "high"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, float(value))

    @property
    def met(self) -> bool:
        """Whether the measured figure (the median) meets the target."""
        return self.ratio <= self.limit if self.op == "<=" else self.ratio >= self.limit

    @property
    def noisy(self) -> bool:
        """Whether the spread straddles the bound: this run cannot say whether the target is met."""
        if self.low is None or self.high is None or self.low == self.high:
            return False
        return self.low <= self.limit <= self.high

    @property
    def verdict(self) -> str:
        """``"met"``, ``"missed"`` or ``"noisy"`` (too noisy to judge: see :attr:`noisy`)."""
        if self.noisy:
            return "noisy"
        return "met" if self.met else "missed"

    def spread(self) -> str:
        """The spread as text (``"1.2-1.6x"``), or ``""`` when the figure had no samples."""
        if self.low is None or self.high is None:
            return ""
        return f"{self.low:.3g}-{self.high:.3g}{self.unit}"


@dataclass
class Bench:
    """A benchmark run: its results, targets and the facts of the machine."""

    title: str
    quick: bool
    repeats: int
    smoke: bool = field(default_factory=smoke)
    """Whether this is a smoke run (figures that only show the code runs); from :func:`parse_args`."""
    results: list[Result] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent on untimed work (data generation), reported so full mode stays practical."""
    skipped: dict[str, str] = field(default_factory=dict)
    """What was not measured (what -> why), printed as ``skipped: why`` and kept in the JSON."""
    load_at_start: tuple[float, float, float] = field(default_factory=lambda: load())
    """The machine's load averages (1, 5, 15 minutes) when the run began."""

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
        rounds = next(_ROUNDS)
        out = [
            Result(group, a.name, size, r, a.per, a.note, rounds)
            for a, r in zip(alts, got, strict=True)
        ]
        self.results.extend(out)
        return out

    def record(
        self,
        group: str,
        size: int,
        runs: dict[str, list[float]],
        *,
        per: int = 1,
        notes: dict[str, str] | None = None,
    ) -> list[Result]:
        """Record alternatives the caller timed itself, round-robin, as one comparison.

        For what the harness cannot time in-process (several writer processes at once): ``runs``
        maps each alternative to its seconds per run, run ``i`` of each from the same round, so
        their ratios pair by round as :meth:`compare`'s do.
        """
        rounds = next(_ROUNDS)
        out = [
            Result(group, name, size, list(r), per, (notes or {}).get(name, ""), rounds)
            for name, r in runs.items()
        ]
        self.results.extend(out)
        return out

    def get(self, group: str, name: str, size: int) -> Result:
        """Return a recorded result."""
        for r in self.results:
            if (r.group, r.name, r.size) == (group, name, size):
                return r
        raise KeyError((group, name, size))

    def ratio(self, group: str, name: str, base: str, size: int) -> Figure:
        """Median of ``name`` over median of ``base`` in the same group and size.

        The :class:`Figure` returned keeps the per-round ratios of the two alternatives (or, when
        they were not timed in one comparison, the ratios of every pair of runs) as its spread.
        """
        got = self.get(group, name, size).median / self.get(group, base, size).median
        assert isinstance(got, Figure)
        got.floor = base
        return got

    def target(
        self,
        name: str,
        ratio: float,
        op: str,
        limit: float,
        unit: str = "x",
        *,
        floor: str = "",
        spread: tuple[float, float] | None = None,
    ) -> Target:
        """Record a target and its measured figure; return it.

        Args:
            name: What the target measures.
            ratio: The figure; a :class:`Figure` brings its spread along.
            op: ``"<="`` or ``">="``.
            limit: The bound.
            unit: The figure's unit (``"x"``, ``"%"``, ``"ms"``).
            floor: What the figure is measured against, for the tables.
            spread: ``(p25, p75)`` of the figure, when ``ratio`` is a plain float that had one.
        """
        low, high = spread if spread is not None else (None, None)
        t = Target(name, ratio, limit, op, unit, low, high, floor)
        self.targets.append(t)
        return t

    def skip(self, what: str, why: str) -> None:
        """Record (and print at once) that ``what`` was not measured, and why."""
        self.skipped[what] = why
        console.print(f"{what}: skipped: {why}")

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        """Time an untimed phase (data generation) and keep the seconds in :attr:`timings`."""
        t = time.perf_counter()
        yield
        self.timings[what] = self.timings.get(what, 0.0) + time.perf_counter() - t

    def print(self) -> None:
        """Print the results, grouped, with each row's ratio to the group's first row, then the targets."""
        table = Table(title=f"{self.title} ({self.mode} mode)")
        for col, just in (
            ("group", "left"),
            ("size", "right"),
            ("alternative", "left"),
            ("median", "right"),
            ("p25-p75", "right"),
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
                f"{fmt_seconds(r.p25)}-{fmt_seconds(r.p75)}",
                fmt_seconds(r.min),
                fmt_seconds(r.max),
                fmt_seconds(r.median / r.per) if r.per > 1 else "",
                f"{r.median / base:.3g}x",
                r.note,
            )
        console.print(table)
        if self.targets:
            t = Table(title="targets")
            for col in ("target", "measured", "p25-p75", "bound", "verdict"):
                t.add_column(col)
            for g in self.targets:
                t.add_row(
                    g.name,
                    f"{g.ratio:.3g}{g.unit}",
                    g.spread(),
                    f"{g.op} {g.limit:g}{g.unit}",
                    VERDICT_STYLE[g.verdict],
                )
            console.print(t)
        for what, why in self.skipped.items():
            console.print(f"{what}: skipped: {why}")
        if self.timings:
            console.print(
                "untimed: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items())
            )

    @property
    def mode(self) -> str:
        """``"smoke"``, ``"quick"`` or ``"full"``."""
        return "smoke" if self.smoke else "quick" if self.quick else "full"

    def to_json(self) -> dict[str, Any]:
        """The run as a JSON-shaped dict (machine, results with median/min/max, targets)."""
        return {
            "title": self.title,
            "mode": self.mode,
            "repeats": self.repeats,
            "machine": machine(),
            "load": {"start": list(self.load_at_start), "end": list(load())},
            "results": [
                {
                    **asdict(r),
                    "median": float(r.median),
                    "p25": r.p25,
                    "p75": r.p75,
                    "min": r.min,
                    "max": r.max,
                }
                for r in self.results
            ],
            "targets": [
                {**asdict(t), "met": t.met, "noisy": t.noisy, "verdict": t.verdict}
                for t in self.targets
            ],
            "skipped": self.skipped,
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
    timed run lasts at least ~2 ms (~0.2 ms in smoke mode), and the figure is the time of one call.
    There are at least 5 rounds; in smoke mode exactly :data:`SMOKE_REPEATS`, the warm-up being
    the first. The cyclic GC is collected
    before each run so one run's garbage does not land in the next.
    """
    least = 2e-4 if _smoke else 2e-3
    loops: list[int] = []
    runs: list[list[float]] = [[] for _ in alts]
    for a, out in zip(alts, runs, strict=True):
        if a.setup is not None:
            a.setup()
        t = time.perf_counter()
        a.fn()
        once = time.perf_counter() - t
        if _smoke:  # the warm-up is the first timed run: smoke figures mean nothing anyway
            out.append(once)
        fast = a.setup is None and once < least
        loops.append(max(1, int(least / max(once, 1e-7))) if fast else 1)
    for _ in range(SMOKE_REPEATS - 1 if _smoke else max(5, repeats)):
        for a, k, out in zip(alts, loops, runs, strict=True):
            if a.setup is not None:
                a.setup()
            gc.collect()
            t = time.perf_counter()
            for _ in range(k):
                a.fn()
            out.append((time.perf_counter() - t) / k)
    return runs


_ROUNDS = itertools.count(1)

VERDICT_STYLE = {
    "met": "[green]met[/]",
    "missed": "[red]missed[/]",
    "noisy": "[yellow]noisy: too noisy to judge[/]",
}
"""How the tables print each verdict."""


def load() -> tuple[float, float, float]:
    """The machine's load averages over 1, 5 and 15 minutes (NaN where the OS has none)."""
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - platforms without load averages
        return (math.nan, math.nan, math.nan)


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
        "load": list(load()),
        "cpu": model,
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


def parse_args(
    description: str,
    argv: list[str] | None = None,
    extra: Callable[[argparse.ArgumentParser], object] | None = None,
) -> argparse.Namespace:
    """Parse the common options: ``--quick``, ``--smoke``, ``--json PATH``, ``--repeats N``, ``--dir``.

    ``--smoke`` implies ``--quick`` (``args.quick`` is true too, so a script's quick choices hold
    where it makes no smaller one), sets ``args.repeats`` to :data:`SMOKE_REPEATS` and puts the
    harness in smoke mode for this process until the next call (see :func:`smoke`). ``extra``
    adds a script's own options to the parser.
    """
    global _smoke
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--quick", action="store_true", help="small sizes, finishes in well under a minute"
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="smallest sizes and 2 runs: checks every code path runs (implies --quick; "
        "its figures mean nothing)",
    )
    p.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (min 5)")
    p.add_argument("--dir", help="where to put the scratch databases (default: a temporary dir)")
    if extra is not None:
        extra(p)
    args = p.parse_args(argv)
    _smoke = args.smoke
    args.quick = args.quick or args.smoke
    args.repeats = SMOKE_REPEATS if args.smoke else max(5, args.repeats)
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

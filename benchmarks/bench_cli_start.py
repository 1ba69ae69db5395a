"""Start-up of the command line: ``sessiongraph --version``, ``--help`` and the quick commands on a small store.

Subject: a person waits for every command, so the quick ones must start quickly.
Each command runs as a fresh process, exactly as a shell runs it (the installed console script's
Python, ``-c "from graph.cli.launch import main; main()"``); the floor is ``python -c pass`` with the same
interpreter, timed in the same rounds (round-robin, so a busy machine slows them alike). The store
holds 20 sessions of 10 nodes. Targets: ``--version`` and ``sessions`` under 150 ms (median wall
time, interpreter start included), and what each quick command (``sessions``, ``recent``, ``read``,
``latest``, ``memory status`` on an empty workspace) adds to the bare interpreter: under 150 ms,
in wall time and in CPU time (the child's user + system time), which a busy shared machine inflates
far less than wall time. What a command adds is taken round by round (the command's run minus the
floor's run of the same round), so each figure carries its spread (p25-p75) and a spread that
straddles the bound is judged too noisy.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, Figure, parse_args, scratch_dir  # noqa: E402

from graph import Role, SessionStore  # noqa: E402

LAUNCH = "from graph.cli.launch import main; main()"


CPU: dict[str, list[float]] = {}
"""Each alternative's child CPU times (user + system, seconds), one per run, the warm-up first."""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process(*args: str, env: dict[str, str]) -> Alt:
    cmd = [sys.executable, *args]
    words = ["SESSION" if len(a) > 30 else a for a in args[2:]]
    label = "python -c pass" if args == ("-c", "pass") else "sessiongraph " + " ".join(words)
    cpu = CPU.setdefault(label, [])

    def run() -> None:
        before = _child_cpu()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        cpu.append(_child_cpu() - before)

    return Alt(label, run)


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the start-up benchmark and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    bench = Bench("command line start-up", args.quick, args.repeats if not args.quick else 5)
    g = "start a process"
    with scratch_dir(args.dir) as directory:
        db = Path(directory) / "start.db"
        with bench.timed("generate 20 sessions"):
            if not db.exists():
                store = SessionStore(db)
                for i in range(20):
                    sid = store.create_session(f"session {i}").id
                    for j in range(10):
                        store.append(sid, f"turn {j}", role=Role.USER)
                store.close()
        store = SessionStore(db)
        first = store.sessions()[0].id
        store.close()
        # Bytecode is written (an installed package has it): a stale cache would time compiling.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SESSIONGRAPH_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env |= {
            "COLUMNS": "120",
            "SESSIONGRAPH_DB": str(db),
            "SESSIONGRAPH_MEMORY": str(Path(directory) / "memory"),
        }
        alts = [
            _process("-c", "pass", env=env),
            _process("-c", LAUNCH, "--version", env=env),
            _process("-c", LAUNCH, "sessions", env=env),
            _process("-c", LAUNCH, "--help", env=env),
            _process("-c", LAUNCH, "recent", env=env),
            _process("-c", LAUNCH, "read", first, env=env),
            _process("-c", LAUNCH, "latest", first, env=env),
            _process("-c", LAUNCH, "memory", "status", env=env),
        ]
        bench.compare(g, 20, alts, repeats=bench.repeats if args.quick else max(bench.repeats, 21))
    floor_runs = bench.get(g, "python -c pass", 20).runs
    floor_cpu = CPU["python -c pass"][1:]

    def added(runs: list[float], floor: list[float]) -> Figure:
        """What a command adds to the floor, in ms: the median of its per-round differences."""
        extra = [(r - f) * 1e3 for r, f in zip(runs, floor, strict=True)]
        return Figure(statistics.median(extra), extra)

    for name in ("sessiongraph --version", "sessiongraph sessions"):
        bench.target(
            f"{name}: median wall time", bench.get(g, name, 20).median * 1e3, "<=", 150, " ms"
        )
        bench.target(
            f"{name} minus python -c pass",
            added(bench.get(g, name, 20).runs, floor_runs),
            "<=",
            150,
            " ms",
        )
    cpu = {name: statistics.median(runs[1:]) for name, runs in CPU.items()}
    for name in ("sessiongraph --version", "sessiongraph sessions"):
        bench.target(f"{name}: median CPU time", cpu[name] * 1e3, "<=", 150, " ms")
    for name in ("sessions", "recent", "read SESSION", "latest SESSION", "memory status"):
        if name != "sessions":
            bench.target(
                f"sessiongraph {name} minus python -c pass",
                added(bench.get(g, f"sessiongraph {name}", 20).runs, floor_runs),
                "<=",
                150,
                " ms",
            )
        bench.target(
            f"sessiongraph {name}: CPU time minus python -c pass",
            added(CPU[f"sessiongraph {name}"][1:], floor_cpu),
            "<=",
            150,
            " ms",
        )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

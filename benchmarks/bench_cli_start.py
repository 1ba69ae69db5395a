"""Start-up of the command line: ``sessiongraph --version``, ``--help`` and ``sessions`` on a small store.

Subject (issue 12, start-up): a person waits for every command, so the quick ones must start quickly.
Each command runs as a fresh process, exactly as a shell runs it (the installed console script's
Python, ``-c "from graph.cli.launch import main; main()"``); the floor is ``python -c pass`` with the same
interpreter, timed in the same rounds (round-robin, so a busy machine slows them alike). The store
holds 20 sessions of 10 nodes. Targets: ``--version`` and ``sessions`` under 150 ms (median wall
time, interpreter start included), and what the command adds to the bare interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import Role, SessionStore  # noqa: E402

LAUNCH = "from graph.cli.launch import main; main()"


def _process(*args: str, env: dict[str, str]) -> Alt:
    cmd = [sys.executable, *args]

    def run() -> None:
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)

    label = "python -c pass" if args == ("-c", "pass") else "sessiongraph " + " ".join(args[2:])
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
        # Bytecode is written (an installed package has it): a stale cache would time compiling.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SESSIONGRAPH_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env |= {"COLUMNS": "120", "SESSIONGRAPH_DB": str(db)}
        alts = [
            _process("-c", "pass", env=env),
            _process("-c", LAUNCH, "--version", env=env),
            _process("-c", LAUNCH, "sessions", env=env),
            _process("-c", LAUNCH, "--help", env=env),
        ]
        bench.compare(g, 20, alts, repeats=bench.repeats if args.quick else max(bench.repeats, 21))
    for name in ("sessiongraph --version", "sessiongraph sessions"):
        bench.target(
            f"{name}: median wall time", bench.get(g, name, 20).median * 1e3, "<=", 150, " ms"
        )
        bench.target(
            f"{name} minus python -c pass",
            (bench.get(g, name, 20).median - bench.get(g, "python -c pass", 20).median) * 1e3,
            "<=",
            150,
            " ms",
        )
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

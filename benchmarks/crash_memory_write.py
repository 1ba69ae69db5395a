"""``sessiongraph memory write`` killed with SIGKILL at random moments, then run again: nothing owed.

Each trial copies a store of three forked sessions (every session has a second live tip besides the
head, and long turns, so a write makes dozens of batches) and starts the real command, ``sessiongraph
--db STORE memory --workspace WS write``, in a forked child (the command's own code, without an
interpreter start-up). The parent kills the child with SIGKILL after a random delay drawn uniformly
from zero to the length of an uninterrupted write, so kills land anywhere: inside SQLite commits,
between a pass's steps, in the middle of rendering the views. Then the command runs again to
completion and must exit 0, and the id-set oracle must hold:

* every eligible turn of every live tip of every session is marked for the workspace or cited by a
  record (nothing owed, on any branch);
* no turn is cited twice, except turns of one batch (at most one batch repeated);
* the views show the current revision.

Usage: ``python benchmarks/crash_memory_write.py [--trials 30] [--seed 1]``. Prints a table of the
trials (killed or finished first, batches, duplicate citations) and exits 1 when a trial fails.
:func:`run_trials` is what the test suite calls with fewer trials.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Trial", "build_store", "check_oracle", "main", "run_command", "run_trials"]

PROVIDER = "memory"


@dataclass
class Trial:
    """One kill-and-rerun trial."""

    delay: float
    """Seconds after the start at which SIGKILL was sent."""
    killed: bool
    """Whether the first run was still running when the kill came."""
    rerun_status: int
    """Exit status of the second run (0 expected)."""
    owed: int = 0
    """Eligible turns of live tips neither marked nor cited after the rerun (0 expected)."""
    duplicates: int = 0
    """Turns cited by more than one record."""
    duplicates_in_one_batch: bool = True
    """Whether every turn cited twice belongs to one batch."""
    views_current: bool = True
    """Whether ``views/views.json`` names the workspace's revision after the rerun."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the trial satisfied the oracle."""
        return (
            self.rerun_status == 0
            and self.owed == 0
            and self.duplicates_in_one_batch
            and self.views_current
        )


def build_store(path: Path, sessions: int = 3, turns: int = 60, fork_turns: int = 24) -> None:
    """Write ``sessions`` sessions of ``turns`` long turns, each with a fork of ``fork_turns``."""
    from graph import SessionStore

    store = SessionStore(path)
    words = "release checklist smoke test deploy rollback migration index cache".split()
    for s_no in range(sessions):
        s = store.create_session(f"crash {s_no}")
        ids = []
        for n in range(turns):
            role = "user" if n % 2 == 0 else "assistant"
            text = f"Turn {n} of session {s_no}: " + " ".join(
                words[(n + k) % len(words)] for k in range(300)
            )
            ids.append(store.append(s.id, text, role=role).id)
        at = ids[turns // 3]
        for n in range(fork_turns):
            role = "user" if n % 2 else "assistant"
            text = f"Fork turn {n} of session {s_no}: " + " ".join(
                words[(n * 3 + k) % len(words)] for k in range(300)
            )
            at = store.append(s.id, text, role=role, predecessor=at).id
        store.set_head(s.id, ids[-1])
    store.close()


def run_command(db: Path, ws: Path) -> int:
    """Fork a child running ``sessiongraph --db DB memory --workspace WS write``; return its pid."""
    pid = os.fork()
    if pid == 0:  # the child: run the real command and leave without cleanup
        code = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            from graph.cli.commands import main as cli_main

            sys.argv = ["sessiongraph", "--db", str(db), "memory", "--workspace", str(ws), "write"]
            try:
                cli_main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
        finally:
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def check_oracle(db: Path, ws_dir: Path, trial: Trial) -> None:
    """Fill ``trial``'s oracle fields from the store and the workspace after the rerun."""
    import json

    from graph import SessionStore
    from graph.index import MEMORY_ELIGIBLE
    from graph.walks import branch_ids
    from memory import MemoryWorkspace

    store = SessionStore(db)
    ws = MemoryWorkspace(ws_dir)
    try:
        cited = Counter(
            {
                node: int(k)
                for node, k in ws.conn.execute(
                    "SELECT s.node_id, count(DISTINCT c.record_id) FROM citations c "
                    "JOIN sources s ON s.id = c.source_id GROUP BY s.node_id"
                )
            }
        )
        for s in store.sessions():
            idx = store.index(s.id)
            marked = set(idx.marks.get((PROVIDER, ws.id)) or ())
            for tip in store.tips(s.id):
                for n in branch_ids(idx, tip):
                    if MEMORY_ELIGIBLE.test(idx.bits[n]) and n not in marked and n not in cited:
                        trial.owed += 1
        twice = {n for n, k in cited.items() if k > 1}
        trial.duplicates = len(twice)
        if twice:
            batches = [
                set(json.loads(raw)) for (raw,) in ws.conn.execute("SELECT node_ids FROM installs")
            ]
            trial.duplicates_in_one_batch = any(twice <= b for b in batches)
        meta = json.loads((ws.views_path / "views.json").read_text("utf-8"))
        trial.views_current = (meta["workspace_id"], meta["revision"]) == (ws.id, ws.revision)
    finally:
        store.close()
        ws.close()


def run_trials(
    directory: Path, trials: int, seed: int = 1, *, turns: int = 60, fork_turns: int = 24
) -> list[Trial]:
    """Run ``trials`` kill-and-rerun trials in ``directory``; return them (see the module doc).

    ``turns`` and ``fork_turns`` size each of the three sessions (see :func:`build_store`).
    """
    rng = random.Random(seed)
    pristine = directory / "pristine.db"
    build_store(pristine, turns=turns, fork_turns=fork_turns)
    db, ws = directory / "store.db", directory / "ws"

    def fresh() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        shutil.copy(pristine, db)
        shutil.rmtree(ws, ignore_errors=True)

    fresh()
    start = time.monotonic()
    status = _wait(run_command(db, ws))
    full = time.monotonic() - start
    if status != 0:
        raise RuntimeError(f"an uninterrupted memory write exited {status}")
    out = []
    for _ in range(trials):
        fresh()
        delay = rng.uniform(0.0, full)
        pid = run_command(db, ws)
        time.sleep(delay)
        killed = True
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            killed = False
        first = _wait(pid)
        killed = killed and first == -signal.SIGKILL
        trial = Trial(delay, killed, _wait(run_command(db, ws)))
        check_oracle(db, ws, trial)
        out.append(trial)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the trials and print a table; return 1 when one failed."""
    import tempfile

    from rich.console import Console
    from rich.table import Table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sg-crash-") as d:
        got = run_trials(Path(d), args.trials, args.seed)
    table = Table(title=f"memory write, SIGKILL at random moments ({len(got)} trials)")
    for col in ("#", "kill after", "killed", "rerun exit", "owed", "cited twice", "ok"):
        table.add_column(col, justify="right")
    for n, t in enumerate(got, 1):
        table.add_row(
            str(n),
            f"{t.delay * 1000:.0f} ms",
            "yes" if t.killed else "finished",
            str(t.rerun_status),
            str(t.owed),
            str(t.duplicates),
            "yes" if t.ok else "NO",
        )
    console = Console()
    console.print(table)
    killed = sum(t.killed for t in got)
    failed = sum(not t.ok for t in got)
    console.print(
        f"{killed} of {len(got)} runs killed mid-write; {failed} trial(s) failed the oracle"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Nothing lost, nothing hung: the memory writer under kills, forks, long sessions and concurrency.

* ``memory write`` killed with SIGKILL at random moments, then run again: nothing owed on any live tip
  (the trials of ``benchmarks/crash_memory_write.py``, fewer of them);
* ``memory write`` with no session and ``memory status`` cover every live tip, not the head's alone;
* a write reads each pending turn's payload once (linear in the session's length);
* four importers into one store (two of them the same file) and three memory writers on one
  workspace: the right counts, and the refusals say they are retryable.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graph import SessionStore
from graph.store.base import BaseStore
from memory import PROVIDER, MemoryWorkspace, WritePipeline
from memory.pipeline import MAX_BATCH_TURNS, owed_ids

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
FIXTURES = Path(__file__).parent / "fixtures"


def _crash_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "crash_memory_write", BENCHMARKS / "crash_memory_write.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the trials fork the command")
def test_memory_write_killed_at_random_moments_owes_nothing_after_a_rerun(tmp_path: Path) -> None:
    crash = _crash_module()
    trials = crash.run_trials(tmp_path, 10, seed=7, turns=30, fork_turns=12)
    assert sum(t.killed for t in trials) >= 5, [t.delay for t in trials]
    for t in trials:
        assert t.rerun_status == 0, t
        assert t.owed == 0, t
        assert t.duplicates_in_one_batch, t
        assert t.views_current, t


class Cli:
    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "store.db"
        self.ws = tmp_path / "ws"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")} | {
            "COLUMNS": "200",
            "NO_COLOR": "1",
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-c",
                "from graph.cli.commands import main; main()",
                "--db",
                str(self.db),
                *args,
            ],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )

    def memory(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("memory", "--workspace", str(self.ws), *args)


def _forked(store: BaseStore) -> tuple[str, list[str], list[str]]:
    """A session whose head branch and a fork each hold turns; returns (session, head ids, fork ids)."""
    s = store.create_session("forked")
    main = [
        store.append(
            s.id,
            f"Main question {n}?" if n % 2 == 0 else f"Main answer {n}.",
            role="user" if n % 2 == 0 else "assistant",
        ).id
        for n in range(6)
    ]
    at = main[1]
    fork = []
    for n in range(4):
        at = store.append(
            s.id,
            f"Fork turn {n} about the rollback",
            role="user" if n % 2 == 0 else "assistant",
            predecessor=at,
        ).id
        fork.append(at)
    store.set_head(s.id, main[-1])
    return s.id, main, fork


def test_status_and_write_cover_every_live_tip(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    store = SessionStore(cli.db)
    sid, main, fork = _forked(store)
    ws = MemoryWorkspace(cli.ws)
    # An interrupted run: the head's branch was written, the fork was not.
    store.mark(sid, main, PROVIDER, ws.id)
    assert store.pending_ids(sid, PROVIDER, ws.id) == []
    assert owed_ids(store, sid, ws.id) == fork
    ws.close()
    store.close()

    status = json.loads(cli.memory("status", "--json").stdout)
    assert status["pending"] == [{"session_id": sid, "title": "forked", "pending": len(fork)}]
    wrote = cli.memory("write")
    assert wrote.returncode == 0, wrote.stderr
    assert f"{sid}: wrote {len(fork)} pending turn(s)" in wrote.stdout + wrote.stderr
    assert json.loads(cli.memory("status", "--json").stdout)["pending"] == []

    store = SessionStore(cli.db)
    ws = MemoryWorkspace(cli.ws)
    assert owed_ids(store, sid, ws.id) == []
    cited = {r[0] for r in ws.conn.execute("SELECT node_id FROM sources")}
    assert set(fork) <= cited
    store.close()
    ws.close()


def test_a_write_reads_each_pending_turn_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session("long")
    turns = 3 * MAX_BATCH_TURNS + 17
    for n in range(turns):
        store.append(
            s.id, f"Turn {n} on the release plan", role="user" if n % 2 == 0 else "assistant"
        )
    read: Counter[str] = Counter()
    real = store._read_nodes

    def counting(idx: Any, ids: Any) -> Any:
        read.update(ids)
        return real(idx, ids)

    store._read_nodes = counting  # type: ignore[method-assign]
    ws = MemoryWorkspace(tmp_path / "ws")
    pipe = WritePipeline(ws, store)
    assert pipe.write(s.id, force=True) is None
    assert pipe.batches_written == 4
    assert len(read) == turns and set(read.values()) == {1}
    assert owed_ids(store, s.id, ws.id) == []
    ws.close()
    store.close()


def test_short_turns_make_batches_the_default_writer_can_install(tmp_path: Path) -> None:
    """600 two-word turns fit one 8000-token budget but would need 300 changes; batches cap turns."""
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session("short")
    for n in range(600):
        store.append(s.id, f"ok {n}", role="user" if n % 2 == 0 else "assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    pipe = WritePipeline(ws, store)
    assert pipe.write(s.id, force=True) is None
    assert pipe.batches_written == 3
    ws.close()
    store.close()


ROOT = Path(__file__).resolve().parents[1]
IMPORTS = [
    ROOT / "examples" / "claude-code-session.jsonl",
    ROOT / "examples" / "claude-code-session.jsonl",  # two importers of the same file
    FIXTURES / "pi" / "v3-compaction-branch.jsonl",
    FIXTURES / "codex" / "rollout-parent.jsonl",
]
_RETRYABLE_WORDS = ("lock", "busy", "retry", "CONCURRENT_UPDATE")


def _cli(db: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env | {"COLUMNS": "200", "NO_COLOR": "1"},
    )


def _settle(procs: list[tuple[subprocess.Popen[str], tuple[str, ...]]], db: Path) -> int:
    """Wait for every process; rerun those refused as retryable (at most 3 times). Return refusals."""
    refused = 0
    for _ in range(4):
        again = []
        for proc, args in procs:
            out, err = proc.communicate(timeout=180)
            if proc.returncode != 0:
                assert "Traceback" not in err, err
                assert any(w.lower() in (out + err).lower() for w in _RETRYABLE_WORDS), out + err
                refused += 1
                again.append((_cli(db, *args), args))
        if not again:
            return refused
        procs = again
    raise AssertionError("retryable refusals did not settle after 3 retries")


def _counts(db: Path) -> tuple[int, int]:
    store = SessionStore(db)
    sessions = store.sessions()
    nodes = sum(len(store.index(s.id)) for s in sessions)
    store.close()
    return len(sessions), nodes


def test_four_importers_and_three_memory_writers_at_once(tmp_path: Path) -> None:
    alone = tmp_path / "alone.db"
    for f in IMPORTS[1:]:
        assert _cli(alone, "import", str(f)).wait(timeout=180) == 0
    db = tmp_path / "shared.db"
    SessionStore(db).close()
    args = [("import", str(f)) for f in IMPORTS]
    _settle([(_cli(db, *a), a) for a in args], db)
    assert _counts(db) == _counts(alone)

    ws_dir = tmp_path / "ws"
    MemoryWorkspace(ws_dir).close()
    write = ("memory", "--workspace", str(ws_dir), "write")
    _settle([(_cli(db, *write), write) for _ in range(3)], db)
    store = SessionStore(db)
    ws = MemoryWorkspace(ws_dir)
    for s in store.sessions():
        assert owed_ids(store, s.id, ws.id) == [], s.id
    per_node = Counter(
        node
        for (node,) in ws.conn.execute(
            "SELECT s.node_id FROM citations c JOIN sources s ON s.id = c.source_id"
        )
    )
    assert per_node and set(per_node.values()) == {1}  # no batch written twice
    assert {r[0] for r in ws.conn.execute("SELECT node_id FROM sources")} == set(per_node)
    ws.close()
    store.close()

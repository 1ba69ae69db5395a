"""Crash between any two steps of a pass loses nothing; two writer processes share one workspace."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from graph import SessionStore
from memory import PROVIDER, FailureReason, MemoryWorkspace, WritePipeline
from memory.pipeline import STEPS

WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from graph import SessionStore
    from memory import MemoryWorkspace, WritePipeline

    graph_db, ws_dir, session, budget, crash_at, hold = sys.argv[1:7]

    def hook(step):
        if step == crash_at:
            os._exit(9)  # die with no cleanup, between two steps
        if hold and step == "archived":
            Path(hold, "holding").touch()
            while not Path(hold, "release").exists():
                time.sleep(0.01)

    store = SessionStore(graph_db)
    ws = MemoryWorkspace(ws_dir)
    failure = WritePipeline(ws, store, budget=int(budget), hook=hook).write(session, force=True)
    print(json.dumps(None if failure is None else [failure.reason, failure.retryable]))
    """
)


def run_writer(
    tmp: Path, session: str, *, crash_at: str = "", hold: str = "", budget: int = 30
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(tmp / "graph.db"),
            str(tmp / "ws"),
            session,
            str(budget),
            crash_at,
            hold,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def make_session(tmp: Path, turns: int = 6) -> tuple[str, list[str]]:
    store = SessionStore(tmp / "graph.db")
    s = store.create_session("crash")
    ids = []
    for n in range(turns):
        ids.append(
            store.append(
                s.id, f"Question {n} about the release checklist item {n}?", role="user"
            ).id
        )
        ids.append(
            store.append(
                s.id, f"Answer {n}: tick item {n} after the smoke test.", role="assistant"
            ).id
        )
    store.close()
    return s.id, ids


@pytest.mark.parametrize("step", STEPS, ids=str)
def test_crash_between_steps_loses_nothing(tmp_path: Path, step: str) -> None:
    session, ids = make_session(tmp_path)
    MemoryWorkspace(tmp_path / "ws").close()
    proc = run_writer(tmp_path, session, crash_at=step)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 9, err

    store = SessionStore(tmp_path / "graph.db")
    ws = MemoryWorkspace(tmp_path / "ws")  # re-renders views if the crash left them behind
    assert json.loads((ws.views_path / "views.json").read_text())["revision"] == ws.revision
    pipe = WritePipeline(ws, store, budget=30)
    assert pipe.write(session, force=True) is None
    assert store.pending(session, PROVIDER, ws.id) == []
    assert store.verify_markers(session) == []
    cited = Counter(
        r[0]
        for r in ws.conn.execute(
            "SELECT s.node_id FROM citations c JOIN sources s ON s.id = c.source_id"
        )
    )
    # Every turn is archived and cited; the install journal keeps a batch installed before the
    # crash from being written a second time, so each is cited exactly once.
    assert set(cited) == set(ids)
    assert set(cited.values()) == {1}
    assert {s.node_id for s in ws.sources()} == set(ids)
    store.close()
    ws.close()


def test_two_writer_processes_one_proceeds_one_retries(tmp_path: Path) -> None:
    session, ids = make_session(tmp_path)
    MemoryWorkspace(tmp_path / "ws").close()
    hold = tmp_path / "hold"
    hold.mkdir()
    first = run_writer(tmp_path, session, hold=str(hold))
    while not (hold / "holding").exists():  # the first process holds the lock mid-pass
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        time.sleep(0.01)
    second = run_writer(tmp_path, session)
    out2, err2 = second.communicate(timeout=120)
    assert json.loads(out2) == [FailureReason.CONCURRENT_UPDATE.value, True], err2
    (hold / "release").touch()
    out1, err1 = first.communicate(timeout=120)
    assert json.loads(out1) is None, err1

    store = SessionStore(tmp_path / "graph.db")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert store.pending(session, PROVIDER, ws.id) == []
    cited = Counter(
        r[0]
        for r in ws.conn.execute(
            "SELECT s.node_id FROM citations c JOIN sources s ON s.id = c.source_id"
        )
    )
    assert set(cited) == set(ids) and set(cited.values()) == {1}
    # The retry the busy writer was told to make now finds nothing owed.
    assert WritePipeline(ws, store, budget=30).write(session, force=True) is None
    store.close()
    ws.close()

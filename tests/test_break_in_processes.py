"""Several processes appending, forking, rewinding, moving heads and marking one store at once.

Each worker checks, inside the transaction of each rewind, that every node between the head it
read (under the session's lock) and the rewind target was stamped (a rewind computed from an index that missed another
process's append would leave that append unstamped on the abandoned branch). Afterwards the store
must hold every appended node once, only links inside a session, a head that exists, markers
without gaps, and ``pending`` equal to the id-set answer on every tip. Both persistent backends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import postgres_url

from graph import MEMORY_ELIGIBLE
from graph.store import open_store
from graph.store.base import BaseStore

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]

WORKER = textwrap.dedent(
    """
    import json, random, sys
    from graph.store import open_store
    from graph.errors import HeadConflictError, MarkerGapError, NotOnBranchError, StoreBusyError
    target, schema, seed, n, log = sys.argv[1:6]
    rng = random.Random(int(seed))
    store = open_store(target, **({"schema": schema} if schema else {}))
    sessions = sorted(s.id for s in store.sessions())
    counts = {"append": 0, "fork": 0, "rewind": 0, "cas": 0, "mark": 0, "busy": 0, "bad": []}
    with open(log, "a") as out:
        for i in range(int(n)):
            sid = rng.choice(sessions)
            op = rng.random()
            try:
                if op < 0.4:
                    node = store.append(sid, f"p{seed} turn {i}", role=rng.choice(["user", "assistant"]))
                    out.write(json.dumps([sid, node.id]) + "\\n")
                    counts["append"] += 1
                elif op < 0.5:
                    at = rng.choice(list(store.index(sid).pred))
                    node = store.append(sid, f"p{seed} fork {i}", role="user", predecessor=at, move_head=False)
                    out.write(json.dumps([sid, node.id]) + "\\n")
                    counts["fork"] += 1
                elif op < 0.65:
                    with store.atomic():
                        # the head's branch read under the session's lock (PostgreSQL's row lock,
                        # SQLite's write lock): no other process moves the head before the commit
                        line = [str(n) for n in store.branch_ids(sid)]
                        if len(line) > 1:
                            to = line[rng.randrange(0, len(line) - 1)]
                            store.rewind(sid, to)
                            idx = store.index(sid)
                            after = line[line.index(to) + 1:]
                            missed = [x for x in after if not idx.is_rewound(x)]
                            if missed or store.session(sid).head != to:
                                counts["bad"].append([sid, to, missed])
                            counts["rewind"] += 1
                elif op < 0.75:
                    seen = store.session(sid).head
                    tips = store.tips(sid)
                    try:
                        store.set_head(sid, rng.choice(tips), expected=seen)
                        counts["cas"] += 1
                    except HeadConflictError:
                        pass
                else:
                    with store.atomic():
                        owed = store.pending_ids(sid, "memory", "ws")
                        if owed:
                            store.mark(sid, owed[: rng.randint(1, len(owed))], "memory", "ws")
                            counts["mark"] += 1
            except StoreBusyError:
                counts["busy"] += 1
            out.flush()
    print(json.dumps(counts))
    """
)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(what ``open_store`` opens, the PostgreSQL schema or ``""``) of a fresh store."""
    if request.param == "sqlite":
        yield str(tmp_path / "store.db"), ""
        return
    from graph.store.postgres import PostgresSessionStore

    url, schema = postgres_url(), f"t_{uuid.uuid4().hex[:16]}"
    yield url, schema
    cleanup = PostgresSessionStore(url, schema=schema)
    cleanup.drop_schema()
    cleanup.close()


def _open(target: tuple[str, str]) -> BaseStore:
    where, schema = target
    return open_store(where, **({"schema": schema} if schema else {}))


def test_three_processes_of_rewinds_marks_and_appends_keep_every_invariant(
    target: tuple[str, str], tmp_path: Path
) -> None:
    store = _open(target)
    roots = {}
    for k in range(2):
        s = store.create_session(f"shared {k}")
        roots[s.id] = store.append(s.id, "root", role="user").id
    store.close()
    log = tmp_path / "appended.jsonl"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, target[0], target[1], str(seed), "150", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for seed in range(3)
    ]
    counts = []
    for p in procs:
        out, errs = p.communicate(timeout=600)
        assert p.returncode == 0, errs
        counts.append(json.loads(out.splitlines()[-1]))
    assert [c["bad"] for c in counts] == [[], [], []]
    assert sum(c["rewind"] for c in counts) > 0 and sum(c["mark"] for c in counts) > 0
    appended = [json.loads(line) for line in log.read_text().splitlines()]
    assert len({nid for _, nid in appended}) == len(appended)  # no node twice
    fresh = _open(target)
    for s in fresh.sessions():
        idx = fresh.index(s.id)
        mine = {nid for sid, nid in appended if sid == s.id}
        assert set(idx.pred) == mine | {roots[s.id]}  # nothing lost, nothing else
        assert all(p is None or p in idx.pred for p in idx.pred.values())
        assert s.head in idx.pred
        assert fresh.verify_markers(s.id) == []
        for tip in fresh.tips(s.id):
            want = [
                n.id
                for n in fresh.branch(s.id, tip)
                if MEMORY_ELIGIBLE.test(idx.bits[n.id]) and not n.is_written("memory", "ws")
            ]
            assert fresh.pending_ids(s.id, "memory", "ws", head=tip) == want
    fresh.close()

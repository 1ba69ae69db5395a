"""A peer: LangGraph's SQLite checkpointer storing the same forked history as this store.

Subject: The history is a chain of 10,000 turns with a fork at turn 9,000 that goes
on for 1,000 turns, so the fork's branch is 10,000 long and the history holds 11,000 entries (quick
mode: 2,000 with a fork at 1,800). LangGraph (``langgraph-checkpoint-sqlite``'s ``SqliteSaver``) stores
one checkpoint per turn whose state is that turn's message (each checkpoint holding only its own
turn, not the whole message list, so neither side stores more than the other), its
``parent_checkpoint_id`` naming the previous turn; this store holds one node per turn. Both are files
in WAL mode. Compared, in the same run:

* walking the fork's branch back to the root: LangGraph's ``get_tuple`` then ``parent_config`` until
  there is none, against ``store.branch(sid)`` (every node read and decoded, as the checkpointer
  decodes every checkpoint) and against the walk alone (``graph.walks.branch_ids`` on the index);
* listing the history: LangGraph's ``list(thread)`` (every checkpoint of the thread) against
  ``store.nodes(sid, every id)`` (every node read and decoded) and ``store.branch(sid)``;
* reading the latest state: LangGraph's ``get_tuple(thread)`` (the newest checkpoint) against
  ``store.session(sid)`` plus ``store.node(head)``, ``store.pending`` (10 unwritten at the head) and
  ``store.sessions()``.
"""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from graph import MEMORY_ELIGIBLE, Node, SessionStore, walks  # noqa: E402
from graph.models import Kind, Role  # noqa: E402

_T0 = datetime(2025, 1, 1, tzinfo=UTC)
THREAD = "t1"


def _turn(i: int, fork: bool) -> tuple[str, str]:
    role = "user" if i % 2 == 0 else "assistant"
    side = "fork " if fork else ""
    return role, f"{side}turn {i}: the quick brown fox jumps over the lazy dog, then appends a node"


def _history(chain: int, at: int, extra: int) -> list[tuple[str, str | None, str, str]]:
    """(id, predecessor, role, text) for a chain of ``chain`` with ``extra`` forking after ``at``."""
    out: list[tuple[str, str | None, str, str]] = []
    prev: str | None = None
    for i in range(chain):
        nid = f"1ef00000-0000-6000-8000-{i:012d}"
        out.append((nid, prev, *_turn(i, False)))
        prev = nid
    prev = out[at][0]
    for j in range(extra):
        nid = f"1ef00000-0000-6000-9000-{j:012d}"
        out.append((nid, prev, *_turn(at + 1 + j, True)))
        prev = nid
    return out


def _build_peer(path: Path, history: list[tuple[str, str | None, str, str]]) -> SqliteSaver:
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    saver.setup()
    saver.conn.execute("PRAGMA synchronous=NORMAL")
    for step, (nid, pred, role, text) in enumerate(history):
        cp: Any = empty_checkpoint()
        cp["id"] = nid
        cp["ts"] = _T0.isoformat()
        cp["channel_values"] = {"messages": [{"role": role, "content": text}]}
        cp["channel_versions"] = {"messages": step + 1}
        config: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        if pred is not None:
            config["configurable"]["checkpoint_id"] = pred
        saver.put(config, cp, {"source": "loop", "step": step}, {"messages": step + 1})
    return saver


def _build_store(path: Path, history: list[tuple[str, str | None, str, str]]) -> SessionStore:
    store = SessionStore(path)
    store.create_session("peer", id=THREAD, created_at=_T0)
    nodes = [
        Node.model_construct(
            id=nid,
            session_id=THREAD,
            predecessor=pred,
            kind=Kind.MESSAGE,
            role=Role(role),
            content=text,
            created_at=_T0,
            metadata={},
            covers=(),
        )
        for nid, pred, role, text in history
    ]
    store.add_nodes(THREAD, nodes, head=history[-1][0])
    ids = walks.branch_ids(store.index(THREAD), history[-1][0])
    store.mark(THREAD, ids[:-10], "memory", "ws")
    return store


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the peer comparison and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    chain, at, extra = (
        (200, 179, 20)
        if args.smoke
        else (2_000, 1_799, 200)
        if args.quick
        else (10_000, 8_999, 1_000)
    )
    bench = Bench("peer: LangGraph SqliteSaver", args.quick, args.repeats)
    with scratch_dir(args.dir) as directory:
        history = _history(chain, at, extra)
        with bench.timed("generate LangGraph checkpoints"):
            saver = _build_peer(scratch_db(directory, "peer-langgraph.db"), history)
        with bench.timed("generate store"):
            store = _build_store(scratch_db(directory, "peer-store.db"), history)
        tip = history[-1][0]
        branch_len = at + 1 + extra
        thread: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        tip_config: Any = {"configurable": {**thread["configurable"], "checkpoint_id": tip}}

        def lg_walk() -> int:
            config, seen = tip_config, 0
            while config is not None:
                t = saver.get_tuple(config)
                assert t is not None
                seen += 1
                config = t.parent_config
            return seen

        def lg_list() -> int:
            return sum(1 for _ in saver.list(thread))

        assert lg_walk() == branch_len and len(store.branch(THREAD)) == branch_len
        assert lg_list() == len(history)
        index = store.index(THREAD)
        every = list(index.pred)

        g = f"walk the fork's branch to the root ({branch_len:,} turns)"
        bench.compare(
            g,
            branch_len,
            [
                Alt("LangGraph get_tuple + parent_config", lg_walk, per=branch_len),
                Alt(
                    "store.branch(sid) (nodes decoded)",
                    lambda: store.branch(THREAD),
                    per=branch_len,
                ),
                Alt(
                    "walks.branch_ids(index) (ids)",
                    lambda: walks.branch_ids(store.index(THREAD), tip),
                    per=branch_len,
                ),
            ],
        )
        h = f"list the history ({len(history):,} turns)"
        bench.compare(
            h,
            len(history),
            [
                Alt("LangGraph list(thread)", lg_list, per=len(history)),
                Alt(
                    "store.nodes(sid, every id) (decoded)",
                    lambda: store.nodes(THREAD, every),
                    per=len(history),
                ),
                Alt("store.branch(sid) (the head's branch)", lambda: store.branch(THREAD)),
            ],
        )
        s = "read the latest state"
        bench.compare(
            s,
            len(history),
            [
                Alt("LangGraph get_tuple(thread)", lambda: saver.get_tuple(thread)),
                Alt(
                    "store.session(sid) + store.node(head)",
                    lambda: store.node(str(store.session(THREAD).head)),
                ),
                Alt(
                    "store.pending(sid) (10 unwritten)",
                    lambda: store.pending(THREAD, "memory", "ws", eligible=MEMORY_ELIGIBLE),
                ),
                Alt("store.sessions()", store.sessions),
            ],
        )
        lg = "LangGraph get_tuple + parent_config"
        bench.target(
            "branch walk: LangGraph / store.branch (x faster)",
            bench.ratio(g, lg, "store.branch(sid) (nodes decoded)", branch_len),
            ">=",
            100,
        )
        bench.target(
            "branch walk: LangGraph / walks.branch_ids (x faster)",
            bench.ratio(g, lg, "walks.branch_ids(index) (ids)", branch_len),
            ">=",
            100,
        )
        bench.target(
            "history: LangGraph list / store.nodes(every id) (x faster)",
            bench.ratio(
                h, "LangGraph list(thread)", "store.nodes(sid, every id) (decoded)", len(history)
            ),
            ">=",
            10,
        )
        saver.conn.close()
        store.close()
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

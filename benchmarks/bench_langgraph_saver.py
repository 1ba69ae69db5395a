"""SessionGraphSaver against LangGraph's SqliteSaver and AsyncSqliteSaver on the same forked history.

Subject: Every saver stores the same threads: a chain of checkpoints, each adding one
LangChain message to the ``messages`` channel (the full list is in every checkpoint, as
``add_messages`` leaves it), with a time-travel fork from three quarters of the way that goes on
for a quarter of the chain. Full mode: 20 threads of 400 + 100 checkpoints; quick mode: 3 threads
of 40 + 10. Each checkpoint has two pending writes. Every saver is a file in WAL mode and commits
once per ``put`` and once per ``put_writes``. Durability, compared like with like:

* ``synchronous=NORMAL`` (the session store's setting: a commit survives a crash of the process,
  not a power loss): SessionGraphSaver, SqliteSaver and AsyncSqliteSaver with the pragma set;
* ``synchronous=FULL`` (SqliteSaver as shipped: every commit is fsynced): SqliteSaver as
  ``setup()`` leaves it, and SessionGraphSaver on a store whose connection is set to FULL.

Compared, in the same run, round-robin:

* ``put``: storing a new thread's whole forked history (checkpoints and their writes), per
  checkpoint; for SessionGraphSaver that includes the message nodes, the head move and the payloads;
* ``get_tuple`` of the latest checkpoint of a thread (no ``checkpoint_id``);
* ``get_tuple`` by id (ids spread over the history);
* ``get_tuple`` and ``list`` again with SessionGraphSaver's read cache emptied before each call
  ("rows read afresh": what a read right after any commit costs; the cache keeps rows read while
  no connection commits, so repeated reads skip the query but still decode);
* ``list`` of a thread (every checkpoint, decoded, with its writes), held whole as
  ``list(saver.list(...))`` holds it, and iterated with each tuple dropped once read (as a loop
  over ``get_state_history`` does): a caller holding a thread's whole history decoded makes the
  collector's passes over those objects cost about as much as decoding them, for either saver.

The async savers run each measurement as one coroutine on one event loop (20 calls per read run).
Verdicts, per state shape: SessionGraphSaver against SqliteSaver at ``synchronous=NORMAL`` (put no
slower, reads at least 2x faster), the same put with both at ``synchronous=FULL``, and the async
methods against AsyncSqliteSaver's. Reads do not depend on the setting. The put rows note the WAL
pages one put and its ``put_writes`` write (counted on separate files, untimed): what a commit costs
at ``NORMAL``, where nothing is fsynced.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiosqlite  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.checkpoint_memo import MessageMemo  # noqa: E402

_T0 = datetime(2025, 1, 1, tzinfo=UTC)
READS = 20
"""Calls per timed run of a read (so the async loop's overhead is spread over them)."""

Step = tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[tuple[str, Any]]]
"""(parent config, checkpoint, metadata, writes) of one put."""


def history(thread: str, chain: int, extra: int, shape: str = "messages") -> list[Step]:
    """The puts of one thread: ``chain`` checkpoints, then ``extra`` forking at 3/4 of the chain.

    ``shape`` ``"messages"``: every checkpoint holds the whole message list so far (``add_messages``);
    ``"small"``: it holds only its own turn's text in a plain channel (no messages channel).
    """
    out: list[Step] = []
    messages: list[Any] = []
    lists: dict[str, list[Any]] = {}
    parent: str | None = None
    serial = 0

    def put(parent: str | None, msgs: list[Any], step: int) -> str:
        nonlocal serial
        serial += 1
        cid = f"1ef00000-0000-6000-{'8' if step < chain else '9'}000-{serial:012d}"
        cp: Any = empty_checkpoint()
        cp["id"] = cid
        cp["ts"] = (_T0 + timedelta(seconds=serial)).isoformat()
        cp["channel_values"] = (
            {"messages": list(msgs)} if shape == "messages" else {"turn": str(msgs[-1].content)}
        )
        cp["channel_versions"] = {"messages": f"{serial:032}.0"}
        config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent
        writes = [("messages", msgs[-1:]), ("branch:to:model", None)]
        out.append((config, cp, {"source": "loop", "step": step, "parents": {}}, writes))
        lists[cid] = list(msgs)
        return cid

    def message(i: int, fork: bool) -> Any:
        side = "fork " if fork else ""
        text = f"{side}turn {i}: the quick brown fox jumps over the lazy dog"
        mid = f"{thread}-{'f' if fork else 'm'}{i}"
        return HumanMessage(text, id=mid) if i % 2 == 0 else AIMessage(text, id=mid)

    ids = []
    for i in range(chain):
        messages.append(message(i, False))
        parent = put(parent, messages, i)
        ids.append(parent)
    at = ids[chain * 3 // 4]
    parent, messages = at, list(lists[at])
    for j in range(extra):
        messages.append(message(j, True))
        parent = put(parent, messages, chain + j)
    return out


def _sync_put(saver: Any, steps: list[Step]) -> None:
    for config, cp, meta, writes in steps:
        stored = saver.put(config, cp, meta, {"messages": cp["channel_versions"]["messages"]})
        saver.put_writes(stored, writes, "task-1")


async def _async_put(saver: Any, steps: list[Step]) -> None:
    for config, cp, meta, writes in steps:
        stored = await saver.aput(
            config, cp, meta, {"messages": cp["channel_versions"]["messages"]}
        )
        await saver.aput_writes(stored, writes, "task-1")


def wal_pages(path: Path, conn: sqlite3.Connection, store_thread: Callable[[int], None]) -> float:
    """WAL pages (frames) written per checkpoint while storing threads (put and put_writes).

    A warm-up thread first, then the log is emptied and left to grow (no automatic checkpoint) while
    two more threads are stored; its growth over the frame size is the page count.
    """
    store_thread(0)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    wal = Path(f"{path}-wal")
    before = wal.stat().st_size if wal.exists() else 0
    puts = 0
    for n in (1, 2):
        puts += len(store_thread(n) or ())
    (page,) = conn.execute("PRAGMA page_size").fetchone()
    return (wal.stat().st_size - before) / (page + 24) / max(1, puts)


class _Recorder:
    """A stand-in for the store's connection that notes every statement it runs, then runs it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.log: list[tuple[bool, str, Any]] = []
        """(many, sql, parameters) in the order run."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.log.append((False, sql, params))
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        self.log.append((True, sql, rows))
        return self.conn.executemany(sql, rows)


class _Replay:
    """The floor of a put: the statements SessionGraphSaver ran for one thread, replayed bare.

    The thread is stored once (untimed) through a connection that notes every statement and its
    parameters; each timed run then runs exactly those statements, in their transactions, on a copy
    of the file as it was before (made by :meth:`setup`, untimed), with one bare ``sqlite3``
    connection (WAL, ``synchronous=NORMAL``), after every checkpoint, its metadata and its writes
    are encoded as a put encodes them (LangGraph's serializer through a fresh
    :class:`~graph.checkpoint_memo.MessageMemo`: each unchanged message once). What remains between
    this and SessionGraphSaver.put is the saver's and the store's Python; between this and
    SqliteSaver.put, the rows the graph adds beside LangGraph's payload, less what encoding each
    message once saves.
    """

    def __init__(self, directory: Path, shape: str, chain: int, extra: int) -> None:
        base = scratch_db(directory, f"lg-{shape}-replay-base.db")
        store = SessionStore(base)
        saver = SessionGraphSaver(store)
        _sync_put(saver, history("warm", chain, extra, shape))
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.snapshot = base.read_bytes()
        self.steps = history("replayed", chain, extra, shape)
        recorder = _Recorder(store.conn)
        store.conn = recorder  # type: ignore[assignment]
        saver._payloads.conn = recorder  # type: ignore[attr-defined]
        _sync_put(saver, self.steps)
        store.conn = recorder.conn
        store.close()
        self.log = recorder.log
        self.serde = saver.serde
        self.target = scratch_db(directory, f"lg-{shape}-replay.db")
        self.conn: sqlite3.Connection | None = None

    def setup(self) -> None:
        """A fresh copy of the file as it was before the thread, and a connection to it."""
        self.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{self.target}{suffix}").unlink(missing_ok=True)
        self.target.write_bytes(self.snapshot)
        self.conn = sqlite3.connect(self.target, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def run(self) -> None:
        """Serialize the thread's payloads and run the noted statements (timed)."""
        c = self.conn
        assert c is not None
        codec = MessageMemo(self.serde)
        for _config, cp, meta, writes in self.steps:
            codec.dumps(cp)
            codec.dumps(meta)
            for _channel, value in writes:
                codec.dumps(value)
        for many, sql, params in self.log:
            if many:
                c.executemany(sql, params)
            else:
                c.execute(sql, params).fetchall()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _pages(directory: Path, shape: str, chain: int, extra: int) -> dict[str, float]:
    """WAL pages per checkpoint of SessionGraphSaver and SqliteSaver, both at synchronous=NORMAL."""
    ours_path = scratch_db(directory, f"lg-{shape}-pages-ours.db")
    store = SessionStore(ours_path)
    ours = SessionGraphSaver(store)
    peer_path = scratch_db(directory, f"lg-{shape}-pages-sqlite.db")
    conn = sqlite3.connect(peer_path, check_same_thread=False)
    peer = SqliteSaver(conn)
    peer.setup()
    conn.execute("PRAGMA synchronous=NORMAL")

    def storing(saver: Any, name: str) -> Callable[[int], Any]:
        def go(n: int) -> list[Step]:
            steps = history(f"{name}{n}", chain, extra, shape)
            _sync_put(saver, steps)
            return steps

        return go

    out = {
        "ours": wal_pages(ours_path, store.conn, storing(ours, "o")),
        "SqliteSaver": wal_pages(peer_path, conn, storing(peer, "p")),
    }
    store.close()
    conn.close()
    return out


def _compare(
    bench: Bench, shape: str, directory: Path, sizes: tuple[int, int, int], run: Any
) -> None:
    """Time the four operations of one state shape on its own files."""
    threads, chain, extra = sizes
    per_thread = chain + extra
    with bench.timed(f"count WAL pages ({shape})"):
        pages = _pages(directory, shape, chain, extra)
    ours_pages = f"{pages['ours']:.1f} WAL pages per checkpoint"
    peer_pages = f"{pages['SqliteSaver']:.1f} WAL pages per checkpoint"
    ours = SessionGraphSaver(SessionStore(scratch_db(directory, f"lg-{shape}-ours.db")))
    full_store = SessionStore(scratch_db(directory, f"lg-{shape}-ours-full.db"))
    full_store.conn.execute("PRAGMA synchronous=FULL")
    ours_full = SessionGraphSaver(full_store)
    conn = sqlite3.connect(scratch_db(directory, f"lg-{shape}-sqlite.db"), check_same_thread=False)
    peer = SqliteSaver(conn)
    peer.setup()
    conn.execute("PRAGMA synchronous=NORMAL")
    full_conn = sqlite3.connect(
        scratch_db(directory, f"lg-{shape}-sqlite-full.db"), check_same_thread=False
    )
    peer_full = SqliteSaver(full_conn)  # as shipped: synchronous=FULL
    peer_full.setup()

    async def open_async() -> AsyncSqliteSaver:  # it must be made inside the running loop
        path = scratch_db(directory, f"lg-{shape}-async.db")
        return AsyncSqliteSaver(await aiosqlite.connect(path))

    apeer = run(open_async())
    run(apeer.setup())
    run(apeer.conn.execute("PRAGMA synchronous=NORMAL"))
    with bench.timed(f"generate and store the threads ({shape})"):
        for t in range(threads):
            steps = history(f"t{t}", chain, extra, shape)
            _sync_put(ours, steps)
            _sync_put(peer, steps)
            run(_async_put(apeer, steps))
    replay = _Replay(directory, shape, chain, extra)
    fresh = {"n": 0}
    pending: dict[str, list[Step]] = {}

    def setup(name: str) -> Callable[[], None]:
        def go() -> None:
            fresh["n"] += 1
            pending[name] = history(f"{name}-{fresh['n']}", chain, extra, shape)

        return go

    g = f"put ({shape}): a thread's forked history, 2 writes per checkpoint"
    bench.compare(
        g,
        per_thread,
        [
            Alt(
                "SessionGraphSaver.put",
                lambda: _sync_put(ours, pending["o"]),
                setup("o"),
                per_thread,
                ours_pages,
            ),
            Alt(
                "SqliteSaver.put",
                lambda: _sync_put(peer, pending["p"]),
                setup("p"),
                per_thread,
                peer_pages,
            ),
            Alt(
                "floor: SessionGraphSaver's statements replayed (bare sqlite3, same encoding)",
                replay.run,
                replay.setup,
                per_thread,
            ),
            Alt(
                "SessionGraphSaver.put (synchronous=FULL)",
                lambda: _sync_put(ours_full, pending["of"]),
                setup("of"),
                per_thread,
            ),
            Alt(
                "SqliteSaver.put (as shipped: synchronous=FULL)",
                lambda: _sync_put(peer_full, pending["f"]),
                setup("f"),
                per_thread,
            ),
            Alt(
                "AsyncSqliteSaver.aput",
                lambda: run(_async_put(apeer, pending["a"])),
                setup("a"),
                per_thread,
            ),
            Alt(
                "SessionGraphSaver.aput",
                lambda: run(_async_put(ours, pending["oa"])),
                setup("oa"),
                per_thread,
            ),
        ],
    )
    latest: Any = {"configurable": {"thread_id": "t0", "checkpoint_ns": ""}}
    every = [st[1]["id"] for st in history("t0", chain, extra, shape)]
    by_id: list[Any] = [
        {"configurable": {"thread_id": "t0", "checkpoint_ns": "", "checkpoint_id": c}}
        for c in every[:: max(1, per_thread // READS)][:READS]
    ]
    for saver in (ours, peer):
        assert saver.get_tuple(latest) is not None
        assert all(saver.get_tuple(c) is not None for c in by_id)
    assert len(list(ours.list(latest))) == len(list(peer.list(latest))) == per_thread

    def reads(saver: Any, configs: list[Any]) -> Callable[[], None]:
        def go() -> None:
            for c in configs:
                saver.get_tuple(c)

        return go

    cache = ours._payloads.cache

    def afresh(configs: list[Any]) -> Callable[[], None]:
        """Ours with its read cache emptied before each call, as after any commit."""

        def go() -> None:
            for c in configs:
                cache.drop()
                ours.get_tuple(c)

        return go

    def listed_afresh() -> None:
        cache.drop()
        list(ours.list(latest))

    def areads(saver: Any, configs: list[Any]) -> Callable[[], None]:
        async def many() -> None:
            for c in configs:
                await saver.aget_tuple(c)

        return lambda: run(many())

    groups = {
        "latest": f"get_tuple ({shape}): the latest checkpoint",
        "by id": f"get_tuple ({shape}): by checkpoint_id",
    }
    for key, configs in (("latest", [latest] * READS), ("by id", by_id)):
        n = len(configs)
        bench.compare(
            groups[key],
            per_thread,
            [
                Alt("SessionGraphSaver.get_tuple", reads(ours, configs), per=n),
                Alt("SessionGraphSaver.get_tuple, rows read afresh", afresh(configs), per=n),
                Alt("SqliteSaver.get_tuple", reads(peer, configs), per=n),
                Alt("AsyncSqliteSaver.aget_tuple", areads(apeer, configs), per=n),
                Alt("SessionGraphSaver.aget_tuple", areads(ours, configs), per=n),
            ],
        )

    async def alist(saver: Any) -> int:
        return len([t async for t in saver.alist(latest)])

    def each(saver: Any) -> Callable[[], None]:
        def go() -> None:
            for _ in saver.list(latest):
                pass

        return go

    lg = f"list ({shape}): every checkpoint of a thread, held whole"
    bench.compare(
        lg,
        per_thread,
        [
            Alt("SessionGraphSaver.list", lambda: list(ours.list(latest)), per=per_thread),
            Alt("SessionGraphSaver.list, rows read afresh", listed_afresh, per=per_thread),
            Alt("SqliteSaver.list", lambda: list(peer.list(latest)), per=per_thread),
            Alt("AsyncSqliteSaver.alist", lambda: run(alist(apeer)), per=per_thread),
            Alt("SessionGraphSaver.alist", lambda: run(alist(ours)), per=per_thread),
        ],
    )
    le = f"list ({shape}): every checkpoint of a thread, each dropped once read"
    bench.compare(
        le,
        per_thread,
        [
            Alt("SessionGraphSaver.list", each(ours), per=per_thread),
            Alt("SqliteSaver.list", each(peer), per=per_thread),
        ],
    )
    for group, base, bound, op, how in (
        (g, "SqliteSaver.put", 1.0, "<=", "both synchronous=NORMAL"),
        (groups["latest"], "SqliteSaver.get_tuple", 2.0, ">=", ""),
        (groups["by id"], "SqliteSaver.get_tuple", 2.0, ">=", ""),
        (lg, "SqliteSaver.list", 2.0, ">=", ""),
        (le, "SqliteSaver.list", 2.0, ">=", ""),
        (g, "AsyncSqliteSaver.aput", 1.0, "<=", "async, both synchronous=NORMAL"),
        (groups["latest"], "AsyncSqliteSaver.aget_tuple", 2.0, ">=", "async"),
        (groups["by id"], "AsyncSqliteSaver.aget_tuple", 2.0, ">=", "async"),
        (lg, "AsyncSqliteSaver.alist", 2.0, ">=", "async"),
    ):
        peer_name, method = base.split(".", 1)
        ratio = bench.ratio(group, f"SessionGraphSaver.{method}", base, per_thread)
        label = f"{group}{f' ({how})' if how else ''}"
        if op == ">=":
            bench.target(f"{label}: {peer_name} / ours (x faster)", 1 / ratio, op, bound)
        else:
            bench.target(f"{label}: ours / {peer_name} (time ratio)", ratio, op, bound)
    shipped = bench.ratio(
        g,
        "SessionGraphSaver.put (synchronous=FULL)",
        "SqliteSaver.put (as shipped: synchronous=FULL)",
        per_thread,
    )
    bench.target(
        f"{g} (both synchronous=FULL): ours / SqliteSaver (time ratio)", shipped, "<=", 1.0
    )
    floor = bench.ratio(
        g,
        "SessionGraphSaver.put",
        "floor: SessionGraphSaver's statements replayed (bare sqlite3, same encoding)",
        per_thread,
    )
    bench.target(f"{g}: ours / its statements replayed bare (time ratio)", floor, "<=", 1.3)
    rows = bench.ratio(
        g,
        "floor: SessionGraphSaver's statements replayed (bare sqlite3, same encoding)",
        "SqliteSaver.put",
        per_thread,
    )
    bench.target(
        f"{g}: its statements and encoding replayed bare / SqliteSaver (time ratio: the graph's"
        " rows, less what encoding each message once saves)",
        rows,
        "<=",
        1.0,
    )
    replay.close()
    run(apeer.conn.close())
    conn.close()
    full_conn.close()
    ours.store.close()
    ours_full.store.close()


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the comparison and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    sizes = (1, 8, 4) if args.smoke else (3, 40, 10) if args.quick else (20, 400, 100)
    bench = Bench("LangGraph savers: SessionGraphSaver vs SqliteSaver", args.quick, args.repeats)
    loop = asyncio.new_event_loop()
    with scratch_dir(args.dir) as directory:
        for shape in ("messages", "small"):
            _compare(bench, shape, Path(directory), sizes, loop.run_until_complete)
    loop.close()
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

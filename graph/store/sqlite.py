"""The SQLite store of record: one file in WAL mode, or ``":memory:"``.

Durability: WAL with ``synchronous=NORMAL``: a commit survives a crash of the process, not a loss of
power. Schema, indexes and migrations go through sqlite-utils; the hot append, marker and refresh paths
use the bare ``sqlite3`` connection.

Readers never wait for writers: opening a file whose schema is current reads its version without a
lock, and reads run in WAL snapshots. Only writes, and the one-time creation or migration of a file's
schema, take the write lock (``BEGIN IMMEDIATE``); a writer that cannot get it within the timeout raises
:class:`~graph.errors.StoreBusyError`, which says the same call, retried, will work.

The schema is built by :data:`MIGRATIONS`, an ordered list of steps: step ``i`` brings a file from
version ``i`` to ``i + 1``, and a new file runs them all. A new version is one more step at the end.

The index a walk needs lives in columns (``id``, ``predecessor``, ``bits``) covered by one index per
session, so a rebuild reads that index alone and decodes no payload. Every table that changes carries a
monotonic ``seq``, and every change bumps the session's ``rev``, so another store on the same file
refreshes its cached index by reading only the rows newer than the ones it saw.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from graph.codec import decode, decode_content, encode
from graph.errors import (
    DuplicateSessionError,
    ForeignDatabaseError,
    SchemaVersionError,
    StoreBusyError,
    StoreError,
    UnknownNodeError,
    UnknownSessionError,
)
from graph.ids import NodeId, SessionId
from graph.index import (
    Eligible,
    SessionIndex,
    is_artifact,
    is_summary_bits,
    kind_of_bits,
    sql_live_message,
)
from graph.models import Kind, SearchHit, Session, from_micros, to_micros
from graph.search import (
    RANKED_CANDIDATES,
    Query,
    bm25,
    doc_freqs,
    fts_query,
    indexed_text,
    matches,
    tokens,
)
from graph.store.base import (
    KEEP_ALL,
    BaseStore,
    NodeRow,
    SessionFilter,
    paused_gc,
    pending_walk_index,
    pending_walk_query,
    search_hit,
    session_origin,
)

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["FTS_PREFIXES", "MIGRATIONS", "SCHEMA_VERSION", "SessionStore"]

_IDS_PER_QUERY = 500  # ids per IN (...) query, under SQLite's variable limit (999 before 3.32)

_FETCH = 50_000  # rows per fetch of a full index build (bounds the rows held at once)

_DELETIONS = "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key='deletions'), 0)"
"""How many times sessions were deleted from the file (``meta``'s ``deletions``, absent until the first)."""


@lru_cache(maxsize=32)
def _pending_sql(eligible: Eligible) -> str:
    """The cold pending walk's SQL for ``eligible``, spelled once per process.

    A cold walk runs once per store, so a fresh store would otherwise spell it on every first read.
    """
    return pending_walk_query(eligible, lambda n: f":{n}")


_WAL_HEADER = 48
"""Bytes of the WAL-index header every commit rewrites (SQLite's ``WalIndexHdr``, first copy)."""


def _transactions(header: bytes) -> int:
    """The WAL-index header's transaction counter (``iChange``: a native-endian u32 at byte 8)."""
    return int.from_bytes(header[8:12], sys.byteorder)


_BUSY = (
    5,
    6,
)  # SQLITE_BUSY, SQLITE_LOCKED (primary codes; extended codes carry them in the low byte)


def _store_error(e: sqlite3.Error) -> StoreError:
    """The typed error for a sqlite3 failure: :class:`StoreBusyError` when only the lock was in the way."""
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(e, sqlite3.OperationalError) and (
        (code is not None and code & 0xFF in _BUSY) or "database is locked" in str(e)
    ):
        return StoreBusyError(f"sqlite: {e}")
    return StoreError(f"sqlite: {e}")


class _translated:  # lower case: it reads as the function it replaced, ``with _translated():``
    """Raise every ``sqlite3.Error`` of the block as its :func:`_store_error`.

    A class rather than a generator context manager: it wraps every statement of the hot append and
    refresh paths, and costs a fifth as much.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, e: BaseException | None, tb: object) -> None:
        if isinstance(e, sqlite3.Error):
            raise _store_error(e) from e


def _into_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """Switch ``conn``'s file to WAL and return the journal mode it is in (``"wal"``, ``"memory"``).

    A file still in rollback-journal mode (a new file, or one written by version 1) is switched under
    an exclusive lock, and SQLite does not call the busy handler when another connection holds or
    takes a lock meanwhile: it answers "database is locked" at once. So the switch is retried here,
    like any other wait for the lock, for up to ``timeout`` seconds.

    Raises:
        sqlite3.OperationalError: the file stayed locked for ``timeout`` seconds (or another failure).
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return str(mode)
        except sqlite3.OperationalError as e:
            if not isinstance(_store_error(e), StoreBusyError) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _v1_tables(db: sqlite_utils.Database) -> None:
    """Version 1: sessions, nodes, covers, markers (one value per node and provider), rewound stamps."""
    db.table("meta").create({"key": str, "value": str}, pk="key")
    db.table("sessions").create(
        {
            "id": str,
            "title": str,
            "created_at": int,
            "updated_at": int,
            "head": str,
            "rev": int,
            "spawned_from": str,
            "parent_session": str,
            "metadata": bytes,
        },
        pk="id",
        not_null={"created_at", "updated_at", "rev"},
        defaults={"rev": 0, "title": ""},
    )
    db.table("sessions").create_index(["updated_at"], index_name="sessions_by_update")
    db.table("sessions").create_index(["parent_session"], index_name="sessions_by_parent")
    db.table("nodes").create(
        {
            "seq": int,
            "id": str,
            "session_id": str,
            "predecessor": str,
            "bits": int,
            "created_at": int,
            "content": bytes,
            "metadata": bytes,
        },
        pk="seq",
        not_null={"id", "session_id", "bits", "created_at", "content"},
    )
    db.table("nodes").create_index(["id"], index_name="nodes_by_id", unique=True)
    # Covering index: a rebuild or refresh reads this index alone, never the payload pages.
    db.table("nodes").create_index(
        ["session_id", "seq", "id", "predecessor", "bits"], index_name="nodes_walk"
    )
    db.table("covers").create(
        {"summary_id": str, "position": int, "node_id": str},
        pk=("summary_id", "position"),
    )
    # AUTOINCREMENT: a marker row must get a seq never used before, or a reader that saw an older
    # row with that seq would miss the change.
    db.execute(
        "CREATE TABLE marks (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,"
        " node_id TEXT NOT NULL, provider TEXT NOT NULL, value TEXT NOT NULL,"
        " UNIQUE (node_id, provider))"
    )
    db.table("marks").create_index(["session_id", "seq"], index_name="marks_by_session")
    db.execute(
        "CREATE TABLE rewound (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " session_id TEXT NOT NULL, node_id TEXT NOT NULL UNIQUE)"
    )
    db.table("rewound").create_index(["session_id", "seq"], index_name="rewound_by_session")


def _v2_marks_per_value(db: sqlite_utils.Database) -> None:
    """Version 2: markers kept per (provider, value), existing markers kept with their seq.

    Consumers sharing a provider name (two memory workspaces) then never overwrite each other.
    """
    db.execute(
        "CREATE TABLE marks_v2 (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,"
        " node_id TEXT NOT NULL, provider TEXT NOT NULL, value TEXT NOT NULL,"
        " UNIQUE (node_id, provider, value))"
    )
    db.execute(
        "INSERT INTO marks_v2 (seq, session_id, node_id, provider, value)"
        " SELECT seq, session_id, node_id, provider, value FROM marks ORDER BY seq"
    )
    db.execute("DROP TABLE marks")
    db.execute("ALTER TABLE marks_v2 RENAME TO marks")
    db.table("marks").create_index(["session_id", "seq"], index_name="marks_by_session")


def _v3_search(db: sqlite_utils.Database) -> None:
    """Version 3: the full-text index of what was said, and the sessions' runtime and project.

    ``node_text`` is an FTS5 table (rowid = ``nodes.seq``) holding each node's indexed text (see
    :mod:`graph.search`); ``sessions.runtime`` and ``sessions.project`` hold
    :func:`graph.store.base.session_origin` of the metadata, a spawned session taking its parent's when
    it has none. Both are filled from what the file already stores.
    """
    c = db.conn
    c.execute("ALTER TABLE sessions ADD COLUMN runtime TEXT")
    c.execute("ALTER TABLE sessions ADD COLUMN project TEXT")
    c.execute("CREATE INDEX sessions_by_runtime ON sessions (runtime, updated_at)")
    c.execute("CREATE INDEX sessions_by_project ON sessions (project)")
    c.execute(
        "CREATE VIRTUAL TABLE node_text USING fts5(text, tokenize='unicode61 remove_diacritics 2')"
    )
    rows = {
        sid: (decode(meta) if meta else {}, parent)
        for sid, meta, parent in c.execute("SELECT id, metadata, parent_session FROM sessions")
    }

    def origin(sid: str) -> tuple[str | None, str | None]:
        runtime, project = session_origin(rows[sid][0])
        seen = {sid}
        parent = rows[sid][1]
        while parent in rows and parent not in seen and (runtime is None or project is None):
            seen.add(parent)
            up_runtime, up_project = session_origin(rows[parent][0])
            runtime, project = runtime or up_runtime, project or up_project
            parent = rows[parent][1]
        return runtime, project

    c.executemany(
        "UPDATE sessions SET runtime=?, project=? WHERE id=?",
        [(*origin(sid), sid) for sid in rows],
    )
    batch: list[tuple[int, str]] = []
    for seq, bits, content in c.execute("SELECT seq, bits, content FROM nodes").fetchall():
        text = indexed_text(kind_of_bits(bits), decode_content(content))
        if text:
            batch.append((seq, text))
        if len(batch) >= 10_000:
            c.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", batch)
            batch.clear()
    c.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", batch)


def _v4_import_files(db: sqlite_utils.Database) -> None:
    """Version 4: per imported file, how far it was read and what continuing needs.

    ``import_files`` holds one row per source file (``key``: its resolved path) with the importer's
    state as JSON (``state``): the byte offset read up to, the file's identity at that offset, and
    the format's own state (see :mod:`graph.importers.resume`). A file without a row is imported in
    full, so an upgraded file needs nothing filled in.
    """
    db.execute("CREATE TABLE import_files (key TEXT PRIMARY KEY, state BLOB NOT NULL)")


FTS_PREFIXES = "3 4 5"
"""The prefix lengths ``node_text`` keeps a prefix index for (FTS5's ``prefix`` option): a ``word*``
of one of these lengths reads one list of matches instead of merging the lists of every word it
starts (``bobo*`` over 1e6 nodes: 2.9 s without, see the README's search section). Longer prefixes
start few enough words to merge quickly; shorter ones are not expanded (:data:`graph.search.MIN_PREFIX`)."""

SEARCH_QUEUE_AT = 64
"""Queued search rows (``node_text_queue``) at which a write moves them into ``node_text``."""

_QUEUE_BELOW = 32
"""A write with fewer search rows than this queues them; a larger batch (an import) writes them
into ``node_text`` directly, in its own segment."""

_CHUNK = 20_000
"""Rows copied per statement when a migration rebuilds a large table."""


def _v5_prefix_index(db: sqlite_utils.Database) -> None:
    """Version 5: ``node_text`` keeps prefix indexes (:data:`FTS_PREFIXES`) for fast ``word*`` searches.

    FTS5 cannot add a prefix index to an existing table, so the table is made again with the option
    and the stored text copied over in rowid order, :data:`_CHUNK` rows per statement (the text is
    not decoded again from the nodes). The whole step is one transaction, as every step is.
    """
    c = db.conn
    c.execute(
        "CREATE VIRTUAL TABLE node_text_v5 USING fts5(text,"
        f" tokenize='unicode61 remove_diacritics 2', prefix='{FTS_PREFIXES}')"
    )
    last = -1
    while True:
        (top,) = c.execute(
            "SELECT max(rowid) FROM (SELECT rowid FROM node_text WHERE rowid > ?"
            " ORDER BY rowid LIMIT ?)",
            (last, _CHUNK),
        ).fetchone()
        if top is None:
            break
        c.execute(
            "INSERT INTO node_text_v5 (rowid, text) SELECT rowid, text FROM node_text"
            " WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
            (last, top),
        )
        last = top
    c.execute("DROP TABLE node_text")
    c.execute("ALTER TABLE node_text_v5 RENAME TO node_text")


def _v6_search_queue(db: sqlite_utils.Database) -> None:
    """Version 6: ``node_text_queue``, the search rows of small writes not yet in ``node_text``.

    One row per node (``seq`` = ``nodes.seq``, ``text`` its indexed text). A write of a few nodes
    (an append, a LangGraph checkpoint) puts its rows here instead of into the FTS5 table: FTS5
    writes a new segment for every transaction that adds to it (about six pages for one message),
    and a queue row is one. A write that brings the queue to :data:`SEARCH_QUEUE_AT` rows moves
    them into ``node_text`` in one segment. A search moves them first when it can without waiting,
    and otherwise reads the queue beside the index, so a search always sees every node and never
    waits for a writer.
    """
    db.execute("CREATE TABLE node_text_queue (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)")


def _v7_flagged(db: sqlite_utils.Database) -> None:
    """Version 7: ``flagged`` records nodes whose row was rewritten after they were appended.

    :meth:`~graph.store.base.BaseStore.set_artifact` (an artifact flag) and
    :meth:`~graph.store.base.BaseStore.link_spawn` (a root's settled parent note) rewrite a row's
    ``bits`` and ``metadata`` in place (its ``seq`` stays: the search index is keyed by it) and add
    one row here, so another store's cached index reads only those rows again (their bits, and
    drops their decoded models) since it last looked. A file without the
    table has no such change to read.
    """
    db.execute(
        "CREATE TABLE flagged (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " session_id TEXT NOT NULL, node_id TEXT NOT NULL)"
    )
    db.table("flagged").create_index(["session_id", "seq"], index_name="flagged_by_session")


def _v8_runtime_only_when_known(db: sqlite_utils.Database) -> None:
    """Version 8: ``sessions_by_runtime`` holds only the sessions whose runtime is known.

    The index is ``(runtime, updated_at)``, so every write that moves a session's ``updated_at``
    (an append, a LangGraph checkpoint) rewrote one of its pages, one WAL page in every commit.
    Its only reader is the listing and search filter ``runtime=?`` (``sessions --runtime``, the
    server's ``?runtime=``), which never asks for the sessions without one: a session whose
    metadata names no runtime (LangGraph threads, sessions made through the API) is left out of the
    index, and its writes no longer touch it. The filtered listing still reads the index in
    ``updated_at`` order (SQLite uses a partial index for ``runtime=?``, which implies ``runtime
    IS NOT NULL``).
    """
    db.execute("DROP INDEX sessions_by_runtime")
    db.execute(
        "CREATE INDEX sessions_by_runtime ON sessions (runtime, updated_at)"
        " WHERE runtime IS NOT NULL"
    )


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _v1_tables,
    _v2_marks_per_value,
    _v3_search,
    _v4_import_files,
    _v5_prefix_index,
    _v6_search_queue,
    _v7_flagged,
    _v8_runtime_only_when_known,
]
"""The schema steps in order: ``MIGRATIONS[i]`` brings a file from version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this library writes; recorded in the file's ``meta`` table."""


class SessionStore(BaseStore):
    """The SQLite session store: one database file, every operation of :class:`BaseStore`.

    The file runs in WAL mode with ``synchronous=NORMAL``: a committed write survives a crash of the
    process, not a power loss. Readers never wait for a writer; a write waits up to ``timeout``
    seconds for another process's write lock. An older file is migrated when opened.

    Args:
        path: The database file (created with its directories when missing), or ``":memory:"``.
        timeout: Seconds a write waits for another process's write lock before
            :class:`~graph.errors.StoreBusyError`.
        tracer: Called as ``tracer(sql, None)`` for every statement the connection runs, the store's
            own and sqlite-utils' alike, with its parameters bound into ``sql`` (debugging).

    Raises:
        StoreError: the file cannot be opened or is not a database.
        StoreBusyError: the file must be created or migrated and another process holds the lock.
        SchemaVersionError: the file was written by a newer version.
        ForeignDatabaseError: the file is another application's database (tables, no store).
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        timeout: float = 5.0,
        tracer: Callable[[str, Any], None] | None = None,
    ) -> None:
        super().__init__()
        self.path = str(path)
        parent = os.path.dirname(self.path) if self.path != ":memory:" else ""
        if parent and not os.path.isdir(parent):  # one stat on every open, a mkdir on the first
            Path(parent).mkdir(parents=True, exist_ok=True)
        with _translated():
            self.conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=timeout, check_same_thread=False
            )
            if tracer is not None:
                self.conn.set_trace_callback(lambda sql: tracer(sql, None))
            mode = _into_wal(self.conn, timeout)
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._depth = 0
            self._busy_ms = int(timeout * 1000)
            self._data_version = -1
            self._wal_index: int | None = None
            self._wal_header = b""
            self._holding = False
            """Whether this store's own ``BEGIN IMMEDIATE`` holds the write lock now."""
            self._checked_holding = False
            """Whether :meth:`_db_changed` looked since that lock was taken."""
            self._migrate()
        if mode.lower() == "wal" and self.path not in (":memory:", ""):
            try:
                # SQLite names the WAL index after the file a symlink leads to; a symlinked
                # folder leads to the same file either way, so only a linked file is resolved.
                real = os.path.realpath(self.path) if os.path.islink(self.path) else self.path
                self._wal_index = os.open(real + "-shm", os.O_RDONLY)
            except OSError:
                pass  # no shared WAL index to read: every check asks PRAGMA data_version

    # ---------------------------------------------------------------- schema

    def _read_version(self) -> int:
        """The file's schema version (0 for a new file), read without taking the write lock.

        One statement: the ``meta`` table is asked directly, and only a file without one (a new
        file) answers "no such table".
        """
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as e:
            if not str(e).startswith("no such table"):
                raise
            return 0
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Bring the file's schema to :data:`SCHEMA_VERSION`; a current file is only read."""
        version = self._read_version()
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(SCHEMA_VERSION, version)
        with self.atomic():
            version = self._read_version()  # again, under the lock: another process may have won
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(SCHEMA_VERSION, version)
            if version == 0:
                others = [
                    name
                    for (name,) in self.conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'"
                        " AND name NOT LIKE 'sqlite_%' ORDER BY name"
                    )
                ]
                if others:
                    raise ForeignDatabaseError(others)
            # sqlite-utils only builds the schema: a current file is opened without importing it.
            import sqlite_utils

            db = sqlite_utils.Database(self.conn)
            for step in MIGRATIONS[version:]:
                step(db)
            if version < SCHEMA_VERSION:
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )

    @property
    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0])

    # ---------------------------------------------------------------- transactions

    def atomic(self) -> _Transaction:
        """Open a transaction (``BEGIN IMMEDIATE``), or a savepoint inside an open one.

        A caller's own open transaction on :attr:`conn` is never committed here: the store nests a
        savepoint inside it.

        Raises:
            StoreError: the database is locked past the timeout, or another sqlite3 failure.
        """
        return _Transaction(self)

    def _commit(self) -> None:
        """``COMMIT`` the outer transaction, and record its own commit as seen when that is certain.

        Every commit rewrites the WAL-index header and adds one to its transaction counter (the
        ``iChange`` word at byte 8), and only the holder of the write lock commits: from ``BEGIN
        IMMEDIATE`` to ``COMMIT`` that is this connection. So when the header read just before
        ``COMMIT`` is the one :meth:`_db_changed` last saw (nothing unseen came before), and the
        header read just after counts exactly one transaction more, the only commit in between is
        this one, which ``PRAGMA data_version`` never counts: the new header is recorded, and the
        next freshness check answers from it without a statement. Any other outcome (another
        connection committed in the moment after ours, a header not seen yet) leaves the recorded
        header alone, so the next check asks ``PRAGMA data_version`` as before.
        """
        shm = self._wal_index
        before = self._wal_header
        ours = (
            shm is not None
            and len(before) == _WAL_HEADER
            and os.pread(shm, _WAL_HEADER, 0) == before
        )
        self.conn.execute("COMMIT")
        self._changes += 1
        if ours and shm is not None:
            after = os.pread(shm, _WAL_HEADER, 0)
            if _transactions(after) == (_transactions(before) + 1) % (1 << 32):
                self._wal_header = after

    def close(self) -> None:
        """Close the connection."""
        if self._wal_index is not None:
            os.close(self._wal_index)
            self._wal_index = None
        self.conn.close()

    # ---------------------------------------------------------------- primitives

    def _change_mark(self) -> int | None:
        """The count of changes seen, after checking for other connections' commits (well under a microsecond).

        Every commit of this store counts one (:meth:`_commit`), as does every rollback and every
        change :meth:`_db_changed` finds; None while a transaction is open on the connection.
        """
        if self._depth or self.conn.in_transaction:
            return None
        self._note_changes()
        return self._changes

    def _db_changed(self) -> bool:
        """Whether another connection may have committed since the last call.

        Every commit to a WAL file rewrites the header of its shared WAL index (the first
        :data:`_WAL_HEADER` bytes of the ``-shm`` file: frame count, checksums, salts), so reading
        them (well under a microsecond) answers "nothing happened" without a statement. A changed
        header, which this connection's own commits cause too, is confirmed by ``PRAGMA
        data_version`` (a few microseconds), which counts only other connections' commits. A commit
        that returned before this call began is always seen: its header was written first.
        """
        if self._holding:
            # Only the holder of the write lock commits: once looked at since this store took it,
            # nothing can have changed (a put asks four times in one transaction).
            if self._checked_holding:
                return False
            self._checked_holding = True
        if self._wal_index is not None:
            header = os.pread(self._wal_index, _WAL_HEADER, 0)
            if header == self._wal_header:
                return False
            first, self._wal_header = not self._wal_header, header
            if first:
                # The first check of this store: nothing it read before can be stale, so the
                # statement waits for the header's first change (answered "changed" then, too).
                return True
        (v,) = self.conn.execute("PRAGMA data_version").fetchone()
        if v != self._data_version:
            self._data_version = v
            return True
        return False

    def _db_catch_up(self, index: SessionIndex) -> None:
        c = self.conn
        with _translated():
            row = c.execute(
                "SELECT rev, head FROM sessions WHERE id=?", (index.session_id,)
            ).fetchone()
            if row is None:
                raise UnknownSessionError(index.session_id)
            if row[0] == index.rev and index.pred:
                return
            sid = index.session_id
            (deletions,) = c.execute(_DELETIONS).fetchone()
            if deletions != index.deletions:
                # Sessions were deleted since the index was built: their seqs may be handed out
                # again and this one may have been deleted and made again, so it is built anew.
                index.reset()
                index.deletions = deletions
            full = not index.pred and index.node_seq == 0
            with paused_gc(full):
                summaries: list[str] = []
                cur = c.execute(
                    "SELECT seq, id, predecessor, bits FROM nodes"
                    " WHERE session_id=? AND seq>? ORDER BY seq",
                    (sid, index.node_seq),
                )
                if full:
                    # A full build: ids are unique, so each chunk goes in by comprehension.
                    pred, bits = index.pred, index.bits
                    while chunk := cur.fetchmany(_FETCH):
                        pred.update({r[1]: r[2] for r in chunk})
                        bits.update({r[1]: r[3] for r in chunk})
                        summaries += [r[1] for r in chunk if is_summary_bits(r[3])]
                        index.node_seq = chunk[-1][0]
                else:
                    last = index.node_seq
                    for seq, nid, p, b in cur:
                        last = seq
                        if nid in index.pred:
                            index.changed((nid,))  # stored again (deleted, then re-imported)
                            continue
                        index.add(nid, p, b)
                        if is_summary_bits(b):
                            summaries.append(nid)
                    index.node_seq = last
                for s, ns in self._covers_of(summaries).items():
                    index.covers[s] = ns
                self._catch_up_marks(index)
                stamped = []
                for seq, nid in c.execute(
                    "SELECT seq, node_id FROM rewound WHERE session_id=? AND seq>? ORDER BY seq",
                    (sid, index.rewound_seq),
                ):
                    stamped.append(nid)
                    index.rewound_seq = seq
                index.stamp_rewound(stamped)
                flags = []
                unstamped = []
                for seq, nid, b, stamp in c.execute(
                    "SELECT f.seq, f.node_id, n.bits,"
                    " EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = f.node_id)"
                    " FROM flagged f JOIN nodes n ON n.id = f.node_id"
                    " WHERE f.session_id=? AND f.seq>? ORDER BY f.seq",
                    (sid, index.flag_seq),
                ):
                    flags.append((nid, is_artifact(b)))
                    if not stamp:
                        unstamped.append(nid)
                    index.flag_seq = seq
                index.set_artifact(flags)
                index.unstamp_rewound(unstamped)
                index.changed(n for n, _ in flags)  # (their metadata may be what changed)
                index.rev, index.head = row

    def _catch_up_marks(self, index: SessionIndex) -> None:
        """Add the markers newer than ``index.mark_seq``, grouped per (provider, value) by SQLite.

        One statement (one snapshot) returns each marker kind's node ids as a JSON array and its
        newest seq, so a session of a million markers costs a few parses, not a loop per row.
        """
        import orjson

        marks = index.marks
        for provider, value, ids, newest in self.conn.execute(
            "SELECT provider, value, json_group_array(node_id), max(seq) FROM marks"
            " WHERE session_id=? AND seq>? GROUP BY provider, value",
            (index.session_id, index.mark_seq),
        ):
            key = (provider, value)
            got = orjson.loads(ids)
            index.changed(got)
            if key in marks:
                marks[key].update(got)
            else:
                marks[key] = set(got)
            index.mark_seq = max(index.mark_seq, newest)

    def _session(self, row: tuple[Any, ...]) -> Session:
        sid, title, created, updated, head, spawned_from, parent, meta = row
        return Session.model_construct(
            id=SessionId(sid),
            title=title or "",
            created_at=from_micros(created),
            updated_at=from_micros(updated),
            head=NodeId(head) if head else None,
            metadata=decode(meta) if meta else {},
            spawned_from=NodeId(spawned_from) if spawned_from else None,
            parent_session=SessionId(parent) if parent else None,
        )

    _SESSION_COLUMNS = (
        "id, title, created_at, updated_at, head, spawned_from, parent_session, metadata"
    )

    def _db_session(self, session_id: str) -> Session:
        with _translated():
            row = self.conn.execute(
                f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return self._session(row)

    def _db_sessions(
        self, limit: int | None, parent: str | None, keep: SessionFilter = KEEP_ALL
    ) -> list[Session]:
        where, params = self._session_filter(keep)
        if parent is not None:
            where.append("parent_session=?")
            params.append(parent)
        if keep.since is not None:
            where.append("updated_at>=?")
            params.append(keep.since)
        params.append(-1 if limit is None else limit)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with _translated():
            rows = self.conn.execute(
                f"SELECT {self._SESSION_COLUMNS} FROM sessions {clause}"
                " ORDER BY updated_at DESC, id DESC LIMIT ?",
                params,
            ).fetchall()
        return [self._session(r) for r in rows]

    @staticmethod
    def _session_filter(
        keep: SessionFilter, table: str = "sessions"
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if keep.runtime is not None:
            where.append(f"{table}.runtime=?")
            params.append(keep.runtime)
        if keep.project is not None:
            root = keep.project.rstrip("/") or "/"
            where.append(f"({table}.project=? OR substr({table}.project, 1, ?)=?)")
            prefix = root if root == "/" else root + "/"
            params += [root, len(prefix), prefix]
        return where, params

    def _db_search(
        self,
        query: Query,
        sessions: Sequence[str] | None,
        keep: SessionFilter,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        import orjson

        where, params = self._session_filter(keep, "s")
        if sessions is not None:
            where.append("n.session_id IN (SELECT value FROM json_each(?))")
            params.append(orjson.dumps(list(sessions)).decode())
        if keep.since is not None:
            where.append("n.created_at>=?")
            params.append(keep.since)
        clause = "".join(f" AND {w}" for w in where)
        with _translated():
            waiting = self.conn.execute("SELECT 1 FROM node_text_queue LIMIT 1").fetchone()
        if waiting is not None and not self._flush_for_search():
            return self._search_with_queue(query, clause, params, limit, offset)
        # FTS5 walks matches newest first natively, so the candidates stop at RANKED_CANDIDATES
        # without scoring or sorting the rest; only those are ranked, and only the page is decoded.
        sql = (
            "WITH c AS (SELECT node_text.rowid AS seq, bm25(node_text) AS rank FROM node_text"
            " JOIN nodes n ON n.seq = node_text.rowid JOIN sessions s ON s.id = n.session_id"
            f" WHERE node_text MATCH ?{clause} ORDER BY node_text.rowid DESC LIMIT ?)"
            " SELECT n.id, n.session_id, n.created_at, n.bits, n.content, c.rank,"
            " EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = n.id)"
            " FROM c JOIN nodes n ON n.seq = c.seq ORDER BY c.rank, c.seq LIMIT ? OFFSET ?"
        )
        args = [fts_query(query), *params, RANKED_CANDIDATES, limit, offset]
        with _translated():
            rows = self.conn.execute(sql, args).fetchall()
        return [search_hit(query, r) for r in rows]

    def _flush_for_search(self) -> bool:
        """Move the queued search rows into the index if that needs no waiting; whether it did.

        Outside a transaction the write lock is asked for without waiting; inside one (the store's
        own, or the caller's) a savepoint does the move, which a caller's read snapshot may refuse,
        as a read-only connection does. A refused move writes nothing, and the search then reads
        the queue itself (:meth:`_search_with_queue`): a search never waits for a writer.
        """
        c = self.conn
        try:
            with _translated():
                c.execute("PRAGMA busy_timeout=0")
                try:
                    if c.in_transaction:
                        c.execute("SAVEPOINT sg_search")
                        try:
                            self._flush_search_queue()
                        except BaseException:
                            c.execute("ROLLBACK TO sg_search")
                            c.execute("RELEASE sg_search")
                            raise
                        c.execute("RELEASE sg_search")
                        return True
                    c.execute("BEGIN IMMEDIATE")
                    try:
                        self._flush_search_queue()
                        self._commit()
                    except BaseException:
                        if c.in_transaction:
                            c.execute("ROLLBACK")
                        raise
                    return True
                finally:
                    c.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        except StoreError:
            return False

    def _search_with_queue(
        self, query: Query, clause: str, params: list[Any], limit: int, offset: int
    ) -> list[SearchHit]:
        """A search while queued search rows could not be moved into the index (see above).

        The index answers for what it holds, as :meth:`_db_search` asks it; the queued rows (at
        most :data:`SEARCH_QUEUE_AT` per writer) are matched here by :func:`graph.search.matches`,
        which reads a query as FTS5 does, and ranked by :func:`graph.search.bm25` with counts
        taken from the index's candidates and the queue. So the same nodes are found; the order of
        the queued ones among the others can differ slightly from the order after the move.
        """
        c = self.conn
        with _translated():
            indexed = c.execute(
                "SELECT node_text.rowid, bm25(node_text) FROM node_text"
                " JOIN nodes n ON n.seq = node_text.rowid JOIN sessions s ON s.id = n.session_id"
                f" WHERE node_text MATCH ?{clause} ORDER BY node_text.rowid DESC LIMIT ?",
                [fts_query(query), *params, RANKED_CANDIDATES],
            ).fetchall()
            queued = c.execute(
                "SELECT q.seq, q.text FROM node_text_queue q JOIN nodes n ON n.seq = q.seq"
                f" JOIN sessions s ON s.id = n.session_id WHERE 1{clause}",
                params,
            ).fetchall()
        docs = [(seq, tokens(text)) for seq, text in queued]
        found = [(seq, toks) for seq, toks in docs if matches(query, toks)]
        counts = doc_freqs(query, (toks for _, toks in docs))
        # every candidate of the index holds every positive term
        counts = {t: n + len(indexed) for t, n in counts.items()}
        total = len(indexed) + len(docs)
        mean = sum(len(toks) for _, toks in docs) / max(1, len(docs))
        ranked = [
            *indexed,
            *((seq, bm25(query, toks, counts, total, mean)) for seq, toks in found),
        ]
        ranked.sort(key=lambda r: -r[0])
        page = sorted(ranked[:RANKED_CANDIDATES], key=lambda r: (r[1], r[0]))
        page = page[offset : offset + limit]
        if not page:
            return []
        with _translated():
            got = {
                r[0]: r[1:]
                for r in c.execute(
                    "SELECT n.seq, n.id, n.session_id, n.created_at, n.bits, n.content,"
                    " EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = n.id)"
                    " FROM nodes n WHERE n.seq IN (SELECT value FROM json_each(?))",
                    (orjson.dumps([seq for seq, _ in page]).decode(),),
                )
            }
        return [
            search_hit(query, (*got[seq][:5], rank, got[seq][5]))
            for seq, rank in page
            if seq in got
        ]

    def _db_insert_session(self, session: Session) -> None:
        try:
            self.conn.execute(
                "INSERT INTO sessions (id, title, created_at, updated_at, head, rev, spawned_from,"
                " parent_session, metadata, runtime, project)"
                " VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
                (
                    session.id,
                    session.title,
                    to_micros(session.created_at),
                    to_micros(session.updated_at),
                    # The first rev is the clock in microseconds: a session deleted and made again
                    # never comes back to a rev another store's cached index saw.
                    time.time_ns() // 1000,
                    session.spawned_from,
                    session.parent_session,
                    encode(dict(session.metadata)),
                    *self._origin(session.metadata, session.parent_session),
                ),
            )
        except sqlite3.IntegrityError as e:
            raise DuplicateSessionError(session.id) from e
        except sqlite3.Error as e:
            raise _store_error(e) from e

    def _db_set_session_info(
        self, session_id: str, title: str | None, metadata: dict[str, Any] | None
    ) -> None:
        with _translated():
            if title is not None:
                self.conn.execute("UPDATE sessions SET title=? WHERE id=?", (title, session_id))
            if metadata is not None:
                row = self.conn.execute(
                    "SELECT parent_session FROM sessions WHERE id=?", (session_id,)
                ).fetchone()
                self.conn.execute(
                    "UPDATE sessions SET metadata=?, runtime=?, project=? WHERE id=?",
                    (
                        encode(metadata),
                        *self._origin(metadata, row[0] if row else None),
                        session_id,
                    ),
                )

    def _db_set_spawn(self, session_id: str, spawned_from: str | None, parent_session: str) -> None:
        with _translated():
            meta = self._db_session(session_id).metadata
            self.conn.execute(
                "UPDATE sessions SET spawned_from=?, parent_session=?, runtime=?, project=?"
                " WHERE id=?",
                (spawned_from, parent_session, *self._origin(meta, parent_session), session_id),
            )

    def _db_update_session(self, session_id: str, head: str | None, updated_at: int | None) -> int:
        with _translated():
            if updated_at is None:
                row = self.conn.execute(
                    "UPDATE sessions SET head=?, rev=rev+1 WHERE id=? RETURNING rev",
                    (head, session_id),
                ).fetchone()
            else:
                row = self.conn.execute(
                    "UPDATE sessions SET head=?, updated_at=max(updated_at, ?), rev=rev+1"
                    " WHERE id=? RETURNING rev",
                    (head, updated_at, session_id),
                ).fetchone()
        return int(row[0])

    def _bump(self, session_id: str) -> int:
        row = self.conn.execute(
            "UPDATE sessions SET rev=rev+1 WHERE id=? RETURNING rev", (session_id,)
        ).fetchone()
        return int(row[0])

    def _advance(self, session_id: str, field: str, table: str) -> None:
        """Move the cached index's ``field`` (a ``*_seq``) past the rows this store just wrote.

        Writes run under the write lock on an index refreshed at the start of the transaction, so
        every earlier row of the session is already in it; the next refresh then starts after ours.
        """
        idx = self._cache.get(session_id)
        if idx is not None:
            (seq,) = self.conn.execute(f"SELECT max(seq) FROM {table}").fetchone()
            setattr(idx, field, seq)

    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        if len(rows) == 1:
            self._insert_node(rows[0])
            return
        with _translated():
            c = self.conn
            c.executemany(_INSERT_NODE, [r[:7] for r in rows])
            self._advance(rows[0].session_id, "node_seq", "nodes")
            said = sum(1 for r in rows if r.text)
            if 0 < said < _QUEUE_BELOW:
                c.executemany(
                    "INSERT INTO node_text_queue (seq, text) SELECT seq, ? FROM nodes WHERE id=?",
                    [(r.text, r.id) for r in rows if r.text],
                )
                self._queued()
            elif said:
                # Under the write lock one executemany gives its rows consecutive seqs, each one
                # above the table's largest (SQLite's rowid rule), so the seqs are known from the
                # largest without a lookup per row; checked on the first row, else looked up.
                (top,) = c.execute("SELECT max(seq) FROM nodes").fetchone()
                first = top - len(rows) + 1
                got = c.execute("SELECT id FROM nodes WHERE seq=?", (first,)).fetchone()
                if got is not None and got[0] == rows[0].id:
                    c.executemany(
                        "INSERT INTO node_text (rowid, text) VALUES (?, ?)",
                        [(first + i, r.text) for i, r in enumerate(rows) if r.text],
                    )
                else:
                    c.executemany(
                        "INSERT INTO node_text (rowid, text) SELECT seq, ? FROM nodes WHERE id=?",
                        [(r.text, r.id) for r in rows if r.text],
                    )
            links = [(r.id, i, c) for r in rows for i, c in enumerate(r.covers)]
            if links:
                self.conn.executemany(
                    "INSERT INTO covers (summary_id, position, node_id) VALUES (?, ?, ?)", links
                )

    def _insert_node(self, row: NodeRow) -> None:
        """Insert one row (a single append): its seq comes back with the insert, no lookups."""
        c = self.conn
        with _translated():
            seq = c.execute(_INSERT_NODE, row[:7]).lastrowid
            if row.text:
                c.execute("INSERT INTO node_text_queue (seq, text) VALUES (?, ?)", (seq, row.text))
                self._queued()
            if row.covers:
                c.executemany(
                    "INSERT INTO covers (summary_id, position, node_id) VALUES (?, ?, ?)",
                    [(row.id, i, n) for i, n in enumerate(row.covers)],
                )
        idx = self._cache.get(row.session_id)
        if idx is not None and seq is not None:
            idx.node_seq = seq  # under the write lock: no newer row of any session exists

    def _queued(self) -> None:
        """After rows were queued: move the queue into the index once it holds :data:`SEARCH_QUEUE_AT`.

        The queue is counted, not this process's writes, so writers that each append once (a hook
        or a command per turn) keep it bounded too.
        """
        (queued,) = self.conn.execute("SELECT count(*) FROM node_text_queue").fetchone()
        if queued >= SEARCH_QUEUE_AT:
            self._flush_search_queue()

    def _flush_search_queue(self) -> None:
        """Move every queued search row into ``node_text`` (in the caller's write transaction)."""
        c = self.conn
        c.execute(
            "INSERT INTO node_text (rowid, text) SELECT seq, text FROM node_text_queue ORDER BY seq"
        )
        c.execute("DELETE FROM node_text_queue")

    def _db_has_session(self, session_id: str) -> bool:
        with _translated():
            row = self.conn.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
        return row is not None

    def _db_head(self, session_id: str) -> str | None:
        with _translated():
            row = self.conn.execute(
                "SELECT head FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return None if row[0] is None else str(row[0])

    def _db_latest_message(self, session_id: str, head: str | None) -> NodeId | None:
        """The first message of the walk back from the head (:meth:`_walk_back`, stopped there)."""
        walk = self._walk_back(session_id, head)
        try:
            return next((NodeId(nid) for nid, message in walk if message), None)
        finally:
            walk.close()

    def _db_live_tips(self, session_id: str) -> list[NodeId]:
        """Live messages that are no node's ancestor among live messages, newest first (one query)."""
        with _translated():
            if not self._db_has_session(session_id):
                raise UnknownSessionError(session_id)
            live = sql_live_message("n.bits")
            rows = self.conn.execute(
                "WITH RECURSIVE live(id, predecessor, seq) AS ("
                f" SELECT id, predecessor, seq FROM nodes n WHERE session_id=? AND {live}"
                " AND NOT EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = n.id)),"
                " above(id) AS (SELECT predecessor FROM live WHERE predecessor IS NOT NULL"
                " UNION SELECT n.predecessor FROM nodes n JOIN above ON n.id = above.id"
                " WHERE n.predecessor IS NOT NULL)"
                " SELECT id FROM live WHERE id NOT IN (SELECT id FROM above) ORDER BY seq DESC",
                (session_id,),
            ).fetchall()
        return [NodeId(r[0]) for r in rows]

    def _db_walk_back(self, session_id: str, head: str | None) -> Iterator[tuple[str, bool]]:
        """Walk the stored rows back from the head in a recursive query read row by row."""
        return self._walk_back(session_id, head)

    def _walk_back(self, session_id: str, head: str | None) -> Generator[tuple[str, bool]]:
        with _translated():
            start = self._walk_start(session_id, head)
            if start is None:
                return
            rows = self.conn.execute(
                "WITH RECURSIVE up(id, predecessor, bits) AS ("
                " SELECT id, predecessor, bits FROM nodes WHERE id=? AND session_id=?"
                " UNION ALL"
                " SELECT n.id, n.predecessor, n.bits FROM nodes n JOIN up ON n.id = up.predecessor)"
                " SELECT id, bits, EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = up.id) FROM up",
                (start, session_id),
            )
            try:
                found = False
                for nid, bits, rewound in rows:
                    found = True
                    if not rewound:
                        yield nid, kind_of_bits(bits) is Kind.MESSAGE
                if not found:
                    raise UnknownNodeError(start, session_id)
            finally:
                rows.close()

    def _covers_of(self, summaries: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The covered ids of each of these summaries, in span order (read in chunks of ids)."""
        got: dict[str, list[str]] = {}
        for chunk in _chunks(summaries):
            for s, n in self.conn.execute(
                "SELECT summary_id, node_id FROM covers WHERE summary_id IN"
                f" ({','.join('?' * len(chunk))}) ORDER BY summary_id, position",
                chunk,
            ):
                got.setdefault(s, []).append(n)
        return {s: tuple(ns) for s, ns in got.items()}

    def _db_pending_walk(
        self, session_id: str, head: str | None, provider: str, value: str, eligible: Eligible
    ) -> SessionIndex | None:
        """Walk the stored rows back from the head in one recursive query, to the stopping marker.

        A row stops the walk when it is eligible (its bits match ``eligible``, it is not stamped
        rewound, it is not a summary with covers) and carries the marker; a sibling-layout summary
        leads to its last covered node, every other row to its predecessor. The rows come back as a
        partial index the walk of :func:`graph.walks.walk_pending` then reads as it reads the whole.
        """
        sql = _pending_sql(eligible)
        part = SessionIndex(session_id)
        with _translated():
            part.head = self._walk_start(session_id, head)
            if part.head is None:
                return part
            summaries = pending_walk_index(
                part,
                self.conn.execute(
                    sql, {"head": part.head, "sid": session_id, "p": provider, "v": value}
                ),
                provider,
                value,
            )
            for s, ns in self._covers_of(summaries).items():
                part.covers[s] = ns
        return part

    def _db_node_extras(
        self, session_id: str, ids: Sequence[str]
    ) -> tuple[dict[str, dict[str, tuple[str, ...]]], set[str]]:
        found: dict[str, dict[str, list[str]]] = {}
        rewound: set[str] = set()
        with _translated():
            for chunk in _chunks(ids, _IDS_PER_QUERY // 2):  # each id is bound twice
                marks = ",".join("?" * len(chunk))
                # one statement for both: a cold read prepares every statement it runs
                for nid, provider, value in self.conn.execute(
                    f"SELECT node_id, provider, value FROM marks WHERE node_id IN ({marks})"
                    f" UNION ALL SELECT node_id, NULL, NULL FROM rewound WHERE node_id IN ({marks})",
                    chunk + chunk,
                ):
                    if provider is None:
                        rewound.add(nid)
                    else:
                        found.setdefault(nid, {}).setdefault(provider, []).append(value)
        written = {
            n: {p: tuple(sorted(vs)) for p, vs in sorted(pm.items())} for n, pm in found.items()
        }
        return written, rewound

    def _db_node_count(self, session_id: str) -> int:
        with _translated():
            if not self._db_has_session(session_id):
                raise UnknownSessionError(session_id)
            (n,) = self.conn.execute(
                "SELECT count(*) FROM nodes WHERE session_id=?", (session_id,)
            ).fetchone()
        return int(n)

    def _db_locate(self, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with _translated():
            for chunk in _chunks(ids):
                out.update(
                    self.conn.execute(
                        "SELECT id, session_id FROM nodes"
                        f" WHERE id IN ({','.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
                )
        return out

    def _db_rows(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        out: dict[str, NodeRow] = {}
        summaries = []
        with _translated():
            for chunk in _chunks(ids):
                for r in self.conn.execute(
                    "SELECT id, session_id, predecessor, bits, created_at, content, metadata"
                    f" FROM nodes WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk,
                ):
                    out[r[0]] = _node_row((*r, (), ""))
                    if is_summary_bits(r[3]):
                        summaries.append(r[0])
            for s, ns in self._covers_of(summaries).items():
                out[s] = out[s]._replace(covers=ns)
        return out

    def _db_insert_marks(
        self, session_id: str, provider: str, value: str, ids: Sequence[str]
    ) -> int:
        with _translated():
            self.conn.executemany(
                "INSERT OR IGNORE INTO marks (session_id, node_id, provider, value)"
                " VALUES (?, ?, ?, ?)",
                [(session_id, n, provider, value) for n in ids],
            )
            self._advance(session_id, "mark_seq", "marks")
            return self._bump(session_id)

    def _db_insert_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        with _translated():
            self.conn.executemany(
                "INSERT OR IGNORE INTO rewound (session_id, node_id) VALUES (?, ?)",
                [(session_id, n) for n in ids],
            )
            self._advance(session_id, "rewound_seq", "rewound")

    def _db_delete_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        # ``flagged`` tells the other connections to read the nodes' stamps again (the rewound
        # table's seq only tells them of stamps added).
        with _translated():
            c = self.conn
            c.executemany("DELETE FROM rewound WHERE node_id=?", [(n,) for n in ids])
            c.executemany(
                "INSERT INTO flagged (session_id, node_id) VALUES (?, ?)",
                [(session_id, n) for n in ids],
            )
            self._advance(session_id, "flag_seq", "flagged")

    def _db_set_flags(self, session_id: str, rows: Sequence[NodeRow]) -> None:
        with _translated():
            c = self.conn
            c.executemany(
                "UPDATE nodes SET bits=?, metadata=? WHERE id=?",
                [(r.bits, r.metadata, r.id) for r in rows],
            )
            c.executemany(
                "INSERT INTO flagged (session_id, node_id) VALUES (?, ?)",
                [(session_id, r.id) for r in rows],
            )
            self._advance(session_id, "flag_seq", "flagged")

    def _db_import_state(self, key: str) -> dict[str, Any] | None:
        with _translated():
            row = self.conn.execute("SELECT state FROM import_files WHERE key=?", (key,)).fetchone()
        return None if row is None else dict(orjson.loads(row[0]))

    def _db_set_import_state(self, key: str, state: dict[str, Any]) -> None:
        with _translated():
            self.conn.execute(
                "INSERT OR REPLACE INTO import_files (key, state) VALUES (?, ?)",
                (key, orjson.dumps(state)),
            )

    def _db_delete_sessions(self, session_ids: Sequence[str]) -> None:
        c = self.conn
        with _translated():
            for chunk in _chunks(session_ids):
                marks = ",".join("?" * len(chunk))
                c.execute(
                    "DELETE FROM covers WHERE summary_id IN"
                    f" (SELECT id FROM nodes WHERE session_id IN ({marks}))",
                    chunk,
                )
                for table, key in (("node_text", "rowid"), ("node_text_queue", "seq")):
                    c.execute(
                        f"DELETE FROM {table} WHERE {key} IN"
                        f" (SELECT seq FROM nodes WHERE session_id IN ({marks}))",
                        chunk,
                    )
                for table in ("marks", "rewound", "flagged", "nodes"):
                    c.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", chunk)
                c.execute(f"DELETE FROM sessions WHERE id IN ({marks})", chunk)
            c.execute(
                "INSERT INTO meta (key, value) VALUES ('deletions', '1') ON CONFLICT (key)"
                " DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )


def _node_row(values: tuple[Any, ...]) -> NodeRow:
    """A :class:`NodeRow` from its nine values in field order, without the keyword machinery."""
    return tuple.__new__(NodeRow, values)


_INSERT_NODE = (
    "INSERT INTO nodes (id, session_id, predecessor, bits, created_at, content, metadata)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _chunks(ids: Sequence[str], size: int = _IDS_PER_QUERY) -> Iterator[list[str]]:
    for i in range(0, len(ids), size):
        yield list(ids[i : i + size])


class _Transaction:
    """What :meth:`SessionStore.atomic` returns: one transaction, or a savepoint inside one.

    A class rather than a generator context manager: every put of a checkpoint opens two and every
    append one, and this costs a third as much (about 1.5 µs against 5 µs).
    """

    __slots__ = ("name", "outer", "store")

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.outer = False
        self.name = ""

    def __enter__(self) -> None:
        store = self.store
        conn = store.conn
        self.outer = outer = store._depth == 0 and not conn.in_transaction
        self.name = name = f"sg_{store._depth}"
        try:
            conn.execute("BEGIN IMMEDIATE" if outer else f"SAVEPOINT {name}")
        except sqlite3.Error as e:
            raise _store_error(e) from e
        if outer:
            store._holding, store._checked_holding = True, False
        store._depth += 1

    def __exit__(self, kind: object, e: BaseException | None, tb: object) -> None:
        store = self.store
        conn = store.conn
        outer, name = self.outer, self.name
        store._depth -= 1
        if outer:
            store._holding = False
        if e is not None:
            # SQLite may have rolled the whole transaction back itself (a full disk, SQLITE_FULL,
            # and an interrupt do): then there is nothing to roll back, and trying would replace
            # the error that says what happened.
            with _translated():
                if not conn.in_transaction:
                    pass
                elif outer:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
            store._forget()
            return  # the block's exception propagates
        try:
            with _translated():
                if outer:
                    store._commit()
                else:
                    conn.execute(f"RELEASE {name}")
        except StoreError:
            if outer and conn.in_transaction:
                conn.execute("ROLLBACK")
            store._forget()
            raise

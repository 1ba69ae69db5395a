"""The memory workspace: a directory whose SQLite file is the store of record.

Layout of ``<workspace>``::

    memory.db        the store of record (below)
    write.lock       the cross-process write lock (``fcntl.flock``; its bytes never change)
    views -> .views/<name>     the rendered Markdown views (:mod:`memory.views`), swapped atomically
    memory.<old-id>.db         a database set aside by :meth:`MemoryWorkspace.reset` (kept, never read)

Tables of ``memory.db``:

* ``meta``: ``workspace_id`` (the marker value), ``revision`` (bumped by every install), ``schema_version``;
* ``sources``: the append-only source archive, one row per turn handed to a writer (session id, node id,
  speaker, text with credentials redacted, content hash, the original text's hash, what was redacted),
  keyed by its content address; triggers refuse ``UPDATE`` and ``DELETE``;
* ``records``, ``citations`` (record -> source, label, snippet) and ``links`` (record -> record, derived
  from ``[[topic#^id]]`` in content);
* ``records_fts``: an FTS5 index over records' content, tags, headings and topic, ensured at open;
* ``installs``: one row per install made by the write pipeline (session, node ids), so a pass that
  installed and crashed before marking is recognized and marked instead of written twice;
* ``watch``: the idle watcher's durable done/failed bookkeeping.
* ``revisions`` and ``record_versions``: the history (:mod:`memory.history`); ``memory forget`` is the
  one writer that deletes archived sources (:mod:`memory.forget`).

Durability: the rollback journal (``journal_mode=DELETE``) with ``synchronous=FULL``: a committed install
survives a process crash and a power loss, and the database file alone is the whole state (so its bytes
can be compared). Writes are rare (one per batch) and small, so the fsyncs cost nothing that matters.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sqlite3
import time as _time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.ids import new_id
from graph.models import Node, to_micros, utcnow
from memory import caps
from memory.changes import ChangeSet
from memory.errors import (
    RejectedError,
    Rejection,
    SearchIndexMissingError,
    WorkspaceBusyError,
    WorkspaceStoreError,
)
from memory.history import HISTORY_SCHEMA, record_json, record_revision
from memory.history import restore as history_restore
from memory.records import CORE_TOPIC, Citation, Record, Source, content_hash, source_id
from memory.secrets import redacted
from memory.transactions import Plan, State, plan, plan_in_steps, record_links
from memory.views import render_core, render_topic, render_views_dir

__all__ = [
    "SCHEMA_VERSION",
    "Baseline",
    "MemoryWorkspace",
    "SearchHit",
    "approx_tokens",
]

SCHEMA_VERSION = 2
"""The workspace schema version this library writes.

Version 2 lets a citation have no source (``citations.source_id`` NULL): a person's own save with
nothing to cite keeps a bare snippet citation; and it keeps history (the ``revisions`` and
``record_versions`` tables of :mod:`memory.history`; a migrated workspace's records become its
``baseline`` versions). Opening a version 1 workspace migrates it in place.
"""

_FTS = "records_fts"


def approx_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` as one per four characters, at least one (the default counter)."""
    return max(1, (len(text) + 3) // 4)


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as e:
        raise WorkspaceStoreError(f"sqlite: {e}") from e


@dataclass(frozen=True)
class Baseline:
    """What a transaction is measured against, read before the writer runs."""

    state: State
    """The records."""
    revision: int
    """The workspace revision."""
    archive_rows: int
    """How many sources were archived."""
    archive_top: int
    """The highest archive rowid."""
    archive_digest: str
    """SHA-256 over the content hashes of sources up to ``archive_top``, in rowid order."""


@dataclass(frozen=True)
class SearchHit:
    """One record found by :meth:`MemoryWorkspace.search`."""

    record_id: str
    topic: str
    headings: tuple[str, ...]
    content: str
    score: float
    """FTS5 bm25 score: lower is a better match (results come best first)."""
    sources: tuple[tuple[str, str, str], ...]
    """The cited sources as ``(source_id, session_id, node_id)``."""


_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    speaker TEXT NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    archived_at INTEGER NOT NULL,
    original_hash TEXT,
    redactions TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX sources_by_node ON sources (node_id);
CREATE TRIGGER sources_no_update BEFORE UPDATE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be updated'); END;
CREATE TRIGGER sources_no_delete BEFORE DELETE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be deleted'); END;
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    topic TEXT NOT NULL,
    headings TEXT NOT NULL,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    time TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX records_by_topic ON records (topic, position);
CREATE TABLE citations (
    record_id TEXT NOT NULL REFERENCES records (id),
    ordinal INTEGER NOT NULL,
    source_id TEXT NOT NULL REFERENCES sources (id),
    label TEXT NOT NULL,
    snippet TEXT NOT NULL,
    PRIMARY KEY (record_id, ordinal)
);
CREATE INDEX citations_by_source ON citations (source_id);
CREATE TABLE links (
    from_record TEXT NOT NULL REFERENCES records (id),
    to_record TEXT NOT NULL REFERENCES records (id),
    PRIMARY KEY (from_record, to_record)
);
CREATE TABLE installs (
    revision INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    first_node TEXT NOT NULL,
    node_ids TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX installs_by_first ON installs (session_id, first_node);
CREATE TABLE watch (
    session_id TEXT PRIMARY KEY,
    updated_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL
);
"""


_MIGRATIONS = {
    2: """
CREATE TABLE citations_v2 (
    record_id TEXT NOT NULL REFERENCES records (id),
    ordinal INTEGER NOT NULL,
    source_id TEXT REFERENCES sources (id),
    label TEXT NOT NULL,
    snippet TEXT NOT NULL,
    PRIMARY KEY (record_id, ordinal)
);
INSERT INTO citations_v2 (record_id, ordinal, source_id, label, snippet)
    SELECT record_id, ordinal, source_id, label, snippet FROM citations;
DROP TABLE citations;
ALTER TABLE citations_v2 RENAME TO citations;
CREATE INDEX citations_by_source ON citations (source_id);
"""
    + HISTORY_SCHEMA
    + """
INSERT INTO revisions (workspace_id, revision, at, kind)
    SELECT (SELECT value FROM meta WHERE key = 'workspace_id'),
        CAST((SELECT value FROM meta WHERE key = 'revision') AS INTEGER),
        CAST(strftime('%s', 'now') AS INTEGER) * 1000000, 'baseline'
    WHERE EXISTS (SELECT 1 FROM records);
INSERT INTO record_versions (workspace_id, revision, record_id, op, record)
    SELECT (SELECT value FROM meta WHERE key = 'workspace_id'),
        CAST((SELECT value FROM meta WHERE key = 'revision') AS INTEGER), r.id, 'baseline',
        json_object('topic', r.topic, 'headings', json(r.headings), 'position', r.position,
            'content', r.content, 'tags', json(r.tags), 'time', r.time,
            'created_at', r.created_at, 'updated_at', r.updated_at,
            'citations', (SELECT json_group_array(json_array(coalesce(c.source_id, ''), c.label,
                c.snippet)) FROM (SELECT * FROM citations WHERE record_id = r.id ORDER BY ordinal) c))
    FROM records r;
""",
}
"""The schema steps after version 1, by the version they reach (each runs in the opening transaction)."""


class MemoryWorkspace:
    """A memory workspace at a directory (created when missing).

    Opening ensures the schema, the FTS5 index (created idempotently, rebuilt from the records when it
    is out of step) and the views (re-rendered when they do not show the current revision, as after a
    crash between an install and its render).

    Not thread-safe: use one object per thread; processes share a workspace through the write lock.

    Args:
        path: The workspace directory.
        count_tokens: The token counter for ``core.md``'s budget (default :func:`approx_tokens`).
        core_budget: ``core.md``'s token budget (default ``caps.CORE_TOKEN_BUDGET``).
        timeout: Seconds SQLite waits for another connection's lock.

    Raises:
        WorkspaceStoreError: the database cannot be opened or is not a database.
        SearchIndexMissingError: this SQLite has no FTS5.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        count_tokens: Callable[[str], int] = approx_tokens,
        core_budget: int = caps.CORE_TOKEN_BUDGET,
        timeout: float = 5.0,
    ) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise WorkspaceStoreError(
                f"workspace {self.path}: cannot create the workspace folder: {e.strerror or e}"
            ) from e
        self.db_path = self.path / "memory.db"
        self.lock_path = self.path / "write.lock"
        if self.lock_path.is_dir():
            raise WorkspaceStoreError(
                f"{self.lock_path} is a directory; the workspace's write lock must be a file "
                "(move the directory away)"
            )
        self.lock_path.touch(exist_ok=True)
        self.count_tokens = count_tokens
        self.core_budget = core_budget
        self._timeout = timeout
        self._lock_depth = 0
        self._lock_file: int | None = None
        self._state_cache: tuple[tuple[int, int], State] | None = None
        self._digest_cache: tuple[int, int, int, Any] | None = None
        self._open()

    # ---------------------------------------------------------------- opening and schema

    def _open(self) -> None:
        self._state_cache = None
        self._digest_cache = None
        with _translated():
            self.conn = sqlite3.connect(
                self.db_path, isolation_level=None, timeout=self._timeout, check_same_thread=False
            )
            self.conn.execute("PRAGMA journal_mode=DELETE")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            with self._txn():
                if not self._table_exists("meta"):
                    for stmt in _split(_SCHEMA):
                        self.conn.execute(stmt)
                    self._set_meta("workspace_id", new_id())
                    self._set_meta("revision", "0")
                    self._set_meta("schema_version", "1")
                self._migrate()
                self._add_redaction_columns()
                self.ensure_search_index()
        self._refresh_views()

    def _refresh_views(self) -> None:
        """Render the views when they do not show the current revision or are incomplete.

        Done only when the write lock is free at once: a writer holding it renders when it ends,
        and two renders never run together (each removes the other renderings it finds).
        """
        if self._views_complete():
            return
        try:
            with self.write_lock(timeout=0.0):
                if not self._views_complete():
                    self.render_views()
        except WorkspaceBusyError:
            return

    def _views_complete(self) -> bool:
        """Whether ``views/`` names this workspace and revision and holds every file it should."""
        if self._views_revision() != (self.id, self.revision):
            return False
        root = self.views_path
        return (root / "core.md").is_file() and all(
            (root / "topics" / f"{t}.md").is_file() for t in self.topics()
        )

    def _add_redaction_columns(self) -> None:
        """Give a workspace made before credentials were redacted from the archive its two columns."""
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(sources)")}
        if "original_hash" not in have:
            self.conn.execute("ALTER TABLE sources ADD COLUMN original_hash TEXT")
        if "redactions" not in have:
            self.conn.execute(
                "ALTER TABLE sources ADD COLUMN redactions TEXT NOT NULL DEFAULT '[]'"
            )

    def _migrate(self) -> None:
        """Bring the schema up to :data:`SCHEMA_VERSION`, one step at a time, inside the open transaction.

        Raises:
            WorkspaceStoreError: the workspace was written by a newer library (its schema version is
                higher than this library's).
        """
        version = int(self._meta("schema_version"))
        if version > SCHEMA_VERSION:
            raise WorkspaceStoreError(
                f"workspace {self.path} has schema version {version}, newer than this library's "
                f"{SCHEMA_VERSION}; upgrade sessiongraph to open it"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in _split(_MIGRATIONS[step]):
                self.conn.execute(stmt)
            self._set_meta("schema_version", str(step))

    def _table_exists(self, name: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')", (name,)
        ).fetchone()
        return row is not None

    def _meta(self, key: str) -> str:
        with _translated():
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise WorkspaceStoreError(f"workspace {self.path} has no {key!r} in its meta table")
        return str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def _txn(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``), committed on success, rolled back on error."""
        with _translated():
            self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            with _translated():
                self.conn.execute("ROLLBACK")
            raise
        with _translated():
            self.conn.execute("COMMIT")

    def ensure_search_index(self) -> None:
        """Create the FTS5 index over records if it is missing, and rebuild it if out of step.

        Idempotent; called at open.

        Raises:
            SearchIndexMissingError: this SQLite was built without FTS5.
        """
        try:
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_FTS} USING fts5"
                "(content, tags, headings, topic, tokenize = 'unicode61 remove_diacritics 2')"
            )
        except sqlite3.OperationalError as e:
            raise SearchIndexMissingError(_FTS, f"FTS5 is not available: {e}") from e
        indexed = self.conn.execute(f"SELECT count(*) FROM {_FTS}").fetchone()[0]
        stored = self.conn.execute("SELECT count(*) FROM records").fetchone()[0]
        if indexed != stored:
            self.conn.execute(f"DELETE FROM {_FTS}")
            self.conn.execute(
                f"INSERT INTO {_FTS} (rowid, content, tags, headings, topic) "
                "SELECT rowid, content, tags, headings, topic FROM records"
            )

    def close(self) -> None:
        """Close the database; the object is unusable afterwards."""
        self.conn.close()
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None

    def __enter__(self) -> MemoryWorkspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def id(self) -> str:
        """The workspace id: the value of this workspace's ``written["memory"]`` markers."""
        return self._meta("workspace_id")

    @property
    def revision(self) -> int:
        """The number of installs so far (0 for a new workspace)."""
        return int(self._meta("revision"))

    @property
    def views_path(self) -> Path:
        """The rendered views directory (``<workspace>/views``)."""
        return self.path / "views"

    def reset(self) -> str:
        """Start an empty workspace with a new id; return the id.

        The old database is set aside as ``memory.<old-id>.db`` (nothing is destroyed, the archive
        included); markers carrying the old id no longer count, so every session reads as unwritten.

        Raises:
            WorkspaceBusyError: another writer holds the lock (1 second).
        """
        with self.write_lock():
            old = self.id
            self.conn.close()
            os.replace(self.db_path, self.path / f"memory.{old}.db")
            self._open()
            self._inherit_history(self.path / f"memory.{old}.db")
            self.render_views()
            return self.id

    def _inherit_history(self, old_db: Path) -> None:
        """Copy the history of a database set aside by :meth:`reset` (and what it inherited)."""
        with _translated():
            self.conn.execute("ATTACH DATABASE ? AS old", (str(old_db),))
            try:
                tables = {
                    r[0]
                    for r in self.conn.execute(
                        "SELECT name FROM old.sqlite_master WHERE type='table'"
                    )
                }
                if {"revisions", "record_versions"} <= tables:
                    with self._txn() as c:
                        c.execute("INSERT OR IGNORE INTO revisions SELECT * FROM old.revisions")
                        c.execute(
                            "INSERT OR IGNORE INTO record_versions SELECT * FROM old.record_versions"
                        )
            finally:
                self.conn.execute("DETACH DATABASE old")

    def restore_revision(self, revision: int, record_id: str | None = None) -> Plan:
        """Bring every record (or one) back to how it was at ``revision``, as a new revision.

        Records missing now are created again with their own ids, changed ones are updated and moved
        back, and (for a whole revision) records created since are deleted; all through the same
        validation as any change, recorded in history as a ``restore``.

        Raises:
            HistoryError: the revision is not in history, or the record did not exist at it.
            RejectedError: the restored records are refused (a cited source was erased since:
                ``SOURCE_MISSING``/``UNKNOWN_SOURCE``; a link to a record that is gone); nothing
                changed.
            WorkspaceBusyError: another writer holds the lock.
        """
        with self.write_lock():
            base = self.baseline()
            changes, create_ids = history_restore(
                self.conn, base.state.records, revision, record_id
            )
            ids = iter(create_ids)
            p = plan_in_steps(
                base.state,
                [changes],
                archived=self._present,
                now=to_micros(utcnow()),
                make_id=lambda: next(ids),
            )
            if p.changed:
                self.install(p, base, kind="restore")
                self.render_views()
            return p

    # ---------------------------------------------------------------- the write lock

    @contextmanager
    def write_lock(self, timeout: float = 1.0) -> Iterator[None]:
        """Hold the workspace's cross-process write lock (re-entrant within this object).

        Args:
            timeout: Seconds to wait for another holder; 1 second by default (a chatting
                session should not wait, the next turn comes back).

        Raises:
            WorkspaceBusyError: the lock stayed held for ``timeout`` seconds.
        """
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = _time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if _time.monotonic() >= deadline:
                    os.close(fd)
                    raise WorkspaceBusyError(str(self.lock_path), timeout) from None
                _time.sleep(0.01)
        self._lock_file, self._lock_depth = fd, 1
        try:
            yield
        finally:
            self._lock_depth = 0
            self._lock_file = None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # ---------------------------------------------------------------- the source archive

    def archive(self, nodes: Sequence[Node]) -> list[Source]:
        """Archive the turns handed to a writer and return their sources, in the order given.

        Content-addressed and append-only: a turn already archived is not written again, and when
        every turn is already there nothing is written at all (the file's bytes stay as they were).

        Credentials never reach the archive: every one :func:`memory.secrets.scan` finds is replaced
        by ``[redacted <kind>]`` before the row is written. The row keeps the SHA-256 of the original
        text (``original_hash``) and the kind and offsets of each credential (``redactions``), never
        the value; its ``content_hash`` is the hash of the stored, redacted text, and its id the
        content address of the original turn (so archiving the same turn again is still a no-op).

        Raises:
            WorkspaceStoreError: the database failed.
        """
        sources = []
        for n in nodes:
            original = n.text
            text, found = redacted(original)
            sources.append(
                Source(
                    source_id(n.session_id, n.id, n.role.value, original),
                    n.session_id,
                    n.id,
                    n.role.value,
                    text,
                    content_hash(text),
                    n.created_at.isoformat(),
                    content_hash(original),
                    tuple((f.kind, f.start, f.end) for f in found),
                )
            )
        known = self._present([s.id for s in sources])
        todo = [s for s in sources if s.id not in known]
        if todo:
            now = to_micros(utcnow())
            with self._txn() as c:
                c.executemany(
                    "INSERT OR IGNORE INTO sources (id, session_id, node_id, speaker, text, "
                    "content_hash, created_at, archived_at, original_hash, redactions) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            s.id,
                            s.session_id,
                            s.node_id,
                            s.speaker,
                            s.text,
                            s.content_hash,
                            s.created_at,
                            now,
                            s.original_hash,
                            json.dumps([list(r) for r in s.redactions]),
                        )
                        for s in todo
                    ],
                )
        return sources

    def _present(self, ids: Collection[str]) -> set[str]:
        got: set[str] = set()
        items = list(ids)
        with _translated():
            for i in range(0, len(items), 500):
                chunk = items[i : i + 500]
                marks = ",".join("?" * len(chunk))
                got.update(
                    r[0]
                    for r in self.conn.execute(
                        f"SELECT id FROM sources WHERE id IN ({marks})", chunk
                    )
                )
        return got

    def sources(self, ids: Collection[str] | None = None) -> list[Source]:
        """Return archived sources (those of ``ids`` that exist, or all), in archive order."""
        sql = (
            "SELECT id, session_id, node_id, speaker, text, content_hash, created_at, "
            "coalesce(original_hash, ''), redactions FROM sources"
        )
        with _translated():
            if ids is None:
                rows = self.conn.execute(sql + " ORDER BY rowid").fetchall()
            else:
                items = list(ids)
                rows = []
                for i in range(0, len(items), 500):
                    chunk = items[i : i + 500]
                    marks = ",".join("?" * len(chunk))
                    rows += self.conn.execute(
                        f"{sql} WHERE id IN ({marks}) ORDER BY rowid", chunk
                    ).fetchall()
        return [
            Source(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                r[6],
                r[7],
                tuple((str(k), int(a), int(b)) for k, a, b in json.loads(r[8])),
            )
            for r in rows
        ]

    def _archive_digest(self, top: int) -> tuple[int, str]:
        """Count and hash the archive's content hashes up to rowid ``top``.

        The running hash is kept and extended by the rows appended since, as long as no other
        connection committed in between (SQLite's ``data_version``): this connection only ever
        appends to the archive, so its rows below the kept top are the ones hashed. Any commit by
        another connection (a tampering one included) makes the next digest hash the whole archive.
        """
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        kept = self._digest_cache
        if kept is not None and kept[0] == version and kept[1] <= top:
            _, start, rows, h = kept
            h = h.copy()
        else:
            start, rows, h = 0, 0, hashlib.sha256()
        for (digest,) in self.conn.execute(
            "SELECT content_hash FROM sources WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
            (start, top),
        ):
            h.update(digest.encode("ascii", "replace"))
            rows += 1
        self._digest_cache = (version, top, rows, h.copy())
        return rows, h.hexdigest()

    # ---------------------------------------------------------------- records

    def state(self) -> State:
        """Read every record, with its citations, into a :class:`~memory.transactions.State`.

        The last state read is kept and handed out again (as a copy) while no other connection
        committed (SQLite's ``data_version``) and the revision is the same (every change of records
        through this object bumps it; archiving does not touch records). A write pipeline reads the
        records twice per batch, so this keeps a pass from reading a large workspace twice.
        """
        with _translated():
            key = (
                self.conn.execute("PRAGMA data_version").fetchone()[0],
                int(self._meta("revision")),
            )
        if self._state_cache is not None and self._state_cache[0] == key:
            return self._state_cache[1].copy()
        st = self._read_state()
        self._state_cache = (key, st.copy())
        return st

    def _read_state(self) -> State:
        cites: dict[str, list[Citation]] = {}
        st = State()
        with _translated():
            for rid, src, label, snippet in self.conn.execute(
                "SELECT record_id, coalesce(source_id, ''), label, snippet FROM citations "
                "ORDER BY record_id, ordinal"
            ):
                cites.setdefault(rid, []).append(Citation(src, label, snippet))
            for rid, topic, headings, content, tags, tm, created, updated in self.conn.execute(
                "SELECT id, topic, headings, content, tags, time, created_at, updated_at "
                "FROM records ORDER BY topic, position"
            ):
                rec = Record(
                    rid,
                    topic,
                    tuple(json.loads(headings)),
                    content,
                    tuple(cites.get(rid, ())),
                    tuple(json.loads(tags)),
                    tm,
                    created,
                    updated,
                )
                st.records[rid] = rec
                st.order.setdefault(topic, []).append(rid)
        return st

    def records(self, topic: str | None = None) -> list[Record]:
        """Return the records (of one topic, or all), topic by topic in position order."""
        st = self.state()
        topics = [topic] if topic is not None else sorted(st.order)
        return [r for t in topics for r in st.topic_records(t)]

    def record(self, record_id: str) -> Record:
        """Return one record.

        Raises:
            KeyError: no such record.
        """
        rec = self.state().records.get(record_id)
        if rec is None:
            raise KeyError(record_id)
        return rec

    def topics(self) -> list[str]:
        """Return the topic paths that hold records, sorted."""
        with _translated():
            return [
                r[0] for r in self.conn.execute("SELECT DISTINCT topic FROM records ORDER BY topic")
            ]

    def citations_of(self, node_ids: Collection[str]) -> dict[str, list[str]]:
        """Return, for each of these graph node ids that is cited, the ids of the records citing it."""
        out: dict[str, list[str]] = {}
        items = list(node_ids)
        with _translated():
            for i in range(0, len(items), 500):
                chunk = items[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for node, rid in self.conn.execute(
                    "SELECT s.node_id, c.record_id FROM citations c JOIN sources s ON s.id = c.source_id "
                    f"WHERE s.node_id IN ({marks}) ORDER BY c.record_id, c.ordinal",
                    chunk,
                ):
                    out.setdefault(node, []).append(rid)
        return out

    # ---------------------------------------------------------------- transactions

    def baseline(self) -> Baseline:
        """Read what the next transaction will be measured against."""
        with _translated():
            rows, top = self.conn.execute(
                "SELECT count(*), coalesce(max(rowid), 0) FROM sources"
            ).fetchone()
            _, digest = self._archive_digest(top)
        return Baseline(self.state(), self.revision, rows, top, digest)

    def plan(
        self,
        changes: ChangeSet,
        *,
        batch: Collection[str] | None = None,
        baseline: Baseline | None = None,
    ) -> Plan:
        """Validate ``changes`` against the baseline (or the records now) without installing them.

        Raises:
            RejectedError: see :func:`memory.transactions.plan`.
        """
        base = baseline or self.baseline()
        return plan(
            base.state, changes, archived=self._present, batch=batch, now=to_micros(utcnow())
        )

    def apply(
        self,
        changes: ChangeSet,
        *,
        batch: Collection[str] | None = None,
        within: Callable[[sqlite3.Connection, Plan], None] | None = None,
        kind: str = "change",
    ) -> Plan:
        """Validate, install and render ``changes`` under the write lock, all or nothing.

        The entry point for changes that are not a writer's batch (a human edit, a reorganization).

        Args:
            changes: The operations.
            batch: Source ids new citations must come from; None allows any archived source.
            within: Called inside the install transaction with the connection and the plan (the
                caller's own rows, such as a deletion's tombstone, commit or roll back with it).
            kind: What the revision is in history (:data:`memory.history.KINDS`).

        Returns:
            The installed plan (nothing is installed when ``plan.changed`` is False).

        Raises:
            RejectedError: refused; nothing changed.
            WorkspaceBusyError: another writer holds the lock.
        """
        with self.write_lock():
            base = self.baseline()
            p = self.plan(changes, batch=batch, baseline=base)
            if p.changed:
                self.install(p, base, within=within, kind=kind)
                self.render_views()
            return p

    def install(
        self,
        p: Plan,
        base: Baseline,
        *,
        batch_sources: Collection[str] = (),
        journal: tuple[str, Sequence[str]] | None = None,
        within: Callable[[sqlite3.Connection, Plan], None] | None = None,
        kind: str | None = None,
    ) -> int:
        """Install a validated plan in one transaction and return the new revision.

        Inside the transaction the archive is checked against the baseline first: rows archived
        before the baseline must all be there with the same content hashes, and the text of every
        source of the batch and every source the plan cites must still match its hash.

        Args:
            p: The plan (from :meth:`plan` with the same baseline).
            base: The baseline the plan was validated against.
            batch_sources: The batch's source ids (checked present and intact).
            journal: ``(session_id, node_ids)`` of the batch written, recorded in ``installs``.
            within: Called last inside the transaction with the connection and the plan.
            kind: What the revision is in history (default ``write`` with a journal, else
                ``change``); what it changed is recorded there in the same transaction.

        Raises:
            RejectedError: ``SOURCE_MISSING`` or ``SOURCE_CHANGED``; nothing installed.
            WorkspaceBusyError: the workspace changed since the baseline (someone wrote without the
                lock); nothing installed.
        """
        now = to_micros(utcnow())
        with self._txn() as c:
            self._check_archive(c, p, base, batch_sources)
            revision = int(c.execute("SELECT value FROM meta WHERE key='revision'").fetchone()[0])
            if revision != base.revision:
                raise WorkspaceBusyError(str(self.lock_path), 0.0)
            after = p.after
            for rid in p.deleted:
                rowid = c.execute("SELECT rowid FROM records WHERE id = ?", (rid,)).fetchone()[0]
                c.execute(f"DELETE FROM {_FTS} WHERE rowid = ?", (rowid,))
                c.execute("DELETE FROM citations WHERE record_id = ?", (rid,))
                c.execute("DELETE FROM links WHERE from_record = ?", (rid,))
            created = set(p.created)
            touched = created | set(p.updated) | set(p.moved)
            for topic in p.topics:
                # Rows keep their position unless something before them moved: only records
                # created, changed or shifted are written (appending to a large topic writes the
                # new rows, not the topic).
                old_order = p.before.order.get(topic, [])
                new_order = after.order.get(topic, [])
                # Records appended after the old ones leave every old position as it was: only
                # the appended rows and the touched old ones are written.
                skip = len(old_order) if new_order[: len(old_order)] == old_order else 0
                was = {rid: n for n, rid in enumerate(old_order)} if not skip else {}
                kept = []
                if skip:
                    for rid in touched - created:
                        if after.records[rid].topic == topic:
                            at = new_order.index(rid)
                            if at < skip:
                                kept.append(at)
                for pos in [*kept, *range(skip, len(new_order))]:
                    rid = new_order[pos]
                    if rid not in touched and was.get(rid) == pos:
                        continue
                    rec = after.records[rid]
                    row = (rec.topic, json.dumps(list(rec.headings), ensure_ascii=False), pos)
                    if rid in created:
                        c.execute(
                            "INSERT INTO records (id, topic, headings, position, content, tags, time, "
                            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                rid,
                                *row,
                                rec.content,
                                _tags(rec),
                                rec.time,
                                rec.created_at,
                                rec.updated_at,
                            ),
                        )
                    else:
                        c.execute(
                            "UPDATE records SET topic = ?, headings = ?, position = ?, content = ?, "
                            "tags = ?, time = ?, updated_at = ? WHERE id = ?",
                            (*row, rec.content, _tags(rec), rec.time, rec.updated_at, rid),
                        )
            for rid in touched:
                rec = after.records[rid]
                c.execute("DELETE FROM citations WHERE record_id = ?", (rid,))
                c.executemany(
                    "INSERT INTO citations (record_id, ordinal, source_id, label, snippet) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [
                        (rid, n, ci.source or None, ci.label, ci.snippet)
                        for n, ci in enumerate(rec.citations)
                    ],
                )
                c.execute("DELETE FROM links WHERE from_record = ?", (rid,))
                c.executemany(
                    "INSERT OR IGNORE INTO links (from_record, to_record) VALUES (?, ?)",
                    [(rid, target) for _, target in record_links(rec.content, rec.topic)],
                )
                rowid = c.execute("SELECT rowid FROM records WHERE id = ?", (rid,)).fetchone()[0]
                c.execute(f"DELETE FROM {_FTS} WHERE rowid = ?", (rowid,))
                c.execute(
                    f"INSERT INTO {_FTS} (rowid, content, tags, headings, topic) VALUES (?, ?, ?, ?, ?)",
                    (rowid, rec.content, " ".join(rec.tags), " ".join(rec.headings), rec.topic),
                )
            # Last, so the links of records that pointed at them are already replaced.
            for rid in p.deleted:
                c.execute("DELETE FROM records WHERE id = ?", (rid,))
            revision += 1
            c.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(revision),))
            record_revision(c, revision, kind or ("write" if journal else "change"), _versions(p))
            if journal is not None:
                session_id, node_ids = journal
                c.execute(
                    "INSERT INTO installs (revision, session_id, first_node, node_ids, at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (revision, session_id, node_ids[0], json.dumps(list(node_ids)), now),
                )
            if within is not None:
                within(c, p)
        if within is None:
            # The records are now exactly the plan's: the next read of them needs no query.
            key = (self.conn.execute("PRAGMA data_version").fetchone()[0], revision)
            self._state_cache = (key, p.after.copy())
        return revision

    def _check_archive(
        self, c: sqlite3.Connection, p: Plan, base: Baseline, batch_sources: Collection[str]
    ) -> None:
        cited = {
            ci.source
            for rid in (*p.created, *p.updated)
            for ci in p.after.records[rid].citations
            if ci.source
        }
        wanted = set(batch_sources) | cited
        found = {s.id: s for s in self.sources(wanted)}
        for sid in sorted(wanted):
            s = found.get(sid)
            if s is None:
                raise RejectedError(
                    Rejection.SOURCE_MISSING,
                    f"source {sid} is not in the archive any more",
                    source_id=sid,
                )
            if content_hash(s.text) != s.content_hash:
                raise RejectedError(
                    Rejection.SOURCE_CHANGED,
                    f"archived source {sid} no longer matches its content hash",
                    source_id=sid,
                )
        rows, digest = self._archive_digest(base.archive_top)
        if (rows, digest) != (base.archive_rows, base.archive_digest):
            raise RejectedError(
                Rejection.SOURCE_CHANGED,
                f"the source archive changed since the write began ({base.archive_rows} rows "
                f"before, {rows} now, or a content hash differs); archived sources are never edited",
            )

    def installed_prefix(self, session_id: str, node_ids: Sequence[str]) -> list[str]:
        """Return the longest installed batch that is a prefix of ``node_ids`` (else empty).

        The pipeline uses it to recognize a batch it installed but did not mark (a crash between the
        two steps) so that the batch is marked, not written again.
        """
        if not node_ids:
            return []
        best: list[str] = []
        with _translated():
            for (raw,) in self.conn.execute(
                "SELECT node_ids FROM installs WHERE session_id = ? AND first_node = ?",
                (session_id, node_ids[0]),
            ):
                ids = json.loads(raw)
                if len(ids) > len(best) and list(node_ids[: len(ids)]) == ids:
                    best = ids
        return best

    # ---------------------------------------------------------------- views

    def _views_revision(self) -> tuple[str, int] | None:
        try:
            meta = json.loads((self.views_path / "views.json").read_text("utf-8"))
            return str(meta["workspace_id"]), int(meta["revision"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def render_views(self) -> list[str]:
        """Render ``topics/**/*.md``, ``core.md`` and ``views.json`` and swap them in atomically.

        Holds the write lock while it swaps and cleans up (see :func:`memory.views.render_views_dir`).

        Returns:
            The relative paths whose bytes changed (added, changed or removed), sorted.

        Raises:
            WorkspaceBusyError: another process holds the write lock (1 second).
            WorkspaceStoreError: the views cannot be written (``views`` is a real directory, say).
        """
        st = self.state()
        files: dict[str, str] = {}
        for topic in sorted(st.order):
            files[f"topics/{topic}.md"] = render_topic(topic, st.topic_records(topic))
        core = render_core(st.topic_records(CORE_TOPIC), self.core_budget, self.count_tokens)
        files["core.md"] = core.text
        files["views.json"] = (
            json.dumps(
                {
                    "workspace_id": self.id,
                    "revision": self.revision,
                    "core_left_out": list(core.left_out),
                },
                indent=1,
            )
            + "\n"
        )
        with self.write_lock():
            old = self._view_files()
            try:
                render_views_dir(self.path, files)
            except OSError as e:
                raise WorkspaceStoreError(f"cannot render the views: {e}") from e
        return sorted(
            p for p in old.keys() | files.keys() if p != "views.json" and old.get(p) != files.get(p)
        )

    def _view_files(self) -> dict[str, str]:
        root = self.views_path
        if not root.exists():
            return {}
        return {
            str(p.relative_to(root)): p.read_text("utf-8") for p in root.rglob("*") if p.is_file()
        }

    def core_left_out(self) -> list[str]:
        """Return the core records the last render of ``core.md`` left out for the budget."""
        try:
            meta = json.loads((self.views_path / "views.json").read_text("utf-8"))
            return list(meta["core_left_out"])
        except (OSError, ValueError, KeyError):
            return []

    # ---------------------------------------------------------------- recall

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Search records lexically (FTS5, bm25-ranked), best first.

        Each word of ``query`` becomes a quoted FTS5 term (so ``"``, ``*``, ``:``, ``(``, ``NEAR`` or
        ``AND`` typed by a user are plain text and never raise), bound as a parameter; terms are
        OR-ed and ranked by bm25. The query is cut to ``caps.MAX_QUERY_CHARS`` characters and
        ``limit`` clamped to 1..``caps.MAX_RESULTS_PER_PAGE``. A query with no word, or no match, is
        an empty list.

        Raises:
            SearchIndexMissingError: the index is gone (it is created at open, so someone dropped it).
        """
        terms = list(dict.fromkeys(re.findall(r"\w+", query[: caps.MAX_QUERY_CHARS])))[:32]
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        limit = max(1, min(limit, caps.MAX_RESULTS_PER_PAGE))
        try:
            rows = self.conn.execute(
                f"SELECT r.id, r.topic, r.headings, r.content, bm25({_FTS}) AS score FROM {_FTS} "
                f"JOIN records r ON r.rowid = {_FTS}.rowid WHERE {_FTS} MATCH ? "
                "ORDER BY score, r.id LIMIT ?",
                (match, limit),
            ).fetchall()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                raise SearchIndexMissingError(_FTS, str(e)) from e
            raise WorkspaceStoreError(f"sqlite: {e}") from e
        hits = []
        for rid, topic, headings, content, score in rows:
            srcs = self.conn.execute(
                "SELECT s.id, s.session_id, s.node_id FROM citations c JOIN sources s ON s.id = c.source_id "
                "WHERE c.record_id = ? ORDER BY c.ordinal",
                (rid,),
            ).fetchall()
            hits.append(
                SearchHit(
                    rid,
                    topic,
                    tuple(json.loads(headings)),
                    content,
                    float(score),
                    tuple(map(tuple, srcs)),
                )
            )
        return hits

    # ---------------------------------------------------------------- idle-watcher bookkeeping

    def watch_status(self, session_id: str) -> tuple[int, str, str] | None:
        """Return the watcher's record for a session: ``(updated_at micros, status, reason)``, or None."""
        with _translated():
            row = self.conn.execute(
                "SELECT updated_at, status, reason FROM watch WHERE session_id = ?", (session_id,)
            ).fetchone()
        return (int(row[0]), str(row[1]), str(row[2])) if row else None

    def set_watch_status(self, session_id: str, updated_at: int, status: str, reason: str) -> None:
        """Durably record that the watcher finished a session as of ``updated_at`` (micros)."""
        with self._txn() as c:
            c.execute(
                "INSERT OR REPLACE INTO watch (session_id, updated_at, status, reason, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, updated_at, status, reason, to_micros(utcnow())),
            )


def _versions(p: Plan) -> list[tuple[str, str, dict[str, object] | None]]:
    """What a plan changes, record by record, as history keeps it."""
    at = {rid: n for ids in p.after.order.values() for n, rid in enumerate(ids)}
    out: list[tuple[str, str, dict[str, object] | None]] = []
    seen: set[str] = set()
    for op, ids in (("created", p.created), ("updated", p.updated), ("moved", p.moved)):
        for rid in ids:
            if rid in p.after.records and rid not in seen:
                seen.add(rid)
                out.append((rid, op, record_json(p.after.records[rid], at[rid])))
    out += [(rid, "deleted", None) for rid in p.deleted]
    return out


def _tags(rec: Record) -> str:
    return json.dumps(list(rec.tags), ensure_ascii=False)


def _split(script: str) -> list[str]:
    """Split the schema into statements (trigger bodies hold ``;`` and end with ``END;``)."""
    out: list[str] = []
    buf = ""
    for line in script.strip().splitlines():
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out

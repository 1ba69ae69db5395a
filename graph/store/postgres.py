"""The session store on PostgreSQL, for when one machine is not enough (psycopg 3).

Every operation, validation and typed error is :class:`~graph.store.base.BaseStore`'s, as for SQLite; this
module holds only the persistence primitives. Install with ``pip install 'sessiongraph[postgres]'``
and open with ``PostgresSessionStore("postgresql://user:pass@host/db")`` or
:func:`graph.open_store` on the same URL (the command line's ``--db`` and ``$SESSIONGRAPH_DB`` take
it too).

Concurrency: any number of processes and machines may write one database. A write transaction that
touches a session first locks that session's row (``SELECT ... FOR UPDATE``) and only then reads the
session's index and validates, so writers of one session are serialized: an append after the head,
a compare-and-swap head move, a rewind or a batch of markers is checked against everything committed
before it, and the marker prefix rule holds. Writers of different sessions do not wait for each
other. Row locks were chosen over serializable transactions because every write already starts from
one session row, so they serialize exactly what conflicts, and nothing needs to be retried by the
caller when two writers meet. A lock held past ``lock_timeout`` seconds, a deadlock or a lost
connection is :class:`~graph.errors.StoreBusyError` (``retryable``); nothing was written.

Change tracking: each write bumps the session's ``rev`` under that lock and stamps the rows it writes
(nodes, markers, rewound stamps) with it, so revisions are committed in order per session; a new
session's first ``rev`` is the server's clock in microseconds, so a session deleted and made again
never returns to a revision a cached index saw. Reading a cached index checks the session's
``rev`` (one indexed read, one round trip); when it moved, the session's ``rev`` and the rows
stamped after the revision the index last saw are read in one snapshot, as one multi-statement
query: a refresh reads only what changed, in a second round trip. Node content never changes
once stored, so the nodes :meth:`~graph.store.base.BaseStore.pending` returns are kept decoded (the
store's :class:`~graph.index.DecodedNodes`, dropped per node by the refresh that reads its markers or
stamps) and a warm ``pending()`` with nothing changed costs the revision check alone.

There is no freshness window (answering from the cached index without the check for some
milliseconds): a marker or append committed by another process would go unseen for that long, and
two consumers, or a consumer and the person who just wrote a turn, would act on a stale pending.
LISTEN/NOTIFY would not make the check free either: a notification reaches the client some time
after the commit, so a read just after another process's commit could still miss it.

Full-text search: each node's indexed text (see :mod:`graph.search`) is stored as a ``tsvector`` of
the same folded tokens the SQLite store indexes, with the ``simple`` configuration and a GIN index;
queries are rendered to ``tsquery`` from the parsed terms, so nothing a user types is SQL or query
syntax. The rank is ``-ts_rank``: lower is a better match, as with SQLite's bm25.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from graph.codec import decode, encode
from graph.errors import (
    DuplicateSessionError,
    SchemaVersionError,
    StoreBusyError,
    StoreConnectError,
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
from graph.models import Kind, Node, SearchHit, Session, from_micros, to_micros
from graph.search import (
    RANKED_CANDIDATES,
    Query,
    Term,
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
)

try:
    import psycopg
    from psycopg import errors as pg_errors
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the PostgreSQL store needs psycopg 3: pip install 'sessiongraph[postgres]'"
    ) from e

__all__ = ["CONNECT_TIMEOUT", "SCHEMA_VERSION", "PostgresSessionStore", "connect_options"]

SCHEMA_VERSION = 3
"""The schema version this module writes; recorded in the ``meta`` table."""

CONNECT_TIMEOUT = 10
"""Seconds a connection waits for the server to answer, unless the URL (or ``PGCONNECT_TIMEOUT``)
says otherwise: libpq's default is no limit, so a host that drops packets hung the command."""


def connect_options(url: str) -> dict[str, Any]:
    """The keyword arguments ``psycopg.connect(url, ...)`` needs besides ``url``.

    Args:
        url: A libpq connection URL or string.

    Returns:
        ``{"connect_timeout": CONNECT_TIMEOUT}`` when neither ``url`` (its ``connect_timeout``
        parameter) nor the environment (``PGCONNECT_TIMEOUT``) sets one; else nothing, so their
        own value stands (a keyword argument would override the URL's).

    Raises:
        psycopg.ProgrammingError: ``url`` is not a connection string libpq understands.
    """
    from psycopg.conninfo import conninfo_to_dict

    if "connect_timeout" in conninfo_to_dict(url) or os.environ.get("PGCONNECT_TIMEOUT"):
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT}


_V2_IMPORT_FILES = "CREATE TABLE import_files (key TEXT PRIMARY KEY, state BYTEA NOT NULL)"
"""Version 2: per imported file, the importer's state as JSON (see :mod:`graph.importers.resume`)."""

_V3_FLAGGED = """
CREATE TABLE flagged (session_id TEXT NOT NULL, node_id TEXT NOT NULL, rev BIGINT NOT NULL);
CREATE INDEX flagged_by_session ON flagged (session_id, rev);
"""
"""Version 3: nodes whose artifact flag changed after append, with the rev of the change (see
:meth:`~graph.store.base.BaseStore.set_artifact`: the row's ``bits`` and ``metadata`` are rewritten in
place, its ``rev`` kept, so its place in the session's order does not move)."""

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    head TEXT,
    rev BIGINT NOT NULL DEFAULT 0,
    spawned_from TEXT,
    parent_session TEXT,
    metadata BYTEA NOT NULL,
    runtime TEXT,
    project TEXT
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_session);
CREATE INDEX sessions_by_runtime ON sessions (runtime, updated_at);
CREATE INDEX sessions_by_project ON sessions (project);
CREATE TABLE nodes (
    ord BIGSERIAL,
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    predecessor TEXT,
    bits INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    content BYTEA NOT NULL,
    metadata BYTEA NOT NULL,
    rev BIGINT NOT NULL,
    said TSVECTOR
);
CREATE INDEX nodes_walk ON nodes (session_id, rev, ord) INCLUDE (id, predecessor, bits);
CREATE INDEX nodes_said ON nodes USING GIN (said);
CREATE TABLE covers (
    summary_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    PRIMARY KEY (summary_id, position)
);
CREATE TABLE marks (
    session_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    value TEXT NOT NULL,
    rev BIGINT NOT NULL,
    PRIMARY KEY (node_id, provider, value)
);
CREATE INDEX marks_by_session ON marks (session_id, rev);
CREATE TABLE rewound (
    session_id TEXT NOT NULL,
    node_id TEXT PRIMARY KEY,
    rev BIGINT NOT NULL
);
CREATE INDEX rewound_by_session ON rewound (session_id, rev);
"""

_SESSION_COLUMNS = "id, title, created_at, updated_at, head, spawned_from, parent_session, metadata"
_LOCKED = (
    pg_errors.LockNotAvailable,
    pg_errors.DeadlockDetected,
    pg_errors.SerializationFailure,
    pg_errors.QueryCanceled,
)
_BUSY = (*_LOCKED, psycopg.OperationalError)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_FIRST_REV = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
"""A new session's first revision: the server's clock in microseconds, so a session deleted and
made again under the same id never comes back to a revision a cached index saw (each write takes
longer than a microsecond, so no incarnation counts past the next one's start)."""


def _busy(e: psycopg.Error) -> StoreBusyError:
    """A retryable failure, saying whether the server was out of reach or a lock was in the way."""
    if isinstance(e, _LOCKED):
        return StoreBusyError(f"postgresql: {e}", "another transaction holds a lock it needs")
    return StoreBusyError(
        f"postgresql: {e}", "the server cannot be reached or the connection was lost"
    )


_ATTEMPT = re.compile(
    r'connection to server (?:at "([^"]*)", port (\d+)|on socket "([^"]*)") failed: '
)
"""libpq's account of one connection attempt: the address it tried, then the reason."""


def _unreachable(url: str, e: psycopg.Error) -> StoreConnectError:
    """The connection to ``url`` failed at once: where it went and why, the password left out.

    libpq tries each host of the URL in turn and names the address of each attempt; the last
    attempt is reported (the others follow it in the driver's message). A failure before any
    attempt (a host name that does not resolve, a port that is not a number) is placed at the
    URL's hosts.
    """
    text = str(e).split("\nMultiple connection attempts failed")[0]
    found = _ATTEMPT.search(text)
    if found:
        where = f"{found[1]}:{found[2]}" if found[3] is None else found[3]
        text = text[found.end() :]
    else:
        where = urlsplit(url).netloc.rpartition("@")[2] or "the local server"
        text = re.sub(r"^(connection failed|connection is bad): ", "", text)
    first, _, rest = text.replace("FATAL:", "").strip().partition("\n")
    reason = f"{first} ({' '.join(rest.split())})" if rest.strip() else first
    parts = urlsplit(url)
    secrets = [parts.password] + [v for k, v in parse_qsl(parts.query) if k == "password"]
    for secret in filter(None, secrets):
        reason = reason.replace(secret, "***")
    return StoreConnectError(where, reason)


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except _BUSY as e:
        raise _busy(e) from e
    except psycopg.Error as e:
        raise StoreError(" ".join(f"postgresql: {e}".split())) from e


def _said(text: str) -> str:
    """The indexed text as the folded tokens ``to_tsvector('simple', ...)`` receives."""
    return " ".join(tokens(text))


def _tsquery(query: Query) -> str:
    """Render parsed terms as ``tsquery`` text; tokens are letters and digits, so quoting is safe."""

    def phrase(t: Term) -> str:
        words = [f"'{w}'" for w in t.words]
        if t.prefix:
            words[-1] += ":*"
        body = " <-> ".join(words)
        return f"({body})" if len(words) > 1 else body

    positive = " & ".join(phrase(t) for t in query.positive)
    negative = "".join(f" & !{phrase(t)}" for t in query.terms if t.negated)
    return f"({positive}){negative}"


class PostgresSessionStore(BaseStore):
    """The session store on a PostgreSQL database.

    Args:
        url: A libpq connection URL or string (``postgresql://user:pass@host:5432/db``).
        schema: A schema to keep the tables in (created when missing): lets several stores, or
            test runs, share one database. Lowercase letters, digits and ``_``. None: the
            connection's ``search_path``.
        lock_timeout: Seconds to wait for another writer's lock before :class:`StoreBusyError`.

    Raises:
        StoreConnectError: nothing answers at the URL's address, or the server refuses the login
            (wrong password, unknown user or database); the message names the address and the
            reason, never the password.
        StoreBusyError: the connection was lost while the store was opened (retryable).
        StoreError: the URL is not understood, or ``schema`` is not a valid name.
        SchemaVersionError: the database was written by a newer version.
    """

    def __init__(self, url: str, *, schema: str | None = None, lock_timeout: float = 5.0) -> None:
        super().__init__()
        if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
            raise StoreError(f"postgresql: {schema!r} is not a schema name ([a-z_][a-z0-9_]*)")
        self.url = url
        self.schema = schema
        self._reborn: set[str] = set()
        self._locked: tuple[str, int, str | None] | None = None
        try:
            self.conn = psycopg.connect(url, autocommit=True, **connect_options(url))
        except psycopg.OperationalError as e:
            raise _unreachable(url, e) from e
        except psycopg.Error as e:
            raise StoreError(" ".join(f"postgresql: {e}".split())) from e
        with _translated():
            self.conn.execute(f"SET lock_timeout = {int(lock_timeout * 1000)}")
            if schema is not None:
                self.conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                self.conn.execute(f"SET search_path = {schema}")
            self._migrate()

    # ---------------------------------------------------------------- schema

    def _migrate(self) -> None:
        with self.conn.transaction():
            # One migrating process at a time; the others wait and then find the schema current.
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtext('sessiongraph schema'))")
            exists = self.conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()
            version = 0
            if exists and exists[0]:
                row = self.conn.execute(
                    "SELECT value FROM meta WHERE key = 'schema_version'"
                ).fetchone()
                version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(SCHEMA_VERSION, version)
            if version < 1:
                self.conn.execute(_SCHEMA)
            if version < 2:
                self.conn.execute(_V2_IMPORT_FILES)
            if version < 3:
                self.conn.execute(_V3_FLAGGED)
            if version < SCHEMA_VERSION:
                self.conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (str(SCHEMA_VERSION),),
                )

    @property
    def schema_version(self) -> int:
        """The schema version recorded in the database."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    # ---------------------------------------------------------------- transactions

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Open a transaction, or a savepoint inside an open one (the caller's is never committed).

        Raises:
            StoreBusyError: a lock wait timed out, a deadlock was broken, or the connection was lost.
            StoreError: another database failure.
        """
        try:
            with _translated(), self.conn.transaction():
                yield
        except BaseException:
            self._forget()
            raise

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _forget(self) -> None:
        super()._forget()
        self._reborn.clear()

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (for tests and teardown)."""
        if self.schema is None:
            raise StoreError("postgresql: drop_schema needs a store opened with schema=")
        with _translated():
            self.conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    # ---------------------------------------------------------------- the index

    def _index(self, session_id: str) -> SessionIndex:
        """The session's index, brought up to date; inside a transaction, its row locked first.

        Locking the session row before reading makes a write transaction validate against every
        write committed before it (see the module docstring).

        Raises:
            UnknownSessionError: no such session.
        """
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            self._locked = self._lock(session_id)  # the catch-up's check, read with the lock
        try:
            idx = super()._index(session_id)
        finally:
            self._locked = None
        if session_id in self._reborn:
            # Deleted and made again by another connection: what the index holds is gone.
            self._reborn.discard(session_id)
            self._cache.pop(session_id, None)
            idx = super()._index(session_id)
        return idx

    def _lock(self, session_id: str) -> tuple[str, int, str | None]:
        """Lock the session's row for this transaction; return ``(id, rev, head)`` read with it.

        Raises:
            UnknownSessionError: no such session.
        """
        with _translated():
            row = self.conn.execute(
                "SELECT rev, head FROM sessions WHERE id = %s FOR UPDATE", (session_id,)
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return (session_id, *row)

    def _batch_index(
        self, session_id: str, batch: Sequence[Node], head: Any
    ) -> tuple[SessionIndex, dict[str, NodeRow]]:
        # The batch is checked against the head and rows read under the session's row lock, so no
        # writer of the session commits between the check and the write (nor moves the head the
        # write then puts back).
        self._lock(session_id)
        return super()._batch_index(session_id, batch, head)

    def _db_changed(self) -> bool:
        return True  # one indexed read of the session's rev decides (in _db_catch_up)

    def _db_catch_up(self, index: SessionIndex) -> None:
        with _translated():
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                # The caller's transaction holds the session's row lock: no writer of this session
                # commits between the reads below, so each may take its own snapshot.
                locked = self._locked
                row: tuple[Any, ...] | None
                if locked is not None and locked[0] == index.session_id:
                    row = locked[1:]
                else:
                    row = self.conn.execute(
                        "SELECT rev, head FROM sessions WHERE id = %s", (index.session_id,)
                    ).fetchone()
                if row is None:
                    raise UnknownSessionError(index.session_id)
                if not self._unchanged(index, row[0]):
                    self._catch_up(index, *row)
                return
            found = self.conn.execute(
                "SELECT rev FROM sessions WHERE id = %s", (index.session_id,)
            ).fetchone()
            if found is None:
                raise UnknownSessionError(index.session_id)
            if self._unchanged(index, found[0]):
                return  # nothing changed: one indexed read
            # The session's rev and the rows stamped up to it, read in one snapshot and one round
            # trip: BEGIN, the reads and COMMIT go out as one query.
            try:
                self._catch_up(index)
            except BaseException:
                if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    self.conn.rollback()
                raise

    @staticmethod
    def _unchanged(index: SessionIndex, rev: int) -> bool:
        # A new index has rev 0 and a session with rows a higher one, so an equal rev means the
        # index has read everything up to it (an empty session at 0 has nothing to read).
        return bool(rev == index.rev)

    def _catch_up(
        self, index: SessionIndex, rev: int | None = None, head: str | None = None
    ) -> None:
        """Read the rows stamped after ``index.rev`` into ``index`` (all of them into an empty one).

        The reads go to the server as one multi-statement query (parameters bound client-side by
        psycopg's quoting), so a refresh costs one round trip whatever it reads (and one more for
        the covers links of new compaction summaries). With ``rev`` None
        (outside a transaction) the session's row is read with the rest, inside a read-only
        repeatable-read transaction: one snapshot. Otherwise ``rev`` and ``head`` are the
        session's, read by the caller's transaction, which holds the session's row lock, so no
        writer of the session commits between the reads.
        """
        sid = index.session_id
        seen = index.rev if index.pred else -1
        full = not index.pred
        statements = [
            "SELECT id, predecessor, bits FROM nodes WHERE session_id = %(s)s AND rev > %(seen)s"
            " ORDER BY rev, ord",
            "SELECT node_id, provider, value FROM marks WHERE session_id = %(s)s"
            " AND rev > %(seen)s ORDER BY rev",
            "SELECT node_id FROM rewound WHERE session_id = %(s)s AND rev > %(seen)s",
            "SELECT f.node_id, n.bits,"
            " EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = f.node_id)"
            " FROM flagged f JOIN nodes n ON n.id = f.node_id"
            " WHERE f.session_id = %(s)s AND f.rev > %(seen)s ORDER BY f.rev",
            # A session deleted and made again holds no row the index saw.
            "SELECT EXISTS (SELECT 1 FROM nodes WHERE session_id = %(s)s AND rev <= %(seen)s)",
        ]
        if rev is None:
            statements = [
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "SELECT rev, head FROM sessions WHERE id = %(s)s",
                *statements,
                "COMMIT",
            ]
        params = {"s": sid, "seen": seen}
        with paused_gc(full), psycopg.ClientCursor(self.conn) as cur:
            cur.execute("; ".join(statements), params)
            answers: list[list[tuple[Any, ...]]] = []
            while True:
                if cur.description is not None:
                    answers.append(cur.fetchall())
                if not cur.nextset():
                    break
            if rev is None:
                session, *answers = answers
                if not session:
                    raise UnknownSessionError(sid)
                rev, head = session[0]
            nodes, marks, stamps, flags, ((still,),) = answers
            if index.pred and not still:
                self._reborn.add(sid)  # _index builds a new one
                return
            pred, bits = index.pred, index.bits
            summaries: list[str] = []
            for nid, p, b in nodes:
                if nid in pred:
                    index.changed((nid,))  # stored again (deleted, then re-imported)
                    continue
                if full:
                    pred[nid] = p
                    bits[nid] = b
                else:
                    index.add(nid, p, b)
                if is_summary_bits(b):
                    summaries.append(nid)
            # New compaction summaries (rare): one more round trip for their covers.
            for summary, ns in self._covers_of(summaries).items():
                index.covers[summary] = ns
            for nid, provider, value in marks:
                index.add_marks(provider, value, (nid,))
            index.stamp_rewound([r[0] for r in stamps])
            index.set_artifact((nid, is_artifact(b)) for nid, b, _ in flags)
            index.unstamp_rewound(nid for nid, _, stamp in flags if not stamp)
            index.changed(nid for nid, _, _ in flags)  # (their metadata may be what changed)
        assert rev is not None
        index.rev, index.head = rev, head

    # ---------------------------------------------------------------- sessions

    def _session(self, row: tuple[Any, ...]) -> Session:
        sid, title, created, updated, head, spawned_from, parent, meta = row
        return Session.model_construct(
            id=SessionId(sid),
            title=title or "",
            created_at=from_micros(created),
            updated_at=from_micros(updated),
            head=NodeId(head) if head else None,
            metadata=decode(bytes(meta)) if meta else {},
            spawned_from=NodeId(spawned_from) if spawned_from else None,
            parent_session=SessionId(parent) if parent else None,
        )

    def _db_session(self, session_id: str) -> Session:
        with _translated():
            row = self.conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,)
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return self._session(row)

    @staticmethod
    def _filter(keep: SessionFilter, table: str = "sessions") -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if keep.runtime is not None:
            where.append(f"{table}.runtime = %s")
            params.append(keep.runtime)
        if keep.project is not None:
            root = keep.project.rstrip("/") or "/"
            prefix = root if root == "/" else root + "/"
            where.append(f"({table}.project = %s OR left({table}.project, %s) = %s)")
            params += [root, len(prefix), prefix]
        return where, params

    def _db_sessions(
        self, limit: int | None, parent: str | None, keep: SessionFilter = KEEP_ALL
    ) -> list[Session]:
        where, params = self._filter(keep)
        if parent is not None:
            where.append("parent_session = %s")
            params.append(parent)
        if keep.since is not None:
            where.append("updated_at >= %s")
            params.append(keep.since)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        with _translated():
            rows = self.conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions {clause}"
                " ORDER BY updated_at DESC, id DESC LIMIT %s",
                params,
            ).fetchall()
        return [self._session(r) for r in rows]

    def _db_insert_session(self, session: Session) -> None:
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "INSERT INTO sessions (id, title, created_at, updated_at, head, rev,"
                    " spawned_from, parent_session, metadata, runtime, project)"
                    f" VALUES (%s, %s, %s, %s, NULL, {_FIRST_REV}, %s, %s, %s, %s, %s)",
                    (
                        session.id,
                        session.title,
                        to_micros(session.created_at),
                        to_micros(session.updated_at),
                        session.spawned_from,
                        session.parent_session,
                        encode(dict(session.metadata)),
                        *self._origin(session.metadata, session.parent_session),
                    ),
                )
        except pg_errors.UniqueViolation as e:
            raise DuplicateSessionError(session.id) from e
        except _BUSY as e:
            raise _busy(e) from e
        except psycopg.Error as e:
            raise StoreError(" ".join(f"postgresql: {e}".split())) from e

    def _db_set_session_info(
        self, session_id: str, title: str | None, metadata: dict[str, Any] | None
    ) -> None:
        with _translated():
            if title is not None:
                self.conn.execute(
                    "UPDATE sessions SET title = %s WHERE id = %s", (title, session_id)
                )
            if metadata is not None:
                row = self.conn.execute(
                    "SELECT parent_session FROM sessions WHERE id = %s", (session_id,)
                ).fetchone()
                self.conn.execute(
                    "UPDATE sessions SET metadata = %s, runtime = %s, project = %s WHERE id = %s",
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
                "UPDATE sessions SET spawned_from = %s, parent_session = %s, runtime = %s,"
                " project = %s WHERE id = %s",
                (spawned_from, parent_session, *self._origin(meta, parent_session), session_id),
            )

    def _bump(self, session_id: str) -> int:
        row = self.conn.execute(
            "UPDATE sessions SET rev = rev + 1 WHERE id = %s RETURNING rev", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return int(row[0])

    def _db_update_session(self, session_id: str, head: str | None, updated_at: int | None) -> int:
        with _translated():
            row = self.conn.execute(
                "UPDATE sessions SET head = %s, rev = rev + 1,"
                " updated_at = greatest(updated_at, coalesce(%s, updated_at))"
                " WHERE id = %s RETURNING rev",
                (head, updated_at, session_id),
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return int(row[0])

    # ---------------------------------------------------------------- nodes, markers, stamps

    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        # The rows are stamped with the rev the session's row takes in _db_update_session, which
        # follows in the same transaction under the session's row lock (taken by _index): one
        # statement and one round trip fewer than bumping the rev here first.
        sql = (
            "INSERT INTO nodes (id, session_id, predecessor, bits, created_at, content, metadata,"
            " rev, said) VALUES (%s, %s, %s, %s, %s, %s, %s,"
            " (SELECT rev + 1 FROM sessions WHERE id = %s),"
            " CASE WHEN %s = '' THEN NULL ELSE to_tsvector('simple', %s) END)"
        )
        params = [(*r[:7], r.session_id, said, said) for r in rows for said in (_said(r.text),)]
        with _translated():
            if len(params) == 1:
                self.conn.execute(sql, params[0], prepare=True)  # no pipeline set up for one row
            else:
                with self.conn.cursor() as cur:
                    cur.executemany(sql, params)
            with self.conn.cursor() as cur:
                links = [(r.id, i, c) for r in rows for i, c in enumerate(r.covers)]
                if links:
                    cur.executemany(
                        "INSERT INTO covers (summary_id, position, node_id) VALUES (%s, %s, %s)",
                        links,
                    )

    def _db_rows(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        out: dict[str, NodeRow] = {}
        if not ids:
            return out
        summaries: list[str] = []
        with _translated():
            for r in self.conn.execute(
                "SELECT id, session_id, predecessor, bits, created_at, content, metadata"
                " FROM nodes WHERE id = ANY(%s)",
                (list(ids),),
            ):
                out[r[0]] = NodeRow(r[0], r[1], r[2], r[3], r[4], bytes(r[5]), bytes(r[6]), ())
                if is_summary_bits(r[3]):
                    summaries.append(r[0])
            for s, ns in self._covers_of(summaries).items():
                out[s] = out[s]._replace(covers=ns)
        return out

    def _db_insert_marks(
        self, session_id: str, provider: str, value: str, ids: Sequence[str]
    ) -> int:
        with _translated():
            rev = self._bump(session_id)
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO marks (session_id, node_id, provider, value, rev)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (node_id, provider, value) DO NOTHING",
                    [(session_id, n, provider, value, rev) for n in ids],
                )
            return rev

    def _db_insert_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        with _translated():
            rev = self._bump(session_id)
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO rewound (session_id, node_id, rev) VALUES (%s, %s, %s)"
                    " ON CONFLICT (node_id) DO NOTHING",
                    [(session_id, n, rev) for n in ids],
                )

    def _db_delete_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        # ``flagged`` tells the other connections to read the nodes' stamps again (a stamp's rev
        # only tells them of stamps added).
        with _translated():
            rev = self._bump(session_id)
            with self.conn.cursor() as cur:
                cur.execute("DELETE FROM rewound WHERE node_id = ANY(%s)", (list(ids),))
                cur.executemany(
                    "INSERT INTO flagged (session_id, node_id, rev) VALUES (%s, %s, %s)",
                    [(session_id, n, rev) for n in ids],
                )

    def _db_set_flags(self, session_id: str, rows: Sequence[NodeRow]) -> None:
        with _translated():
            rev = self._bump(session_id)
            with self.conn.cursor() as cur:
                cur.executemany(
                    "UPDATE nodes SET bits = %s, metadata = %s WHERE id = %s",
                    [(r.bits, r.metadata, r.id) for r in rows],
                )
                cur.executemany(
                    "INSERT INTO flagged (session_id, node_id, rev) VALUES (%s, %s, %s)",
                    [(session_id, r.id, rev) for r in rows],
                )

    def _db_has_session(self, session_id: str) -> bool:
        """Whether the session exists; inside a transaction, asked under a lock on its id.

        A session that does not exist yet has no row to lock, so two transactions creating it
        (two imports of one new transcript) would both see it missing and the second would fail
        on its insert. The lock (a transaction-level advisory lock on the session id, released at
        commit) makes the second wait for the first, and then see the session.
        """
        with _translated():
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"sessiongraph session {self.schema or ''} {session_id}",),
                )
            row = self.conn.execute(
                "SELECT 1 FROM sessions WHERE id = %s", (session_id,)
            ).fetchone()
        return row is not None

    def _db_locate(self, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        with _translated():
            rows = self.conn.execute(
                "SELECT id, session_id FROM nodes WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        return {str(n): str(s) for n, s in rows}

    def _db_head(self, session_id: str) -> str | None:
        with _translated():
            row = self.conn.execute(
                "SELECT head FROM sessions WHERE id = %s", (session_id,)
            ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return None if row[0] is None else str(row[0])

    def _db_message_count(self, session_id: str, head: str | None) -> int:
        """Walk the stored rows back from the head in one recursive query and count the messages."""
        with _translated():
            start = self._walk_start(session_id, head)
            if start is None:
                return 0
            rows = self.conn.execute(
                "WITH RECURSIVE up(id, predecessor, bits) AS ("
                " SELECT id, predecessor, bits FROM nodes WHERE id = %s AND session_id = %s"
                " UNION ALL"
                " SELECT n.id, n.predecessor, n.bits FROM nodes n JOIN up ON n.id = up.predecessor)"
                " SELECT bits, EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = up.id) FROM up",
                (start, session_id),
            ).fetchall()
        if not rows:
            raise UnknownNodeError(start, session_id)
        return sum(
            1 for bits, rewound in rows if not rewound and kind_of_bits(bits) is Kind.MESSAGE
        )

    def _db_live_tips(self, session_id: str) -> list[NodeId]:
        """Live messages that are no node's ancestor among live messages, newest first (one query)."""
        live = sql_live_message("n.bits")
        with _translated():
            if not self._db_has_session(session_id):
                raise UnknownSessionError(session_id)
            rows = self.conn.execute(
                "WITH RECURSIVE live AS ("
                f" SELECT n.id, n.predecessor, n.rev, n.ord FROM nodes n"
                f" WHERE n.session_id = %s AND {live}"
                " AND NOT EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = n.id)),"
                " above(id) AS (SELECT predecessor FROM live WHERE predecessor IS NOT NULL"
                " UNION SELECT n.predecessor FROM nodes n JOIN above ON n.id = above.id"
                " WHERE n.predecessor IS NOT NULL)"
                " SELECT id FROM live WHERE id NOT IN (SELECT id FROM above)"
                " ORDER BY rev DESC, ord DESC",
                (session_id,),
            ).fetchall()
        return [NodeId(r[0]) for r in rows]

    def _db_node_count(self, session_id: str) -> int:
        with _translated():
            if not self._db_has_session(session_id):
                raise UnknownSessionError(session_id)
            row = self.conn.execute(
                "SELECT count(*) FROM nodes WHERE session_id = %s", (session_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def _db_import_state(self, key: str) -> dict[str, Any] | None:
        with _translated():
            row = self.conn.execute(
                "SELECT state FROM import_files WHERE key = %s", (key,)
            ).fetchone()
        return None if row is None else dict(orjson.loads(bytes(row[0])))

    def _db_set_import_state(self, key: str, state: dict[str, Any]) -> None:
        with _translated():
            self.conn.execute(
                "INSERT INTO import_files (key, state) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state",
                (key, orjson.dumps(state)),
            )

    def _db_delete_sessions(self, session_ids: Sequence[str]) -> None:
        ids = list(session_ids)
        with _translated():
            for sid in ids:
                self._bump(sid)  # locks each row first: no writer of these sessions in between
            c = self.conn
            c.execute(
                "DELETE FROM covers WHERE summary_id IN"
                " (SELECT id FROM nodes WHERE session_id = ANY(%s))",
                (ids,),
            )
            for table in ("marks", "rewound", "flagged", "nodes"):
                c.execute(f"DELETE FROM {table} WHERE session_id = ANY(%s)", (ids,))
            c.execute("DELETE FROM sessions WHERE id = ANY(%s)", (ids,))

    # ---------------------------------------------------------------- search

    def _covers_of(self, summaries: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The covered ids of each of these summaries, in span order (one query; none if empty)."""
        if not summaries:
            return {}
        got: dict[str, list[str]] = {}
        for s, n in self.conn.execute(
            "SELECT summary_id, node_id FROM covers WHERE summary_id = ANY(%s)"
            " ORDER BY summary_id, position",
            (list(summaries),),
        ):
            got.setdefault(s, []).append(n)
        return {s: tuple(ns) for s, ns in got.items()}

    def _db_pending_walk(
        self, session_id: str, head: str | None, provider: str, value: str, eligible: Eligible
    ) -> SessionIndex | None:
        """Walk the stored rows back from the head in one ``WITH RECURSIVE`` query, to the marker.

        A row stops the walk when it is eligible (its bits match ``eligible``, it is not stamped
        rewound, it is not a summary with covers) and carries ``provider``'s marker with ``value``;
        a sibling-layout summary leads to its last covered node, every other row to its
        predecessor. The ids, provider and value are bound parameters; only integers of
        :func:`graph.index.sql_bit_tests` are written into the SQL. The rows come back as a partial
        index that :func:`graph.walks.walk_pending` reads as it reads the whole one.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: ``head`` is not a node of the session.
            StoreBusyError, StoreError: the server failed (busy or lost: retryable).
        """
        sql = pending_walk_query(eligible, lambda n: f"%({n})s")
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
            for s_id, ns in self._covers_of(summaries).items():
                part.covers[s_id] = ns
        return part

    def _db_node_extras(
        self, session_id: str, ids: Sequence[str]
    ) -> tuple[dict[str, dict[str, tuple[str, ...]]], set[str]]:
        """The markers and rewound stamps of ``ids``, read by id (no index of the session built)."""
        found: dict[str, dict[str, list[str]]] = {}
        with _translated():
            for nid, provider, value in self.conn.execute(
                "SELECT node_id, provider, value FROM marks WHERE node_id = ANY(%s)", (list(ids),)
            ):
                found.setdefault(nid, {}).setdefault(provider, []).append(value)
            rewound = {
                str(r[0])
                for r in self.conn.execute(
                    "SELECT node_id FROM rewound WHERE node_id = ANY(%s)", (list(ids),)
                )
            }
        written = {
            n: {p: tuple(sorted(vs)) for p, vs in sorted(by.items())} for n, by in found.items()
        }
        return written, rewound

    def _db_search(
        self,
        query: Query,
        sessions: Sequence[str] | None,
        keep: SessionFilter,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        where, params = self._filter(keep, "s")
        if sessions is not None:
            where.append("n.session_id = ANY(%s)")
            params.append(list(sessions))
        if keep.since is not None:
            where.append("n.created_at >= %s")
            params.append(keep.since)
        clause = "".join(f" AND {w}" for w in where)
        sql = (
            "WITH q AS (SELECT to_tsquery('simple', %s) AS q),"
            " c AS (SELECT n.ord, n.id, n.session_id, n.created_at, n.bits, n.content,"
            " -ts_rank(n.said, q.q) AS rank FROM nodes n JOIN sessions s ON s.id = n.session_id,"
            f" q WHERE n.said @@ q.q{clause} ORDER BY n.ord DESC LIMIT %s)"
            " SELECT c.id, c.session_id, c.created_at, c.bits, c.content, c.rank,"
            " EXISTS (SELECT 1 FROM rewound r WHERE r.node_id = c.id)"
            " FROM c ORDER BY c.rank, c.ord LIMIT %s OFFSET %s"
        )
        with _translated():
            rows = self.conn.execute(
                sql, [_tsquery(query), *params, RANKED_CANDIDATES, limit, offset]
            ).fetchall()
        return [search_hit(query, (*r[:4], bytes(r[4]), *r[5:])) for r in rows]

"""The workspace's store of record on PostgreSQL, so a team's machines share one memory (psycopg 3).

Open it with ``MemoryWorkspace(views_folder, store="postgresql://user:pass@host/db")``, or on the
command line with ``sessiongraph memory -w postgresql://...``. Install with
``pip install 'sessiongraph[postgres]'``.

* The tables (:data:`memory.schema.POSTGRES_SCHEMA`, the same schema and version as in SQLite) live in
  a PostgreSQL schema of the workspace's own, ``memory`` unless the URL says ``?schema=NAME``, so
  the workspace can share a database with the session store. The workspace creates it, records its
  version and refuses a newer one; two processes opening a new database at once create it once (an
  advisory transaction lock serializes them).
* Recall: the ``records.search`` column is a generated ``tsvector`` (``english`` configuration: stems, over
  content, tags, headings and topic, their accents folded by ``fold_accents``, as SQLite's FTS5
  folds them) with the GIN index ``records_search``; a query is one ``websearch_to_tsquery`` of the
  quoted words, OR-ed, folded the same way, bound as a parameter; the rank is
  ``-ts_rank`` (lower is better, as with SQLite's bm25). The index is ensured at open and its
  absence fails every search with :class:`~memory.errors.SearchIndexMissingError`.
* The write lock: :class:`AdvisoryWriteLock`, ``pg_try_advisory_lock`` on a key derived from the
  schema name, retried until the same 1-second give-up as the file lock
  (:class:`~memory.errors.WorkspaceBusyError`, a retryable ``CONCURRENT_UPDATE``). It is held by the
  connection's session, so a writer that dies releases it with its connection.
* The archive's append-only guard is a trigger that refuses ``UPDATE`` and ``DELETE`` unless the
  transaction-local setting ``memory.erasing`` is on, which only ``memory forget`` sets.
* Reset renames the schema to ``<schema>_<old id>`` (kept, never read) and creates a new one that
  inherits its history.

Driver errors become :class:`~memory.errors.WorkspaceStoreError` with the ``psycopg`` error as
``__cause__``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from typing_extensions import override

from graph.store.postgres import connect_options
from memory.database import Cursor, WorkspaceDatabase
from memory.errors import SearchIndexMissingError, WorkspaceStoreError
from memory.locking import WriteLock
from memory.schema import (
    POSTGRES_SCHEMA,
    SCHEMA_VERSION,
    SEARCH_CONFIG,
    check_version,
    postgres_migrations,
    split_statements,
)

try:
    import psycopg
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "a PostgreSQL store of record needs psycopg: pip install 'sessiongraph[postgres]'"
    ) from e

__all__ = [
    "DEFAULT_SCHEMA",
    "SEARCH_INDEX",
    "AdvisoryWriteLock",
    "PostgresWorkspaceDatabase",
    "split_url",
]

DEFAULT_SCHEMA = "memory"
"""The PostgreSQL schema a workspace's tables go to when the URL names none."""

SEARCH_INDEX = "records_search"
"""The GIN index over ``records.search``."""

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,40}")


def split_url(url: str) -> tuple[str, str, str]:
    """Split a store URL into ``(libpq URL, schema, URL without its password)``.

    ``?schema=NAME`` picks the PostgreSQL schema (default :data:`DEFAULT_SCHEMA`); the other query
    parameters are libpq's.

    Raises:
        WorkspaceStoreError: the schema is not a plain lowercase name.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), DEFAULT_SCHEMA)
    if not _NAME.fullmatch(schema):
        raise WorkspaceStoreError(
            f"postgresql: {schema!r} is not a schema name (lowercase letters, digits, _)"
        )
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    libpq = urlunsplit(parts._replace(query=rest))
    shown = parts.netloc.rsplit("@", 1)
    netloc = (shown[0].split(":", 1)[0] + "@" + shown[1]) if len(shown) == 2 else parts.netloc
    where = urlunsplit(parts._replace(netloc=netloc, query=f"schema={schema}"))
    return libpq, schema, where


def _sql(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresWorkspaceDatabase(WorkspaceDatabase):
    """A workspace's store of record in a PostgreSQL schema of its own.

    Args:
        url: ``postgresql://user:pass@host:port/db`` with an optional ``?schema=NAME``.
        timeout: Seconds a statement waits for another transaction's row lock (``lock_timeout``).

    Raises:
        WorkspaceStoreError: the server cannot be reached or refuses the connection, or the schema
            name is not valid.
    """

    dialect = "postgresql"

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        super().__init__()
        libpq, self.schema, self.where = split_url(url)
        try:
            self.conn = psycopg.connect(libpq, autocommit=True, **connect_options(libpq))
        except psycopg.Error as e:
            raise WorkspaceStoreError(f"postgresql: cannot connect to {self.where}: {e}") from e
        self.execute(f"SET lock_timeout = {int(timeout * 1000)}")
        self._use_schema()

    _read_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def _use_schema(self) -> None:
        self.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
        self.execute(f"SET search_path = {self.schema}")

    @override
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        try:
            return self.conn.execute(_sql(sql), tuple(params))
        except psycopg.Error as e:
            raise WorkspaceStoreError(f"postgresql: {e}") from e

    @override
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(r) for r in rows]
        if not batch:
            return
        try:
            with self.conn.cursor() as cur:
                cur.executemany(_sql(sql), batch)
        except psycopg.Error as e:
            raise WorkspaceStoreError(f"postgresql: {e}") from e

    def _key(self, what: str) -> int:
        digest = hashlib.sha256(f"sessiongraph.memory.{what}:{self.schema}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    @override
    def open_schema(self, new_workspace_id: str) -> None:
        with self.atomic():
            # One process creates a new schema; the others wait here, then find it made.
            self.execute("SELECT pg_advisory_xact_lock(?)", (self._key("schema"),))
            if not self.has_table("meta"):
                for stmt in split_statements(POSTGRES_SCHEMA):
                    self.execute(stmt)
                self.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("workspace_id", new_workspace_id),
                        ("revision", "0"),
                        ("schema_version", str(SCHEMA_VERSION)),
                    ],
                )
            version = check_version(
                self.one("SELECT value FROM meta WHERE key = 'schema_version'"), self.where
            )
            for step, run in postgres_migrations().items():
                if step > version:
                    run(self)
                    self.execute(
                        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(step),)
                    )
            self.ensure_search_index()

    @override
    def ensure_search_index(self) -> None:
        self.execute(f"CREATE INDEX IF NOT EXISTS {SEARCH_INDEX} ON records USING gin (search)")

    @override
    def check_search_index(self) -> None:
        row = self.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?",
            (SEARCH_INDEX,),
        ).fetchone()
        if row is None:
            raise SearchIndexMissingError(
                SEARCH_INDEX, "the GIN index over records.search is gone; reopen the workspace"
            )

    @override
    def index_records(self, rowids: Sequence[int]) -> None:
        """Nothing to do: ``records.search`` is a generated column."""

    @override
    def unindex_records(self, rowids: Sequence[int]) -> None:
        """Nothing to do: a deleted row takes its ``search`` value with it."""

    @staticmethod
    def _query(terms: Sequence[str]) -> str:
        # Quoted words, OR-ed: "or", "-" or quotes a user types are words, never operators.
        return " or ".join(f'"{t}"' for t in terms)

    @override
    def match(
        self, terms: Sequence[str], limit: int | None = None, offset: int = 0
    ) -> list[tuple[str, float]]:
        self.check_search_index()
        sql = (
            "SELECT r.id, -ts_rank(r.search, q) AS score "
            f"FROM records r, websearch_to_tsquery('{SEARCH_CONFIG}', fold_accents(?)) q"
            " WHERE r.search @@ q "
            'ORDER BY score, r.id COLLATE "C"'
        )
        params: list[Any] = [self._query(terms)]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return [(str(rid), float(score)) for rid, score in self.execute(sql, params).fetchall()]

    @override
    def count_matches(self, terms: Sequence[str]) -> int:
        self.check_search_index()
        return int(
            self.one(
                "SELECT count(*) FROM records"
                f" WHERE search @@ websearch_to_tsquery('{SEARCH_CONFIG}', fold_accents(?))",
                (self._query(terms),),
            )
        )

    @override
    @contextmanager
    def archive_unguarded(self) -> Iterator[None]:
        self.execute("SELECT set_config('memory.erasing', 'on', true)")
        yield
        self.execute("SELECT set_config('memory.erasing', 'off', true)")

    @override
    def has_table(self, name: str) -> bool:
        row = self.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name = ?",
            (name,),
        ).fetchone()
        return row is not None

    @override
    def reset(self, old_id: str, new_id: str) -> None:
        aside = f"{self.schema}_{re.sub(r'[^a-z0-9]', '', old_id.lower())}"[:63]
        with self.atomic():
            self.execute(f"ALTER SCHEMA {self.schema} RENAME TO {aside}")
            self._use_schema()
        self.open_schema(new_id)
        with self.atomic():
            self.execute(
                f"INSERT INTO revisions SELECT * FROM {aside}.revisions ON CONFLICT DO NOTHING"
            )
            self.execute(
                f"INSERT INTO record_versions SELECT * FROM {aside}.record_versions "
                "ON CONFLICT DO NOTHING"
            )

    def drop_schema(self) -> None:
        """Drop the workspace's PostgreSQL schema and everything in it (tests and tear-downs)."""
        self.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    @override
    def close(self) -> None:
        self.conn.close()


class AdvisoryWriteLock(WriteLock):
    """The write lock as a session-level advisory lock of the workspace's database.

    Args:
        db: The workspace's PostgreSQL database; the lock is held by its connection.
    """

    def __init__(self, db: PostgresWorkspaceDatabase) -> None:
        super().__init__()
        self.db = db
        self.key = db._key("write")
        self.where = f"advisory lock {self.key} of {db.where}"

    @override
    def _try(self) -> bool:
        return bool(self.db.one("SELECT pg_try_advisory_lock(?)", (self.key,)))

    @override
    def _release(self) -> None:
        self.db.one("SELECT pg_advisory_unlock(?)", (self.key,))

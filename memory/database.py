"""The workspace's database: one connection, one nesting transaction helper, driver errors translated.

Every module of the memory layer reaches the store of record through a :class:`WorkspaceDatabase`:
:meth:`~WorkspaceDatabase.execute` and :meth:`~WorkspaceDatabase.executemany` take SQL with ``?``
placeholders and bound parameters, :meth:`~WorkspaceDatabase.atomic` opens a write transaction (or a
savepoint inside one) that commits only the outermost block, and a driver error never leaves this
module untranslated: it becomes a :class:`~memory.errors.WorkspaceStoreError` whose ``__cause__`` is
the driver's exception.

The SQL the memory modules write is portable between SQLite and PostgreSQL (``ON CONFLICT`` upserts,
no ``INSERT OR ...``); what differs between the two (schema, full-text index, the archive's guard) is a
method here, implemented by :class:`SqliteWorkspaceDatabase` and, for PostgreSQL, by
:class:`memory.postgres.PostgresWorkspaceDatabase`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from typing_extensions import override

from memory.errors import SearchIndexMissingError, WorkspaceStoreError
from memory.schema import (
    FTS_TABLE,
    SCHEMA_VERSION,
    SQLITE_SEARCH_INDEX,
    check_version,
    split_statements,
    sqlite_migrations,
    sqlite_schema,
)

__all__ = ["Cursor", "SqliteWorkspaceDatabase", "WorkspaceDatabase", "translated"]


class Cursor(Protocol):
    """What :meth:`WorkspaceDatabase.execute` returns: rows as tuples."""

    def fetchone(self) -> Any:
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """The remaining rows."""

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one by one."""


@contextmanager
def translated() -> Iterator[None]:
    """Translate a ``sqlite3`` error raised inside the block into :class:`WorkspaceStoreError`."""
    try:
        yield
    except sqlite3.Error as e:
        raise WorkspaceStoreError(f"sqlite: {e}") from e


class WorkspaceDatabase:
    """The store of record's connection (one per workspace object; not thread-safe).

    Attributes:
        dialect: ``sqlite`` or ``postgresql``.
        where: What the database is, for messages (a file path or a URL without its password).
    """

    dialect: str = ""
    where: str = ""

    def __init__(self) -> None:
        self._depth = 0

    # ---------------------------------------------------------------- statements

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement with bound ``?`` parameters and return its cursor.

        Raises:
            WorkspaceStoreError: the database refused or failed (the driver error is the cause).
        """
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per parameter row.

        Raises:
            WorkspaceStoreError: the database refused or failed.
        """
        raise NotImplementedError

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row of a query (None when there is no row)."""
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def in_chunks(self, ids: Sequence[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
        """Split ``ids`` into chunks for ``IN (...)``: yields ``(chunk, "?,?,...")``."""
        for i in range(0, len(ids), size):
            chunk = list(ids[i : i + size])
            yield chunk, ",".join("?" * len(chunk))

    # ---------------------------------------------------------------- transactions

    @contextmanager
    def atomic(self) -> Iterator[WorkspaceDatabase]:
        """A write transaction; nested blocks are savepoints inside the outermost one.

        The outermost block commits on success and rolls back on any exception; an inner block
        rolls back to its savepoint and lets the exception go on (so the outer one rolls back too,
        unless its caller handles it).

        Raises:
            WorkspaceStoreError: beginning, committing or rolling back failed.
        """
        outer = self._depth == 0
        name = f"ws_{self._depth}"
        self._begin(outer, name)
        self._depth += 1
        try:
            yield self
        except BaseException:
            self._depth -= 1
            self._rollback(outer, name)
            raise
        self._depth -= 1
        self._commit(outer, name)

    @contextmanager
    def reading(self) -> Iterator[WorkspaceDatabase]:
        """A read transaction: every statement in the block sees one snapshot of the store.

        Inside an open :meth:`atomic` or :meth:`reading` block it adds nothing (the open transaction
        already is one snapshot). Nothing may be written in the block; it ends with a rollback, so
        a failure inside it leaves the connection as it was.

        Raises:
            WorkspaceStoreError: beginning or ending the transaction failed.
        """
        if self._depth > 0:
            yield self
            return
        self.execute(self._read_begin)
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            self.execute("ROLLBACK")

    _read_begin = "BEGIN"
    """The statement that opens a read transaction (a snapshot taken at its first read)."""

    @property
    def in_transaction(self) -> bool:
        """Whether an :meth:`atomic` (or :meth:`reading`) block is open."""
        return self._depth > 0

    def _begin(self, outer: bool, name: str) -> None:
        self.execute("BEGIN" if outer else f"SAVEPOINT {name}")

    def _rollback(self, outer: bool, name: str) -> None:
        if outer:
            self.execute("ROLLBACK")
        else:
            self.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self.execute(f"RELEASE SAVEPOINT {name}")

    def _commit(self, outer: bool, name: str) -> None:
        self.execute("COMMIT" if outer else f"RELEASE SAVEPOINT {name}")

    # ---------------------------------------------------------------- what differs by backend

    def open_schema(self, new_workspace_id: str) -> None:
        """Create the schema (a new store) or check its version and migrate it (an older one).

        Runs in one transaction. A new store gets ``workspace_id``, ``revision`` 0 and
        ``schema_version`` in its ``meta`` table.

        Raises:
            WorkspaceSchemaError: the store was written by a newer library.
        """
        raise NotImplementedError

    def ensure_search_index(self) -> None:
        """Create the full-text index over records if it is missing and rebuild it if out of step.

        Raises:
            SearchIndexMissingError: the database cannot have one (SQLite built without FTS5).
        """
        raise NotImplementedError

    def check_search_index(self) -> None:
        """Raise unless the full-text index is there.

        Raises:
            SearchIndexMissingError: it is gone (it is created at open, so someone dropped it).
        """
        raise NotImplementedError

    def index_records(self, rowids: Sequence[int]) -> None:
        """Bring the full-text index up to date for these records (by rowid), inside a transaction."""
        raise NotImplementedError

    def unindex_records(self, rowids: Sequence[int]) -> None:
        """Take these records (by rowid) out of the full-text index, before they are deleted."""
        raise NotImplementedError

    def match(
        self, terms: Sequence[str], limit: int | None = None, offset: int = 0
    ) -> list[tuple[str, float]]:
        """Records matching any of ``terms`` (plain words), best first: ``(record_id, score)``.

        Lower scores are better matches; ties are broken by record id.
        """
        raise NotImplementedError

    def count_matches(self, terms: Sequence[str]) -> int:
        """How many records match any of ``terms``."""
        raise NotImplementedError

    @contextmanager
    def archive_unguarded(self) -> Iterator[None]:
        """Lift the archive's append-only guard for the block (inside a transaction; forget only)."""
        raise NotImplementedError
        yield  # pragma: no cover

    def compact_erased(self) -> None:
        """Make erased text unreadable in the database's files (after a forget has committed)."""

    @contextmanager
    def erasing(self) -> Iterator[None]:
        """Write the block so that freed storage is overwritten (SQLite ``secure_delete``)."""
        yield

    def version_token(self) -> object | None:
        """A value that changes whenever another connection commits, or None when unknown.

        Caches of what was read are kept only while it stays equal (None: never kept).
        """
        return None

    def has_table(self, name: str) -> bool:
        """Whether a table of this name exists in the workspace's schema."""
        raise NotImplementedError

    def reset(self, old_id: str, new_id: str) -> None:
        """Set the store of record aside (kept, never read) and start an empty one in its place.

        The new store gets ``new_id`` and inherits the old one's history (told apart by workspace
        id). Called under the write lock.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection; the object is unusable afterwards."""
        raise NotImplementedError


class SqliteWorkspaceDatabase(WorkspaceDatabase):
    """The store of record in one SQLite file (``memory.db`` in the workspace folder).

    Durability: the rollback journal (``journal_mode=DELETE``) with ``synchronous=FULL``: a committed
    install survives a process crash and a power loss, and the database file alone is the whole
    state. Writes are rare (one per batch) and small, so the fsyncs cost nothing that matters.

    Args:
        path: The database file (created when missing).
        timeout: Seconds SQLite waits for another connection's lock.

    Raises:
        WorkspaceStoreError: the file cannot be opened or is not a database.
    """

    dialect = "sqlite"

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        super().__init__()
        self.path = path
        self.where = str(path)
        self._timeout = timeout
        self._connect()

    def _connect(self) -> None:
        with translated():
            self.conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=self._timeout, check_same_thread=False
            )
            self.conn.execute("PRAGMA journal_mode=DELETE")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")

    @override
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        with translated():
            return self.conn.execute(sql, params)

    @override
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with translated():
            self.conn.executemany(sql, rows)

    def _begin(self, outer: bool, name: str) -> None:
        self.execute("BEGIN IMMEDIATE" if outer else f"SAVEPOINT {name}")

    @override
    def open_schema(self, new_workspace_id: str) -> None:
        with self.atomic():
            if not self.has_table("meta"):
                for stmt in split_statements(sqlite_schema()):
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
            for step in range(version + 1, SCHEMA_VERSION + 1):
                sqlite_migrations()[step](self)
                self.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(step),))
            self.ensure_search_index()

    @override
    def ensure_search_index(self) -> None:
        try:
            self.conn.execute(SQLITE_SEARCH_INDEX)
        except sqlite3.OperationalError as e:
            raise SearchIndexMissingError(FTS_TABLE, f"FTS5 is not available: {e}") from e
        indexed = self.one(f"SELECT count(*) FROM {FTS_TABLE}")
        stored = self.one("SELECT count(*) FROM records")
        if indexed != stored:
            self.execute(f"DELETE FROM {FTS_TABLE}")
            self.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, content, tags, headings, topic) "
                "SELECT rowid, content, tags, headings, topic FROM records"
            )

    @override
    def check_search_index(self) -> None:
        if not self.has_table(FTS_TABLE):
            raise SearchIndexMissingError(FTS_TABLE, "the table is gone; reopen the workspace")

    @override
    def index_records(self, rowids: Sequence[int]) -> None:
        self.unindex_records(rowids)
        for chunk, marks in self.in_chunks([str(r) for r in rowids]):
            self.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, content, tags, headings, topic) "
                f"SELECT rowid, content, tags, headings, topic FROM records WHERE rowid IN ({marks})",
                [int(r) for r in chunk],
            )

    @override
    def unindex_records(self, rowids: Sequence[int]) -> None:
        for chunk, marks in self.in_chunks([str(r) for r in rowids]):
            self.execute(
                f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", [int(r) for r in chunk]
            )

    @staticmethod
    def _fts_query(terms: Sequence[str]) -> str:
        # Each word a quoted FTS5 term, so operators typed by a user are plain text.
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

    @override
    def match(
        self, terms: Sequence[str], limit: int | None = None, offset: int = 0
    ) -> list[tuple[str, float]]:
        self.check_search_index()
        sql = (
            f"SELECT r.id, bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} "
            f"JOIN records r ON r.rowid = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH ? "
            "ORDER BY score, r.id"
        )
        params: list[Any] = [self._fts_query(terms)]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return [(str(rid), float(score)) for rid, score in self.execute(sql, params).fetchall()]

    @override
    def count_matches(self, terms: Sequence[str]) -> int:
        self.check_search_index()
        return int(
            self.one(
                f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ?",
                (self._fts_query(terms),),
            )
        )

    @override
    @contextmanager
    def archive_unguarded(self) -> Iterator[None]:
        triggers = self.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'sources'"
        ).fetchall()
        for name, _sql in triggers:
            self.execute(f'DROP TRIGGER "{name}"')
        yield
        for _name, sql in triggers:
            self.execute(sql)

    @override
    @contextmanager
    def erasing(self) -> Iterator[None]:
        self.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            self.execute("PRAGMA secure_delete = OFF")

    @override
    def compact_erased(self) -> None:
        self.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('optimize')")

    @override
    def version_token(self) -> object | None:
        return int(self.one("PRAGMA data_version"))

    @override
    def has_table(self, name: str) -> bool:
        row = self.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')", (name,)
        ).fetchone()
        return row is not None

    @override
    def reset(self, old_id: str, new_id: str) -> None:
        """Move ``memory.db`` to ``memory.<old id>.db`` and open a new one beside it."""
        self.conn.close()
        aside = self.path.with_name(f"memory.{old_id}.db")
        try:
            os.replace(self.path, aside)
        except OSError as e:
            raise WorkspaceStoreError(f"cannot set {self.path} aside: {e}") from e
        self._connect()
        self.open_schema(new_id)
        self._inherit_history(aside)

    def _inherit_history(self, old_db: Path) -> None:
        """Copy the history of a database set aside by a reset (and what it inherited)."""
        self.execute("ATTACH DATABASE ? AS old", (str(old_db),))
        try:
            tables = {
                r[0] for r in self.execute("SELECT name FROM old.sqlite_master WHERE type='table'")
            }
            if {"revisions", "record_versions"} <= tables:
                with self.atomic():
                    self.execute(
                        "INSERT INTO revisions SELECT * FROM old.revisions WHERE true "
                        "ON CONFLICT DO NOTHING"
                    )
                    self.execute(
                        "INSERT INTO record_versions SELECT * FROM old.record_versions WHERE true "
                        "ON CONFLICT DO NOTHING"
                    )
        finally:
            self.execute("DETACH DATABASE old")

    @override
    def close(self) -> None:
        self.conn.close()

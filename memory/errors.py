"""Errors raised by the memory layer.

Every error the ``memory`` package raises derives from :class:`MemoryLayerError`; those that are a
caller's bad value also derive from ``ValueError``, those that are a failed look-up from
``LookupError``. Each carries the facts as attributes::

    MemoryLayerError
    ├── RejectedError (ValueError)       reason (a Rejection code), detail, and per reason:
    │                                     source_id, record_id, target, field, kind, start, end
    ├── CapExceeded (ValueError)         cap, limit, got, where          (memory.caps)
    ├── SecretError (ValueError)         kind, start, end, line, column  (memory.secrets)
    ├── ConfigError (ValueError)         a bad memory configuration      (memory.config)
    ├── EditError, EditFolderError (ValueError)                          (memory.editing)
    ├── MemoryOffError                   memory is switched off          (memory.config)
    ├── ModelRequestError                a model endpoint failed         (memory.completion)
    ├── UnknownRecordError (LookupError) ref, matches: no record, or several, match
    ├── NothingToUndoError (LookupError) record_id          (memory.tombstones)
    ├── GraceExpiredError                record_id, expired_at (memory.tombstones)
    ├── NothingToForgetError (LookupError) ref, matches     (memory.forget)
    ├── HistoryError (LookupError)       a revision history does not hold (memory.history)
    ├── WorkspacePathError (ValueError)  path, reason: a value that names no workspace folder
    ├── WorkspaceBusyError               path, timeout (seconds): another writer holds the lock
    │                                     (retryable: ``CONCURRENT_UPDATE``)
    ├── WriterUnavailableError           writer, detail: a model or writer process is unreachable
    ├── SearchIndexMissingError          table: the full-text index is gone (or cannot exist)
    └── WorkspaceStoreError              the database failed; the driver's error is its ``__cause__``
        └── WorkspaceSchemaError         where, found, supported: written by a newer library

:class:`RejectedError` never carries a secret's value: a ``SECRET`` rejection names the kind and the
position (``field``, ``start``, ``end``) only.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "MemoryLayerError",
    "RejectedError",
    "Rejection",
    "SearchIndexMissingError",
    "UnknownRecordError",
    "WorkspaceBusyError",
    "WorkspacePathError",
    "WorkspaceSchemaError",
    "WorkspaceStoreError",
    "WriterUnavailableError",
]


class Rejection(StrEnum):
    """Why a transaction of changes was refused (validated before install).

    A closed set: the pipeline hands the code and its detail back to the writer for the one repair.
    """

    SOURCE_CHANGED = "SOURCE_CHANGED"
    """An archived source's text no longer matches its content hash, or the archive shrank."""
    SOURCE_MISSING = "SOURCE_MISSING"
    """A source of this batch is no longer in the archive."""
    RECORD_LOST = "RECORD_LOST"
    """An existing record id would disappear without an explicit ``delete_record``."""
    UNKNOWN_RECORD = "UNKNOWN_RECORD"
    """A change names a record id that does not exist."""
    UNKNOWN_SOURCE = "UNKNOWN_SOURCE"
    """A citation names a source that is not in the archive."""
    SOURCE_NOT_IN_BATCH = "SOURCE_NOT_IN_BATCH"
    """A new citation names an archived source that is not evidence of this batch."""
    DANGLING_LINK = "DANGLING_LINK"
    """A ``[[topic#^record-id]]`` link names a record that would not exist (or not in that topic)."""
    UNKNOWN_POSITION = "UNKNOWN_POSITION"
    """A destination's topic path, position or anchor is not valid."""
    OVER_CAP = "OVER_CAP"
    """An input exceeds one of the caps in :mod:`memory.caps`."""
    SECRET = "SECRET"
    """A secret (key, token) was found in a record's content, a tag, a label or a snippet."""
    MALFORMED = "MALFORMED"
    """The changes cannot be read (not JSON, wrong shape) or contradict each other."""


class MemoryLayerError(Exception):
    """Root of every error the ``memory`` package raises."""


class RejectedError(MemoryLayerError, ValueError):
    """A transaction was refused; the workspace was left exactly as it was.

    Attributes:
        reason: The :class:`Rejection` code.
        detail: A sentence saying what is wrong and how to fix it (never a secret's value).
        record_id: The record at fault, when one is.
        source_id: The source at fault, when one is.
        target: The link target or anchor at fault, when one is.
        field: The field at fault (``content``, ``snippet``, ``tags``...), when one is.
        kind: For ``SECRET``: the kind of secret; for ``OVER_CAP``: the cap's name.
        start: For ``SECRET``: the offset of the secret in ``field``.
        end: For ``SECRET``: the end offset of the secret in ``field``.
        change: The index of the change at fault in the transaction, when one is.
    """

    def __init__(
        self,
        reason: Rejection,
        detail: str,
        *,
        record_id: str | None = None,
        source_id: str | None = None,
        target: str | None = None,
        field: str | None = None,
        kind: str | None = None,
        start: int | None = None,
        end: int | None = None,
        change: int | None = None,
    ) -> None:
        where = f" (change {change})" if change is not None else ""
        super().__init__(f"{reason.value}: {detail}{where}")
        self.reason = reason
        self.detail = detail
        self.record_id = record_id
        self.source_id = source_id
        self.target = target
        self.field = field
        self.kind = kind
        self.start = start
        self.end = end
        self.change = change


class WorkspacePathError(MemoryLayerError, ValueError):
    """A workspace path that names no folder a workspace can live in.

    A workspace is a folder (its Markdown views, its write lock, its SQLite store of record), so
    SQLite's ``":memory:"`` and an empty string are refused rather than taken as folder names.

    Attributes:
        path: The value given, as given.
        reason: Why it names no workspace folder.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"workspace path {path!r}: {reason}")
        self.path = path
        self.reason = reason


class WorkspaceBusyError(MemoryLayerError):
    """Another writer holds the workspace's write lock (a retryable ``CONCURRENT_UPDATE``).

    Attributes:
        path: The lock: its file (``write.lock``), or the advisory lock and its database.
        timeout: How long the lock was waited for, in seconds.
    """

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"workspace write lock {path!r} is held by another writer ({timeout} s)")
        self.path = path
        self.timeout = timeout


class WriterUnavailableError(MemoryLayerError):
    """A writer could not be reached (a model endpoint down, a process that would not start).

    Writers raise it for conditions that may clear by themselves; the pipeline reports it as a
    retryable ``WRITER_UNAVAILABLE``.

    Attributes:
        writer: The writer's name.
        detail: What failed.
    """

    def __init__(self, writer: str, detail: str) -> None:
        super().__init__(f"writer {writer!r} is unavailable: {detail}")
        self.writer = writer
        self.detail = detail


class SearchIndexMissingError(MemoryLayerError):
    """The FTS5 index over records is absent (dropped, or FTS5 not compiled into SQLite).

    Attributes:
        table: The index's table name.
    """

    def __init__(self, table: str, detail: str = "") -> None:
        super().__init__(
            f"the full-text index {table!r} is missing" + (f": {detail}" if detail else "")
        )
        self.table = table


class WorkspaceStoreError(MemoryLayerError):
    """The workspace database failed (corrupt, read-only, full, unreachable).

    The driver's error (``sqlite3`` or ``psycopg``) is the ``__cause__``.
    """


class WorkspaceSchemaError(WorkspaceStoreError):
    """The store of record has a schema version this library cannot open (a newer one).

    Attributes:
        where: The store (a file path, or a URL without its password).
        found: The version it holds (None when it is not a number).
        supported: The newest version this library reads and writes.
    """

    def __init__(self, where: str, found: int | None, supported: int) -> None:
        what = f"schema version {found}" if found is not None else "an unreadable schema version"
        super().__init__(
            f"workspace {where} has {what}, newer than this library's {supported}; "
            "upgrade sessiongraph to open it"
        )
        self.where = where
        self.found = found
        self.supported = supported


class UnknownRecordError(MemoryLayerError, LookupError):
    """No record (or several) matches a reference.

    Attributes:
        ref: The reference given (an id or a prefix of one).
        matches: The ids that matched (empty, or more than one).
    """

    def __init__(self, ref: str, matches: tuple[str, ...] = ()) -> None:
        how = f"{len(matches)} records match" if matches else "no record matches"
        super().__init__(f"{how} {ref!r}" + (f": {', '.join(matches[:5])}" if matches else ""))
        self.ref = ref
        self.matches = matches

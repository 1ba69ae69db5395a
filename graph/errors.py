"""Errors raised by the session graph.

Every error derives from :class:`GraphError`; most also derive from the built-in a caller would catch
(``KeyError``, ``ValueError``), and each carries the facts as attributes::

    GraphError
    ├── NotFoundError (KeyError)
    │   ├── UnknownSessionError          session_id
    │   ├── UnknownNodeError             node_id, session_id
    │   └── AmbiguousReferenceError      what, ref, matches   (graph.terminal, shortened ids)
    ├── InvalidWriteError (ValueError)
    │   ├── UnknownPredecessorError      node_id, predecessor
    │   ├── ForeignPredecessorError      node_id, predecessor, expected (session), got (session)
    │   ├── DuplicateNodeError           node_id, session_id
    │   ├── DuplicateSessionError        session_id
    │   ├── CycleError                   node_id
    │   ├── NotOnBranchError             node_id, head
    │   ├── CoverageError                node_id, reason
    │   └── MarkerGapError               node_id, unmarked, provider
    ├── HeadConflictError                session_id, expected, got
    ├── CursorBackwardsError (ValueError) stored, requested   (graph.cursors, the reference cursor)
    ├── CodecError (ValueError)          type_name
    ├── CommandLineError (ValueError)    what, why   (graph.terminal, a command line mistake)
    └── StoreError                       the translated ``sqlite3`` error is its ``__cause__``
        ├── StoreBusyError               retryable: another writer holds a lock, or the connection was lost
        ├── StoreConnectError            where, reason   (no server there, or it refused the login)
        ├── SchemaVersionError           expected, got
        └── ForeignDatabaseError         tables   (a database of something else, not a store)

``sqlite3`` errors never reach a caller untranslated: the store raises :class:`StoreError` from them.
"""

from __future__ import annotations

__all__ = [
    "CodecError",
    "CoverageError",
    "CycleError",
    "DuplicateNodeError",
    "DuplicateSessionError",
    "ForeignDatabaseError",
    "ForeignPredecessorError",
    "GraphError",
    "HeadConflictError",
    "InvalidWriteError",
    "MarkerGapError",
    "NotFoundError",
    "NotOnBranchError",
    "SchemaVersionError",
    "StoreBusyError",
    "StoreConnectError",
    "StoreError",
    "UnknownNodeError",
    "UnknownPredecessorError",
    "UnknownSessionError",
]


class GraphError(Exception):
    """Root of every error the ``graph`` package raises."""


class NotFoundError(GraphError, KeyError):
    """A session or node that was asked for does not exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownSessionError(NotFoundError):
    """No session has this id.

    Attributes:
        session_id: The id asked for.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown session {session_id!r}")
        self.session_id = session_id


class UnknownNodeError(NotFoundError):
    """No node has this id (in this session, when one was named).

    Attributes:
        node_id: The id asked for.
        session_id: The session searched, or None when every session was.
    """

    def __init__(self, node_id: str, session_id: str | None = None) -> None:
        where = f" in session {session_id!r}" if session_id else ""
        super().__init__(f"unknown node {node_id!r}{where}")
        self.node_id = node_id
        self.session_id = session_id


class InvalidWriteError(GraphError, ValueError):
    """A write was refused; nothing it would have written was stored."""


class UnknownPredecessorError(InvalidWriteError):
    """A node names a predecessor that is not stored (nor earlier in the same batch).

    Attributes:
        node_id: The node being written.
        predecessor: The missing predecessor id.
    """

    def __init__(self, node_id: str, predecessor: str) -> None:
        super().__init__(f"node {node_id!r}: unknown predecessor {predecessor!r}")
        self.node_id = node_id
        self.predecessor = predecessor


class ForeignPredecessorError(InvalidWriteError):
    """A node's predecessor belongs to another session.

    Attributes:
        node_id: The node being written.
        predecessor: The predecessor id.
        expected: The session the node is written to.
        got: The session the predecessor belongs to.
    """

    def __init__(self, node_id: str, predecessor: str, expected: str, got: str) -> None:
        super().__init__(
            f"node {node_id!r}: predecessor {predecessor!r} is in session {got!r}, not {expected!r}"
        )
        self.node_id = node_id
        self.predecessor = predecessor
        self.expected = expected
        self.got = got


class DuplicateNodeError(InvalidWriteError):
    """A node id is already stored with different content, predecessor, kind, role or session.

    Attributes:
        node_id: The id written twice.
        session_id: The session of the stored node.
        field: The first field that differs.
    """

    def __init__(self, node_id: str, session_id: str, field: str) -> None:
        super().__init__(
            f"node {node_id!r} already exists in session {session_id!r} with a different {field}"
        )
        self.node_id = node_id
        self.session_id = session_id
        self.field = field


class DuplicateSessionError(InvalidWriteError):
    """A session id is already taken.

    Attributes:
        session_id: The id.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class CycleError(InvalidWriteError):
    """Nodes of one batch name each other (or themselves) as predecessors.

    Attributes:
        node_id: A node on the cycle.
    """

    def __init__(self, node_id: str) -> None:
        super().__init__(f"node {node_id!r} is its own ancestor")
        self.node_id = node_id


class NotOnBranchError(InvalidWriteError):
    """A node was expected on the branch of a head and is not there.

    Attributes:
        node_id: The node.
        head: The head whose branch was walked.
    """

    def __init__(self, node_id: str, head: str | None) -> None:
        super().__init__(f"node {node_id!r} is not on the branch of {head!r}")
        self.node_id = node_id
        self.head = head


class CoverageError(InvalidWriteError):
    """A compaction summary's covered nodes are not one unbroken span of one branch.

    Attributes:
        node_id: The covered node at fault.
        reason: What is wrong with it.
    """

    def __init__(self, node_id: str, reason: str) -> None:
        super().__init__(f"cannot cover node {node_id!r}: {reason}")
        self.node_id = node_id
        self.reason = reason


class MarkerGapError(InvalidWriteError):
    """Marking would leave an unmarked eligible node above a marked one on a branch.

    The walk relies on it: on every branch the marked eligible nodes form a prefix.

    Attributes:
        node_id: The node whose marker would sit below the gap.
        unmarked: The eligible ancestor that is not marked and not in the batch.
        provider: The provider whose markers were written.
    """

    def __init__(self, node_id: str, unmarked: str, provider: str) -> None:
        super().__init__(
            f"marking {node_id!r} for {provider!r} would leave its eligible ancestor "
            f"{unmarked!r} unmarked; mark the pending nodes oldest first"
        )
        self.node_id = node_id
        self.unmarked = unmarked
        self.provider = provider


class HeadConflictError(GraphError):
    """A compare-and-swap head move found another head than the one expected.

    Attributes:
        session_id: The session.
        expected: The head the caller expected.
        got: The head actually stored.
    """

    def __init__(self, session_id: str, expected: str | None, got: str | None) -> None:
        super().__init__(f"session {session_id!r}: head is {got!r}, expected {expected!r}")
        self.session_id = session_id
        self.expected = expected
        self.got = got


class CodecError(GraphError, ValueError):
    """A value cannot be encoded or a payload cannot be decoded (the codec's closed allow-list).

    Only the allow-listed types are encoded and decoded; nothing is ever imported by name.

    Attributes:
        type_name: The offending type's name, or a short description of the bad payload.
    """

    def __init__(self, type_name: str, detail: str = "") -> None:
        super().__init__(f"cannot encode or decode {type_name}" + (f": {detail}" if detail else ""))
        self.type_name = type_name


class StoreError(GraphError):
    """The database failed (locked, corrupt, read-only, full); the ``sqlite3`` error is the cause."""


class StoreBusyError(StoreError):
    """The store could not be used just now; the same call, retried, will work.

    On SQLite another connection held the write lock past the timeout (readers never take it, so
    only writes and the one-time creation or migration of a file's schema wait for it); on
    PostgreSQL a lock wait, deadlock or serialization failure, or a server that dropped the
    connection (one not reached when the store is opened is :class:`StoreConnectError`). Nothing
    was written.

    Attributes:
        what: The driver's message, on one line.
        why: What made the store unavailable.
        retryable: Always True: the store is sound, only busy or out of reach.
    """

    retryable = True

    def __init__(self, what: str, why: str = "another process holds the write lock") -> None:
        what = " ".join(what.split())  # a driver's multi-line message, on one line
        super().__init__(f"the store is busy: {what}: {why}; retry the same call")
        self.what = what
        self.why = why


class StoreConnectError(StoreError):
    """A database server could not be connected to when the store was opened; nothing was read.

    Nothing listens at the address, the host name does not resolve, or the server refused the
    login (a wrong password, an unknown user or database). Unlike a lost connection
    (:class:`StoreBusyError`), retrying the same call does not help until the address or the
    credentials are corrected.

    Attributes:
        where: The address tried: ``host:port``, or the server's socket path.
        reason: The server's or the driver's reason, on one line, without the password.
    """

    def __init__(self, where: str, reason: str) -> None:
        reason = " ".join(reason.split())
        super().__init__(f"cannot connect to {where}: {reason}")
        self.where = where
        self.reason = reason


class ForeignDatabaseError(StoreError):
    """The database holds tables of something else and no store: it is not opened as one.

    A store is made only in an empty database, so a mistaken ``--db`` (another application's
    SQLite file, a LangGraph ``SqliteSaver`` file) is refused instead of getting the store's
    tables added beside its own.

    Attributes:
        tables: Some of the tables it holds, sorted.
    """

    def __init__(self, tables: list[str]) -> None:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        super().__init__(f"not a sessiongraph store: it holds other tables ({shown})")
        self.tables = tables


class SchemaVersionError(StoreError):
    """The file's schema is newer than this library understands.

    Attributes:
        expected: The newest schema version this library knows.
        got: The version recorded in the file.
    """

    def __init__(self, expected: int, got: int) -> None:
        super().__init__(f"store schema version {got} is newer than supported version {expected}")
        self.expected = expected
        self.got = got

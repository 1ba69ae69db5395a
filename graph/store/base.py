"""The session store: every session operation, over a small persistence layer.

Sessions, appends, forks, head moves, rewinds, compaction, spawns, markers and pending.
:class:`BaseStore` holds the operations and their validation once. Its two persistence twins,
:class:`graph.store.sqlite.SessionStore` (the SQLite store of record) and
:class:`graph.store.in_memory.MemorySessionStore` (plain dicts, for tests and embedding), implement a
handful of ``_db_*`` primitives and :meth:`BaseStore.atomic`, and pass one contract suite.

Every public write opens a transaction through :meth:`BaseStore.atomic` (nesting as a savepoint inside
a caller's), validates everything it was given against a fresh index, and either writes all of it or
raises a typed error having written nothing.
"""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from pydantic import BaseModel

from graph import walks
from graph.codec import decode, decode_content, encode, encode_content
from graph.errors import (
    CoverageError,
    CycleError,
    DuplicateNodeError,
    ForeignPredecessorError,
    HeadConflictError,
    InvalidWriteError,
    MarkerGapError,
    NotOnBranchError,
    UnknownNodeError,
    UnknownPredecessorError,
    UnknownSessionError,
)
from graph.ids import NodeId, SessionId, new_id
from graph.index import (
    ARTIFACT,
    DECODED_PAYLOAD_BYTES,
    MEMORY_ELIGIBLE,
    DecodedNodes,
    Eligibility,
    Eligible,
    IndexView,
    SessionIndex,
    as_sibling,
    is_summary_bits,
    kind_of_bits,
    node_bits,
    rewound_bits,
    role_of_bits,
    same_kind_and_role,
    sql_bit_tests,
)
from graph.models import (
    Content,
    ImageBlock,
    Kind,
    Node,
    Role,
    SearchHit,
    Session,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    from_micros,
    to_micros,
    utcnow,
)
from graph.search import Query, indexed_text, make_snippet, parse_query, split_marked

__all__ = [
    "HEAD",
    "RUNTIMES",
    "BaseStore",
    "MessageTail",
    "NodeRow",
    "SessionFilter",
    "SessionStats",
    "node_of_fields",
    "paused_gc",
    "pending_walk_index",
    "pending_walk_query",
    "session_origin",
    "unknown_runtime",
]


@contextmanager
def paused_gc(pause: bool = True) -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk load; re-enable it afterwards.

    Above 1e5 nodes the collector costs 1.2-2.4x on bulk loads, because every collection scans all
    the objects the load keeps alive. Nests; re-enabled on an exception too.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _Head:
    """The type of :data:`HEAD`: "the session's current head", as a predecessor or an expected head.

    ``append(..., predecessor=HEAD)`` (the default) continues from the head; ``set_head(...,
    expected=HEAD)`` (the default) moves the head unconditionally. None means something else in
    both places (a new root; "the session has no head").
    """

    def __repr__(self) -> str:
        return "HEAD"


HEAD: Any = _Head()
"""Sentinel for "the session's current head" as a predecessor or an expected head."""


class NodeRow(NamedTuple):
    """A node as the persistence layer stores it: indexed columns plus encoded payloads."""

    id: str
    session_id: str
    predecessor: str | None
    bits: int
    created_at: int
    """Microseconds since the Unix epoch."""
    content: bytes
    """The msgpack content payload."""
    metadata: bytes
    """The msgpack metadata payload (markers and rewound stamps are stored apart)."""
    covers: tuple[str, ...]
    text: str = ""
    """The text the full-text index holds for the node (:func:`graph.search.indexed_text`); only
    set on rows being written."""


class SessionStats(NamedTuple):
    """Counts describing one session's graph (what ``sessiongraph import`` and ``show`` report)."""

    nodes: int
    roots: int
    forks: int
    """Nodes with two or more children."""
    rewound: int
    summaries: int
    live_tips: int
    spawned: int
    """Sessions spawned from this one."""


class MessageTail(NamedTuple):
    """The newest messages of a branch, as :meth:`BaseStore.message_tail` walks them back from the head."""

    ids: list[NodeId]
    """The messages returned, oldest first (at most the ``count`` asked for)."""
    newer: int
    """Messages between ``before`` and the head (``before`` included) that were walked over, not returned."""
    older: int | None
    """Messages older than :attr:`ids` on the branch; None when the walk stopped without counting them
    (there is at least one)."""

    @property
    def total(self) -> int | None:
        """Every message on the branch, or None when :attr:`older` was not counted."""
        return None if self.older is None else self.older + len(self.ids) + self.newer


RUNTIMES = ("claude-code", "pi", "codex")
"""The runtimes whose transcripts the importers read: the ``runtime`` they keep in a session's metadata."""


def unknown_runtime(value: str | None) -> str | None:
    """Why ``value`` is no runtime filter (it would match no session, silently), or None.

    Shared by every surface that filters by runtime (``--runtime``, ``?runtime=``, MCP's
    ``runtime``) so each refuses an unknown one with the same message.

    Args:
        value: the runtime asked for; None or one of :data:`RUNTIMES` is a filter.

    Returns:
        None for a known runtime or None; otherwise one line naming the closest runtime
        (``difflib``) and every known one.
    """
    if value is None or value in RUNTIMES:
        return None
    import difflib

    near = difflib.get_close_matches(value, RUNTIMES, n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"{value!r} is no runtime{hint}; known runtimes: {', '.join(RUNTIMES)}"


class SessionFilter(NamedTuple):
    """What :meth:`BaseStore.sessions` and :meth:`BaseStore.search` keep; None keeps everything."""

    runtime: str | None = None
    """The runtime that wrote the transcript (``claude-code``, ``pi``, ``codex``)."""
    project: str | None = None
    """A project folder: sessions whose working directory is it or lies under it."""
    since: int | None = None
    """Microseconds since the Unix epoch: sessions updated (nodes written) at or after it."""

    def keeps_project(self, project: str | None) -> bool:
        """Whether a session's project folder is :attr:`project` or lies under it."""
        if self.project is None:
            return True
        if project is None:
            return False
        root = self.project.rstrip("/") or "/"
        return project == root or project.startswith(root if root == "/" else root + "/")


_KEEP_ALL = SessionFilter()
KEEP_ALL = _KEEP_ALL
"""The filter that keeps every session."""


def search_hit(
    query: Query,
    row: tuple[str, str, int, int, bytes, float, bool],
) -> SearchHit:
    """Build the :class:`~graph.models.SearchHit` of one matching node, for every backend.

    Args:
        query: The parsed query (its terms mark the snippet).
        row: ``(node_id, session_id, created_at, bits, content, rank, rewound)``: ``created_at`` in
            microseconds since the Unix epoch, ``content`` the stored msgpack payload, ``rank`` the
            backend's score (lower is better).
    """
    nid, sid, created, bits, content, rank, rewound = row
    kind = kind_of_bits(bits)
    snippet, spans = split_marked(make_snippet(query, indexed_text(kind, decode_content(content))))
    return SearchHit.model_construct(
        session_id=SessionId(sid),
        node_id=NodeId(nid),
        created_at=from_micros(created),
        kind=kind,
        role=role_of_bits(bits),
        snippet=snippet,
        spans=spans,
        rank=float(rank),
        rewound=bool(rewound),
    )


def session_origin(metadata: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """Return ``(runtime, project)`` of a session from the metadata its importer kept.

    The runtime is ``metadata["runtime"]``. The project is the working directory the runtime
    recorded: ``project`` or ``cwd`` at the top (Claude Code), in pi's session header
    (``header.cwd``), or in Codex's ``session_meta.cwd``; trailing slashes are dropped.
    """
    runtime = metadata.get("runtime")
    project: Any = metadata.get("project") or metadata.get("cwd")
    for nested in ("header", "session_meta"):
        inner = metadata.get(nested)
        if not project and isinstance(inner, Mapping):
            project = inner.get("cwd")
    if isinstance(project, str) and project:
        project = project.rstrip("/") or "/"
    else:
        project = None
    return (runtime if isinstance(runtime, str) and runtime else None), project


def pending_walk_query(eligible: Eligible, param: Callable[[str], str]) -> str:
    """The recursive SQL of a cold pending walk, shared by the SQL backends.

    The query starts at the node named by parameter ``head`` of session ``sid`` and follows each
    row's next node (its predecessor, or a sibling-layout summary's last covered node) until a row
    stops the walk: eligible (its bits match ``eligible``, not stamped rewound, not a summary with
    covers) and carrying the marker of parameters ``p`` (provider) and ``v`` (value). It returns
    ``(id, predecessor, bits, last covered node or NULL, rewound, stop)`` per row walked. Only the
    integers of :func:`graph.index.sql_bit_tests` are written into the SQL; ids, provider and value
    are bound.

    Args:
        eligible: The provider's predicate.
        param: Spells a named parameter in the driver's style (``:head`` or ``%(head)s``).
    """
    test = sql_bit_tests("n.bits", eligible)
    # Each subquery is written once: a fresh process prepares this statement on every cold walk,
    # and its preparation, not the dozen rows it walks, is most of its cost. The last covered node
    # is looked up for summaries alone (no other node has covers); the rewound stamp is one join.
    last = (
        f"CASE WHEN {test.summary} THEN (SELECT c.node_id FROM covers c"
        " WHERE c.summary_id = n.id ORDER BY c.position DESC LIMIT 1) END"
    )
    columns = (
        f"n.id, n.predecessor, n.bits, {last} AS last, r.node_id IS NOT NULL AS rewound,"
        f" {test.eligible} AND r.node_id IS NULL"
        " AND EXISTS (SELECT 1 FROM marks m WHERE m.node_id = n.id"
        f" AND m.provider = {param('p')} AND m.value = {param('v')}) AS stop"
    )
    stamp = "LEFT JOIN rewound r ON r.node_id = n.id"
    # the next node: a sibling-layout summary's last covered node, else the predecessor
    sibling = sql_bit_tests("up.bits", eligible).sibling
    step = f"CASE WHEN {sibling} AND up.last IS NOT NULL THEN up.last ELSE up.predecessor END"
    sid = param("sid")
    # An eligible summary with covers never stops the walk (its covered nodes stand for it): the
    # recursion goes on past it, as past any row whose ``stop`` is false.
    go_on = "(NOT up.stop OR up.last IS NOT NULL)"
    return (
        f"WITH RECURSIVE up AS (SELECT {columns} FROM nodes n {stamp}"
        f" WHERE n.id = {param('head')} AND n.session_id = {sid}"
        f" UNION ALL SELECT {columns} FROM up JOIN nodes n ON n.id = {step} {stamp}"
        f" WHERE {go_on} AND n.session_id = {sid})"
        " SELECT id, predecessor, bits, last, rewound, stop AND last IS NULL FROM up"
    )


def pending_walk_index(
    part: SessionIndex,
    rows: Iterable[tuple[str, str | None, int, str | None, Any, Any]],
    provider: str,
    value: str,
) -> list[str]:
    """Fill the partial index ``part`` with the rows of :func:`pending_walk_query`.

    Each row's predecessor and bits (with the rewound stamp folded in) are kept, and the stopping
    row gets the ``(provider, value)`` marker.

    Returns:
        The summaries walked, whose covers the backend reads next.

    Raises:
        UnknownNodeError: no row came back (``part.head`` is not a node of the session).
    """
    summaries: list[str] = []
    for nid, pred, bits, last_covered, was_rewound, stop in rows:
        part.pred[nid] = pred
        part.bits[nid] = rewound_bits(bits) if was_rewound else bits
        if last_covered is not None:
            summaries.append(nid)
        if stop:
            part.add_marks(provider, value, [nid])
    if not part.pred:
        raise UnknownNodeError(str(part.head), part.session_id)
    return summaries


def _written_of(idx: SessionIndex, ids: Iterable[str]) -> dict[str, dict[str, tuple[str, ...]]]:
    """The markers of ``ids`` (node -> provider -> values, sorted), one set intersection per marker.

    It answers :meth:`~graph.index.IndexQueries.written` for a batch at the cost of the marker kinds
    the session holds, not of one scan of them per node.
    """
    if not idx.marks:
        return {}
    wanted = set(ids)
    found: dict[str, dict[str, list[str]]] = {}
    for (provider, value), members in sorted(idx.marks.items()):
        for n in wanted & members:  # iterates the smaller set
            found.setdefault(n, {}).setdefault(provider, []).append(value)
    return {n: {p: tuple(vs) for p, vs in pv.items()} for n, pv in found.items()}


_EPOCH = from_micros(0)
_SQL_INT_MAX = 2**63 - 1  # the largest integer SQLite (and PostgreSQL's bigint) binds
_NODE_FIELDS = frozenset(Node.model_fields)
_new_node = Node.__new__
_set_dict = object.__setattr__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _construct_node(values: dict[str, Any]) -> Node:
    """Return ``Node.model_construct(**values)`` for values holding every field, in field order.

    It sets what ``model_construct`` sets (the field dict, all fields set, no extra, no private) through
    pydantic's own slots, without its per-field alias and default look-ups, which cost most of a
    stored node's read time.
    """
    node = _new_node(Node)
    _set_dict(node, "__dict__", values)
    _set_fields(node, set(_NODE_FIELDS))
    _set_extra(node, None)
    _set_private(node, None)
    return node


_BLOCK_TYPES = frozenset({TextBlock, ToolCallBlock, ToolResultBlock, ImageBlock})
_STR = frozenset({str})


def _appended_node(values: dict[str, Any]) -> Node:
    """The :class:`Node` of :meth:`BaseStore.append`'s arguments, validated only where it could fail.

    ``values`` holds every field in field order, kind and role already converted to their enums.
    When the ids are ``str``, the content a ``str`` or blocks that are already block models, the
    time a ``datetime`` and the metadata's keys ``str``, validation would return the same values, so
    the node is built from them directly (it costs a few microseconds of every append); anything
    else (blocks given as dicts, a time as text) goes through ``Node``'s validation.

    Raises:
        pydantic.ValidationError: a value that is not what ``Node`` holds.
    """
    content, metadata, predecessor = values["content"], values["metadata"], values["predecessor"]
    if (
        type(values["id"]) is str
        and type(values["session_id"]) is str
        and (predecessor is None or type(predecessor) is str)
        and type(values["created_at"]) is datetime
        and (type(content) is str or set(map(type, content)) <= _BLOCK_TYPES)
        and set(map(type, metadata)) <= _STR
    ):
        return _construct_node(values)
    return Node(**values)


def node_of_fields(values: dict[str, Any]) -> Node:
    """A :class:`Node` of prepared field values (an importer's), validated only where it could fail.

    Args:
        values: Every field of :class:`Node` in field order (``id`` to ``covers``), kind and role
            as their enums, content a ``str`` or a tuple of blocks. Values already of the field
            types are kept as they are (the metadata dict is not copied); anything else goes through
            ``Node``'s validation.

    Raises:
        pydantic.ValidationError: a value that is not what ``Node`` holds.
    """
    return _appended_node(values)


_DIRECT_READ = (
    100  # nodes() of at most this many ids, with no index cached, reads rows, builds none
)

_GC_PAUSE_AT = 10_000  # add_nodes batches this large run with the cyclic GC paused

_EMPTY_METADATA = encode({})  # most nodes carry none: encoding it costs a third of a row


def _is_empty(content: Content) -> bool:
    """Whether ``content`` holds no text (``content_text`` blank), without joining its blocks."""
    if isinstance(content, str):
        return not content.strip()
    return not any(
        b.text.strip() for b in content if isinstance(b, TextBlock | ToolResultBlock) and b.text
    )


def _row_of(node: Node) -> NodeRow:
    meta = node.metadata
    if type(meta) is not dict or "written" in meta or "rewound" in meta:
        # written and rewound are the store's own keys, kept in their tables
        meta = {k: v for k, v in meta.items() if k not in ("written", "rewound")}
    bits = node_bits(
        node.kind,
        node.role,
        empty=_is_empty(node.content),
        scheduled=bool(meta.get("scheduled")),
        artifact=bool(meta.get("artifact")),
    )
    return NodeRow(
        node.id,
        node.session_id,
        node.predecessor,
        bits,
        to_micros(node.created_at),
        encode_content(node.content),
        encode(meta) if meta else _EMPTY_METADATA,
        tuple(node.covers),
        indexed_text(node.kind, node.content),
    )


def _same(a: NodeRow, b: NodeRow) -> str | None:
    """Return the first field in which two rows of one id differ as stored content, or None."""
    if a.session_id != b.session_id:
        return "session"
    if a.predecessor != b.predecessor:
        return "predecessor"
    if not same_kind_and_role(a.bits, b.bits):
        return "kind or role"
    if a.content != b.content and decode(a.content) != decode(b.content):
        # Equal content encodes to equal bytes; the decoded comparison keeps rows written before the
        # encoding was canonical (dict keys in another order) equal to their re-import.
        return "content"
    if a.covers != b.covers:
        return "covers"
    return None


class BaseStore(ABC):
    """Sessions as predecessor-linked node DAGs, with heads, markers and pending.

    A consumer (a *provider*, such as ``memory``, with a *value*, such as its workspace id) marks the
    nodes it has written; :meth:`pending` walks back from a head to the newest such marker. Markers are
    kept per (provider, value): any number of consumers read one store independently.

    Not thread-safe: use one store object per thread (several objects, and processes, may share one
    SQLite file). Each store caches one :class:`~graph.index.SessionIndex` per session it has read and
    refreshes it from what changed since.
    """

    def __init__(self) -> None:
        self._cache: dict[str, SessionIndex] = {}
        self._walked_cold: set[str] = set()
        self._decoded = DecodedNodes()
        self._changes = 0
        """Moves on every change :meth:`_note_changes` finds, commit and rollback (see :meth:`_change_mark`)."""

    # ---------------------------------------------------------------- persistence primitives

    @abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """Return a context manager for one transaction.

        Outermost, it begins a write transaction and commits on success; inside another (the store's
        or the caller's), it is a savepoint, released on success. On an exception everything since
        it began is rolled back and the exception propagates.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the store's resources; the object is unusable afterwards."""

    @abstractmethod
    def _db_changed(self) -> bool:
        """Whether anyone else may have written since the last call."""

    @abstractmethod
    def _db_catch_up(self, index: SessionIndex) -> None:
        """Bring ``index`` up to date with everything stored (an empty index: a full build).

        Raises:
            UnknownSessionError: the session does not exist.
        """

    @abstractmethod
    def _db_session(self, session_id: str) -> Session:
        """Read one session (raises UnknownSessionError)."""

    def _db_head(self, session_id: str) -> str | None:
        """Read one session's head alone (raises UnknownSessionError).

        A backend reads the one column: the whole session row (its metadata can hold a transcript's
        every non-node entry) is decoded for nothing otherwise, once per batch of an import.
        """
        return self._db_session(session_id).head

    def _walk_start(self, session_id: str, head: str | None) -> str | None:
        """The node a walk back over the stored rows starts at: ``head``, else the session's head.

        The session's head is read either way, so a missing session is told apart from a missing
        node (which the walk's query finds).

        Raises:
            UnknownSessionError: no such session.
        """
        stored = self._db_head(session_id)
        return head if head is not None else stored

    @abstractmethod
    def _db_sessions(
        self, limit: int | None, parent: str | None, keep: SessionFilter = _KEEP_ALL
    ) -> list[Session]:
        """Sessions most recently updated first (only those spawned from ``parent`` when given)."""

    @abstractmethod
    def _db_search(
        self,
        query: Query,
        sessions: Sequence[str] | None,
        keep: SessionFilter,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        """Nodes whose indexed text matches ``query``, best first (``keep.since`` bounds nodes)."""

    @abstractmethod
    def _db_insert_session(self, session: Session) -> None:
        """Insert a new session (raises DuplicateSessionError)."""

    @abstractmethod
    def _db_set_session_info(
        self, session_id: str, title: str | None, metadata: dict[str, Any] | None
    ) -> None:
        """Replace the title and/or metadata (None leaves it); never touches ``updated_at``."""

    @abstractmethod
    def _db_set_spawn(self, session_id: str, spawned_from: str | None, parent_session: str) -> None:
        """Set the session's spawn link (and the runtime and project it takes from its parent)."""

    @abstractmethod
    def _db_update_session(self, session_id: str, head: str | None, updated_at: int | None) -> int:
        """Set the head and bump the change counter; return the counter.

        ``updated_at`` (microseconds), unless None, raises the session's ``updated_at`` to at least it.
        """

    @abstractmethod
    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        """Insert rows (predecessors first) and their covers links."""

    @abstractmethod
    def _db_rows(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        """The stored rows of those ``ids`` that exist, in any session."""

    def _db_has_session(self, session_id: str) -> bool:
        """Whether the session exists (backends may answer it more cheaply)."""
        try:
            self._db_session(session_id)
        except UnknownSessionError:
            return False
        return True

    def _db_latest_message(self, session_id: str, head: str | None) -> NodeId | None:
        """:meth:`latest_message_id` for a backend (by default over the index)."""
        return self._latest_in(self._index(session_id), head)

    def _latest_in(self, idx: SessionIndex, head: str | None) -> NodeId | None:
        """The newest live message on ``head``'s branch (the index's head by default), by the index."""
        n = self._head(idx, head)
        while n is not None:
            if idx.is_live_message(n):
                return NodeId(n)
            n = idx.pred[n]
        return None

    def _db_walk_back(self, session_id: str, head: str | None) -> Iterator[tuple[str, bool]] | None:
        """The branch of ``head`` (the stored head by default) read from the stored rows, head first.

        A backend that can walk its rows back lazily (a recursive query whose rows are read as they
        come) yields ``(node id, whether it is a message)`` for every node on the branch, rewound nodes
        left out, so a caller that stops early pays for what it read. None (the default) means the
        caller walks the index instead.

        Raises:
            UnknownSessionError, UnknownNodeError: when iterated (the session or ``head`` is unknown).
        """
        return None

    def _db_message_count(self, session_id: str, head: str | None) -> int | None:
        """The messages on ``head``'s branch (the stored head by default), counted by the backend.

        For a backend without :meth:`_db_walk_back` that can still count the branch in one query.
        None (the default) means the caller asks the index instead.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        return None

    def _db_live_tips(self, session_id: str) -> list[NodeId] | None:
        """The live tips, newest first, found by the backend without the session's index.

        A live tip is a message that is neither rewound nor on an artifact fork and is no ancestor of
        such a message (the definition :func:`graph.walks.live_tips` scans for). None (the default)
        means the caller asks the index instead.

        Raises:
            UnknownSessionError: no such session.
        """
        return None

    def _db_pending_walk(
        self, session_id: str, head: str | None, provider: str, value: str, eligible: Eligible
    ) -> SessionIndex | None:
        """The rows a pending walk from ``head`` visits, as a partial index, read without the session's.

        A backend that can walk its stored rows back from the head (a recursive query) returns an
        index holding only those rows: the walk's nodes, their bits with rewound stamps, the one
        marker that stops it and the covers of the summaries on the way. None (the default) means
        the caller builds the whole index instead.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        return None

    def _db_node_extras(
        self, session_id: str, ids: Sequence[str]
    ) -> tuple[dict[str, dict[str, tuple[str, ...]]], set[str]]:
        """The markers (node -> provider -> values, sorted) and rewound stamps of these nodes.

        Backends may read them without building the session's index; by default the index answers.
        """
        idx = self._index(session_id)
        written = {i: w for i in ids if (w := idx.written(i))}
        return written, {i for i in ids if idx.is_rewound(i)}

    def _db_node_count(self, session_id: str) -> int:
        """How many nodes the session holds (backends may count without building the index)."""
        return len(self._index(session_id))

    def _db_locate(self, ids: Sequence[str]) -> dict[str, str]:
        """Node id -> session id for those ``ids`` that exist (backends may skip the payloads)."""
        return {i: r.session_id for i, r in self._db_rows(ids).items()}

    @abstractmethod
    def _db_insert_marks(
        self, session_id: str, provider: str, value: str, ids: Sequence[str]
    ) -> int:
        """Write markers (replacing another value of the same provider); bump the counter; return it."""

    @abstractmethod
    def _db_insert_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        """Stamp nodes rewound."""

    @abstractmethod
    def _db_delete_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        """Remove the rewound stamps of nodes, and record the change.

        Every other handle's next refresh reads the nodes' stamps again and drops its decoded
        models of them (their metadata carries the stamp).
        """

    @abstractmethod
    def _db_set_flags(self, session_id: str, rows: Sequence[NodeRow]) -> None:
        """Replace the ``bits`` and ``metadata`` of stored rows (same ids), and record the change.

        Content and links never change. Every other handle's next refresh reads the rows' bits
        again and drops its decoded models of them (their metadata may be what changed).
        """

    @abstractmethod
    def _db_delete_sessions(self, session_ids: Sequence[str]) -> None:
        """Delete sessions with their nodes, covers links, markers and rewound stamps."""

    def _db_import_state(self, key: str) -> dict[str, Any] | None:
        """The state recorded for an imported file (a backend that keeps none answers None)."""
        return None

    def _db_set_import_state(self, key: str, state: dict[str, Any]) -> None:  # noqa: B027
        """Record an imported file's state (a backend that keeps none forgets it)."""

    def _origin(
        self, metadata: Mapping[str, Any], parent: str | None
    ) -> tuple[str | None, str | None]:
        """``(runtime, project)`` of a session; a spawned session lacking them takes its parent's."""
        runtime, project = session_origin(metadata)
        seen: set[str] = set()
        while parent is not None and parent not in seen and (runtime is None or project is None):
            seen.add(parent)
            try:
                up = self._db_session(parent)
            except UnknownSessionError:
                break
            up_runtime, up_project = session_origin(up.metadata)
            runtime, project = runtime or up_runtime, project or up_project
            parent = up.parent_session
        return runtime, project

    # ---------------------------------------------------------------- the index

    def index(self, session_id: str) -> IndexView:
        """Return a read-only face of the session's index, refreshed from what changed since it was built.

        The view reads through to the store's cached index: ids, predecessors, children, covers,
        markers, and the questions :class:`~graph.index.IndexQueries` answers per node (kind, role,
        summary, message, rewound). When nothing changed the check reads no rows (SQLite: the header of
        its WAL index), and when something did it reads only the new rows.

        Raises:
            UnknownSessionError: no such session.
        """
        return IndexView(self._index(session_id))

    def _index(self, session_id: str) -> SessionIndex:
        """The store's own cached, mutable index of the session, refreshed (see :meth:`index`)."""
        self._note_changes()
        cached = self._cache.get(session_id)
        if cached is None:
            idx = SessionIndex(session_id)
            self._db_catch_up(idx)
            self._cache[session_id] = idx
        else:
            idx = cached
            if idx.stale:
                self._db_catch_up(idx)
        idx.stale = False
        return idx

    def rebuild_index(self, session_id: str) -> IndexView:
        """Build the session's index from scratch, replace the cached one, and return its view.

        This is the full rebuild the benchmarks time; :meth:`index` never needs it.
        """
        idx = SessionIndex(session_id)
        self._db_catch_up(idx)
        self._cache[session_id] = idx
        return IndexView(idx)

    def _note_changes(self) -> None:
        """Mark every cached index stale if anyone else may have written since the last check."""
        if self._db_changed():
            self._changes += 1
            for idx in self._cache.values():
                idx.stale = True

    def _forget(self) -> None:
        """Drop every cached index (after a rollback)."""
        self._changes += 1
        self._cache.clear()

    def _change_mark(self) -> int | None:
        """A number that stays the same only while nothing stored changes, or None.

        For caches kept beside the store's own index (the LangGraph saver's rows): what was read
        under one mark is still what a read would return while the mark is unchanged, whoever
        writes (this store object, another one, another process). None when the store cannot tell
        cheaply or a transaction is open (its writes are not committed yet): then read afresh.
        """
        return None

    # ---------------------------------------------------------------- sessions

    def create_session(
        self,
        title: str = "",
        *,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        spawned_from: str | None = None,
        parent_session: str | None = None,
    ) -> Session:
        """Create an empty session and return it.

        Args:
            title: A human title.
            id: The session id; a new time-ordered id when None (importers keep the runtime's id).
            metadata: JSON-shaped session metadata.
            created_at: Creation time (also the first ``updated_at``); now when None.
            spawned_from: Use :meth:`spawn` instead; kept for importers and bundles.
            parent_session: The session of ``spawned_from``.

        Raises:
            DuplicateSessionError: the id is taken.
            CodecError: metadata holds a value outside the codec's allow-list.
        """
        moment = created_at or utcnow()
        session = Session(
            id=SessionId(id or new_id()),
            title=title,
            created_at=moment,
            updated_at=moment,
            head=None,
            metadata=dict(metadata or {}),
            spawned_from=NodeId(spawned_from) if spawned_from else None,
            parent_session=SessionId(parent_session) if parent_session else None,
        )
        encode(dict(session.metadata))
        with self.atomic():
            self._db_insert_session(session)
        return session

    def session(self, session_id: str) -> Session:
        """Return the stored session.

        Raises:
            UnknownSessionError: no such session.
        """
        return self._db_session(session_id)

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Replace a session's title and/or metadata and return the session.

        Importers keep a grown transcript's header and non-node entries here. A metadata-only write: ``updated_at`` and the head do not change. None leaves a field as it is.

        Raises:
            UnknownSessionError: no such session.
            CodecError: metadata holds a value outside the codec's allow-list.
        """
        meta = None if metadata is None else dict(metadata)
        if meta is not None:
            encode(meta)
        with self.atomic():
            self._db_session(session_id)
            self._db_set_session_info(session_id, title, meta)
            return self._db_session(session_id)

    def sessions(
        self,
        limit: int | None = None,
        *,
        runtime: str | None = None,
        project: str | None = None,
        since: datetime | None = None,
    ) -> list[Session]:
        """Return sessions most recently updated first (at most ``limit``).

        Args:
            limit: At most this many sessions; None (or more than 2**63 - 1) for all.
            runtime: Only sessions imported from this runtime (``claude-code``, ``pi``, ``codex``;
                the ``runtime`` an importer keeps in the session metadata).
            project: Only sessions whose working directory (see :func:`session_origin`) is this
                folder or lies under it.
            since: Only sessions updated at or after this moment (naive means UTC).
        """
        keep = SessionFilter(runtime, project, None if since is None else to_micros(since))
        if limit is not None and limit > _SQL_INT_MAX:
            limit = None  # more than any store holds, and more than SQL binds
        return self._db_sessions(limit, None, keep)

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        since: datetime | None = None,
        runtime: str | None = None,
        project: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[SearchHit]:
        """Search what was said in every stored session; best matches first.

        The index holds the text blocks of message and summary nodes, kept in step with every
        append and import in the same transaction. Rewound nodes are found too (flagged).

        Args:
            query: Words as a person types them (see :mod:`graph.search`): all must occur;
                ``"a phrase"``, ``prefix*`` and ``-exclude`` are understood; nothing in it is a
                syntax error.
            session: Only this session and the sessions spawned from it (and theirs).
            since: Only nodes written at or after this moment (naive means UTC).
            runtime: Only sessions imported from this runtime.
            project: Only sessions whose working directory is this folder or lies under it.
            limit: At most this many hits (clamped to 1..1000).
            offset: Skip this many of the best hits first (paging; clamped to 0..2**63 - 1).

        Returns:
            Hits with a one-line snippet and its matched spans; ``[]`` when nothing matches.

        Raises:
            UnknownSessionError: ``session`` does not exist.
        """
        parsed = parse_query(query)
        if parsed.empty:
            return []
        ids: list[str] | None = None
        if session is not None:
            self._db_session(session)
            ids, todo = [], [session]
            seen = set()
            while todo:  # bounded: each session is visited once
                sid = todo.pop()
                if sid in seen:
                    continue
                seen.add(sid)
                ids.append(sid)
                todo.extend(s.id for s in self._db_sessions(None, sid))
        keep = SessionFilter(runtime, project, None if since is None else to_micros(since))
        return self._db_search(
            parsed, ids, keep, max(1, min(limit, 1000)), max(0, min(offset, _SQL_INT_MAX))
        )

    def spawn(
        self,
        session_id: str,
        from_node: str,
        *,
        title: str = "",
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Session:
        """Create a sub-agent session whose root links back to ``from_node``.

        The link is stored both ways: :attr:`Session.spawned_from` on the child and :meth:`spawns` on
        the parent.

        Raises:
            UnknownSessionError: ``session_id`` does not exist.
            UnknownNodeError: ``from_node`` is not a node of ``session_id``.
        """
        with self.atomic():
            if from_node not in self._index(session_id).pred:
                raise UnknownNodeError(from_node, session_id)
            return self.create_session(
                title,
                id=id,
                metadata=metadata,
                created_at=created_at,
                spawned_from=from_node,
                parent_session=session_id,
            )

    def link_spawn(self, session_id: str, from_node: str | None, parent_session: str) -> Session:
        """Link a session stored without a spawn link to its parent session, and return it.

        For importers: a sub-agent's transcript imported before its parent's is stored unlinked;
        once the parent is stored, this gives it the link importing the parent first would have
        given. A metadata-only write: ``updated_at`` and the head do not change. A session that
        has a link already keeps it (nothing is written), except that a session tied to
        ``parent_session`` without the node that started it (its import did not find the node
        yet) is given ``from_node``. A root of the session whose
        ``metadata["dangling_parent"]`` names a node of ``parent_session`` (an importer's note: its
        recorded parent was not stored yet) has that note replaced by
        ``metadata["parent_in_session"] = {"node": ..., "session": parent_session}``, the note an
        import of the parent first would have written.

        Args:
            session_id: The spawned session.
            from_node: The node of ``parent_session`` that started it; None when it is not known
                (the session is then only tied to ``parent_session``).
            parent_session: The session it was spawned from.

        Raises:
            UnknownSessionError: either session does not exist.
            UnknownNodeError: ``from_node`` is not a node of ``parent_session``.
            CycleError: ``parent_session`` is the session itself or was spawned from it.
        """
        with self.atomic():
            session = self._db_session(session_id)
            up: str | None = parent_session
            seen: set[str] = set()
            while up is not None and up not in seen:  # bounded: each session is visited once
                if up == session_id:
                    raise CycleError(from_node or session_id)
                seen.add(up)
                up = self._db_session(up).parent_session
            if session.spawned_from is not None or session.parent_session not in (
                None,
                parent_session if from_node is not None else None,
            ):
                return session
            if from_node is not None and from_node not in self._index(parent_session).pred:
                raise UnknownNodeError(from_node, parent_session)
            self._db_set_spawn(session_id, from_node, parent_session)
            self._settle_dangling(session_id, parent_session)
            return self._db_session(session_id)

    def note_cycle_parents(self, session_id: str, parents: Mapping[str, str]) -> list[NodeId]:
        """Turn roots' ``dangling_parent`` notes into ``cycle_parent`` notes: metadata only.

        For importers: an entry stored as a root because the parent it names was not written yet
        (``metadata["dangling_parent"]``) whose parent, written later, descends from it. The link
        would close a cycle, so the entry stays a root, and its note says so as an import of the
        whole file would have (``metadata["cycle_parent"]``). A node whose note does not name the
        parent given is left alone; ``updated_at``, the head, content and links do not change.

        Args:
            session_id: The session.
            parents: Root id -> the parent its entry names.

        Returns:
            The ids whose note was rewritten, in the order given.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session; nothing is written.
        """
        with self.atomic():
            idx = self._index(session_id)
            for n in parents:
                if n not in idx.pred:
                    raise UnknownNodeError(n, session_id)
            rows = self._db_rows(list(parents))
            changed: list[NodeRow] = []
            for n, parent in parents.items():
                row = rows[n]
                meta = {} if row.metadata == _EMPTY_METADATA else decode(row.metadata)
                if meta.get("dangling_parent") != parent:
                    continue
                del meta["dangling_parent"]
                meta["cycle_parent"] = parent
                changed.append(row._replace(metadata=encode(meta)))
            if changed:
                self._db_set_flags(session_id, changed)
                idx.rev = self._db_update_session(session_id, idx.head, None)
                idx.changed(r.id for r in changed)
            return [NodeId(r.id) for r in changed]

    def _settle_dangling(self, session_id: str, parent_session: str) -> None:
        """Note the roots' parents found in ``parent_session`` (see :meth:`link_spawn`).

        Metadata only: the counter is bumped, ``updated_at`` is not.
        """
        idx = self._index(session_id)
        roots = [n for n, p in idx.pred.items() if p is None]
        parents = self._index(parent_session).pred
        changed: list[NodeRow] = []
        for row in self._db_rows(roots).values():
            if row.metadata == _EMPTY_METADATA:
                continue
            meta = decode(row.metadata)
            named = meta.get("dangling_parent")
            if not isinstance(named, str) or named not in parents:
                continue
            del meta["dangling_parent"]
            meta["parent_in_session"] = {"node": named, "session": parent_session}
            changed.append(row._replace(metadata=encode(meta)))
        if changed:
            self._db_set_flags(session_id, changed)
            idx.rev = self._db_update_session(session_id, idx.head, None)
            idx.changed(r.id for r in changed)

    def spawns(self, session_id: str) -> list[Session]:
        """Return the sessions spawned from nodes of ``session_id``, most recently updated first."""
        return self._db_sessions(None, session_id)

    def has_session(self, session_id: str) -> bool:
        """Whether a session with this id is stored."""
        return self._db_has_session(session_id)

    def locate(self, ids: Iterable[str]) -> dict[NodeId, SessionId]:
        """Say which session holds each of ``ids``, in any session of the store.

        Returns:
            node id -> session id, for the ids that are stored (unknown ids are left out).
        """
        return {
            NodeId(n): SessionId(s) for n, s in self._db_locate(list(dict.fromkeys(ids))).items()
        }

    def delete_session(self, session_id: str) -> list[SessionId]:
        """Delete a session and every session spawned from it (their spawns too), in one transaction.

        Nodes, covers links, markers and rewound stamps go with them; nothing else changes. Their
        node ids are free again afterwards (a re-import stores the session anew).

        Returns:
            The ids removed: ``session_id`` first, then its spawned sessions, breadth first.

        Raises:
            UnknownSessionError: no such session (nothing is deleted).
        """
        with self.atomic():
            self.session(session_id)
            removed = [SessionId(session_id)]
            for sid in removed:
                removed += [c.id for c in self.spawns(sid) if c.id not in removed]
            self._db_delete_sessions(removed)
            for sid in removed:
                self._cache.pop(sid, None)
        return removed

    # ---------------------------------------------------------------- imported files

    def import_state(self, key: str) -> dict[str, Any] | None:
        """What an importer recorded about a source file the last time it imported it, or None.

        Importers keep, per file, how far they read and what they need to continue from there (see
        :mod:`graph.importers.resume`); the store only keeps the JSON-shaped mapping.

        Args:
            key: The file's key (its resolved path).
        """
        return self._db_import_state(key)

    def set_import_state(self, key: str, state: Mapping[str, Any]) -> None:
        """Record an importer's state for a source file, in the caller's transaction when one is open.

        Written in the same transaction as the nodes it describes, so a crash leaves either both or
        neither. A metadata-only write: no session's ``updated_at`` changes.

        Args:
            key: The file's key (its resolved path).
            state: JSON-shaped (str keys; str, int, float, bool, None, lists and dicts of them).
        """
        with self.atomic():
            self._db_set_import_state(key, dict(state))

    # ---------------------------------------------------------------- appends

    def append(
        self,
        session_id: str,
        content: Content,
        *,
        role: Role | str,
        kind: Kind | str = Kind.MESSAGE,
        predecessor: str | None = HEAD,
        id: str | None = None,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        move_head: bool = True,
    ) -> Node:
        """Append one node and (by default) move the head to it.

        Args:
            session_id: The session.
            content: Text or a sequence of content blocks.
            role: user, assistant, system or tool.
            kind: message (default), summary or event.
            predecessor: The node it follows; the head by default, None for a new root. Any other
                node makes a fork (:meth:`fork`).
            id: The node id; a new time-ordered id when None.
            created_at: When the runtime wrote it; now when None.
            metadata: JSON-shaped; ``{"scheduled": True}`` marks a runtime-scheduled turn, which the
                memory default does not find eligible.
            move_head: Move the head to the new node.

        Returns:
            The stored node. Re-appending an identical node (same id, predecessor, kind, role and
            content) returns the stored one and changes nothing, the head included.

        Raises:
            UnknownSessionError, UnknownPredecessorError, ForeignPredecessorError, DuplicateNodeError,
            CycleError, CodecError: nothing is written.
        """
        with self.atomic():
            idx = self._index(session_id)
            node = _appended_node(
                {
                    "id": NodeId(id or new_id()),
                    "session_id": SessionId(session_id),
                    "predecessor": idx.head if predecessor is HEAD else predecessor,
                    "kind": Kind(kind),
                    "role": Role(role),
                    "content": content if isinstance(content, str) else tuple(content),
                    "created_at": created_at or utcnow(),
                    "metadata": dict(metadata or {}),
                    "covers": (),
                }
            )
            added = self._add(idx, [node], head=node.id if move_head else HEAD, fresh=id is None)
            return node if added else self.node(node.id)

    def fork(
        self,
        session_id: str,
        predecessor: str,
        content: Content,
        *,
        role: Role | str,
        **kwargs: Any,
    ) -> Node:
        """Append after ``predecessor`` (not the head), making it a fork, and move the head there.

        Takes the keyword arguments of :meth:`append` and raises what it raises.
        """
        return self.append(session_id, content, role=role, predecessor=predecessor, **kwargs)

    def add_nodes(
        self, session_id: str, nodes: Iterable[Node], *, head: str | None = HEAD
    ) -> list[Node]:
        """Store many nodes in one transaction (the import path) and return those newly added.

        Nodes may come in any order; a predecessor must be stored already or be in the batch. Nodes
        already stored identically are skipped, so re-importing a file adds nothing. With no index
        of the session cached (a store opened for one import), the batch is checked against the
        stored nodes it names, read by one lookup, instead of the whole session being loaded first:
        the cost follows the batch, not the session (summaries, whose span may reach any stored
        node, still load the whole session).

        Args:
            session_id: The session every node names.
            nodes: The nodes, ids kept as given.
            head: Where the head goes afterwards; unchanged when omitted.

        Raises:
            UnknownSessionError, UnknownPredecessorError, ForeignPredecessorError, DuplicateNodeError,
            CycleError, CoverageError, CodecError: nothing is written.
            UnknownNodeError: ``head`` is not a node of the session.
        """
        batch = list(nodes)
        if len(batch) < _GC_PAUSE_AT:  # (most calls: a turn, a checkpoint; no pause to enter)
            return self._add_batch(session_id, batch, head)
        with paused_gc():
            return self._add_batch(session_id, batch, head)

    def _add_batch(
        self, session_id: str, batch: list[Node], head: str | None | _Head
    ) -> list[Node]:
        with self.atomic():
            self._note_changes()
            if session_id in self._cache or any(n.covers for n in batch):
                return self._add(self._index(session_id), batch, head=head, fresh=False)
            idx, stored = self._batch_index(session_id, batch, head)
            return self._add(idx, batch, head=head, fresh=False, stored=stored)

    def _batch_index(
        self, session_id: str, batch: Sequence[Node], head: Any
    ) -> tuple[SessionIndex, dict[str, NodeRow]]:
        """A partial index that validates ``batch`` without building the session's whole index.

        With no index of the session cached (a store opened for one import), building one reads every
        stored row of the session; validating a batch needs only the stored rows it names. This index
        holds the session's head and those rows, read by one bounded lookup of their ids: the
        predecessors the batch names outside itself and ``head``, each with its real predecessor and
        bits, when it is a node of this session, and the batch's nodes stored already (which
        re-importing a file passes again). :meth:`_check_predecessors` then finds every unknown
        or cross-session predecessor as it does against the whole index, and a cycle cannot pass
        through stored rows: a new row points to a stored row or a row of the batch, and a stored
        row never points to a new one (its predecessor was fixed when it was written, before the new
        ids existed), so a cycle lies within the batch, where the batch's own walk finds it. Batches
        with summaries (whose covered span may reach any stored row) use the whole index instead.
        The partial index is not cached.

        Returns:
            ``(index, stored)``: the partial index and the stored rows (of any session) of the
            batch's ids, for the duplicate check.

        Raises:
            UnknownSessionError: the session does not exist.
        """
        idx = SessionIndex(session_id)
        idx.head = self._db_head(session_id)
        ids = [n.id for n in batch]
        stored = self._db_rows(ids)
        mine = set(ids)
        named: set[str] = {n.predecessor for n in batch if n.predecessor is not None}
        if isinstance(head, str):
            named.add(head)
        outside = self._db_rows([i for i in named if i not in mine])
        for row in (*stored.values(), *outside.values()):
            if row.session_id == session_id:
                idx.add(row.id, row.predecessor, row.bits)
        return idx, stored

    def _add(
        self,
        idx: SessionIndex,
        nodes: list[Node],
        *,
        head: Any,
        fresh: bool,
        stored: dict[str, NodeRow] | None = None,
    ) -> list[Node]:
        sid = idx.session_id
        rows: dict[str, NodeRow] = {}
        models: dict[str, Node] = {}
        if stored is None:
            stored = {} if fresh else self._db_rows([n.id for n in nodes])
        for node in nodes:
            if node.session_id != sid:
                raise InvalidWriteError(
                    f"node {node.id!r} names session {node.session_id!r}, not {sid!r}"
                )
            row = _row_of(node)
            earlier = rows.get(row.id) or stored.get(row.id)
            if earlier is not None:
                field = _same(earlier, row)
                if field is not None:
                    raise DuplicateNodeError(row.id, earlier.session_id, field)
                continue
            rows[row.id] = row
            models[row.id] = node
        order = self._check_predecessors(idx, rows)
        for nid in order:
            if rows[nid].covers:
                rows[nid] = self._check_covers(idx, rows, rows[nid])
        if head is not HEAD and head is not None and head not in idx.pred and head not in rows:
            raise UnknownNodeError(head, sid)
        if not order and (head is HEAD or head == idx.head):
            return []
        ordered = [rows[n] for n in order]
        if ordered:
            self._db_insert_nodes(ordered)
        newest = max((r.created_at for r in ordered), default=None)
        new_head = idx.head if head is HEAD else head
        idx.rev = self._db_update_session(sid, new_head, newest)
        if stored is None or self._cache.get(sid) is idx:
            # (a batch's partial index, given with its stored rows, is dropped once it is checked)
            for r in ordered:
                idx.add(r.id, r.predecessor, r.bits)
                if r.covers:
                    idx.covers[r.id] = r.covers
        idx.head = new_head
        return [models[n] for n in order]

    def _check_predecessors(self, idx: SessionIndex, rows: dict[str, NodeRow]) -> list[str]:
        """Validate predecessors of new rows and return their ids, predecessors first."""
        missing = [
            r.predecessor
            for r in rows.values()
            if r.predecessor is not None
            and r.predecessor not in idx.pred
            and r.predecessor not in rows
        ]
        if missing:
            elsewhere = self._db_rows(missing)
            for r in rows.values():
                p = r.predecessor
                if p is None or p in idx.pred or p in rows:
                    continue
                if p in elsewhere:
                    raise ForeignPredecessorError(r.id, p, idx.session_id, elsewhere[p].session_id)
                raise UnknownPredecessorError(r.id, p)
        order: list[str] = []
        state: dict[str, int] = {}  # 1: on the current path, 2: placed
        for start in rows:
            if start in state:
                continue
            path = []
            n: str | None = start
            while n is not None and n in rows and n not in state:
                state[n] = 1
                path.append(n)
                n = rows[n].predecessor
            if n is not None and state.get(n) == 1:
                raise CycleError(n)
            for m in reversed(path):
                state[m] = 2
                order.append(m)
        return order

    def _check_covers(self, idx: SessionIndex, rows: dict[str, NodeRow], row: NodeRow) -> NodeRow:
        """Validate a summary's covers; return the row with the sibling bit set for that layout."""

        def pred(n: str) -> str | None:
            return rows[n].predecessor if n in rows else idx.pred[n]

        if not is_summary_bits(row.bits):
            raise CoverageError(row.covers[0], f"node {row.id!r} covers nodes but is not a summary")
        for i, c in enumerate(row.covers):
            if c not in idx.pred and c not in rows:
                raise CoverageError(c, "not a node of this session")
            if i and pred(c) != row.covers[i - 1]:
                raise CoverageError(
                    c, f"does not follow {row.covers[i - 1]!r}: not one unbroken span"
                )
        n = row.predecessor
        while n is not None:
            if n == row.covers[-1]:
                return row
            n = pred(n)
        if pred(row.covers[0]) == row.predecessor:
            return row._replace(bits=as_sibling(row.bits))
        raise CoverageError(
            row.covers[0],
            f"summary {row.id!r} neither follows the span (inline) nor shares its predecessor (sibling)",
        )

    # ---------------------------------------------------------------- head moves

    def set_head(self, session_id: str, node_id: str | None, *, expected: Any = HEAD) -> None:
        """Move the head to ``node_id``; with ``expected``, only if the head is still that node.

        Raises:
            UnknownNodeError: ``node_id`` is not in the session.
            HeadConflictError: ``expected`` was given and the stored head differs (compare-and-swap).
        """
        with self.atomic():
            idx = self._index(session_id)
            if node_id is not None and node_id not in idx.pred:
                raise UnknownNodeError(node_id, session_id)
            if expected is not HEAD and expected != idx.head:
                raise HeadConflictError(session_id, expected, idx.head)
            if node_id != idx.head:
                idx.rev = self._db_update_session(session_id, node_id, None)
                idx.head = node_id

    def rewind(self, session_id: str, to: str) -> list[NodeId]:
        """Move the head back to ``to`` and stamp every node after it on the old branch rewound.

        Nothing is deleted; ``updated_at`` does not change.

        Returns:
            The ids stamped, oldest first.

        Raises:
            UnknownNodeError: ``to`` is not in the session.
            NotOnBranchError: ``to`` is not on the head's branch.
        """
        with self.atomic():
            idx = self._index(session_id)
            if to not in idx.pred:
                raise UnknownNodeError(to, session_id)
            stamped: list[str] = []
            n = idx.head
            while n != to:
                if n is None:
                    raise NotOnBranchError(to, idx.head)
                if not idx.is_rewound(n):
                    stamped.append(n)
                n = idx.pred[n]
            stamped.reverse()
            if stamped:
                self._db_insert_rewound(session_id, stamped)
            idx.rev = self._db_update_session(session_id, to, None)
            idx.head = to
            idx.stamp_rewound(stamped)
            return [NodeId(s) for s in stamped]

    def stamp_rewound(self, session_id: str, ids: Iterable[str]) -> list[NodeId]:
        """Stamp exactly these nodes rewound, without moving the head (abandoned branches on import).

        It writes what :meth:`rewind` writes for the nodes it leaves behind, for nodes that are not on
        the head's branch (a transcript's abandoned branches, a bundle's stamps). Nodes already
        stamped are skipped; ``updated_at`` does not change.

        Returns:
            The ids newly stamped, in the order given.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session; nothing is stamped.
        """
        return self._restamp(session_id, ids, stamp=True)

    def unstamp_rewound(self, session_id: str, ids: Iterable[str]) -> list[NodeId]:
        """Remove the rewound stamps of exactly these nodes: a metadata-only write.

        An importer learns from later lines of a transcript that a branch it stamped rewound (an
        abandoned branch of a rewind, :meth:`stamp_rewound`) is the one the conversation went on
        with: one import of the whole file would not have stamped it. Nodes not stamped are
        skipped; the head, content, links and ``updated_at`` do not change.

        Returns:
            The ids whose stamp was removed, in the order given.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session; nothing is written.
        """
        return self._restamp(session_id, ids, stamp=False)

    def _restamp(self, session_id: str, ids: Iterable[str], *, stamp: bool) -> list[NodeId]:
        """Stamp (``stamp`` True) or unstamp exactly these nodes; the ids whose stamp changed."""
        want = list(dict.fromkeys(ids))
        with self.atomic():
            idx = self._index(session_id)
            for n in want:
                if n not in idx.pred:
                    raise UnknownNodeError(n, session_id)
            todo = [n for n in want if idx.is_rewound(n) != stamp]
            if todo:
                if stamp:
                    self._db_insert_rewound(session_id, todo)
                else:
                    self._db_delete_rewound(session_id, todo)
                idx.rev = self._db_update_session(session_id, idx.head, None)
                if stamp:
                    idx.stamp_rewound(todo)
                else:
                    idx.unstamp_rewound(todo)
            return [NodeId(n) for n in todo]

    def set_artifact(self, session_id: str, flags: Mapping[str, bool]) -> list[NodeId]:
        """Set (True) or clear (False) the artifact flag of stored nodes: a metadata-only write.

        An importer learns from later lines of a transcript that an entry it stored is on an
        artifact fork, or no longer is (a parallel call's sibling written after it, the head moving
        to its side; :data:`graph.index.ARTIFACT`). The flag is ``metadata["artifact"]`` (true, or
        absent when cleared) and the index's bit; content, links and ``updated_at`` do not change.
        Nodes whose flag already has the value asked for are skipped.

        Args:
            session_id: The session.
            flags: Node id -> whether it is on an artifact fork.

        Returns:
            The ids whose flag changed, in the order given.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session; nothing is written.
        """
        with self.atomic():
            idx = self._index(session_id)
            for n in flags:
                if n not in idx.pred:
                    raise UnknownNodeError(n, session_id)
            todo = [n for n, on in flags.items() if idx.is_artifact(n) != bool(on)]
            if not todo:
                return []
            rows = self._db_rows(todo)
            changed = []
            for n in todo:
                row = rows[n]
                meta = {} if row.metadata == _EMPTY_METADATA else decode(row.metadata)
                if flags[n]:
                    meta["artifact"] = True
                else:
                    meta.pop("artifact", None)
                bits = row.bits | ARTIFACT if flags[n] else row.bits & ~ARTIFACT
                payload = encode(meta) if meta else _EMPTY_METADATA
                changed.append(row._replace(bits=bits, metadata=payload))
            self._db_set_flags(session_id, changed)
            idx.rev = self._db_update_session(session_id, idx.head, None)
            idx.set_artifact((n, bool(flags[n])) for n in todo)
            return [NodeId(n) for n in todo]

    def compact(
        self,
        session_id: str,
        covers: Sequence[str],
        content: Content,
        *,
        layout: str = "inline",
        role: Role | str = Role.SYSTEM,
        id: str | None = None,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Node:
        """Append a compaction summary covering ``covers`` and move the head to it.

        Args:
            session_id: The session.
            covers: The replaced nodes, oldest first: one unbroken span of one branch.
            content: The summary text (or content blocks).
            layout: ``"inline"``: the summary follows the head, whose branch holds the span (Claude
                Code, pi, Codex); ``"sibling"``: the summary takes the span's place beside it, its
                predecessor being the first covered node's (OpenProgram).
            role: The summary node's role (``system`` by default).
            id: The summary's node id; a new time-ordered id when None.
            created_at: When the runtime wrote it; now when None.
            metadata: JSON-shaped node metadata.

        Returns:
            The stored summary node (kind ``summary``), now the head.

        Raises:
            UnknownSessionError: no such session.
            CoverageError: the span is empty, broken, or not where the layout needs it.
            ValueError: an unknown layout.
            CodecError: content or metadata holds a value outside the codec's allow-list.
        """
        if layout not in ("inline", "sibling"):
            raise ValueError(f"unknown compaction layout {layout!r}: use 'inline' or 'sibling'")
        if not covers:
            raise CoverageError("", "a summary must cover at least one node")
        with self.atomic():
            idx = self._index(session_id)
            if covers[0] not in idx.pred:
                raise CoverageError(covers[0], "not a node of this session")
            predecessor = idx.head if layout == "inline" else idx.pred[covers[0]]
            node = Node(
                id=NodeId(id or new_id()),
                session_id=SessionId(session_id),
                predecessor=predecessor,
                kind=Kind.SUMMARY,
                role=Role(role),
                content=content,
                created_at=created_at or utcnow(),
                metadata=dict(metadata or {}),
                covers=tuple(NodeId(c) for c in covers),
            )
            self._add(idx, [node], head=node.id, fresh=id is None)
            got = "sibling" if idx.is_sibling(node.id) else "inline"
            if got != layout:
                raise CoverageError(
                    covers[-1], f"the span is not where the {layout} layout needs it"
                )
            return node

    # ---------------------------------------------------------------- reads

    def _read_nodes(self, idx: SessionIndex, ids: Sequence[str]) -> list[Node]:
        """The nodes ``ids`` as models, markers and stamps from ``idx`` (a fresh index of their session).

        Models kept decoded from this index are served as they are (see
        :class:`~graph.index.DecodedNodes`); the rest come from one batched row read and are kept,
        unless the read is larger than the cache holds or a row's payload too big to keep.
        """
        decoded = self._decoded
        if not decoded.holds(len(ids)):
            return self._decode_rows(idx, ids, None)
        found, missing = decoded.take(idx, ids)
        if not missing:
            return found  # type: ignore[return-value]
        if missing == len(ids):
            return self._decode_rows(idx, ids, decoded)
        want = [i for i, n in zip(ids, found, strict=True) if n is None]
        fresh = iter(self._decode_rows(idx, want, decoded))
        return [n if n is not None else next(fresh) for n in found]

    def _decode_rows(
        self, idx: SessionIndex, ids: Sequence[str], keep: DecodedNodes | None
    ) -> list[Node]:
        """Build the models of ``ids`` from their rows, and put those of small rows in ``keep``."""
        rows = self._rows_of(idx, ids)
        written = _written_of(idx, ids)
        build = self._build
        if not idx.rewound:
            models = [build(rows[i], written.get(i), False) for i in ids]
        else:
            stamped = idx.is_rewound
            models = [build(rows[i], written.get(i), i in idx.bits and stamped(i)) for i in ids]
        if keep is not None:
            sizes = [len(rows[i].content) + len(rows[i].metadata) for i in ids]
            small = DECODED_PAYLOAD_BYTES
            keep.put(idx, [(m, b) for m, b in zip(models, sizes, strict=True) if b <= small])
        return models

    def _rows_of(self, idx: SessionIndex, ids: Sequence[str]) -> Mapping[str, NodeRow]:
        """The stored rows of ``ids``, nodes of ``idx``'s session (a backend may keep them)."""
        return self._db_rows(ids)

    def _model(self, row: NodeRow, idx: SessionIndex) -> Node:
        written = _written_of(idx, (row.id,)).get(row.id)
        return self._build(row, written, row.id in idx.bits and idx.is_rewound(row.id))

    @staticmethod
    def _build(row: NodeRow, written: dict[str, tuple[str, ...]] | None, rewound: bool) -> Node:
        """The model of a stored row, without validating it again (it was validated when written)."""
        meta = {} if row.metadata == _EMPTY_METADATA else decode(row.metadata)
        if written:
            meta["written"] = written
        if rewound:
            meta["rewound"] = True
        bits = row.bits
        return _construct_node(
            {
                "id": row.id,
                "session_id": row.session_id,
                "predecessor": row.predecessor,
                "kind": kind_of_bits(bits),
                "role": role_of_bits(bits),
                "content": decode_content(row.content),
                "created_at": _EPOCH + timedelta(microseconds=row.created_at),
                "metadata": meta,
                "covers": row.covers,
            }
        )

    def _fresh_cached(self, session_id: str) -> SessionIndex | None:
        """The session's cached index if it is up to date, else None (nothing is built)."""
        self._note_changes()
        cached = self._cache.get(session_id)
        return cached if cached is not None and not cached.stale else None

    def _read_direct(self, session_id: str, ids: Sequence[str]) -> list[Node]:
        """Read a few nodes by their rows, markers and stamps, without building the session's index."""
        rows = self._db_rows(ids)
        for i in ids:
            if i not in rows or rows[i].session_id != session_id:
                if not self._db_has_session(session_id):
                    raise UnknownSessionError(session_id)
                raise UnknownNodeError(i, session_id)
        written, rewound = self._db_node_extras(session_id, ids)
        return [self._build(rows[i], written.get(i), i in rewound) for i in ids]

    def node(self, node_id: str) -> Node:
        """Return one node, with its markers and rewound stamp in its metadata.

        Raises:
            UnknownNodeError: no such node in any session.
        """
        kept = self._decoded.entry(node_id)
        if kept is not None and self._fresh_cached(kept[1].session_id) is kept[0]:
            return kept[1]
        row = self._db_rows([node_id]).get(node_id)
        if row is None:
            raise UnknownNodeError(node_id)
        if self._fresh_cached(row.session_id) is None:
            return self._read_direct(row.session_id, [node_id])[0]
        idx = self._index(row.session_id)
        model = self._model(row, idx)
        payload = len(row.content) + len(row.metadata)
        if payload <= DECODED_PAYLOAD_BYTES:
            self._decoded.put(idx, [(model, payload)])
        return model

    def nodes(self, session_id: str, ids: Sequence[str] | None = None) -> list[Node]:
        """Return the nodes of ``session_id`` with these ids, in the order given.

        Args:
            session_id: The session.
            ids: The node ids; None for every node of the session, in insertion order (each node
                after its predecessor).

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session.
        """
        if ids is not None and len(ids) <= _DIRECT_READ and self._fresh_cached(session_id) is None:
            return self._read_direct(session_id, ids)
        idx = self._index(session_id)
        if ids is None:
            return self._read_nodes(idx, list(idx.pred))
        for i in ids:
            if i not in idx.pred:
                raise UnknownNodeError(i, session_id)
        return self._read_nodes(idx, ids)

    def iter_nodes(
        self, session_id: str, ids: Sequence[str] | None = None, *, chunk: int = 500
    ) -> Iterator[Node]:
        """Yield the nodes of :meth:`nodes`, reading ``chunk`` of them at a time.

        Memory stays bounded by ``chunk`` models whatever the number of ids (a 1e6-node pending list
        printed as it is read), beyond the store's kept decoded nodes (bounded in bytes: see
        :class:`~graph.index.DecodedNodes`). Ids are checked when their chunk is read.

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: an id is not a node of the session.
        """
        idx = self._index(session_id)
        todo: Sequence[str] = list(idx.pred) if ids is None else ids
        for i in range(0, len(todo), chunk):
            part = todo[i : i + chunk]
            for n in part:
                if n not in idx.pred:
                    raise UnknownNodeError(n, session_id)
            yield from self._read_nodes(idx, part)

    def node_count(self, session_id: str) -> int:
        """How many nodes the session holds; counted by the backend when no index is cached.

        Raises:
            UnknownSessionError: no such session.
        """
        self._note_changes()
        cached = self._cache.get(session_id)
        if cached is not None and not cached.stale:
            return len(cached)
        return self._db_node_count(session_id)

    def _head(self, idx: SessionIndex, head: str | None) -> str | None:
        if head is None:
            return idx.head
        if head not in idx.pred:
            raise UnknownNodeError(head, idx.session_id)
        return head

    def branch(self, session_id: str, head: str | None = None) -> list[Node]:
        """Return the branch of ``head`` (the stored head by default): root first, rewound nodes left out.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        idx = self._index(session_id)
        return self._read_nodes(idx, walks.branch_ids(idx, self._head(idx, head)))

    def branch_ids(self, session_id: str, head: str | None = None) -> list[NodeId]:
        """Return the ids :meth:`branch` would return, without reading their payloads.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        idx = self._index(session_id)
        return walks.branch_ids(idx, self._head(idx, head))  # type: ignore[return-value]

    def message_ids(self, session_id: str, head: str | None = None) -> list[NodeId]:
        """Return the ids of the messages (kind message, any role) on ``head``'s branch, root first.

        Summaries and events are left out, and so are rewound nodes (they are on no branch).

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        idx = self._index(session_id)
        ids = walks.branch_ids(idx, self._head(idx, head))
        return [NodeId(n) for n in ids if idx.is_message(n)]

    def latest_message_id(self, session_id: str, head: str | None = None) -> NodeId | None:
        """Return the id of the newest message on ``head``'s branch, or None; walks back from the head.

        Without a cached index the backend walks its stored rows back from the head, so the cost is
        the distance to that message, not the session's size.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        self._note_changes()
        cached = self._cache.get(session_id)
        if cached is None or cached.stale:
            return self._db_latest_message(session_id, head)
        return self._latest_in(self._index(session_id), head)

    def message_tail(
        self,
        session_id: str,
        count: int,
        head: str | None = None,
        before: str | None = None,
    ) -> MessageTail:
        """Return the newest ``count`` messages of ``head``'s branch (ending before ``before``), oldest first.

        The messages are the nodes of kind message on the branch (rewound nodes are on no branch), as
        :meth:`message_ids` lists them. With no index of the session cached (a fresh process), a backend
        that can walk its stored rows back from the head does, and stops one message past the window:
        the cost is the distance from the head to the window's oldest message, not the session's size,
        and the older messages are then not counted (:attr:`MessageTail.older` is None) unless the walk
        reached the root. With an index cached, or on a backend without that walk, the index answers
        and every count is exact.

        Args:
            session_id: The session.
            count: How many messages at most (0 or less returns none).
            head: Walk from this node instead of the stored head.
            before: A node on the branch: the window ends just before it (it and the newer messages
                are counted in :attr:`MessageTail.newer`). None: the window ends at the head.

        Returns:
            The ids oldest first, the newer messages walked over and the older ones left out.

        Raises:
            UnknownSessionError: no session has this id.
            UnknownNodeError: ``head`` or ``before`` is not a node of the session.
            NotOnBranchError: ``before`` is a node of the session but not on the branch.
        """
        count = max(0, count)
        self._note_changes()
        cached = self._cache.get(session_id)
        walk = self._db_walk_back(session_id, head) if cached is None or cached.stale else None
        if walk is None:
            idx = self._index(session_id)
            start = self._head(idx, head)
            branch = walks.branch_ids(idx, start)
            if before is not None:
                if before not in idx.pred:
                    raise UnknownNodeError(before, session_id)
                if before not in branch:
                    raise NotOnBranchError(before, start)
            ids = [n for n in branch if idx.is_message(n)]
            end = (
                len(ids)
                if before is None
                else sum(1 for n in branch[: branch.index(before)] if idx.is_message(n))
            )
            first = max(0, end - count)
            return MessageTail(
                [NodeId(n) for n in ids[first:end]], newer=len(ids) - end, older=first
            )
        got: list[NodeId] = []
        newer = 0
        seeking = before is not None
        older: int | None = 0
        for nid, message in walk:
            if seeking:
                seeking = nid != before
                newer += message
                continue
            if not message:
                continue
            if len(got) == count:
                older = None  # one message past the window: some are older, uncounted
                break
            got.append(NodeId(nid))
        if seeking:
            assert before is not None
            if session_id not in self._db_locate([before]).values():
                raise UnknownNodeError(before, session_id)
            raise NotOnBranchError(before, self.session(session_id).head if head is None else head)
        got.reverse()
        return MessageTail(got, newer=newer, older=older)

    def context(self, session_id: str, head: str | None = None) -> list[Node]:
        """Return the model-visible context of ``head``, root first.

        It is the branch with each covered span replaced by its latest summary, which stands where the
        span was (before the turns the compaction kept, as pi, Claude Code and Codex build it), so a
        summary of ``m1..m18`` appended after ``m20`` reads ``[s, m19, m20, ...]``
        (:func:`graph.walks.context_ids`).

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        idx = self._index(session_id)
        return self._read_nodes(idx, walks.context_ids(idx, self._head(idx, head)))

    def tips(self, session_id: str) -> list[NodeId]:
        """Return the live tips (messages with no live message below them, not rewound), newest first.

        With no index of the session cached (a fresh process), a backend that can find them in one
        query does, and no index is built; otherwise the index answers.

        Raises:
            UnknownSessionError: no such session.
        """
        self._note_changes()
        cached = self._cache.get(session_id)
        found = self._db_live_tips(session_id) if cached is None or cached.stale else None
        if found is not None:
            return found
        return [NodeId(t) for t in walks.live_tips(self._index(session_id))]

    def message_count(self, session_id: str, head: str | None = None) -> int:
        """How many messages :meth:`message_ids` returns (the messages on ``head``'s branch).

        With no index of the session cached (a fresh process), a backend that can walk its stored
        rows back from the head counts them as it walks (no payload read, nothing kept); otherwise the
        index answers.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        self._note_changes()
        cached = self._cache.get(session_id)
        if cached is None or cached.stale:
            walk = self._db_walk_back(session_id, head)
            if walk is not None:
                return sum(1 for _, message in walk if message)
            counted = self._db_message_count(session_id, head)
            if counted is not None:
                return counted
        return len(self.message_ids(session_id, head))

    def stats(self, session_id: str) -> SessionStats:
        """Count the session's nodes, roots, forks, rewound nodes, summaries, live tips and spawns.

        A fork is a node with two or more children not on artifact forks (:data:`graph.index.ARTIFACT`).

        Raises:
            UnknownSessionError: no such session.
        """
        idx = self._index(session_id)
        return SessionStats(
            nodes=len(idx),
            roots=walks.root_count(idx),
            forks=walks.fork_count(idx),
            rewound=idx.rewound,
            summaries=walks.summary_count(idx),
            live_tips=len(walks.live_tips(idx)),
            spawned=len(self.spawns(session_id)),
        )

    # ---------------------------------------------------------------- markers and pending

    def pending_ids(
        self,
        session_id: str,
        provider: str,
        value: str,
        head: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> list[NodeId]:
        """Return the ids :meth:`pending` would return, without reading their payloads.

        With no index of the session cached (a fresh process), the backend walks its stored rows
        back from the head to the newest marker instead of building the index first, so the cost is
        the walk, not the session's size. The arguments are :meth:`pending`'s.

        Raises:
            UnknownSessionError, UnknownNodeError: as :meth:`pending`.
        """
        self._note_changes()
        idx = self._cache.get(session_id)
        if idx is None or idx.stale:  # one freshness check when the index is cached and current
            cold = self._cold_pending(session_id, provider, value, head, eligible, noted=True)
            if cold is not None:
                return cold  # type: ignore[return-value]
            idx = self._index(session_id)
        ids = walks.pending_ids(idx, self._head(idx, head), provider, value, eligible)
        return ids  # type: ignore[return-value]

    def _cold_pending(
        self,
        session_id: str,
        provider: str,
        value: str,
        head: str | None,
        eligible: Eligibility,
        *,
        noted: bool = False,
    ) -> list[str] | None:
        """The pending ids walked on the backend's rows when no index is cached, else None.

        ``noted``: the caller has just checked for other writers' changes (it is not asked again).
        """
        if not isinstance(eligible, Eligible):
            return None
        if not noted:
            self._note_changes()
        if session_id in self._cache:
            return None  # cached: a refresh reads only what changed, and the walk is in memory
        if session_id in self._walked_cold:
            # Asked again in this process: the index pays for itself from the second read on (a
            # refresh then costs one revision check, where every cold walk is a query of the rows).
            return None
        self._walked_cold.add(session_id)
        part = self._db_pending_walk(session_id, head, provider, value, eligible)
        if part is None:
            return None
        try:
            return walks.walk_pending(part, part.head, provider, value, eligible).ids
        except KeyError:
            return None  # the walk left the rows read (a summary's span elsewhere): build the index

    def pending(
        self,
        session_id: str,
        provider: str,
        value: str,
        head: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> list[Node]:
        """Return the eligible nodes of ``head``'s branch that ``provider`` has not written, oldest first.

        The walk goes back from the head (the stored head by default), steps over ineligible nodes and
        stops at the first eligible node carrying ``written[provider] == value``. A marker
        with another value (another workspace, a reset) is not a marker for this consumer. Compaction
        summaries are never pending while their covered nodes exist; a sibling-layout summary on the
        path yields the covered nodes not yet written instead.

        With no index of the session cached (the first read of it in a fresh process), the backend
        walks its stored rows back from the head instead of building the index, and reads the
        pending rows with their markers and stamps: the cost is the walk since the newest marker, not the session's size.

        Args:
            session_id: The session.
            provider: The consumer's name (``"memory"``).
            value: The consumer's store id (for memory, the workspace id).
            head: Walk from this node instead of the stored head.
            eligible: The provider's predicate; the memory default by default.

        Raises:
            UnknownSessionError, UnknownNodeError.
        """
        self._note_changes()
        idx = self._cache.get(session_id)
        if idx is None or idx.stale:  # one freshness check when the index is cached and current
            cold = self._cold_pending(session_id, provider, value, head, eligible, noted=True)
            if cold is not None:
                return self._read_direct(session_id, cold) if cold else []
            idx = self._index(session_id)
        ids = walks.walk_pending(idx, self._head(idx, head), provider, value, eligible).ids
        return self._read_nodes(idx, ids)

    def pending_by_tip(
        self,
        session_id: str,
        provider: str,
        value: str,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> Iterator[tuple[NodeId, list[Node]]]:
        """Yield ``(tip, pending of that tip)`` for the head first, then every other live tip.

        Each tip's pending is computed when the iterator reaches it, so a consumer that marks what it
        wrote before advancing is handed a shared prefix once: the first branch written marks it.
        Tips with nothing pending are skipped. ``provider``, ``value`` and ``eligible`` are
        :meth:`pending`'s.

        Raises:
            UnknownSessionError: no such session (when the iterator is first advanced).
        """
        idx = self._index(session_id)
        tips = [t for t in walks.live_tips(idx) if t != idx.head]
        if idx.head is not None:
            tips.insert(0, idx.head)
        for tip in tips:
            got = self.pending(session_id, provider, value, head=tip, eligible=eligible)
            if got:
                yield NodeId(tip), got

    def pending_ids_by_tip(
        self,
        session_id: str,
        provider: str,
        value: str,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> Iterator[tuple[NodeId, list[NodeId]]]:
        """Yield what :meth:`pending_by_tip` yields, as ids (no payload read, memory per tip only).

        Read a tip's nodes with :meth:`iter_nodes` to keep memory bounded on long sessions.
        """
        idx = self._index(session_id)
        tips = [t for t in walks.live_tips(idx) if t != idx.head]
        if idx.head is not None:
            tips.insert(0, idx.head)
        for tip in tips:
            idx = self._index(session_id)
            got = walks.walk_pending(idx, tip, provider, value, eligible).ids
            if got:
                yield NodeId(tip), got  # type: ignore[misc]

    def mark(
        self,
        session_id: str,
        nodes: Iterable[str | Node],
        provider: str,
        value: str,
        eligible: Eligibility = MEMORY_ELIGIBLE,
    ) -> int:
        """Write ``written[provider] = value`` on exactly these nodes, in one transaction.

        The prefix rule is kept: if any marked eligible node would have an unmarked
        eligible node above it on its branch, nothing is written. ``updated_at`` does not change.

        Returns:
            How many markers were written or changed (nodes already carrying the value are skipped).

        Raises:
            UnknownSessionError: no such session.
            UnknownNodeError: a node is not in the session.
            MarkerGapError: the batch would leave a gap; nothing is written.
        """
        ids = list(dict.fromkeys(n.id if isinstance(n, Node) else n for n in nodes))
        with self.atomic():
            idx = self._index(session_id)
            for n in ids:
                if n not in idx.pred:
                    raise UnknownNodeError(n, session_id)
            gap = walks.find_marker_gap(idx, ids, provider, value, eligible)
            if gap is not None:
                raise MarkerGapError(gap[0], gap[1], provider)
            todo = [n for n in ids if not idx.is_written(n, provider, value)]
            if todo:
                idx.rev = self._db_insert_marks(session_id, provider, value, todo)
                idx.add_marks(provider, value, todo)
            return len(todo)

    def verify_markers(
        self,
        session_id: str,
        provider: str | None = None,
        eligible: Eligibility = MEMORY_ELIGIBLE,
        value: str | None = None,
    ) -> list[walks.MarkerGap]:
        """Scan the session for marked eligible nodes below an unmarked eligible one (gaps).

        Markers are kept per (provider, value): each value is its own consumer, checked on its own.
        Pass ``value`` to check only one consumer's markers.

        Returns:
            Every gap found, for every provider and value (or only ``provider`` / ``value``); empty
            when sound.

        Raises:
            UnknownSessionError: no such session.
        """
        return walks.marker_gaps(self._index(session_id), eligible, provider, value)

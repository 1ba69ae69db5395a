"""A LangGraph checkpointer on the session store: LangGraph threads kept as session graphs.

:class:`SessionGraphSaver` is a ``langgraph.checkpoint.base.BaseCheckpointSaver`` (install the
``sessiongraph[langgraph]`` extra) over every backend of :class:`~graph.store.base.BaseStore`: the SQLite
:class:`~graph.store.sqlite.SessionStore` and the :class:`~graph.store.postgres.PostgresSessionStore`
(two payload tables, ``lg_checkpoints`` and ``lg_writes``, in the same database, written on the
store's connection in the same transaction as the nodes; the SQL is the subset both speak) and the
in-memory :class:`~graph.store.in_memory.MemorySessionStore` (dicts beside it). The graph is written
only through the store's public operations (``create_session``, ``spawn``, ``add_nodes``,
``set_head``, ``delete_session``), so every backend's validation and locking apply.

The mapping:

- A **thread** is a session whose id is the ``thread_id``. A **checkpoint namespace** (a subgraph,
  ``"node:task"``, nested with ``|``) is a session of its own, id ``"<thread_id>#<checkpoint_ns>"``,
  spawned from the node of its parent namespace's checkpoint (``metadata["parents"]``) when that is
  stored, a plain session otherwise. A thread id holding ``#`` is escaped behind a leading ``#``
  (:func:`session_id_of`: thread ``"a#x"`` is session ``"#a%23x"``, never thread ``"a"``'s
  namespace ``"x"``); such a thread stored under the earlier mapping keeps its session. A
  ``checkpoint_ns`` of None is the root namespace ``""``, as LangGraph's default.
- A **checkpoint** is an ``event`` node (role ``system``, id ``"<session>/<checkpoint_id>"``) whose
  branch leads back to its parent checkpoint's node: its predecessor is the parent checkpoint, or the
  last of the message nodes this checkpoint added after the parent. A checkpoint without a parent is
  a root. Its nodes' ``created_at`` is the checkpoint's ``ts``; a ``ts`` that is no ISO time takes
  the time of the checkpoint id when that is a time-based UUID (LangGraph's are version 6), else
  the time of the put.
- The **latest checkpoint** (the greatest ``checkpoint_id``, LangGraph's order) is the session's
  durable head. A put compares and swaps inside the one write transaction that stores the
  checkpoint: it reads the head as stored (another process's commit included, the store's write
  lock being held), and moves it to the new checkpoint only when that one is later. So two processes
  putting checkpoints on one thread never lose one, and the head ends on the latest. (A payload put
  again onto a node that is still stored moves the head with ``set_head(expected=...)``.) On
  PostgreSQL the write transaction holds the session's row lock from its first read of the index,
  which serializes the writers of one thread the same way.
- A put whose parent is not the latest checkpoint (time travel from an earlier checkpoint, an
  ``update_state`` on one) makes a **fork**: the parent's node gets a second child.
- ``copy_thread`` writes a **copy** of every session of the thread under the target thread, ids
  rewritten (the ``copy_of`` and ``replaces`` links below too), with
  ``metadata["langgraph"]["copied_from"]`` naming the source thread. Markers are not copied: the
  copy reads as unwritten, like any session copied elsewhere.
- The ``messages`` channel (LangChain messages merged by ``add_messages``, or kept as OpenAI-style
  dicts) becomes **message nodes**. Each message id not in the parent checkpoint's list is a new
  node (id ``"<session>/m/<message id>"``, or ``.../m/<message id>@<checkpoint_id>`` when a message
  of that id already sits on another branch, or after the same checkpoint with other content: a
  regenerated answer; ``...@<checkpoint_id>.<n>`` for the n-th such listing of one id in one list),
  following the previous node of the checkpoint's branch. A message without a string id (a channel
  merged by ``operator.add`` rather than ``add_messages``) is known by its place in the list,
  ``"#<position>"``. The messages of a list take the parent's nodes of their ids in list order, so
  an id listed twice keeps two nodes. Roles: human -> user, ai -> assistant, system -> system,
  tool and function -> tool, a chunk as its message, a ``ChatMessage`` or a dict by its ``role``
  (user, assistant, system, developer -> system, tool); text
  parts of list contents are joined. Messages of the parent's list that are missing from the
  checkpoint's (``RemoveMessage``, a summarization step) are covered by an inline **compaction
  summary** whose text is the state's ``summary`` channel when it is a string. The message nodes
  are never deleted, so ``pending()``, ``pending_by_tip()`` and the memory writer work on a
  LangGraph thread exactly as on an imported transcript.
- A message **edited in place** (same id, new content: ``add_messages`` replaced it, as an
  ``update_state`` fixing a typo does) gets a node for its new version, node content being
  immutable: id ``.../m/<message id>@<checkpoint_id>``, at the point of the edit on the
  checkpoint's branch (after the parent checkpoint, before the messages new in this one),
  ``metadata["langgraph"]["replaces"]`` naming the node it replaces. ``pending()`` hands it once;
  a consumer that wrote the old version reads the old node's id there. The model-visible context
  holds both, the old version where it was said and the new one after it. The later checkpoints
  list the new node; a message whose text is its node's adds nothing, so re-putting a checkpoint
  stays idempotent and the nodes of threads stored before keep their ids.
- A **subgraph's own messages** (the nodes its namespace's session adds) are its turns. When its
  parent namespace's next checkpoint lists them (a subgraph sharing ``messages``), the parent's
  nodes of them are copies: ``metadata["langgraph"]["copy_of"]`` names the subgraph's node and
  ``metadata["scheduled"]`` keeps them from being eligible (as Claude Code's sub-agent turns live in
  their spawned sessions), so draining every session of a thread delivers each turn once, while the
  parent's branch and context still hold them. The saver knows a subgraph's messages from its
  checkpoints put (or resumed) through it, in this process.
- Checkpoint payloads are kept as LangGraph's serializer writes them (``serde.dumps_typed``): the
  checkpoint, its metadata and each pending write, never re-encoded into the store's codec. Puts
  encode and reads decode them as the serializer does, byte for byte, each distinct message once
  (:class:`~graph.checkpoint_memo.MessageMemo`).

Reads on SQLite keep the rows they read (at most 16 MiB of payloads per saver) while nothing stored
changes: every commit of any connection rewrites the header of the file's shared WAL index, which a
read checks first (well under a microsecond), and any change, rollback or open transaction sends
reads back to the tables. A repeated ``get_tuple`` or ``list`` (a UI polling ``get_state``, a
history page) skips its query; every read still decodes its own objects. PostgreSQL and the
in-memory store read afresh each time.

Deletion: ``delete_thread`` and ``prune(strategy="delete")`` delete the thread's sessions
(:meth:`~graph.store.base.BaseStore.delete_session`). ``delete_for_runs`` and ``prune(strategy=
"keep_latest")`` delete checkpoint payloads and their writes but keep the nodes, which are the
conversation's record (later checkpoints' nodes descend from them); the head moves to the latest
checkpoint left.

The async methods run the same short local transactions as the sync ones, on the calling thread; a
lock serializes the saver's use of its store across threads (LangGraph calls ``put_writes`` from
worker threads).
"""

from __future__ import annotations

import asyncio
import builtins
import gc
import operator
import random
import re
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar, cast

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from graph.checkpoint_memo import MessageMemo
from graph.errors import (
    CodecError,
    DuplicateSessionError,
    GraphError,
    InvalidWriteError,
    UnknownNodeError,
)
from graph.ids import NodeId, SessionId
from graph.index import IndexView
from graph.models import Kind, Node, Role
from graph.store.base import HEAD, BaseStore
from graph.store.in_memory import MemorySessionStore
from graph.store.sqlite import SessionStore
from graph.store.sqlite import _translated as sqlite_translated

__all__ = ["SessionGraphSaver", "session_id_of"]

_ROLES = {"human": Role.USER, "ai": Role.ASSISTANT, "system": Role.SYSTEM, "tool": Role.TOOL}
_DICT_ROLES = {
    **_ROLES,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "developer": Role.SYSTEM,
}
"""The ``role`` of a message kept as a dict (OpenAI's names, and LangChain's own)."""
_CHUNKS = {
    "AIMessageChunk": "ai",
    "HumanMessageChunk": "human",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessageChunk": "tool",
}
"""LangChain message types spoken in the role of another: chunks (a reducer other than
``add_messages`` keeps them unmerged) and the legacy function message."""


def _field(message: Any, name: str) -> Any:
    """A field of a message: an attribute of a LangChain message, a key of a dict kept as one."""
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def _role(message: Any) -> Role | None:
    """The role a listed message speaks in; None for what is no message.

    A LangChain message by its ``type`` (a chunk as its message, a ``ChatMessage`` by its
    ``role``); a dict (a channel of OpenAI-style messages) by its ``role``, else a LangChain-style
    ``type``.
    """
    if isinstance(message, dict):
        said = message.get("role", message.get("type"))
        return _DICT_ROLES.get(said) if isinstance(said, str) else None
    kind = getattr(message, "type", None)
    if not isinstance(kind, str):
        return None
    if kind in ("chat", "ChatMessageChunk"):  # LangChain's ChatMessage names its role itself
        role = getattr(message, "role", None)
        return _DICT_ROLES.get(role) if isinstance(role, str) else None
    return _ROLES.get(_CHUNKS.get(kind, kind))


def session_id_of(thread_id: str, checkpoint_ns: str = "") -> str:
    """Return the id of the session that holds ``thread_id``'s checkpoints of ``checkpoint_ns``.

    A thread id without ``#`` is the session id (with ``"#<checkpoint_ns>"`` after it for a
    namespace). A thread id holding ``#`` is escaped (``%`` as ``%25``, ``#`` as ``%23``) behind a
    leading ``#``, which no other thread's session id starts with (a thread id is never empty):
    so thread ``"a"`` with namespace ``"x"`` (``"a#x"``) and thread ``"a#x"`` (``"#a%23x"``) are two
    sessions. A thread stored under the earlier mapping (``"a#x"`` for thread ``"a#x"``) keeps its
    session: the saver finds it by its metadata (:meth:`SessionGraphSaver.session_id`).

    Example:
        >>> session_id_of("t", "sub:1"), session_id_of("a#x"), session_id_of("a#x", "n")
        ('t#sub:1', '#a%23x', '#a%23x#n')
    """
    root = (
        thread_id
        if "#" not in thread_id
        else "#" + thread_id.replace("%", "%25").replace("#", "%23")
    )
    return root if not checkpoint_ns else f"{root}#{checkpoint_ns}"


def _ns(conf: Mapping[str, Any]) -> Any:
    """A config's ``checkpoint_ns``: None (``"checkpoint_ns": None``) is the root, ``""``."""
    ns = conf.get("checkpoint_ns")
    return "" if ns is None else ns


class _Row(NamedTuple):
    """One stored checkpoint: its place in the graph and LangGraph's serialized payloads.

    A named tuple: a put makes two (the row and the one remembered without payloads).
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    session_id: str
    node_id: str
    type: str
    checkpoint: bytes
    metadata_type: str
    metadata: bytes
    run_id: str | None
    messages: tuple[tuple[str, str], ...]
    """(message id, node id) of the checkpoint's ``messages`` list, in list order."""


class _Write(NamedTuple):
    """One pending write of a checkpoint, its value as LangGraph's serializer wrote it."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    value: bytes


class _Saved(NamedTuple):
    """What a read hands LangGraph of one checkpoint: its key, its parent and its payloads.

    The read paths (``get_tuple``, ``list``) select only these columns: the graph columns of a row
    (session, node, the message list, which grows with the conversation) are for the writes.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    checkpoint: bytes
    metadata_type: str
    metadata: bytes


def _saved(row: _Row) -> _Saved:
    return _Saved(
        row.thread_id,
        row.checkpoint_ns,
        row.checkpoint_id,
        row.parent_id,
        row.type,
        row.checkpoint,
        row.metadata_type,
        row.metadata,
    )


_IN_ORDER = operator.attrgetter("task_path", "task_id", "idx")
"""The order LangGraph reads a checkpoint's pending writes in (task path, task, index)."""


def _ordered(
    by_key: dict[tuple[str, str, str], list[_Write]],
) -> dict[tuple[str, str, str], list[_Write]]:
    """``by_key`` with each key's writes sorted as LangGraph reads them (:data:`_IN_ORDER`)."""
    for writes in by_key.values():
        writes.sort(key=_IN_ORDER)
    return by_key


_History = tuple[tuple[_Saved, ...], dict[tuple[str, str, str], list[_Write]]]
"""The checkpoints of a list, greatest id first, and the writes of each by its key."""


class _Payloads:
    """Where a store keeps checkpoint payloads and pending writes (SQLite tables or dicts)."""

    def get(self, thread: str, ns: str, cid: str) -> _Row | None:
        raise NotImplementedError

    def latest_id(self, thread: str, ns: str) -> str | None:
        raise NotImplementedError

    def rows(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None = None,
    ) -> Iterator[_Row]:
        """Rows matching (at most ``limit``), greatest checkpoint id first."""
        raise NotImplementedError

    def saved(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None = None,
    ) -> Iterator[_Saved]:
        """Like :meth:`rows`, the read columns only."""
        for row in self.rows(thread, ns, cid, before, limit):
            yield _saved(row)

    def read(self, thread: str, ns: str, cid: str | None) -> tuple[_Saved, list[_Write]] | None:
        """One checkpoint (``cid``, else the latest of the namespace) and its writes, or None."""
        row = self.get(thread, ns, cid) if cid else next(self.rows(thread, ns, None, None, 1), None)
        if row is None:
            return None
        key = (thread, ns, row.checkpoint_id)
        return _saved(row), self.writes([key]).get(key, [])

    def history(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None,
    ) -> _History:
        """What :meth:`saved` yields for these arguments, and the writes of each checkpoint."""
        saved = tuple(self.saved(thread, ns, cid, before, limit))
        return saved, self.writes([(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in saved])

    def namespaces(self, thread: str) -> list[str]:
        raise NotImplementedError

    def put(self, row: _Row) -> None:
        raise NotImplementedError

    def put_writes(self, key: tuple[str, str, str], writes: list[_Write], replace: bool) -> None:
        raise NotImplementedError

    def writes(
        self, keys: Sequence[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], list[_Write]]:
        """The pending writes of each key that has any, in the order LangGraph reads them."""
        raise NotImplementedError

    def delete(self, keys: Sequence[tuple[str, str, str]]) -> None:
        """Delete these checkpoints and their writes."""
        raise NotImplementedError

    def delete_thread(self, thread: str) -> None:
        raise NotImplementedError

    def run_rows(self, run_ids: Sequence[str]) -> list[_Row]:
        raise NotImplementedError


_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, session_id, node_id, type,"
    " checkpoint, metadata_type, metadata, run_id, messages"
)
_WRITE_COLUMNS = "task_id, task_path, idx, channel, type, value"
_KEY = "thread_id=? AND checkpoint_ns=? AND checkpoint_id=?"


def _row(r: Sequence[Any]) -> _Row:
    prefix = f"{r[4]}/m/"
    msgs = tuple(
        (m, prefix + m) if isinstance(m, str) else (str(m[0]), str(m[1]))
        for m in orjson.loads(r[11])
    )
    return _Row(
        thread_id=r[0],
        checkpoint_ns=r[1],
        checkpoint_id=r[2],
        parent_id=r[3],
        session_id=r[4],
        node_id=r[5],
        type=r[6],
        checkpoint=bytes(r[7]),
        metadata_type=r[8],
        metadata=bytes(r[9]),
        run_id=r[10],
        messages=msgs,
    )


def _call_name(call: Any) -> Any:
    """A tool call's name: LangChain's ``name``, or OpenAI's ``function.name``."""
    if not isinstance(call, Mapping):
        return ""
    function = call.get("function")
    if "name" not in call and isinstance(function, Mapping):
        return function.get("name", "")
    return call.get("name", "")


def _message_id(message: Any, position: int) -> str | None:
    """The id a listed message is known by: its own string id, else ``"#<position>"`` in the list.

    LangChain messages have no id until ``add_messages`` gives them one; a channel merged
    otherwise (``operator.add``) keeps them id-less, and they are turns all the same. Their place in
    the list, which such a reducer only appends to, names them from one checkpoint to the next.
    None for what is no message (:func:`_role`).
    """
    mid = _field(message, "id")
    if isinstance(mid, str):
        if mid.isascii():
            return mid
        return _SURROGATE.sub(lambda c: f"\\u{ord(c.group()):04x}", mid)  # distinct, storable
    return f"#{position}" if _role(message) is not None else None


def _extends(messages: Sequence[Any], inherited: Sequence[tuple[str, str]]) -> bool:
    """Whether ``messages`` begins with exactly the message ids of ``inherited``, in order."""
    k = len(inherited)
    if len(messages) < k:
        return False
    ids = [m for m, _ in inherited]
    # LangChain messages with ids (add_messages gives every one an id) compare at once; only a
    # list holding others (id-less, dicts, escaped ids) needs each message's id worked out
    if [getattr(m, "id", None) for m in messages[:k]] == ids:
        return True
    return [_message_id(m, i) for i, m in enumerate(messages[:k])] == ids


def _msgs(row: _Row) -> bytes:
    """The ``messages`` column: a message id alone when its node is ``<session>/m/<id>``."""
    prefix = f"{row.session_id}/m/"
    return orjson.dumps([m if n == prefix + m else (m, n) for m, n in row.messages])


@dataclass(frozen=True)
class _Dialect:
    """What differs between the SQL backends: parameter marker, blob type, creation lock, table option."""

    marker: str
    blob: str
    lock: str | None
    """A statement serializing the tables' creation across processes (None: the write lock does)."""
    clustered: str
    """The table option that keeps small rows in their primary key's b-tree ("" where none)."""


_SQLITE = _Dialect("?", "BLOB", None, " WITHOUT ROWID")
_POSTGRES = _Dialect(
    "%s", "BYTEA", "SELECT pg_advisory_xact_lock(hashtext('sessiongraph langgraph'))", ""
)


_T = TypeVar("_T")


class _ReadCache:
    """Rows read from the payload tables, kept while nothing stored changes (at most ``size`` bytes).

    A read's answer is kept under the store's change mark
    (:meth:`~graph.store.base.BaseStore._change_mark`: on SQLite the header of the shared WAL
    index, which every commit of every connection rewrites, read in well under a microsecond).
    While the mark stands, no connection has committed since, so the kept rows are what the tables
    hold; when it moves, or the store cannot give one (a transaction open, PostgreSQL), everything
    kept is dropped and reads go to the tables. Only rows are kept (bytes in immutable tuples):
    every read still decodes its own objects, so callers never share a mutable state.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        """Bytes of payloads kept at most; an answer over a quarter of it is not kept."""
        self.mark: int | None = None
        self.kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.held = 0

    def through(
        self,
        mark: int | None,
        key: Hashable,
        read: Callable[[], _T | None],
        size: Callable[[_T], int],
    ) -> _T | None:
        """The answer kept for ``key`` under ``mark``, else ``read()``'s (kept when not None).

        A ``mark`` other than the last one drops everything kept first; None reads and keeps
        nothing.
        """
        if mark != self.mark or mark is None:
            self.drop()
            self.mark = mark
        if mark is None:
            return read()
        got = self.kept.get(key)
        if got is not None:
            self.kept.move_to_end(key)
            return cast(_T, got[0])
        answer = read()
        if answer is not None:
            self.put(key, answer, size(answer))
        return answer

    def put(self, key: Hashable, value: Any, size: int) -> None:
        if size > self.size // 4:
            return
        self.kept[key] = (value, size)
        self.held += size
        while self.held > self.size:
            _, (_, dropped) = self.kept.popitem(last=False)
            self.held -= dropped

    def drop(self) -> None:
        self.kept.clear()
        self.held = 0


def _bytes_of(saved: Iterable[_Saved], writes: Iterable[Iterable[_Write]]) -> int:
    return sum(len(r.checkpoint) + len(r.metadata) + 200 for r in saved) + sum(
        len(w.value) + 100 for ws in writes for w in ws
    )


_CACHE_BYTES = 16 << 20
"""What the read cache of one saver on SQLite keeps at most: 16 MiB of payloads."""


class _SqlPayloads(_Payloads):
    """Two tables beside the store's own, written on its connection inside its transaction.

    Used for the SQLite and the PostgreSQL store alike (the SQL is the common subset, upserts as
    ``ON CONFLICT``); only the parameter marker and the blob type differ. Driver errors are
    translated as the store translates its own (:class:`~graph.errors.StoreBusyError` when a lock
    was in the way, :class:`~graph.errors.StoreError` otherwise).
    """

    def __init__(
        self,
        store: BaseStore,
        conn: Any,
        dialect: _Dialect,
        translated: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.translated = translated
        """The store's own translation of driver errors (StoreBusyError when only a lock waited)."""
        self.store = store
        self.cache = _ReadCache(_CACHE_BYTES)
        blob = dialect.blob
        with store.atomic():
            if dialect.lock is not None:
                self._execute(dialect.lock)
            # A checkpoint row holds the whole state (kilobytes): a plain (rowid) table, where
            # WITHOUT ROWID wrote a tenth more pages per put. A write row is small: kept in its
            # key's b-tree, a put_writes changes one b-tree instead of a table and its key index
            # (2.6 WAL pages per commit down to 1.x). A file made before keeps its rowid table.
            self._execute(
                "CREATE TABLE IF NOT EXISTS lg_checkpoints (thread_id TEXT NOT NULL,"
                " checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,"
                f" parent_checkpoint_id TEXT, session_id TEXT NOT NULL, node_id TEXT NOT NULL,"
                f" type TEXT NOT NULL, checkpoint {blob} NOT NULL, metadata_type TEXT NOT NULL,"
                f" metadata {blob} NOT NULL, run_id TEXT, messages {blob} NOT NULL,"
                " PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))"
            )
            self._execute(
                "CREATE TABLE IF NOT EXISTS lg_writes (thread_id TEXT NOT NULL,"
                " checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,"
                " task_path TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL,"
                f" type TEXT NOT NULL, value {blob} NOT NULL,"
                " PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))"
                f"{dialect.clustered}"
            )

    def _sql(self, sql: str) -> str:
        return sql if self.dialect.marker == "?" else sql.replace("?", self.dialect.marker)

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[Any]:
        with self.translated():
            cur = self.conn.execute(self._sql(sql), params)
            return [] if cur.description is None else cast(builtins.list[Any], cur.fetchall())

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self.translated():
            if self.dialect.marker == "?":
                self.conn.executemany(sql, rows)
            else:
                with self.conn.cursor() as cur:
                    cur.executemany(self._sql(sql), rows)

    def get(self, thread: str, ns: str, cid: str) -> _Row | None:
        got = self._execute(
            f"SELECT {_COLUMNS} FROM lg_checkpoints WHERE {_KEY}", (thread, ns, cid)
        )
        return _row(got[0]) if got else None

    def read(
        self, thread: str, ns: str, cid: str | None
    ) -> tuple[_Saved, builtins.list[_Write]] | None:
        """The checkpoint's row and its writes, as kept (:class:`_ReadCache`) or read afresh."""
        return self.cache.through(
            self.store._change_mark(),
            ("read", thread, ns, cid),
            lambda: self._read(thread, ns, cid),
            lambda got: _bytes_of((got[0],), (got[1],)),
        )

    def history(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None,
    ) -> _History:
        got = self.cache.through(
            self.store._change_mark(),
            ("history", thread, ns, cid, before, limit),
            lambda: super(_SqlPayloads, self).history(thread, ns, cid, before, limit),
            lambda got: _bytes_of(got[0], got[1].values()),
        )
        return cast(_History, got)  # (a history is never None)

    def _read(
        self, thread: str, ns: str, cid: str | None
    ) -> tuple[_Saved, builtins.list[_Write]] | None:
        """One statement: the checkpoint's row (tagged 0) and its writes (tagged 1)."""
        args: tuple[str, ...] = (cid,) if cid else (thread, ns)
        if cid:
            which = "?"
        else:  # the latest: the greatest id, read from the key's index (no sort)
            which = (
                "(SELECT max(checkpoint_id) FROM lg_checkpoints"
                " WHERE thread_id=? AND checkpoint_ns=?)"
            )
        got = self._execute(
            "SELECT 0, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type,"
            " metadata, NULL, NULL FROM lg_checkpoints"
            f" WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id={which}"
            " UNION ALL SELECT 1, task_id, task_path, type, value, channel, NULL, idx, checkpoint_id"
            f" FROM lg_writes WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id={which}",
            (thread, ns, *args, thread, ns, *args),
        )
        row = next((r for r in got if r[0] == 0), None)
        if row is None:  # no such checkpoint (the writes of a pruned one are not returned)
            return None
        saved = _Saved(thread, ns, row[1], row[2], row[3], bytes(row[4]), row[5], bytes(row[6]))
        writes = [_Write(w[1], w[2], w[7], w[5], w[3], bytes(w[4])) for w in got if w[0] == 1]
        writes.sort(key=_IN_ORDER)
        return saved, writes

    def saved(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None = None,
    ) -> Iterator[_Saved]:
        sql, params = self._select(
            "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,"
            " metadata_type, metadata",
            thread,
            ns,
            cid,
            before,
            limit,
        )
        for r in self._execute(sql, params):
            yield _Saved(r[0], r[1], r[2], r[3], r[4], bytes(r[5]), r[6], bytes(r[7]))

    def latest_id(self, thread: str, ns: str) -> str | None:
        got = self._execute(
            "SELECT checkpoint_id FROM lg_checkpoints WHERE thread_id=? AND checkpoint_ns=?"
            " ORDER BY checkpoint_id DESC LIMIT 1",
            (thread, ns),
        )
        return cast(str, got[0][0]) if got else None

    def rows(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None = None,
    ) -> Iterator[_Row]:
        sql, params = self._select(_COLUMNS, thread, ns, cid, before, limit)
        for r in self._execute(sql, params):
            yield _row(r)

    @staticmethod
    def _select(
        columns: str,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None,
    ) -> tuple[str, builtins.list[str]]:
        """The query of :meth:`rows` for ``columns``: matching rows, greatest id first."""
        where, params = [], []
        for column, value, op in (
            ("thread_id", thread, "="),
            ("checkpoint_ns", ns, "="),
            ("checkpoint_id", cid, "="),
            ("checkpoint_id", before, "<"),
        ):
            if value is not None:
                where.append(f"{column}{op}?")
                params.append(value)
        sql = f"SELECT {columns} FROM lg_checkpoints"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY checkpoint_id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return sql, params

    def namespaces(self, thread: str) -> builtins.list[str]:
        got = self._execute(
            "SELECT DISTINCT checkpoint_ns FROM lg_checkpoints WHERE thread_id=?", (thread,)
        )
        return sorted(r[0] for r in got)

    def put(self, row: _Row) -> None:
        self._execute(
            f"INSERT INTO lg_checkpoints ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET"
            " parent_checkpoint_id=excluded.parent_checkpoint_id,"
            " session_id=excluded.session_id, node_id=excluded.node_id, type=excluded.type,"
            " checkpoint=excluded.checkpoint, metadata_type=excluded.metadata_type,"
            " metadata=excluded.metadata, run_id=excluded.run_id, messages=excluded.messages",
            (
                row.thread_id,
                row.checkpoint_ns,
                row.checkpoint_id,
                row.parent_id,
                row.session_id,
                row.node_id,
                row.type,
                row.checkpoint,
                row.metadata_type,
                row.metadata,
                row.run_id,
                _msgs(row),
            ),
        )

    def put_writes(
        self, key: tuple[str, str, str], writes: builtins.list[_Write], replace: bool
    ) -> None:
        then = (
            "DO UPDATE SET task_path=excluded.task_path, channel=excluded.channel,"
            " type=excluded.type, value=excluded.value"
            if replace
            else "DO NOTHING"
        )
        self._many(
            f"INSERT INTO lg_writes (thread_id, checkpoint_ns, checkpoint_id, {_WRITE_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT"
            f" (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {then}",
            [(*key, w.task_id, w.task_path, w.idx, w.channel, w.type, w.value) for w in writes],
        )

    def writes(
        self, keys: Sequence[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], builtins.list[_Write]]:
        out: dict[tuple[str, str, str], builtins.list[_Write]] = {}
        if not keys:
            return out
        if len(keys) == 1:
            got = self._execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, {_WRITE_COLUMNS} FROM lg_writes"
                f" WHERE {_KEY}",
                keys[0],
            )
        else:
            threads = sorted({k[0] for k in keys})
            got = self._execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, {_WRITE_COLUMNS} FROM lg_writes"
                f" WHERE thread_id IN ({','.join('?' * len(threads))})",
                threads,
            )
        wanted = set(keys)
        for r in got:
            k = (r[0], r[1], r[2])
            if k in wanted:
                out.setdefault(k, []).append(_Write(r[3], r[4], r[5], r[6], r[7], bytes(r[8])))
        return _ordered(out)

    def delete(self, keys: Sequence[tuple[str, str, str]]) -> None:
        for table in ("lg_checkpoints", "lg_writes"):
            self._many(f"DELETE FROM {table} WHERE {_KEY}", keys)

    def delete_thread(self, thread: str) -> None:
        for table in ("lg_checkpoints", "lg_writes"):
            self._execute(f"DELETE FROM {table} WHERE thread_id=?", (thread,))

    def run_rows(self, run_ids: Sequence[str]) -> builtins.list[_Row]:
        if not run_ids:
            return []
        got = self._execute(
            f"SELECT {_COLUMNS} FROM lg_checkpoints WHERE run_id IN"
            f" ({','.join('?' * len(run_ids))})",
            list(run_ids),
        )
        return [_row(r) for r in got]


class _MemoryPayloads(_Payloads):
    """Dicts beside a :class:`MemorySessionStore`, written inside its transactions.

    Each change logs its undo with the store (``_log``), so a transaction that fails, the saver's
    or a caller's enclosing :meth:`~graph.store.base.BaseStore.atomic` block, takes the payloads
    back with the nodes, as one SQL transaction does on the other backends.
    """

    def __init__(self, store: MemorySessionStore) -> None:
        self.store = store
        self.checkpoints: dict[tuple[str, str, str], _Row] = {}
        self.pending: dict[tuple[str, str, str], dict[tuple[str, int], _Write]] = {}

    def _keep(self, table: dict[Any, Any], key: Any) -> None:
        """Log the undo of a change about to be made to ``table[key]``: its value now, or none."""
        if key in table:
            was = table[key]
            was = dict(was) if isinstance(was, dict) else was

            def undo() -> None:
                table[key] = was

        else:

            def undo() -> None:
                table.pop(key, None)

        self.store._log(undo)

    def get(self, thread: str, ns: str, cid: str) -> _Row | None:
        return self.checkpoints.get((thread, ns, cid))

    def latest_id(self, thread: str, ns: str) -> str | None:
        ids = [k[2] for k in self.checkpoints if k[0] == thread and k[1] == ns]
        return max(ids, default=None)

    def rows(
        self,
        thread: str | None,
        ns: str | None,
        cid: str | None,
        before: str | None,
        limit: int | None = None,
    ) -> Iterator[_Row]:
        got = [
            r
            for (t, n, c), r in self.checkpoints.items()
            if (thread is None or t == thread)
            and (ns is None or n == ns)
            and (cid is None or c == cid)
            and (before is None or c < before)
        ]
        got.sort(key=lambda r: r.checkpoint_id, reverse=True)
        yield from got if limit is None else got[:limit]

    def namespaces(self, thread: str) -> list[str]:
        return sorted({k[1] for k in self.checkpoints if k[0] == thread})

    def put(self, row: _Row) -> None:
        key = (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        self._keep(self.checkpoints, key)
        self.checkpoints[key] = row

    def put_writes(self, key: tuple[str, str, str], writes: list[_Write], replace: bool) -> None:
        self._keep(self.pending, key)
        stored = self.pending.setdefault(key, {})
        for w in writes:
            if replace or (w.task_id, w.idx) not in stored:
                stored[(w.task_id, w.idx)] = w

    def writes(
        self, keys: Sequence[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], list[_Write]]:
        return _ordered({k: list(self.pending[k].values()) for k in keys if self.pending.get(k)})

    def delete(self, keys: Sequence[tuple[str, str, str]]) -> None:
        for k in keys:
            for table in (self.checkpoints, self.pending):
                if k in table:
                    self._keep(table, k)
                    del table[k]

    def delete_thread(self, thread: str) -> None:
        self.delete([k for k in set(self.checkpoints) | set(self.pending) if k[0] == thread])

    def run_rows(self, run_ids: Sequence[str]) -> list[_Row]:
        wanted = set(run_ids)
        return [r for r in self.checkpoints.values() if r.run_id in wanted]


def _payloads_of(store: BaseStore) -> _Payloads:
    """The payload keeper for ``store``'s backend (tables in its database, or dicts beside it)."""
    if isinstance(store, SessionStore):
        return _SqlPayloads(store, store.conn, _SQLITE, sqlite_translated)
    if isinstance(store, MemorySessionStore):
        return _MemoryPayloads(store)
    postgres = sys.modules.get("graph.store.postgres")  # loaded whenever such a store exists
    if postgres is not None and isinstance(store, postgres.PostgresSessionStore):
        return _SqlPayloads(store, store.conn, _POSTGRES, postgres._translated)
    raise TypeError(f"SessionGraphSaver cannot keep payloads in a {type(store).__name__}")


def _rethread(node_id: str, src: str, dst: str, session_id: str) -> str:
    """The id of ``node_id``'s copy when a thread is copied (into ``session_id``).

    ``src`` and ``dst`` are the session ids of the two threads' root namespace. The saver's ids
    start with their session's id, which starts with that root's; a node some other writer added
    to the session keeps its id under ``"<session>/x/"``.
    """
    if node_id.startswith((src + "/", src + "#")):
        return dst + node_id[len(src) :]
    return f"{session_id}/x/{node_id}"


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: a Python string may hold one (JSON's ``\\ud83d`` alone), UTF-8 cannot."""


def _storable(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD: node text is UTF-8 (the payload keeps it as is)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _text(content: Any) -> str:
    """The text of a LangChain message content (a string, or a list of parts), storable."""
    return _storable(_parts(content))


def _parts(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "\n".join(parts)


def _when(ts: Any, checkpoint_id: str) -> datetime:
    """When a checkpoint was taken: its ``ts`` (ISO 8601, as LangGraph writes it; naive is UTC).

    A ``ts`` nothing reads as a time (missing, empty, not a string, out of range: a hand-made or
    foreign checkpoint) falls back to the time inside the checkpoint's id when that is a
    time-based UUID (version 1 or 6; LangGraph's ids are version 6), so a re-put stores the same
    time, and otherwise to the time of this put.
    """
    if isinstance(ts, str):
        try:
            when = datetime.fromisoformat(ts)
            return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
        except (ValueError, OverflowError):  # (OverflowError: no UTC time, as year 9999 at -01:00)
            pass
    try:
        u = uuid.UUID(checkpoint_id)
    except (TypeError, ValueError, AttributeError):
        u = None
    if u is not None and u.version in (1, 6):
        if u.version == 6:  # the 60-bit count of 100 ns since 1582-10-15, most significant first
            ticks = (u.int >> 96) << 28 | (u.int >> 80 & 0xFFFF) << 12 | (u.int >> 64 & 0x0FFF)
        else:
            ticks = u.time
        seconds = (ticks - _UUID_EPOCH_TICKS) / 10_000_000
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            pass
    return datetime.now(UTC)


_UUID_EPOCH_TICKS = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01


def _undecodable(row: _Saved, e: Exception) -> CodecError:
    """The serializer's failure to decode ``row``'s payloads, as a CodecError naming the checkpoint."""
    where = f"thread {row.thread_id!r} namespace {row.checkpoint_ns!r}"
    return CodecError(
        f"the stored payloads of checkpoint {row.checkpoint_id!r} ({where})",
        f"{type(e).__name__}: {e}",
    )


def _unstorable(*keys: Any) -> bool:
    """Whether a key a read names holds a lone surrogate: nothing is stored under it, nor can be."""
    return any(isinstance(k, str) and _SURROGATE.search(k) for k in keys)


def _named(thread_id: Any, checkpoint_ns: Any) -> tuple[str, str]:
    """The thread id and namespace a write names, as strings, when a session can be named by them.

    Raises:
        InvalidWriteError: the thread id is empty, or either holds a lone surrogate (which no
            database text column holds); nothing is written.
    """
    thread, ns = str(thread_id), str(checkpoint_ns)
    if not thread:
        raise InvalidWriteError("an empty thread_id names no session: give the thread an id")
    for name, value in (("thread_id", thread), ("checkpoint_ns", ns)):
        if _SURROGATE.search(value):
            raise InvalidWriteError(
                f"{name} {value!r} holds a lone surrogate: no session is named so"
            )
    return thread, ns


def _checked(checkpoint: Any, checkpoint_id: str) -> Checkpoint:
    """``checkpoint`` when it is a checkpoint of ``checkpoint_id`` a put can read, else ValueError.

    What another saver's row holds is decoded, not made by LangGraph in this process: a hand-made
    or damaged row may hold any value.
    """
    if not isinstance(checkpoint, Mapping):
        raise ValueError(f"the payload is no checkpoint (a {type(checkpoint).__name__})")
    values = checkpoint.get("channel_values")
    if values is not None and not isinstance(values, Mapping):
        raise ValueError(f"its channel_values are no mapping (a {type(values).__name__})")
    got = checkpoint.get("id")
    if got != checkpoint_id:
        raise ValueError(f"the payload's checkpoint id is {got!r}, not its row's {checkpoint_id!r}")
    return cast(Checkpoint, checkpoint)


_LINKS = ("copy_of", "replaces")
"""The node ids a message node's ``metadata["langgraph"]`` may hold (rewritten by a copy)."""

_TEXTS_KEPT = 1 << 16
"""Message node texts a saver keeps at most (to tell an edited message from the one it replaces)."""

_PAUSE_AT = 8192
"""Bytes of a checkpoint payload from which its decoding pauses the collector (about 30 messages)."""


class SessionGraphSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer that stores threads as session graphs (the mapping: module docstring).

    Args:
        store: The session store (:class:`~graph.store.sqlite.SessionStore`,
            :class:`~graph.store.postgres.PostgresSessionStore` or
            :class:`~graph.store.in_memory.MemorySessionStore`).
        serde: LangGraph's serializer for payloads; LangGraph's default (JsonPlus) when None.
        spawn_wait: Seconds a subgraph's first checkpoint waits for its parent's checkpoint to be
            stored (LangGraph puts them from different background workers, in either order), so
            that its session can be spawned from that checkpoint's node. 0 does not wait (the
            session is then a plain one when the parent's checkpoint is not stored yet).

    The payloads share the nodes' transaction on every backend: a caller's enclosing
    :meth:`~graph.store.base.BaseStore.atomic` block that rolls back takes both back.

    Raises:
        TypeError: the store is of a kind that cannot hold checkpoint payloads (not one of those).
        StoreError: the payload tables cannot be created (on SQLite and PostgreSQL).

    Example:
        >>> from graph import SessionStore
        >>> saver = SessionGraphSaver(SessionStore(":memory:"))
        >>> # graph = builder.compile(checkpointer=saver)
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        serde: SerializerProtocol | None = None,
        spawn_wait: float = 1.0,
    ) -> None:
        super().__init__(serde=serde)
        self.store = store
        self._lock = threading.RLock()
        self._known: set[str] = set()
        """Sessions already checked to be this saver's threads."""
        self._recent: dict[tuple[str, str, str], _Row] = {}
        """The last checkpoints put, payloads dropped: the usual parents of the next puts."""
        self._stored = threading.Condition(self._lock)
        self.spawn_wait = spawn_wait
        self._payloads: _Payloads
        self._payloads = _payloads_of(store)
        self._memo = MessageMemo(self.serde)
        self._legacy: dict[tuple[str, str], str] = {}
        """Session ids of threads holding ``#``, as :meth:`session_id` found them."""
        self._texts: dict[str, str] = {}
        """The text of message nodes this saver stored or read: what an edit is told apart from
        (the message's own content string when that was the text, so the next put's comparison is
        one of identity)."""
        self._subs: dict[tuple[str, str, str], dict[str, str]] = {}
        """(thread, parent namespace, parent checkpoint) -> message id -> node: the messages a
        subgraph spawned from that checkpoint added (the turns its parent's state copies)."""

    def session_id(self, thread_id: str, checkpoint_ns: str = "") -> str:
        """Return the id of the session holding ``thread_id``'s checkpoints of ``checkpoint_ns``.

        :func:`session_id_of`, except for a thread id holding ``#`` whose session a saver of the
        earlier mapping stored (id ``"<thread_id>[#<checkpoint_ns>]"``, its metadata naming this
        thread and namespace): that session goes on holding it, so an older store reads and
        continues as it did.
        """
        sid = session_id_of(thread_id, checkpoint_ns)
        if "#" not in thread_id:
            return sid
        key = (thread_id, checkpoint_ns)
        known = self._legacy.get(key)
        if known is not None:
            return known
        legacy = f"{thread_id}#{checkpoint_ns}" if checkpoint_ns else thread_id
        try:
            info = self.store.session(legacy).metadata.get("langgraph")
        except GraphError:
            info = None
        if (
            isinstance(info, dict)
            and info.get("thread_id") == thread_id
            and info.get("checkpoint_ns", "") == checkpoint_ns
        ):
            sid = legacy
        self._legacy[key] = sid
        return sid

    # ------------------------------------------------------------------ versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Return the next channel version: ``"<counter>.<random>"`` strings that sort in order."""
        n = 0 if current is None else int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # ------------------------------------------------------------------ reads

    @property
    def _codec(self) -> MessageMemo:
        """Encodes and decodes payloads as ``self.serde`` does, each distinct message once.

        Made again when ``serde`` was replaced (``with_allowlist`` clones the saver with another
        serializer): a message's bytes decode by the allow-list of the serializer reading them.
        """
        if self._memo.serde is not self.serde:
            self._memo = MessageMemo(self.serde)
        return self._memo

    def _tuple(
        self, row: _Saved, writes: builtins.list[_Write] | None, metadata: Any = None
    ) -> CheckpointTuple:
        config: RunnableConfig = {
            "configurable": {
                "thread_id": row.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }
        parent: RunnableConfig | None = None
        if row.parent_id is not None:
            parent = {
                "configurable": {
                    "thread_id": row.thread_id,
                    "checkpoint_ns": row.checkpoint_ns,
                    "checkpoint_id": row.parent_id,
                }
            }
        # A state of many messages is thousands of new objects. Collections triggered while they
        # are made would scan everything the caller already holds (a list() kept whole: every
        # earlier tuple's messages): 0.9 s of a 1.1 s list of 500 checkpoints. Paused here, the
        # next collection runs once after the tuple is made (the collector's count keeps growing).
        pause = len(row.checkpoint) >= _PAUSE_AT and gc.isenabled()
        if pause:
            gc.disable()
        loads = self._codec.loads
        try:
            return CheckpointTuple(  # (config, checkpoint, metadata, parent_config, pending_writes)
                config,
                loads(row.type, row.checkpoint),
                metadata if metadata is not None else loads(row.metadata_type, row.metadata),
                parent,
                [(w.task_id, w.channel, loads(w.type, w.value)) for w in writes or ()],
            )
        except Exception as e:  # the serializer's own errors, whatever their kind
            raise _undecodable(row, e) from e
        finally:
            if pause:
                gc.enable()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Return the checkpoint of ``config`` (its ``checkpoint_id``, else the head), or None.

        Raises:
            CodecError: a stored payload of that checkpoint does not decode (named in the message).
        """
        conf = config["configurable"]
        thread, ns = str(conf["thread_id"]), _ns(conf)
        cid = get_checkpoint_id(config)
        if _unstorable(thread, ns, cid):
            return None
        with self._lock:
            got = self._payloads.read(thread, ns, cid)  # no id: the latest, the greatest id
        return None if got is None else self._tuple(*got)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Yield checkpoints, greatest checkpoint id first.

        Args:
            config: ``thread_id`` (and ``checkpoint_ns``, ``checkpoint_id``) to narrow to; None: all.
            filter: Metadata keys that must equal these values.
            before: Only checkpoints with an id below this config's ``checkpoint_id``.
            limit: At most this many.

        Raises:
            CodecError: a stored payload of a listed checkpoint does not decode (named).
        """
        conf = config["configurable"] if config else {}
        thread = str(conf["thread_id"]) if conf.get("thread_id") is not None else None
        ns = conf.get("checkpoint_ns")
        cid = conf.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        if _unstorable(thread, ns, cid):
            return
        with self._lock:
            # Without a filter the limit is the query's; with one, metadata decides first.
            rows, writes = self._payloads.history(
                thread, ns, cid, before_id, None if filter else limit
            )
            picked: builtins.list[tuple[_Saved, Any]] = []
            loads = self._codec.loads
            for row in rows:
                if limit is not None and len(picked) >= limit:
                    break
                try:
                    meta = loads(row.metadata_type, row.metadata)
                except Exception as e:  # the serializer's own errors, whatever their kind
                    raise _undecodable(row, e) from e
                if filter and any(meta.get(k) != v for k, v in filter.items()):
                    continue
                picked.append((row, meta))
            keys = [(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r, _ in picked]
        # Decoded one at a time as the caller asks: a caller that drops each tuple before the next
        # never holds a thread's whole history decoded (its messages made the collector's passes
        # over the live objects cost more than the decoding: 1.4 s against 0.4 s for 500 checkpoints).
        for (row, meta), key in zip(picked, keys, strict=True):
            yield self._tuple(row, writes.get(key), meta)

    # ------------------------------------------------------------------ writes

    def _parent_ready(self, config: RunnableConfig, metadata: CheckpointMetadata) -> bool:
        """False while a new namespace's parent checkpoint (``metadata["parents"]``) is not stored."""
        conf = config["configurable"]
        ns = str(_ns(conf))
        if not ns:
            return True
        thread = str(conf["thread_id"])
        parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
        parent_cid = (metadata.get("parents") or {}).get(parent_ns)
        if not parent_cid or self._payloads.get(thread, parent_ns, parent_cid) is not None:
            return True
        try:
            self.store.session(self.session_id(thread, ns))
        except GraphError:
            return False
        return True

    def _session(self, thread: str, ns: str, metadata: CheckpointMetadata) -> tuple[str, IndexView]:
        """Return the session of (thread, namespace) and its index, creating (or spawning) it if missing.

        The index is the one the put reads next: handed back, it costs one freshness check, not two.
        """
        sid = self.session_id(thread, ns)
        if sid in self._known:
            try:
                return sid, self.store.index(sid)
            except GraphError:
                self._known.discard(sid)
        try:
            session = self.store.session(sid)
        except GraphError:
            session = None
        if session is not None:
            info = session.metadata.get("langgraph")
            if not isinstance(info, dict) or info.get("thread_id") != thread:
                raise InvalidWriteError(
                    f"session {sid!r} exists and is not LangGraph thread {thread!r}"
                )
            self._known.add(sid)
            return sid, self.store.index(sid)
        try:
            self._create(sid, thread, ns, metadata)
        except DuplicateSessionError:  # another process created it since: use it if it is ours
            return self._session(thread, ns, metadata)
        self._known.add(sid)
        return sid, self.store.index(sid)

    def _create(self, sid: str, thread: str, ns: str, metadata: CheckpointMetadata) -> None:
        """Create the session of (thread, namespace), spawned from its parent checkpoint's node."""
        meta = {"langgraph": {"thread_id": thread, "checkpoint_ns": ns}}
        title = f"LangGraph thread {thread}" + (f" {ns}" if ns else "")
        if ns:
            parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
            parents = metadata.get("parents") or {}
            parent_cid = parents.get(parent_ns)
            parent = self._payloads.get(thread, parent_ns, parent_cid) if parent_cid else None
            if parent is not None:
                self.store.spawn(
                    parent.session_id, parent.node_id, id=sid, title=title, metadata=meta
                )
                return
        self.store.create_session(title, id=sid, metadata=meta)

    def _graph_nodes(
        self,
        sid: str,
        idx: IndexView,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        node_id: str,
        parent: _Row | None,
    ) -> tuple[builtins.list[Node], tuple[tuple[str, str], ...]]:
        """The nodes one checkpoint adds (messages, a summary, the checkpoint) and its message list."""
        cid = checkpoint["id"]
        moment = _when(checkpoint.get("ts"), cid)
        chain: str | None = parent.node_id if parent is not None else None
        inherited = parent.messages if parent is not None else self._spawning(sid, metadata)
        values = checkpoint.get("channel_values") or {}
        nodes: builtins.list[Node] = []
        listed: builtins.list[tuple[str, str]] = []

        def add(node_id: str, **fields: Any) -> None:
            nonlocal chain
            nodes.append(
                Node(
                    id=NodeId(node_id),
                    session_id=SessionId(sid),
                    predecessor=NodeId(chain) if chain is not None else None,
                    created_at=moment,
                    **fields,
                )
            )
            chain = node_id

        new_ids: set[str] = set()

        subs = (
            self._subs.get((parent.thread_id, parent.checkpoint_ns, parent.checkpoint_id), {})
            if parent is not None
            else {}
        )

        def message(m: Any, mid: str | None, replaces: str | None = None) -> None:
            """List one message, adding its node when the parent's list lacks it (or said it else)."""
            role = _role(m)
            if mid is None or role is None:
                return
            content = _text(_field(m, "content"))
            nid = f"{sid}/m/{mid}"
            if nid in new_ids or (
                nid in idx.pred
                and (idx.pred[nid] != chain or not self._stored_as(nid, role, content))
            ):
                nid = f"{sid}/m/{mid}@{cid}"  # the same id said again elsewhere, or said anew
                again = 1
                while nid in new_ids:  # an id listed twice, both listings renamed here
                    again += 1
                    nid = f"{sid}/m/{mid}@{cid}.{again}"
            info: dict[str, Any] = {"message_id": mid, "checkpoint_id": cid}
            meta: dict[str, Any] = {"langgraph": info}
            if replaces is not None:
                info["replaces"] = replaces
            elif mid in subs:  # a subgraph's turn, back in its parent's state
                info["copy_of"] = subs[mid]
                meta["scheduled"] = True  # (not eligible: the subgraph's node is the turn)
            calls = _field(m, "tool_calls")
            if isinstance(calls, list) and calls:
                info["tool_calls"] = [_storable(str(_call_name(c))) for c in calls]
            add(nid, kind=Kind.MESSAGE, role=role, content=content, metadata=meta)
            new_ids.add(nid)
            raw = _field(m, "content")
            if len(self._texts) >= _TEXTS_KEPT:  # (bounded: a missing text is read again)
                self._texts.clear()
            self._texts[nid] = raw if type(raw) is str and raw == content else content
            listed.append((mid, nid))

        messages = values.get("messages")
        if not isinstance(messages, list):
            listed = list(inherited)
        elif _extends(messages, inherited):
            # The usual step (add_messages appended to the parent's list): only the tail is new.
            edited = self._edited(messages, [n for _, n in inherited])
            listed = list(inherited)
            for i in edited:  # a message of the parent's list edited in place: its new version
                said_as, old = inherited[i]
                before = len(listed)
                message(messages[i], said_as, replaces=old)
                if len(listed) > before:
                    listed[i] = listed.pop()
            for i, m in enumerate(messages[len(inherited) :], start=len(inherited)):
                message(m, _message_id(m, i))
        else:
            # Each message of the list takes the parent's node of its id, in list order (a list may
            # hold an id twice); the parent's nodes left over were removed.
            pool: dict[str, builtins.list[str]] = {}
            for earlier, nid in reversed(inherited):
                pool.setdefault(earlier, []).append(nid)
            kept: builtins.list[str | None] = []
            said = [_message_id(m, i) for i, m in enumerate(messages)]
            for mid in said:
                same = pool.get(mid) if mid is not None else None
                kept.append(same.pop() if same else None)
            held = set(kept)
            removed = [n for _, n in inherited if n not in held and n in idx.pred]
            if removed:
                span = self._span(idx, removed, chain)
                if span:
                    summary = values.get("summary")
                    text = (
                        _storable(summary)
                        if isinstance(summary, str) and summary
                        else (f"{len(removed)} earlier messages removed by the graph")
                    )
                    summary_id = f"{sid}/s/{cid}"
                    add(
                        summary_id,
                        kind=Kind.SUMMARY,
                        role=Role.SYSTEM,
                        content=text,
                        covers=tuple(NodeId(n) for n in span),
                        metadata={"langgraph": {"checkpoint_id": cid, "removed": len(removed)}},
                    )
                    new_ids.add(summary_id)
            held_at = [i for i, n in enumerate(kept) if n is not None]
            edits = set(
                self._edited([messages[i] for i in held_at], [cast(str, kept[i]) for i in held_at])
            )
            j = 0  # the place of a kept message among the kept ones
            for m, mid, node in zip(messages, said, kept, strict=True):
                if node is None:
                    message(m, mid)
                    continue
                if j in edits:
                    message(m, mid, replaces=node)
                elif mid is not None:
                    listed.append((mid, node))
                j += 1
        source, step = metadata.get("source"), metadata.get("step")
        add(
            node_id,
            kind=Kind.EVENT,
            role=Role.SYSTEM,
            content=f"checkpoint {cid} ({source}, step {step})",
            metadata={
                "langgraph": {
                    "checkpoint_id": cid,
                    "parent_checkpoint_id": parent.checkpoint_id if parent else None,
                    "source": source,
                    "step": step,
                }
            },
        )
        return nodes, tuple(listed)

    def _edited(self, messages: Sequence[Any], nodes: Sequence[str]) -> builtins.list[int]:
        """The places ``i`` where ``messages[i]``'s text is not that of its node ``nodes[i]``.

        A message edited in place (``add_messages`` replaced it by one of the same id). The nodes'
        texts are kept as this saver stores or reads them (:attr:`_texts`), read from the store
        once otherwise. One pass over the list (a put's cost grows with it): a message whose
        content is the very string kept is the same.
        """
        texts = self._texts
        out: builtins.list[int] = []
        missing: builtins.list[int] = []
        for i, (m, node) in enumerate(zip(messages, nodes, strict=False)):
            known = texts.get(node)
            if known is None:
                missing.append(i)
                continue
            content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
            if content is not known and self._differs(content, node, known):
                out.append(i)
        if missing:
            self._read_texts([nodes[i] for i in missing])
            for i in missing:
                m, known = messages[i], texts.get(nodes[i])
                if known is not None and self._differs(_field(m, "content"), nodes[i], known):
                    out.append(i)
            out.sort()
        return out

    def _differs(self, content: Any, node: str, known: str) -> bool:
        """Whether ``content`` says other than node ``node``'s text (``known``, as kept).

        A text that differs from the one kept is checked against the stored node before it counts
        as an edit: another process may have deleted the thread and stored it again, the same
        message ids saying other things, since this saver kept its text.
        """
        text = _text(content)
        if text != known:
            try:
                stored = self.store.node(node).text
            except UnknownNodeError:
                return True
            self._texts[node] = stored
            if text != stored:
                return True
        if type(content) is str:
            self._texts[node] = content  # the next put's message is this one: one identity test
        return False

    def _read_texts(self, ids: Sequence[str]) -> None:
        """Keep the texts of these stored nodes (in any session) in :attr:`_texts`."""
        texts = self._texts
        if len(texts) + len(ids) > _TEXTS_KEPT:
            texts.clear()
        by_session: dict[str, builtins.list[str]] = {}
        for found, owner in self.store.locate(ids).items():
            by_session.setdefault(owner, []).append(found)
        for session, held in by_session.items():
            for stored in self.store.nodes(session, held):
                texts[stored.id] = stored.text

    def _stored_as(self, node_id: str, role: Role, text: str) -> bool:
        """Whether the stored node ``node_id`` says ``text`` as ``role`` (a message put again)."""
        stored = self.store.node(node_id)
        return stored.role is role and stored.text == text

    def _spawning(self, sid: str, metadata: CheckpointMetadata) -> tuple[tuple[str, str], ...]:
        """The messages of the checkpoint a namespace's session was spawned from (its input).

        A subgraph starts with its parent's messages; they stay nodes of the parent's session.
        """
        info = self.store.session(sid).metadata.get("langgraph") or {}
        ns = str(info.get("checkpoint_ns", ""))
        if not ns:
            return ()
        parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
        parent_cid = (metadata.get("parents") or {}).get(parent_ns)
        if not parent_cid:
            return ()
        row = self._payloads.get(str(info.get("thread_id")), parent_ns, parent_cid)
        return row.messages if row is not None else ()

    @staticmethod
    def _span(idx: Any, removed: builtins.list[str], chain: str | None) -> builtins.list[str]:
        """The unbroken span of ``chain``'s branch from the first to the last removed message.

        Empty when the removed messages are not all on that branch or kept messages lie between.
        """
        wanted = set(removed)
        path: builtins.list[str] = []
        n = chain
        while n is not None and n not in wanted:
            n = idx.pred.get(n)
        first = removed[0]
        while n is not None:
            path.append(n)
            if n == first:
                break
            n = idx.pred.get(n)
        else:
            return []
        path.reverse()
        seen = set(path)
        return path if wanted <= seen else []

    def _put_row(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        stored: tuple[str, bytes] | None = None,
    ) -> tuple[_Row, int]:
        """Store one checkpoint (payload given as stored by LangGraph, or serialized here)."""
        conf = config["configurable"]
        thread, ns = _named(conf["thread_id"], _ns(conf))
        cid = checkpoint["id"]
        parent_id = conf.get("checkpoint_id")
        type_, blob = stored if stored is not None else self._codec.dumps(checkpoint)
        meta_type, meta_blob = self._codec.dumps(metadata)
        added = 0
        with self.store.atomic():
            sid, idx = self._session(thread, ns, metadata)
            node_id = f"{sid}/{cid}"
            old = self._payloads.get(thread, ns, cid) if node_id in idx.pred else None
            if old is not None:
                row = old._replace(
                    type=type_,
                    checkpoint=blob,
                    metadata_type=meta_type,
                    metadata=meta_blob,
                    run_id=metadata.get("run_id"),
                )
            else:
                parent = self._parent(thread, ns, parent_id, idx.pred) if parent_id else None
                head = idx.head
                latest = self._head_checkpoint(sid, head)
                if latest is None:
                    latest = self._payloads.latest_id(thread, ns)
                nodes, listed = self._graph_nodes(sid, idx, checkpoint, metadata, node_id, parent)
                moves = latest is None or cid > latest
                if node_id in idx.pred:  # payload deleted earlier (pruned), node kept
                    if moves:
                        self.store.set_head(sid, node_id, expected=head)
                else:
                    # the compare (is this checkpoint after the head's?) and the swap happen in
                    # this one write transaction, against the head as it is stored now
                    added = len(self.store.add_nodes(sid, nodes, head=node_id if moves else HEAD))
                    if ns:
                        self._keep_subgraph_turns(thread, ns, metadata, sid, nodes, parent)
                row = _Row(
                    thread,
                    ns,
                    cid,
                    parent_id,
                    sid,
                    node_id,
                    type_,
                    blob,
                    meta_type,
                    meta_blob,
                    metadata.get("run_id"),
                    listed,
                )
            self._payloads.put(row)
        self._remember(row)
        return row, added

    def _keep_subgraph_turns(
        self,
        thread: str,
        ns: str,
        metadata: CheckpointMetadata,
        sid: str,
        nodes: Sequence[Node],
        parent: _Row | None,
    ) -> None:
        """Remember the messages a subgraph's checkpoint added, under its parent's checkpoint.

        The parent namespace's next checkpoint lists them again (the subgraph's result merged into
        its state): its nodes of them are copies (:meth:`_graph_nodes`). A subgraph resumed in
        another process than the one that began it starts from its parent checkpoint's list.
        """
        parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
        parent_cid = (metadata.get("parents") or {}).get(parent_ns)
        if not parent_cid:
            return
        key = (thread, parent_ns, str(parent_cid))
        turns = self._subs.get(key)
        if turns is None:
            if len(self._subs) >= 256:
                self._subs.clear()
            turns = self._subs[key] = {}
            own = sid + "/"
            for mid, nid in parent.messages if parent is not None else ():
                if nid.startswith(own):
                    turns[mid] = nid
        for n in nodes:
            info = n.metadata.get("langgraph")
            if n.kind is Kind.MESSAGE and isinstance(info, dict):
                turns[str(info["message_id"])] = str(info.get("copy_of") or n.id)

    def _parent(self, thread: str, ns: str, cid: str, nodes: Mapping[str, Any]) -> _Row | None:
        """The parent checkpoint's row (from the recent puts when its node is still stored)."""
        key = (thread, ns, cid)
        row = self._recent.get(key)
        if row is not None and row.node_id in nodes:
            return row
        return self._payloads.get(thread, ns, cid)

    def _remember(self, row: _Row) -> None:
        if len(self._recent) >= 256:
            self._recent.clear()
        key = (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        # the payloads dropped; built whole, as NamedTuple._replace costs more than the tuple
        self._recent[key] = _Row(*row[:7], b"", row[8], b"", *row[10:])

    @staticmethod
    def _head_checkpoint(sid: str, head: str | None) -> str | None:
        """The checkpoint id of the head when the head is a checkpoint node (``<session>/<id>``)."""
        if head is None or not head.startswith(sid + "/"):
            return None
        rest = head[len(sid) + 1 :]
        return None if "/" in rest else rest

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint after ``config``'s checkpoint (its parent) and return its config.

        One transaction: the session (created or spawned on first use), the new message nodes, a
        compaction summary for removed messages, the checkpoint node, the head move and the payload.

        Raises:
            GraphError: the store refused the write (nothing is stored).
        """
        return self._put(config, checkpoint, metadata, wait=True)

    def _put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        wait: bool,
    ) -> RunnableConfig:
        meta = get_checkpoint_metadata(config, metadata)
        with self._stored:
            if wait and not self._parent_ready(config, meta):
                self._stored.wait_for(lambda: self._parent_ready(config, meta), self.spawn_wait)
            row, _ = self._put_row(config, checkpoint, meta)
            self._stored.notify_all()
        return {
            "configurable": {
                "thread_id": row.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }

    def put_stored(
        self,
        thread_id: str,
        checkpoint_ns: str,
        parent_id: str | None,
        stored: tuple[str, bytes],
        metadata: CheckpointMetadata,
        *,
        checkpoint_id: str,
    ) -> int:
        """Store a checkpoint as another saver serialized it (the import path); return nodes added.

        The payload bytes are kept as given; the checkpoint is decoded only to read its id, time
        and messages. Storing a checkpoint again replaces its payload and adds no node.

        Args:
            checkpoint_id: The id the other saver keeps the checkpoint under (its row's key).

        Raises:
            ValueError: the payload is no checkpoint of ``checkpoint_id`` (no mapping, another
                id, channel values that are no mapping); nothing is stored.
            GraphError: the store refused the write (nothing is stored).
            Exception: LangGraph's serializer cannot decode the payload.
        """
        checkpoint = self._codec.loads(*stored)
        return self._put_imported(
            thread_id,
            checkpoint_ns,
            parent_id,
            _checked(checkpoint, checkpoint_id),
            metadata,
            stored,
        )

    def put_checkpoint(
        self,
        thread_id: str,
        checkpoint_ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        checkpoint_id: str,
    ) -> int:
        """Store a checkpoint another saver kept decoded or in parts (the import path).

        Like :meth:`put_stored`, for a saver that does not keep one payload per checkpoint
        (``PostgresSaver`` keeps channel values apart): the checkpoint is serialized here with the
        saver's LangGraph serializer. Storing it again replaces its payload and adds no node.

        Returns:
            The number of nodes added.

        Raises:
            ValueError: ``checkpoint`` is no checkpoint of ``checkpoint_id`` (as for
                :meth:`put_stored`); nothing is stored.
            GraphError: the store refused the write (nothing is stored).
        """
        return self._put_imported(
            thread_id, checkpoint_ns, parent_id, _checked(checkpoint, checkpoint_id), metadata, None
        )

    def _put_imported(
        self,
        thread_id: str,
        checkpoint_ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        stored: tuple[str, bytes] | None,
    ) -> int:
        conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        if parent_id:
            conf["checkpoint_id"] = parent_id
        with self._stored:
            _, added = self._put_row({"configurable": conf}, checkpoint, metadata, stored)
            self._stored.notify_all()
        return added

    def put_stored_writes(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[tuple[str, str, int, str, str, bytes]],
    ) -> None:
        """Store pending writes as another saver serialized them (the import path).

        Args:
            writes: ``(task_id, task_path, idx, channel, type, value bytes)`` each; an index already
                stored keeps its write.
        """
        key = (thread_id, checkpoint_ns, checkpoint_id)
        rows = [_Write(*w) for w in writes]
        with self._lock, self.store.atomic():
            self._payloads.put_writes(key, rows, False)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes on ``config``'s checkpoint.

        A write of an index already stored is kept as it was, except the special channels
        (errors, interrupts, resumes, scheduled), whose writes replace the stored ones.
        """
        conf = config["configurable"]
        key = (
            *_named(conf["thread_id"], _ns(conf)),
            str(conf["checkpoint_id"]),
        )
        rows = []
        special = True
        dumps = self._codec.dumps
        for i, (channel, value) in enumerate(writes):
            type_, blob = dumps(value)
            at = WRITES_IDX_MAP.get(channel)
            if at is None:
                special, at = False, i
            rows.append(_Write(task_id, task_path, at, channel, type_, blob))
        with self._lock, self.store.atomic():
            self._payloads.put_writes(key, rows, special)

    # ------------------------------------------------------------------ deletion and copies

    def _sessions_of(self, thread: str) -> builtins.list[str]:
        sids = {self.session_id(thread, ns) for ns in self._payloads.namespaces(thread)}
        try:
            self.store.session(self.session_id(thread))
            sids.add(self.session_id(thread))
        except GraphError:
            pass
        return sorted(sids, key=len)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread: its sessions (nodes, markers), checkpoints and writes."""
        thread = str(thread_id)
        if _unstorable(thread):
            return
        with self._lock:
            self._known.clear()
            self._recent.clear()
            self._legacy.clear()
            with self.store.atomic():
                for sid in self._sessions_of(thread):
                    try:
                        info = self.store.session(sid).metadata.get("langgraph")
                    except GraphError:
                        continue
                    if isinstance(info, dict) and info.get("thread_id") == thread:
                        self.store.delete_session(sid)
                self._payloads.delete_thread(thread)

    def _drop(self, rows: Sequence[_Row]) -> None:
        """Delete these checkpoints' payloads and writes; heads move to the latest checkpoint left."""
        keys = [(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in rows]
        doomed = set(keys)
        for key in keys:
            self._recent.pop(key, None)
        with self.store.atomic():
            for thread, ns in sorted({(r.thread_id, r.checkpoint_ns) for r in rows}):
                left = [
                    r
                    for r in self._payloads.rows(thread, ns, None, None)
                    if (thread, ns, r.checkpoint_id) not in doomed
                ]
                if left:
                    self.store.set_head(left[0].session_id, left[0].node_id)
            self._payloads.delete(keys)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by these runs; their nodes stay."""
        with self._lock:
            rows = self._payloads.run_rows([str(r) for r in run_ids])
            if rows:
                self._drop(rows)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``"keep_latest"``) or delete the threads.

        Raises:
            ValueError: an unknown strategy.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        with self._lock:
            for thread in map(str, thread_ids):
                if strategy == "delete":
                    self.delete_thread(thread)
                    continue
                doomed = []
                for ns in self._payloads.namespaces(thread):
                    doomed.extend(list(self._payloads.rows(thread, ns, None, None))[1:])
                if doomed:
                    self._drop(doomed)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and node of a thread to a new thread linked to its source.

        Raises:
            DuplicateSessionError: the target thread exists; nothing is copied.
        """
        src, dst = str(source_thread_id), str(target_thread_id)
        with self._lock:
            copies: builtins.list[_Row] = []
            writes: dict[tuple[str, str, str], builtins.list[_Write]] = {}
            with self.store.atomic():
                for ns in self._payloads.namespaces(src):
                    old_sid, new_sid = self.session_id(src, ns), self.session_id(dst, ns)
                    self._copy_session(old_sid, new_sid, src, dst, ns)

                    def moved(nid: str, new: str = new_sid) -> str:
                        return _rethread(nid, self.session_id(src), self.session_id(dst), new)

                    rows = list(self._payloads.rows(src, ns, None, None))
                    got = self._payloads.writes([(src, ns, r.checkpoint_id) for r in rows])
                    for r in rows:
                        copies.append(
                            r._replace(
                                thread_id=dst,
                                session_id=new_sid,
                                node_id=moved(r.node_id),
                                messages=tuple((m, moved(n)) for m, n in r.messages),
                            )
                        )
                        if (src, ns, r.checkpoint_id) in got:
                            writes[(dst, ns, r.checkpoint_id)] = got[(src, ns, r.checkpoint_id)]
                self._store_copies(copies, writes)

    def _store_copies(
        self, rows: builtins.list[_Row], writes: dict[tuple[str, str, str], builtins.list[_Write]]
    ) -> None:
        for r in rows:
            self._payloads.put(r)
        for key, ws in writes.items():
            self._payloads.put_writes(key, ws, False)

    def _copy_session(self, old_sid: str, new_sid: str, src: str, dst: str, ns: str) -> None:
        """Copy one session's nodes under ``new_sid``, ids rewritten, markers left behind."""
        try:
            source = self.store.session(old_sid)
        except GraphError:
            return
        meta = {"langgraph": {"thread_id": dst, "checkpoint_ns": ns, "copied_from": src}}
        title = f"LangGraph thread {dst}" + (f" {ns}" if ns else "")
        spawned = source.spawned_from
        parent_sid = self.session_id(dst, ns.rsplit("|", 1)[0] if "|" in ns else "")
        src_root, dst_root = self.session_id(src), self.session_id(dst)
        new_from = _rethread(spawned, src_root, dst_root, parent_sid) if spawned else None
        if new_from is not None and new_from in self.store.index(parent_sid).pred:
            self.store.spawn(parent_sid, new_from, id=new_sid, title=title, metadata=meta)
        else:
            self.store.create_session(title, id=new_sid, metadata=meta)
        idx = self.store.index(old_sid)

        def moved(nid: str) -> NodeId:
            return NodeId(_rethread(nid, src_root, dst_root, new_sid))

        nodes = []
        for n in self.store.nodes(old_sid, list(idx.pred)):
            meta_n = {k: v for k, v in n.metadata.items() if k not in ("written", "rewound")}
            info = meta_n.get("langgraph")
            if isinstance(info, dict) and ("copy_of" in info or "replaces" in info):
                # the links to a subgraph's turn and to an edit's first version name the copies
                links = {
                    k: _rethread(info[k], src_root, dst_root, new_sid) for k in _LINKS if k in info
                }
                meta_n["langgraph"] = {**info, **links}
            nodes.append(
                n.model_copy(
                    update={
                        "id": moved(n.id),
                        "session_id": SessionId(new_sid),
                        "predecessor": moved(n.predecessor) if n.predecessor else None,
                        "covers": tuple(moved(c) for c in n.covers),
                        "metadata": meta_n,
                    }
                )
            )
        self.store.add_nodes(new_sid, nodes, head=moved(idx.head) if idx.head else None)

    # ------------------------------------------------------------------ async (same work)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        for tup in self.list(config, filter=filter, before=before, limit=limit):
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put` (a subgraph's first checkpoint awaits its parent's, see ``spawn_wait``)."""
        meta = get_checkpoint_metadata(config, metadata)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.spawn_wait
        while loop.time() < deadline:
            with self._lock:
                if self._parent_ready(config, meta):
                    break
            await asyncio.sleep(0.001)
        return self._put(config, checkpoint, metadata, wait=False)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        self.prune(thread_ids, strategy=strategy)

"""Session look-up for agents: recent sessions, one session, a bounded window of its transcript, its latest message.

This is the first layer of cross-session memory: not a memory store, but the
saved sessions themselves, looked up on demand. Each action is a thin, read-only function over a
:class:`~graph.store.base.BaseStore`, and each answer is bounded:

* :func:`recent_sessions` lists at most :data:`~memory.caps.LOOKUP_MAX_SESSIONS` (30) sessions, most
  recently updated first;
* :func:`read_transcript` returns a window of at most :data:`~memory.caps.LOOKUP_MAX_MESSAGES` (30)
  messages, :data:`~memory.caps.LOOKUP_DEFAULT_MESSAGES` (10) by default, with the total (None when a
  fresh process read the window back from the head without counting the older messages) and a plain
  sentence saying when older messages were not returned, so an agent reports that instead of guessing.

A session's *transcript* is the messages (nodes of kind ``message``, every role) on the branch of its
head, root first: rewound nodes are not on it, and compaction summaries and events are not messages. In
the sibling layout the covered nodes are not on the summary's branch either, so they are not counted.

Unknown ids raise the graph's own errors (:class:`~graph.errors.UnknownSessionError`,
:class:`~graph.errors.UnknownNodeError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from graph.ids import NodeId, SessionId
from graph.index import IndexView
from graph.models import Node
from graph.store.base import BaseStore, MessageTail
from graph.walks import branch_ids
from memory.caps import LOOKUP_DEFAULT_MESSAGES, LOOKUP_MAX_MESSAGES, LOOKUP_MAX_SESSIONS

__all__ = [
    "SessionInfo",
    "TranscriptWindow",
    "branch_messages",
    "clamp_count",
    "latest_message",
    "open_session",
    "read_transcript",
    "recent_sessions",
]

# Built on first use: a command that lists sessions never builds the transcript window's validator.
_frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SessionInfo(BaseModel):
    """One session as the look-up actions describe it."""

    model_config = _frozen
    id: SessionId
    """The session id."""
    title: str
    """The human title (possibly empty)."""
    created_at: datetime
    """When the session was created (UTC)."""
    updated_at: datetime
    """When content was last appended (UTC); recent sessions are ordered by it, newest first."""
    head: NodeId | None
    """The node the session continues from; None while it is empty."""
    messages: int
    """Messages on the head's branch (the transcript's length, as :func:`read_transcript` counts it)."""
    live_tips: tuple[NodeId, ...]
    """The live tips, newest first: more than one when the conversation forked."""
    parent_session: SessionId | None = None
    """For a spawned sub-agent session: the session that spawned it."""


class TranscriptWindow(BaseModel):
    """A bounded window of a session's transcript (its head's messages), as :func:`read_transcript` returns it."""

    model_config = _frozen
    session_id: SessionId
    """The session read."""
    head: NodeId | None
    """The head whose branch was read."""
    messages: tuple[Node, ...]
    """The messages returned, oldest first: the newest ``count`` before ``before`` (or the head)."""
    total: int | None
    """Every message on the head's branch; None when they were not counted (the window was read back
    from the head and older messages exist: a fresh process reading a long session)."""
    returned: int
    """How many messages were returned (``len(messages)``)."""
    count: int
    """The window size used, after clamping to 1..30."""
    requested: int | None
    """The count the caller asked for (None when it did not say)."""
    older: int | None
    """Messages older than the window that were not returned; the first message returned is number
    ``older + 1`` of ``total``. None: at least one older message exists, not counted."""
    newer: int
    """Messages newer than the window that were not returned (only when ``before`` was given)."""
    before: NodeId | None
    """The node the window ends before, as given (None: the window ends at the head)."""
    note: str
    """A plain sentence saying what was returned and, when older messages were left out, that they were."""

    @property
    def older_omitted(self) -> bool:
        """Whether older messages exist that this window did not return."""
        return self.older is None or self.older > 0

    @property
    def next_before(self) -> NodeId | None:
        """The id to pass as ``before`` to read the older messages, or None when there are none."""
        return self.messages[0].id if self.older_omitted and self.messages else None


def clamp_count(count: int | None) -> int:
    """Return the window size a transcript read uses for ``count``.

    None gives :data:`~memory.caps.LOOKUP_DEFAULT_MESSAGES` (10); anything below 1 gives 1; anything
    above :data:`~memory.caps.LOOKUP_MAX_MESSAGES` (30) gives 30 (a window an agent can always afford).
    """
    if count is None:
        return LOOKUP_DEFAULT_MESSAGES
    return max(1, min(int(count), LOOKUP_MAX_MESSAGES))


def _messages_of(index: IndexView, ids: list[str]) -> list[str]:
    """The message ids among ``ids``, in order (read from the index, no payload decoded)."""
    return [n for n in ids if index.is_message(n)]


def _info(store: BaseStore, session_id: str, messages: Sequence[str] | None = None) -> SessionInfo:
    # Counted and found by the store's queries in a fresh process: listing thirty sessions builds
    # none of their indexes (a million-node session costs its branch walk, not its graph).
    session = store.session(session_id)
    # Every value comes typed from the store: constructed without a validation pass, so a listing
    # that only prints its rows builds no validator.
    return SessionInfo.model_construct(
        id=session.id,
        title=session.title,
        created_at=session.created_at,
        updated_at=session.updated_at,
        head=session.head,
        messages=store.message_count(session_id) if messages is None else len(messages),
        live_tips=tuple(store.tips(session_id)),
        parent_session=session.parent_session,
    )


def recent_sessions(store: BaseStore, limit: int | None = LOOKUP_MAX_SESSIONS) -> list[SessionInfo]:
    """List the most recently updated sessions, newest first.

    Args:
        store: The session store.
        limit: How many, clamped to 1..30 (:data:`~memory.caps.LOOKUP_MAX_SESSIONS`); None means 30.

    Returns:
        At most ``limit`` sessions, ordered by ``updated_at`` newest first (head moves, markers and rewinds
        do not change it). Spawned sub-agent sessions are listed too, with their ``parent_session``.
    """
    n = LOOKUP_MAX_SESSIONS if limit is None else max(1, min(int(limit), LOOKUP_MAX_SESSIONS))
    return [_info(store, s.id) for s in store.sessions(n)]


def open_session(
    store: BaseStore, session_id: str, *, messages: Sequence[str] | None = None
) -> SessionInfo:
    """Open one session by id: its title, times, head, transcript length and live tips.

    Args:
        store: The session store.
        session_id: The session.
        messages: :func:`branch_messages` of the session as it is now, when the caller keeps it (a
            server does): the transcript length is its length instead of a walk of the branch.

    Raises:
        UnknownSessionError: no session has this id.
    """
    return _info(store, session_id, messages)


def _note(
    total: int | None, returned: int, older: int | None, newer: int, before: str | None
) -> str:
    if total == 0:
        return "The session has no messages."
    after = (
        f" The {newer} newer message{'s' if newer != 1 else ''} from node {before} on "
        f"{'were' if newer != 1 else 'was'} left out, as asked."
        if newer
        else ""
    )
    if returned == 0:
        return f"No messages precede node {before}." + after
    if older == 0:
        shown = f"all {returned} messages" if not newer else f"the oldest {returned} messages"
        return f"Returned {shown} of the head's branch; there are no older messages." + after
    again = " Read again with before set to the oldest message returned to see them."
    if older is None or total is None:
        return (
            f"Returned {returned} message{'s' if returned != 1 else ''}; older messages "
            "exist and were not returned (not counted: the window was read back from the head)."
            + again
            + after
        )
    return (
        f"Returned messages {older + 1}-{older + returned} of {total}; {older} older "
        f"message{'s were' if older != 1 else ' was'} not returned." + again + after
    )


def branch_messages(store: BaseStore, session_id: str) -> list[str]:
    """The message ids of the session's head's branch, oldest first (from the index, nothing decoded).

    Raises:
        UnknownSessionError: no session has this id.
    """
    index = store.index(session_id)
    return _messages_of(index, branch_ids(index, index.head))


def read_transcript(
    store: BaseStore,
    session_id: str,
    count: int | None = LOOKUP_DEFAULT_MESSAGES,
    before: str | None = None,
    *,
    messages: Sequence[str] | None = None,
) -> TranscriptWindow:
    """Read a bounded window of the session's transcript: the newest ``count`` messages of its head's branch.

    Only the returned messages' payloads are read. In a fresh process the store walks its rows back
    from the head and stops one message past the window (:meth:`~graph.store.base.BaseStore.message_tail`),
    so a read costs the window, not the session: the older messages are then not counted, and
    :attr:`TranscriptWindow.total` and :attr:`TranscriptWindow.older` are None (there is at least one
    older message) unless the walk reached the root. With the session's index cached, or given
    ``messages``, every count is exact.

    Args:
        store: The session store.
        session_id: The session.
        count: How many messages, clamped to 1..30 (0 and negatives give 1, above 30 gives 30); None or
            left out gives 10 (:func:`clamp_count`).
        before: A node on the head's branch: the window ends just before it, to page back through older
            messages (pass :attr:`TranscriptWindow.next_before`). None: the window ends at the head.
        messages: :func:`branch_messages` of the session as it is now, when the caller keeps it (a
            server does, until the session's index changes); None walks the branch.

    Returns:
        The messages oldest first, with the session id, the total on the branch (when counted), how
        many were returned, how many older ones were left out, and a sentence saying so.

    Raises:
        UnknownSessionError: no session has this id.
        UnknownNodeError: ``before`` is not a node of the session.
        NotOnBranchError: ``before`` is a node of the session but not on its head's branch.
    """
    n = clamp_count(count)
    if messages is not None and (before is None or before in messages):
        ids = messages
        end = ids.index(before) if before is not None else len(ids)
        first = max(0, end - n)
        tail = MessageTail([NodeId(i) for i in ids[first:end]], newer=len(ids) - end, older=first)
        head = store.session(session_id).head
    else:
        head = store.session(session_id).head
        tail = store.message_tail(session_id, n, head, before)
    nodes = store.nodes(session_id, tail.ids) if tail.ids else []
    note = _note(tail.total, len(nodes), tail.older, tail.newer, before)
    if count is not None and count != n:
        note += f" The count {count} was clamped to {n}."
    return TranscriptWindow.model_construct(  # typed values from the store, as in _info
        session_id=SessionId(session_id),
        head=NodeId(head) if head else None,
        messages=tuple(nodes),
        total=tail.total,
        returned=len(nodes),
        count=n,
        requested=count,
        older=tail.older,
        newer=tail.newer,
        before=NodeId(before) if before else None,
        note=note,
    )


def latest_message(store: BaseStore, session_id: str) -> Node | None:
    """Return the newest message on the session's head's branch, or None when it has no message.

    Raises:
        UnknownSessionError: no session has this id.
    """
    n = store.latest_message_id(session_id)
    return None if n is None else store.nodes(session_id, [n])[0]

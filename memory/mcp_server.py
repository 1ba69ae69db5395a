"""``sessiongraph mcp``: the session look-up actions and the memory tools, as an MCP server for agents.

Cross-session memory has two layers. The first is the saved sessions themselves,
looked up on demand (list recent sessions, open one, read a bounded window of its transcript, read
its latest message); the second a memory of plain-text records the agent saves to when the person
confirms and searches when asked. :func:`build_server` offers both to any Model Context Protocol
client (Claude Code, Codex, pi, ...) with the official ``mcp`` SDK:

=================  =====================================================================================
tool               what it does
=================  =====================================================================================
list_sessions      at most 30 sessions, most recently updated first; filters by runtime, project, date
open_session       one session: title, times, head, messages on its head's branch, live tips
read_transcript    a window of 1..30 messages (10 by default) with the totals; pages back with before
latest_message     the newest message of the head's branch
search_sessions    full-text search over every transcript (ranked; filters by session, runtime, date)
memory_search      ranked lexical search over the records; no match is an answer, not an error
memory_get         one record with its citations
memory_save        one record, with optional citations of session/node (after the person confirmed)
memory_update      a ``memory_changes`` list: the validated transaction every writer goes through
memory_status      workspace id, counts, pending turns, last failure
=================  =====================================================================================

The resource ``memory://core.md`` and the prompt ``memory_core`` give the core block as it is injected
into a system prompt (``core.md`` wrapped once in ``<memory-context>``).

With memory off there is no workspace: :func:`build_server` then serves the five look-up tools only
(:class:`SessionTools`), with no memory tool, resource or prompt.

Every answer is a typed result (structured output). An expected failure (an unknown id, a refused
write, a cap, a secret) is raised as ``ToolError``, so its message reaches the model; a secret is
named by kind and position, never by value. Before each call the server imports whatever the
runtimes appended to the followed transcript folders (:class:`graph.importers.watch.TranscriptWatcher`),
so an agent never reads a stale store. Calls are served one at a time (one store connection, one
workspace connection).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field

from graph.cli.commands import resolve_session
from graph.errors import GraphError
from graph.ids import NodeId, SessionId
from graph.importers.watch import TranscriptWatcher
from graph.models import Kind, Node, Role, Session, to_micros, utcnow
from graph.store.base import BaseStore, session_origin, unknown_runtime
from memory import caps
from memory.caps import CapExceeded
from memory.changes import Change, ChangeSet, CreateRecord, Destination, SourceRef
from memory.errors import MemoryLayerError
from memory.interface import wrap_context
from memory.lookup import (
    SessionInfo,
    branch_messages,
    latest_message,
    open_session,
    read_transcript,
)
from memory.reading import record_view, search_page, workspace_status
from memory.records import CORE_TOPIC, source_id
from memory.secrets import scan
from memory.tombstones import purge_expired
from memory.transactions import plan
from memory.workspace import MemoryWorkspace

__all__ = [
    "CONFIRMED_SESSION",
    "MAX_MESSAGE_CHARS",
    "MemoryTools",
    "SessionTools",
    "build_server",
]

MAX_MESSAGE_CHARS = 4_000
"""Characters of one message a transcript answer carries; longer text is cut and says so."""

CONFIRMED_SESSION = "mcp:confirmed"
"""The session id of the source a ``memory_save`` without citations cites: the statement itself, as
the person confirmed it through the agent (the floor of a citation, a snippet with no ids)."""

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

_frozen = ConfigDict(frozen=True, extra="forbid")

_SESSION = Annotated[
    str, Field(description="A session id (from list_sessions) or a unique prefix.")
]
_RUNTIME = Annotated[
    str | None, Field(description="Only sessions of this runtime: 'claude-code', 'codex' or 'pi'.")
]
_PROJECT = Annotated[
    str | None,
    Field(
        description="Only sessions whose working directory is this folder or lies under it "
        "(an absolute path, as list_sessions shows it in project)."
    ),
]
_SINCE = Annotated[
    str | None, Field(description="Only sessions updated since this ISO date or time (UTC).")
]


# ---------------------------------------------------------------- answers


class SessionEntry(SessionInfo):
    """One session as the tools describe it."""

    runtime: str
    """The runtime whose transcript it came from (``claude-code``, ``pi``, ``codex``), or empty."""
    project: str
    """The working directory the runtime recorded for it, or empty."""


class SessionList(BaseModel):
    """The answer of ``list_sessions``."""

    model_config = _frozen
    sessions: list[SessionEntry]
    """Most recently updated first."""
    returned: int
    """``len(sessions)``."""
    limit: int
    """The limit used, after clamping to 1..30."""
    note: str
    """A plain sentence about what was returned."""


class Message(BaseModel):
    """One transcript message."""

    model_config = _frozen
    id: NodeId
    """The node id (pass it as ``before`` to read older messages)."""
    role: Role
    created_at: datetime
    """UTC."""
    text: str
    """The plain text (tool calls and results included as text), at most 4000 characters."""
    truncated: int = 0
    """Characters cut from the end of ``text`` (0 when it is whole)."""


class Transcript(BaseModel):
    """The answer of ``read_transcript``: a window of the head's transcript, oldest first."""

    model_config = _frozen
    session_id: SessionId
    head: NodeId | None
    messages: list[Message]
    total: int | None
    """Every message on the head's branch; None when not counted (older messages exist)."""
    returned: int
    count: int
    """The window size used, after clamping to 1..30."""
    older: int | None
    """Older messages not returned (read them with ``before`` = ``next_before``); None when some
    exist but were not counted (the window was read back from the head)."""
    newer: int
    """Newer messages not returned (only when ``before`` was given)."""
    next_before: NodeId | None
    """The id to pass as ``before`` for the older messages; None when there are none."""
    note: str
    """A plain sentence: tell the person when older messages were not returned, do not guess them."""


class Latest(BaseModel):
    """The answer of ``latest_message``."""

    model_config = _frozen
    session_id: SessionId
    message: Message | None
    """None when the session has no message."""
    note: str


class TranscriptHit(BaseModel):
    """One match of ``search_sessions``."""

    model_config = _frozen
    session_id: SessionId
    node_id: NodeId
    created_at: datetime
    kind: Kind
    role: Role | None
    snippet: str
    """Plain text around the match."""
    spans: list[tuple[int, int]]
    """``[start, end)`` character offsets of the matched terms in ``snippet``."""
    rank: float
    """bm25; lower is better."""


class TranscriptHits(BaseModel):
    """The answer of ``search_sessions``."""

    model_config = _frozen
    query: str
    hits: list[TranscriptHit]
    returned: int
    offset: int
    note: str


class CitationOut(BaseModel):
    """A record's citation: the archived source and where it came from."""

    model_config = _frozen
    source_id: str
    """The archived source (``s-...``): cite it again in ``memory_update``."""
    label: str
    snippet: str
    session_id: str
    node_id: str


class RecordOut(BaseModel):
    """One memory record."""

    model_config = _frozen
    record_id: str
    topic: str
    headings: list[str]
    content: str
    tags: list[str] = []
    time: str | None = None
    citations: list[CitationOut] = []


class MemoryHits(BaseModel):
    """The answer of ``memory_search``."""

    model_config = _frozen
    query: str
    records: list[RecordOut]
    """Best first."""
    total: int
    """Records matching over every page."""
    page: int
    pages: int
    note: str


class Saved(BaseModel):
    """The answer of ``memory_save`` and ``memory_update``."""

    model_config = _frozen
    revision: int
    """The workspace revision after the transaction."""
    created: list[str]
    updated: list[str]
    deleted: list[str]
    moved: list[str]
    note: str


class PendingSession(BaseModel):
    """A session that owes turns to memory."""

    model_config = _frozen
    session_id: str
    title: str
    pending: int


class Status(BaseModel):
    """The answer of ``memory_status``."""

    model_config = _frozen
    workspace_id: str
    revision: int
    records: int
    topics: int
    sources: int
    deleted_in_grace: int
    pending_turns: int
    pending_sessions: list[PendingSession]
    """At most 30, most turns first."""
    last_failure: str | None


class CitationIn(BaseModel):
    """A citation ``memory_save`` attaches: a node of a session (from the look-up tools)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    session_id: str = Field(description="The session id (from list_sessions or search_sessions).")
    node_id: str = Field(description="The message's node id (from read_transcript).")
    snippet: str = Field(
        "", description="A short excerpt of that message supporting the record (at most 500 chars)."
    )
    label: str = Field("source", description="A short keyword shown as the link text.")


# ---------------------------------------------------------------- tools


def _expected(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn the expected failures of the layers below into ``ToolError`` with their message."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except (GraphError, MemoryLayerError, CapExceeded, ValueError, LookupError) as e:
            raise ToolError(str(e)) from e

    return run


def _message(node: Node) -> Message:
    text = node.text
    cut = max(0, len(text) - MAX_MESSAGE_CHARS)
    return Message(
        id=node.id,
        role=node.role,
        created_at=node.created_at,
        text=text[:MAX_MESSAGE_CHARS] if cut else text,
        truncated=cut,
    )


def _source_of(node: Node) -> str:
    """The id the archive gives ``node`` (content-addressed, so known before it is archived)."""
    return source_id(node.session_id, node.id, node.role.value, node.text)


def _since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"since {value!r} is not a date: give an ISO date or time such as 2026-11-30"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _runtime(value: str | None) -> str | None:
    """A ``runtime`` filter, one of :data:`graph.store.base.RUNTIMES` (another would match nothing)."""
    why = unknown_runtime(value or None)
    if why is not None:
        raise ToolError(f"runtime {why}")
    return value or None


class SessionTools:
    """The session look-up tools over one session store.

    With memory off these are all :func:`build_server` serves.

    Args:
        store: The session store.
        follow: Transcript files and directories to import from before each call (empty: none).
    """

    def __init__(self, store: BaseStore, follow: Sequence[Path] = ()) -> None:
        self.store = store
        self.watcher = TranscriptWatcher(store, follow) if follow else None
        self._lock = threading.Lock()

    def refresh(self) -> int:
        """Import what changed in the followed folders; return the nodes added."""
        if self.watcher is None:
            return 0
        return self.watcher.poll_once().nodes_added

    def start_catching_up(self) -> threading.Thread | None:
        """Start the first refresh (every followed file is read once) in a background thread.

        The server answers ``initialize`` and ``tools/list`` meanwhile; a tool call waits for it, as
        for any refresh. Returns the thread, or None when nothing is followed.
        """
        if self.watcher is None:
            return None

        def catch_up() -> None:
            with self._lock:
                try:
                    self.refresh()
                except (GraphError, OSError) as e:  # the first call tries again and reports it
                    log.warning("catching up with the followed folders failed: %s", e)

        thread = threading.Thread(target=catch_up, name="sessiongraph-catch-up", daemon=True)
        thread.start()
        return thread

    def _entry(self, session: Session) -> SessionEntry:
        info = open_session(self.store, session.id)
        runtime, project = session_origin(session.metadata)
        return SessionEntry(**info.model_dump(), runtime=runtime or "", project=project or "")

    def _session(self, ref: str) -> Session:
        try:
            return resolve_session(self.store, ref)
        except GraphError as e:
            raise ToolError(f"{e}; call list_sessions to see the session ids") from e

    # -- the session look-up layer

    def list_sessions(
        self,
        limit: Annotated[int, Field(description="How many, clamped to 1..30.")] = 30,
        runtime: _RUNTIME = None,
        project: _PROJECT = None,
        since: _SINCE = None,
    ) -> SessionList:
        """List the saved sessions, most recently updated first (at most 30)."""
        n = max(1, min(int(limit), caps.LOOKUP_MAX_SESSIONS))
        found = self.store.sessions(
            n, runtime=_runtime(runtime), project=project or None, since=_since(since)
        )
        rows = [self._entry(s) for s in found]
        filters = ", ".join(
            f"{k} {v}"
            for k, v in (("runtime", runtime), ("project", project), ("since", since))
            if v
        )
        note = f"{len(rows)} session(s), most recently updated first" + (
            f" ({filters})" if filters else ""
        )
        if len(rows) == n:
            note += f"; at most {n} are listed, narrow with runtime, project or since for others"
        return SessionList(sessions=rows, returned=len(rows), limit=n, note=note + ".")

    def open_session(self, session_id: _SESSION) -> SessionEntry:
        """Open one session by id (or a unique prefix)."""
        return self._entry(self._session(session_id))

    def read_transcript(
        self,
        session_id: _SESSION,
        count: Annotated[
            int | None, Field(description="Messages to read, clamped to 1..30; 10 when left out.")
        ] = None,
        before: Annotated[
            str | None,
            Field(
                description="A node id of the transcript: read the messages before it "
                "(next_before of the previous answer pages back)."
            ),
        ] = None,
    ) -> Transcript:
        """Read a window of a session's transcript."""
        sid = self._session(session_id).id
        # A server keeps the session's index cached, so its windows carry exact totals.
        w = read_transcript(
            self.store, sid, count, before, messages=branch_messages(self.store, sid)
        )
        return Transcript(
            session_id=w.session_id,
            head=w.head,
            messages=[_message(m) for m in w.messages],
            total=w.total,
            returned=w.returned,
            count=w.count,
            older=w.older,
            newer=w.newer,
            next_before=w.next_before,
            note=w.note,
        )

    def latest_message(self, session_id: _SESSION) -> Latest:
        """Read the newest message of a session's head's branch."""
        sid = SessionId(self._session(session_id).id)
        node = latest_message(self.store, sid)
        note = (
            "The newest message of the head's branch." if node else "The session has no messages."
        )
        return Latest(session_id=sid, message=_message(node) if node else None, note=note)

    def search_sessions(
        self,
        query: Annotated[str, Field(description="The words to find (any text is accepted).")],
        session_id: Annotated[
            str | None, Field(description="Only this session (id or unique prefix).")
        ] = None,
        runtime: _RUNTIME = None,
        project: _PROJECT = None,
        since: _SINCE = None,
        limit: Annotated[int, Field(description="How many, clamped to 1..50.")] = 20,
        offset: Annotated[int, Field(description="Matches to skip (paging).")] = 0,
    ) -> TranscriptHits:
        """Search every transcript's text."""
        n = max(1, min(int(limit), caps.MAX_RESULTS_PER_PAGE))
        sid = self._session(session_id).id if session_id else None
        hits = self.store.search(
            query[: caps.MAX_QUERY_CHARS],
            session=sid,
            since=_since(since),
            runtime=_runtime(runtime),
            project=project,
            limit=n,
            offset=max(0, int(offset)),
        )
        out = [
            TranscriptHit(
                session_id=h.session_id,
                node_id=h.node_id,
                created_at=h.created_at,
                kind=h.kind,
                role=h.role,
                snippet=h.snippet,
                spans=[tuple(s) for s in h.spans],
                rank=h.rank,
            )
            for h in hits
        ]
        if not out:
            note = "No message matches; try other words, or list_sessions to browse."
        else:
            note = f"{len(out)} match(es), best first; open_session/read_transcript show context."
            if len(out) == n:
                note += f" More may follow: search again with offset {offset + n}."
        return TranscriptHits(
            query=query, hits=out, returned=len(out), offset=max(0, int(offset)), note=note
        )

    def call(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """Wrap a tool: one call at a time, the store refreshed first, expected failures as ToolError."""
        guarded = _expected(fn)

        @functools.wraps(fn)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with self._lock:
                _expected(self.refresh)()
                return guarded(*args, **kwargs)

        return run


class MemoryTools(SessionTools):
    """The look-up tools and the memory tools over one session store and one memory workspace.

    Args:
        store: The session store.
        workspace: The memory workspace.
        follow: Transcript files and directories to import from before each call (empty: none).
    """

    def __init__(
        self, store: BaseStore, workspace: MemoryWorkspace, follow: Sequence[Path] = ()
    ) -> None:
        super().__init__(store, follow)
        self.workspace = workspace

    def _record(self, ref: str) -> RecordOut:
        v = record_view(self.workspace, ref)
        r = v.record
        return RecordOut(
            record_id=r.id,
            topic=r.topic,
            headings=list(r.headings),
            content=r.content,
            tags=list(r.tags),
            time=r.time,
            citations=[
                CitationOut(
                    source_id=c.source_id,
                    label=c.label,
                    snippet=c.snippet,
                    session_id=c.session_id,
                    node_id=c.node_id,
                )
                for c in v.citations
            ],
        )

    def memory_search(
        self,
        query: Annotated[str, Field(description="The person's words (at most 256 characters).")],
        limit: Annotated[int, Field(description="Records per page, clamped to 1..50.")] = 10,
        page: Annotated[int, Field(description="1-based page.")] = 1,
    ) -> MemoryHits:
        """Search the memory records lexically, best first."""
        purge_expired(self.workspace)
        per_page = max(1, min(int(limit), caps.MAX_RESULTS_PER_PAGE))
        result = search_page(self.workspace, query, max(1, int(page)), per_page)
        records = [self._record(h.record_id) for h in result.hits]
        note = (
            f"{result.total} record(s) match; page {result.page} of {result.pages}."
            if records
            else "No memory record matches these words: say that nothing was found."
        )
        return MemoryHits(
            query=result.query,
            records=records,
            total=result.total,
            page=result.page,
            pages=result.pages,
            note=note,
        )

    def memory_get(
        self,
        record_id: Annotated[str, Field(description="A record id (m-...) or a unique prefix.")],
    ) -> RecordOut:
        """Read one record by id (or a unique prefix)."""
        purge_expired(self.workspace)
        return self._record(record_id)

    def _apply(self, changes: ChangeSet, what: str) -> Saved:
        plan = self.workspace.apply(changes)
        if not plan.changed:
            note = "Nothing changed: memory already holds exactly this."
        else:
            note = f"{what}; revision {self.workspace.revision}."
        return Saved(
            revision=self.workspace.revision,
            created=list(plan.created),
            updated=list(plan.updated),
            deleted=list(plan.deleted),
            moved=list(plan.moved),
            note=note,
        )

    def memory_save(
        self,
        content: Annotated[
            str, Field(description="The statement the person confirmed: one paragraph, plain text.")
        ],
        topic: Annotated[
            str,
            Field(description="Topic path, lowercase segments joined by '/'; 'core' is injected."),
        ] = "notes",
        headings: Annotated[
            list[str] | None, Field(description="Heading path inside the topic, outermost first.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Up to 16 short tags.")] = None,
        time: Annotated[
            str | None, Field(description="When it holds or was said, e.g. 2026-11-30.")
        ] = None,
        citations: Annotated[
            list[CitationIn] | None,
            Field(description="Where it comes from: session and node ids, with a snippet."),
        ] = None,
    ) -> Saved:
        """Save one record, citing the given session nodes (or, with none, the statement itself).

        The record is validated before anything is archived, so a refused save changes no byte.
        """
        turns: list[Node] = []
        refs: list[SourceRef] = []
        for c in citations or []:
            sid = self._session(c.session_id).id
            node = self.store.nodes(sid, [c.node_id])[0]
            snippet = c.snippet or " ".join(node.text.split())[:200]
            if not c.snippet and scan(snippet):
                snippet = ""  # the cited turn holds a secret: cite it without an excerpt
            turns.append(node)
            refs.append(SourceRef(source=_source_of(node), label=c.label, snippet=snippet))
        if not turns:
            node = Node(
                id=NodeId("confirmed"),
                session_id=SessionId(CONFIRMED_SESSION),
                predecessor=None,
                kind=Kind.MESSAGE,
                role=Role.USER,
                content=content,
                created_at=datetime.now(UTC),
            )
            turns.append(node)
            refs.append(SourceRef(source=_source_of(node), label="confirmed by the person"))
        change = CreateRecord(
            content=content,
            sources=tuple(refs),
            destination=Destination(topic_path=topic, headings=tuple(headings or ())),
            tags=tuple(tags or ()),
            time=time,
        )
        changes = ChangeSet(changes=(change,))
        ws = self.workspace
        new = {r.source for r in refs}
        plan(
            ws.state(),
            changes,
            archived=lambda ids: {i for i in ids if i in new} | {x.id for x in ws.sources(ids)},
            batch=None,
            now=to_micros(utcnow()),
        )
        ws.archive(turns)
        return self._apply(changes, f"Saved to {topic}")

    def memory_update(
        self,
        memory_changes: Annotated[
            list[Change], Field(description="The changes, applied in order, all or nothing.")
        ],
    ) -> Saved:
        """Apply a list of record changes as one validated transaction."""
        changes = ChangeSet(changes=tuple(memory_changes))
        return self._apply(changes, f"Applied {len(memory_changes)} change(s)")

    def memory_status(self) -> Status:
        """Describe the memory workspace."""
        purge_expired(self.workspace)
        st = workspace_status(self.workspace, self.store)
        pending = sorted(st.pending, key=lambda p: -p[2])
        failure = st.last_failure
        return Status(
            workspace_id=st.workspace_id,
            revision=st.revision,
            records=st.records,
            topics=st.topics,
            sources=st.sources,
            deleted_in_grace=st.tombstones,
            pending_turns=sum(p[2] for p in st.pending),
            pending_sessions=[
                PendingSession(session_id=s, title=t, pending=n)
                for s, t, n in pending[: caps.LOOKUP_MAX_SESSIONS]
            ],
            last_failure=(
                f"{failure[1]} in session {failure[0]} at "
                f"{datetime.fromtimestamp(failure[2] / 1e6, UTC).isoformat(timespec='seconds')}"
                if failure
                else None
            ),
        )

    def core_block(self) -> str:
        """The core block as injected: ``core.md`` wrapped once in ``<memory-context>``, or ``""``."""
        ws = self.workspace
        if not ws.records(CORE_TOPIC):
            return ""
        path = ws.views_path / "core.md"
        if not path.exists():
            with ws.write_lock():
                ws.render_views()
        return wrap_context(path.read_text("utf-8").strip())


# ---------------------------------------------------------------- the server

_LOOKUP_INSTRUCTIONS = """\
sessiongraph holds this person's saved agent sessions (Claude Code, Codex, pi).
To answer "what did I say in that session", list_sessions (or search_sessions with their words), open the
one session that clearly matches (ask which one when several do), then read_transcript; say so when older
messages were not returned instead of guessing."""

_INSTRUCTIONS = (
    _LOOKUP_INSTRUCTIONS.replace(
        "(Claude Code, Codex, pi).", "(Claude Code, Codex, pi) and a plain-text memory."
    )
    + """ Search memory with memory_search when the person asks
what you remember; save only what they confirmed, after showing them the draft (memory_save)."""
)

_DESCRIPTIONS: dict[str, str] = {
    "list_sessions": (
        "List this person's saved agent sessions, most recently updated first: at most 30 (limit is "
        "clamped to 1..30). Filter by runtime ('claude-code', 'codex', 'pi'), by project (a folder: "
        "sessions whose working directory is it or lies under it) and by since (an ISO date: only sessions updated since then). Each entry "
        "has the session id, title, times, message count and live tips. Match the person's words "
        "against titles and projects; open one only when exactly one matches, otherwise ask."
    ),
    "open_session": (
        "Open one session by its id (or a unique prefix of it): title, created and updated times, "
        "head, number of messages on its head's branch, live tips, and the session that spawned it. "
        "An unknown id is an error naming it."
    ),
    "read_transcript": (
        "Read the most recent messages of a session's transcript (its head's branch), oldest first: "
        "count messages, clamped to 1..30, 10 when left out. The answer has the total, how many "
        "were returned, and 'older' (how many older messages were not returned); a long session "
        "read from its newest messages gives null for both: older messages exist, uncounted. When "
        "older is not 0 (null or more), tell the person that older messages were not read rather than guessing them; to read them, "
        "call again with before = next_before. Each message's text is cut at 4000 characters."
    ),
    "latest_message": "Read the newest message of a session's head's branch (null when it has none).",
    "search_sessions": (
        "Full-text search over every saved transcript's messages, best match first: returns the "
        "session id, node id, time, role and a snippet around the match. Every word must occur; "
        "'a phrase' in double quotes, prefix* and -word (exclude) are understood. Optional filters: "
        "session_id, runtime, project, since (ISO date); limit 1..50 (default 20), offset to page. "
        "Any words are accepted. No match is an empty list, not an error. Use read_transcript "
        "(with before = the node after the hit) to read around a hit."
    ),
    "memory_search": (
        "Search the person's saved memory records with their words (lexical, best first; not "
        "semantic: try the words they would have used). limit 1..50 (default 10), page from 1. "
        "No match is a normal answer: tell the person nothing was found."
    ),
    "memory_get": (
        "Read one memory record by id (or a unique prefix): topic, headings, content, tags, time and "
        "its citations (source id, snippet, session and node it came from)."
    ),
    "memory_save": (
        "Save one plain-text statement to memory. FIRST show the person the exact draft and save only "
        "what they confirmed, worded as they confirmed it; never save without asking. content is one "
        "paragraph (at most 2000 characters, no secrets: keys, tokens and passwords are refused). "
        "topic is a lowercase path like 'notes' or 'projects/app' ('core' is injected into every "
        "session's system prompt: use it only for what should always be known). Cite where it comes "
        "from with citations [{session_id, node_id, snippet}] taken from read_transcript or "
        "search_sessions; without citations the statement itself is kept as its source."
    ),
    "memory_update": (
        "Change memory records in one validated, all-or-nothing transaction (memory_changes, the same "
        "changes every memory writer hands in): update_record {memory_id, content, sources} replaces "
        "a record's full content and citations (keep its citations: copy source_id, label, snippet "
        "from memory_get as source, label, snippet); delete_record {memory_id}; move_records "
        "{memory_ids, destination}; create_record {content, sources, destination}. Show the person "
        "what will change and do it only when they confirmed. A refused change changes nothing and "
        "says why."
    ),
    "memory_status": (
        "Describe the memory workspace: id, revision, record, topic and source counts, deleted records "
        "still undoable, turns the sessions still owe memory (at most 30 sessions listed), and the "
        "last failure."
    ),
}


def build_server(
    store: BaseStore, workspace: MemoryWorkspace | None, follow: Sequence[Path] = ()
) -> MCPServer:
    """Return the MCP server of the look-up and memory tools over ``store`` and ``workspace``.

    Args:
        store: The session store (the caller closes it).
        workspace: The memory workspace (the caller closes it); None when memory is off: the server
            then offers the session look-up tools only, with no memory tool, resource or prompt.
        follow: Transcript files or directories: read once in the background from the start (the
            catch-up), then for what changed before each call.
    """
    tools = (
        SessionTools(store, follow) if workspace is None else MemoryTools(store, workspace, follow)
    )
    tools.start_catching_up()
    instructions = _INSTRUCTIONS if workspace is not None else _LOOKUP_INSTRUCTIONS
    server = MCPServer(
        name="sessiongraph", instructions=instructions, version="0.1.0", log_level="WARNING"
    )
    for name, description in _DESCRIPTIONS.items():
        if hasattr(tools, name):
            server.add_tool(tools.call(getattr(tools, name)), name=name, description=description)
    if not isinstance(tools, MemoryTools):
        return server
    memory = tools

    core_description = (
        "The person's core memory as injected into a system prompt: core.md wrapped in "
        "<memory-context>; empty when the core topic holds nothing."
    )

    @server.resource("memory://core.md", name="core", description=core_description)
    def core_md() -> str:
        return memory.call(memory.core_block)()

    @server.prompt(name="memory_core", description=core_description)
    def memory_core() -> str:
        return memory.call(memory.core_block)()

    return server

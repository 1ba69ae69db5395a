"""The memory package's quick commands, printed without typer: what ``recent``, ``read``, ``latest`` and ``memory status`` show.

Each function prints one command's answer from an open store; the typer commands of
:mod:`memory.cli.lookup` and :mod:`memory.cli.memory` call them, and so does
:func:`graph.cli.quick.run`, which answers the plain forms of these commands without typer (found
through the ``sessiongraph.quick`` entry points, which name :data:`RECENT`, :data:`READ`,
:data:`LATEST` and :data:`MEMORY_STATUS`)::

    sessiongraph [--db PATH] [-q] recent [--limit N] [--full] [--json]
    sessiongraph [--db PATH] [-q] read SESSION [--count N | -n N] [--before NODE] [--full] [--json]
    sessiongraph [--db PATH] [-q] latest SESSION [--json]
    sessiongraph [--db PATH] [-q] memory [-w DIR|URL] [--views DIR] status [--full] [--json]

Text from transcripts is printed with its control characters made visible; ``--full`` prints whole ids
and ``--json`` always does. The module imports neither typer nor, until a table is drawn, rich.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from graph.cli.quick import (
    QuickCommand,
    content_parts,
    id_column,
    node_json,
    resolve_node,
    resolve_session,
    session_short_forms,
)
from graph.terminal import dump_json, markup, short_forms
from memory.caps import LOOKUP_MAX_SESSIONS

if TYPE_CHECKING:
    from rich.console import Console

    from graph.models import Node
    from graph.store.base import BaseStore
    from memory.config import MemoryConfig, WorkspaceLocation
    from memory.lookup import SessionInfo, TranscriptWindow
    from memory.workspace import MemoryWorkspace

__all__ = [
    "LATEST",
    "MEMORY_STATUS",
    "READ",
    "RECENT",
    "latest",
    "memory_errors",
    "memory_settings",
    "memory_status",
    "open_workspace",
    "read",
    "recent",
    "show_status",
    "when",
    "window_json",
]

RECENT = QuickCommand(
    "recent",
    "memory.cli.quick:recent",
    flags={"--full": "full", "--json": "json"},
    numbers={"--limit": ("limit", LOOKUP_MAX_SESSIONS, 0)},
)
"""``recent [--limit N] [--full] [--json]``: the typer command's options and defaults."""

READ = QuickCommand(
    "read",
    "memory.cli.quick:read",
    arguments=1,
    flags={"--full": "full", "--json": "json"},
    numbers={"--count": ("count", None, 0), "-n": ("count", None, 0)},
    texts={"--before": ("before", None)},
)
"""``read SESSION [--count N | -n N] [--before NODE] [--full] [--json]``."""

LATEST = QuickCommand("latest", "memory.cli.quick:latest", arguments=1, flags={"--json": "json"})
"""``latest SESSION [--json]``."""

MEMORY_STATUS = QuickCommand(
    "memory status",
    "memory.cli.quick:memory_status",
    flags={"--full": "full", "--json": "json"},
    group_texts={
        "--workspace": ("workspace", None),
        "-w": ("workspace", None),
        "--views": ("views", None),
    },
    store_later=True,
    creates=True,
)
"""``memory [-w DIR|URL] [--views DIR] status [--full] [--json]``: the workspace is judged before
the store is opened, as the typer group's callback does."""

_TEXT_WIDTH = 2_000
"""Characters of one message shown in a table before it is cut (``--json`` prints everything)."""


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, emoji=False)


def _dump(data: Any) -> None:
    print(dump_json(data))


def _message_text(node: Node) -> str:
    """A message's content for display: its text, with tool calls and images named in brackets."""
    text = "\n".join(content_parts(node))
    if len(text) > _TEXT_WIDTH:
        text = (
            text[:_TEXT_WIDTH] + f"… ({len(text) - _TEXT_WIDTH} more characters; --json shows all)"
        )
    return text


def window_json(window: TranscriptWindow) -> dict[str, Any]:
    """A transcript window as JSON-shaped data: its counts and note, then the messages (with ``text``)."""
    return window.model_dump(mode="json", exclude={"messages"}) | {
        "older_omitted": window.older_omitted,
        "next_before": window.next_before,
        "messages": [node_json(m) for m in window.messages],
    }


def _info_table(rows: list[SessionInfo], shorts: dict[str, str], full: bool) -> str:
    """The ``recent`` table, drawn as plain text like ``sessions`` (no rich to import).

    Ids are never cut: short forms whole on one line, or whole and folded with ``--full``.
    """
    from graph import plain_table
    from graph.plain_table import Column
    from graph.terminal import visible

    def name(sid: str | None) -> str:
        return "" if not sid else sid if full else shorts.get(sid, sid)

    spawned = any(s.parent_session for s in rows)
    ids = Column("session", "fold" if full else "fixed", minimum=12)
    columns = [
        ids,
        Column("updated"),
        Column("msgs", right=True),
        Column("tips", right=True),
        Column("title", "wrap", minimum=10),
    ]
    if spawned:
        columns.append(Column("spawned by", ids.mode, minimum=12))
    table = [
        [
            visible(name(s.id)),
            s.updated_at.strftime("%Y-%m-%d %H:%M"),
            str(s.messages),
            str(len(s.live_tips)),
            visible(" ".join(s.title.split())),
            *([visible(name(s.parent_session))] if spawned else []),
        ]
        for s in rows
    ]
    return plain_table.render(columns, table, plain_table.terminal_width())


def recent(store: BaseStore, *, limit: int, full: bool, json: bool) -> None:
    """Print the most recently updated sessions (``limit`` clamped to 1..30), newest first.

    Args:
        store: The session store.
        limit: At most this many sessions (clamped to 1..30).
        full: Whole ids instead of their short forms.
        json: One JSON array (whole ids, RFC 3339 UTC times) instead of the table.
    """
    from memory.lookup import recent_sessions

    rows = recent_sessions(store, limit)
    if json:
        _dump([s.model_dump(mode="json") for s in rows])
        return
    if not rows:
        print("no sessions; import some with `sessiongraph import`")
        return
    print(_info_table(rows, session_short_forms(store), full))
    print(f"{len(rows)} session(s), most recently updated first")


def read(
    store: BaseStore,
    session: str,
    *,
    count: int | None,
    before: str | None,
    full: bool,
    json: bool,
) -> None:
    """Print a bounded window of a session's transcript (its head's branch), oldest first, with totals.

    Args:
        store: The session store.
        session: A session id, or a unique prefix or suffix of one.
        count: Messages to read, clamped to 1..30 (None: 10).
        before: End the window before this node: an id, a unique prefix or a short form.
        full: Whole ids instead of their short forms.
        json: The window as JSON (:func:`window_json`) instead of the table.

    Raises:
        UnknownSessionError: no session matches ``session``.
        UnknownNodeError: ``before`` names no node of the session.
        AmbiguousReferenceError: ``session`` or ``before`` matches several.
        NotOnBranchError: ``before`` is not on the head's branch.
    """
    from rich.table import Table

    from memory.lookup import read_transcript

    sid = resolve_session(store, session).id
    if before is not None and sid not in store.locate([before]).values():
        before = resolve_node(store, sid, before)  # a prefix or suffix: matched among all nodes
    window = read_transcript(store, sid, count, before)
    if json:
        _dump(window_json(window))
        return
    # Short forms among the window's ids: a suffix shared with an unlisted node of the session is
    # refused back as ambiguous (naming both), never taken for the wrong node.
    listed = [m.id for m in window.messages]
    names = {n: n for n in listed} if full else short_forms(listed)
    counted = (
        f"{window.returned} of {window.total} messages"
        if window.total is not None
        else f"the newest {window.returned} messages (older ones exist, not counted)"
        if not window.newer
        else f"{window.returned} messages (older ones exist, not counted)"
    )
    table = Table()
    last = window.older + window.returned if window.older is not None else window.returned
    table.add_column("#", justify="right", no_wrap=True, min_width=len(str(last)) + 1)
    id_column(table, "node", [names[m.id] for m in window.messages], full)
    table.add_column("time", no_wrap=True, min_width=16)
    table.add_column("role", no_wrap=True, min_width=9)
    table.add_column("text", ratio=1, min_width=20)
    # Uncounted older messages: number the window back from its newest message (-1, -2, ...).
    numbers = (
        [str(i) for i in range(window.older + 1, window.older + window.returned + 1)]
        if window.older is not None
        else [str(-(window.newer + window.returned - k)) for k in range(window.returned)]
    )
    for i, m in zip(numbers, window.messages, strict=True):
        table.add_row(
            i,
            markup(names[m.id]),
            m.created_at.strftime("%Y-%m-%d %H:%M"),
            m.role.value,
            markup(_message_text(m)),
        )
    console = _console()
    # The title is a line of its own: a table title is wrapped and cut to the table's width.
    console.print(f"{markup(window.session_id)}: {counted}", soft_wrap=True)
    console.print(table)
    console.print(markup(window.note))
    if window.next_before:
        # The whole id: paging back with it walks from the head, as this read did; a short form
        # is accepted too but is matched among every node of the session first.
        console.print(f"older: --before {markup(window.next_before)}", soft_wrap=True)


def latest(store: BaseStore, session: str, *, json: bool) -> None:
    """Print the newest message of a session's head's branch (or say it has none).

    Args:
        store: The session store.
        session: A session id, or a unique prefix or suffix of one.
        json: The message as JSON (``null`` when there is none) instead of text.

    Raises:
        UnknownSessionError: no session matches ``session``.
        AmbiguousReferenceError: several sessions match.
    """
    from memory.lookup import latest_message

    sid = resolve_session(store, session).id
    node = latest_message(store, sid)
    if json:
        _dump(node_json(node) if node else None)
        return
    console = _console()
    if node is None:
        console.print(f"session {markup(sid)} has no messages", soft_wrap=True)
        return
    console.print(
        f"[bold]{node.role.value}[/] [dim]{markup(node.id)} "
        f"{node.created_at.isoformat(timespec='seconds')}[/]",
        soft_wrap=True,
    )
    console.print(markup(_message_text(node)))


def _refuse(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(1)


def memory_settings(
    workspace: str | None, views: Path | None
) -> tuple[MemoryConfig, WorkspaceLocation]:
    """The settings and the workspace's location for a ``memory`` command (its group's options).

    Args:
        workspace: ``-w``: a folder or a ``postgresql://`` URL (None: the default).
        views: ``--views``: the folder of the views of a workspace kept in PostgreSQL.

    Raises:
        SystemExit: memory is off, or the settings file or a location is refused (status 1, after
            ``error: ...`` on stderr).
    """
    from memory.config import ConfigError, MemoryOffError, load_config, workspace_location
    from memory.errors import WorkspacePathError

    try:
        config = load_config()
        config.require_enabled()
    except (ConfigError, MemoryOffError) as e:
        _refuse(f"error: {e}")
    try:
        return config, workspace_location(workspace, views, config=config)
    except (ConfigError, WorkspacePathError) as e:
        _refuse(f"error: {e}")


def open_workspace(where: WorkspaceLocation) -> MemoryWorkspace:
    """Open the workspace at ``where`` for a command (the caller closes it).

    Raises:
        ValueError: the folder is a file, cannot be created, or holds no workspace database.
    """
    from memory.errors import WorkspaceStoreError
    from memory.workspace import MemoryWorkspace

    if where.folder.exists() and not where.folder.is_dir():
        raise ValueError(f"{where.shown}: is a file; a workspace is a folder")
    try:
        return MemoryWorkspace(where.folder, store=where.store)
    except OSError as e:
        raise ValueError(
            f"{where.shown}: cannot create the workspace folder: {e.strerror or e}"
        ) from None
    except WorkspaceStoreError as e:  # (a memory.db that is no database, say)
        raise ValueError(f"{where.shown}: cannot open the workspace ({e})") from None


@contextmanager
def memory_errors() -> Iterator[None]:
    """Report the memory layer's refusals as one ``error: ...`` line on stderr with exit status 1.

    Raises:
        SystemExit: a ``MemoryLayerError``, ``CapExceeded``, ``GraphError``, ``ValueError`` or
            ``OSError`` was raised inside; a ``BrokenPipeError`` (a closed pipe) passes through to
            :func:`graph.cli.quick.exit_for`, which ends the command without a line.
    """
    from graph.errors import GraphError
    from graph.terminal import error_line
    from memory.caps import CapExceeded
    from memory.errors import MemoryLayerError

    try:
        yield
    except (MemoryLayerError, CapExceeded, GraphError, ValueError) as e:
        _refuse(error_line(str(e)))
    except BrokenPipeError:  # the reader went away (`| head`): the command line ends it quietly
        raise
    except OSError as e:
        _refuse(error_line(f"{e.filename}: {e.strerror}" if e.filename else str(e)))


def memory_status(
    store: Callable[[], BaseStore],
    *,
    workspace: str | None,
    views: str | None,
    full: bool,
    json: bool,
) -> None:
    """``memory [-w W] [--views V] status``: the settings, the workspace, the store, then the status.

    Each is judged in the order the typer command judges them, so the first refusal is the same.

    Args:
        store: Opens the session store (``--db``).
        workspace: ``-w``'s value, or None.
        views: ``--views``' value, or None.
        full: Whole ids instead of their short forms.
        json: The status as JSON instead of the tables.

    Raises:
        SystemExit: a refusal (status 1, after ``error: ...`` on stderr).
    """
    _, where = memory_settings(workspace, None if views is None else Path(views))
    with memory_errors():
        ws = open_workspace(where)
        try:
            show_status(ws, store(), full=full, json=json)
        finally:
            ws.close()


def when(micros: int) -> str:
    """A workspace time (integer microseconds since the epoch) as ``YYYY-MM-DD HH:MM:SS`` in UTC."""
    return datetime.fromtimestamp(micros / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S")


def show_status(ws: MemoryWorkspace, store: BaseStore, *, full: bool, json: bool) -> None:
    """Print the workspace id, record and source counts, pending turns per session, last failure.

    Deletions whose grace period is over are purged first.

    Args:
        ws: The open workspace.
        store: The session store (for the pending turns).
        full: Whole ids instead of their short forms.
        json: One JSON object instead of the tables.
    """
    from graph import plain_table
    from graph.plain_table import Column
    from graph.terminal import visible
    from memory.reading import workspace_status
    from memory.tombstones import purge_expired

    purge_expired(ws)
    st = workspace_status(ws, store)
    if json:
        _dump(
            {
                "workspace_id": st.workspace_id,
                "path": st.path,
                "revision": st.revision,
                "records": st.records,
                "topics": st.topics,
                "sources": st.sources,
                "tombstones": st.tombstones,
                "pending": [{"session_id": s, "title": t, "pending": n} for s, t, n in st.pending],
                "last_failure": (
                    dict(zip(("session_id", "reason", "at"), st.last_failure, strict=True))
                    if st.last_failure
                    else None
                ),
            }
        )
        return
    failure = st.last_failure
    rows = [
        ("workspace", f"{st.workspace_id} ({st.path})"),
        ("revision", str(st.revision)),
        ("records", f"{st.records} in {st.topics} topic(s)"),
        ("sources", f"{st.sources} archived turn(s)"),
        ("deleted", f"{st.tombstones} inside their grace period"),
        (
            "last failure",
            f"{failure[1]} in session {failure[0]} at {when(failure[2])} UTC"
            if failure
            else "none",
        ),
    ]
    # Plain text, as `sessions` and `recent` draw (no rich to import): a field's value is never
    # wrapped (the terminal wraps it, so an id or a path copies whole); the pending table keeps its
    # ids and counts whole at any width, only the titles wrap.
    key_width = max(len(key) for key, _ in rows)
    for key, value in rows:
        print(f" {key.ljust(key_width)}  {visible(value)}")
    if not st.pending:
        print(f"nothing pending for workspace {st.workspace_id}")
        return
    names = {} if full else session_short_forms(store)
    columns = [
        Column("session", "fold" if full else "fixed", minimum=12),
        Column("pending", right=True),
        Column("title", "wrap", minimum=10),
    ]
    table = [
        [visible(names.get(sid, sid)), str(n), visible(" ".join(title.split()))]
        for sid, title, n in st.pending
    ]
    print()
    print(plain_table.render(columns, table, plain_table.terminal_width()))
    print()
    print(f"{sum(n for *_, n in st.pending)} pending turn(s) in {len(st.pending)} session(s)")

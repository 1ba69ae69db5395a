"""The memory package's ``sessiongraph`` commands, registered through the ``sessiongraph.cli`` entry point.

:func:`register` adds the session look-up commands (bounded; :mod:`memory.lookup`)::

    sessiongraph recent [--limit N] [--json]            most recently updated sessions (at most 30)
    sessiongraph open SESSION [--json]                  one session: title, times, head, messages, live tips
    sessiongraph read SESSION [--count N] [--before NODE] [--json]
                                                        a bounded window of the head's transcript
    sessiongraph latest SESSION [--json]                the newest message of the head's branch

``SESSION`` is an id or a unique prefix or suffix of one (the short form the tables print). Unknown
and ambiguous sessions and nodes are reported by :func:`graph.cli.commands.main` as ``error: ...`` with exit
status 1. Text from transcripts is printed with its control characters made visible; ``--full``
prints whole ids and ``--json`` always does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graph.cli.commands import (
    content_parts,
    id_column,
    node_json,
    open_store,
    resolve_node,
    resolve_session,
    session_short_forms,
)
from graph.terminal import dump_json, markup, short_forms
from memory.caps import LOOKUP_DEFAULT_MESSAGES, LOOKUP_MAX_SESSIONS

if TYPE_CHECKING:
    from rich.console import Console

    from graph.models import Node
    from graph.store.base import BaseStore
    from memory.lookup import SessionInfo, TranscriptWindow

__all__ = ["register", "register_lookups", "window_json"]

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON (whole ids, RFC 3339 UTC times).")]
_FULL = Annotated[bool, typer.Option("--full", help="Print whole ids, not their short form.")]
_SESSION = Annotated[str, typer.Argument(help="Session id (or a unique prefix or suffix).")]


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


_TEXT_WIDTH = 2_000
"""Characters of one message shown in a table before it is cut (``--json`` prints everything)."""


def _dump(data: Any) -> None:
    print(dump_json(data))


def _store(ctx: typer.Context) -> BaseStore:
    store = open_store(ctx)
    ctx.call_on_close(store.close)
    return store


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


def recent(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option(help=f"At most this many (clamped to 1..{LOOKUP_MAX_SESSIONS}).")
    ] = LOOKUP_MAX_SESSIONS,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """List the most recently updated sessions (at most 30): id, title, updated, messages, live tips."""
    from memory.lookup import recent_sessions

    store = _store(ctx)
    rows = recent_sessions(store, limit)
    if json:
        _dump([s.model_dump(mode="json") for s in rows])
        return
    if not rows:
        print("no sessions; import some with `sessiongraph import`")
        return
    print(_info_table(rows, session_short_forms(store), full))
    print(f"{len(rows)} session(s), most recently updated first")


def open_(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Open one session: its title, times, head, message count and live tips (whole ids)."""
    from rich.table import Table

    from memory.lookup import open_session

    store = _store(ctx)
    info = open_session(store, resolve_session(store, session).id)
    if json:
        _dump(info.model_dump(mode="json"))
        return
    table = Table(show_header=False, box=None)
    for key, value in (
        ("session", info.id),
        ("title", info.title),
        ("created", info.created_at.isoformat(timespec="seconds")),
        ("updated", info.updated_at.isoformat(timespec="seconds")),
        ("head", info.head or "(empty)"),
        ("messages", f"{info.messages} on the head's branch"),
        ("live tips", "\n".join(info.live_tips) or "none"),
        ("spawned by", info.parent_session or ""),
    ):
        if value:
            table.add_row(f"[bold]{key}[/]", markup(value))
    _console().print(table)


def read(
    ctx: typer.Context,
    session: _SESSION,
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            "-n",
            help=f"Messages to read, clamped to 1..30 (default {LOOKUP_DEFAULT_MESSAGES}).",
        ),
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            help="End the window before this node: an id, a unique prefix, or the short form the "
            "table shows (page back to older messages)."
        ),
    ] = None,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """Read the newest messages of a session's transcript (its head's branch), oldest first, with totals."""
    from rich.table import Table

    from memory.lookup import read_transcript

    store = _store(ctx)
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
    table = Table(
        title=f"{markup(window.session_id)}: {counted}",
        title_justify="left",
    )
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
    console.print(table)
    console.print(markup(window.note))
    if window.next_before:
        # The whole id: paging back with it walks from the head, as this read did; a short form
        # is accepted too but is matched among every node of the session first.
        console.print(f"older: --before {markup(window.next_before)}")


def latest(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Show the newest message of a session's head's branch."""
    from memory.lookup import latest_message

    store = _store(ctx)
    sid = resolve_session(store, session).id
    node = latest_message(store, sid)
    if json:
        _dump(node_json(node) if node else None)
        return
    console = _console()
    if node is None:
        console.print(f"session {markup(sid)} has no messages")
        return
    console.print(
        f"[bold]{node.role.value}[/] [dim]{markup(node.id)} "
        f"{node.created_at.isoformat(timespec='seconds')}[/]"
    )
    console.print(markup(_message_text(node)))


_COMMANDS: dict[str, Callable[..., None]] = {
    "recent": recent,
    "open": open_,
    "read": read,
    "latest": latest,
}


def register_lookups(app: typer.Typer) -> None:
    """Add the look-up commands (``recent``, ``open``, ``read``, ``latest``) to ``app``.

    The ``sessiongraph.cli`` entry points of these four commands name this function, so running one
    of them loads neither ``sessiongraph memory`` nor the memory workspace. Registering twice adds
    nothing the second time.
    """
    have = {c.name for c in app.registered_commands}
    for name, command in _COMMANDS.items():
        if name not in have:
            app.command(name)(command)


def register(app: typer.Typer) -> None:
    """Add the memory package's commands to the ``sessiongraph`` application: the look-ups and ``memory``.

    Registering twice (a test, then the entry point) adds nothing the second time.
    """
    from memory.cli.memory import add_memory_app

    register_lookups(app)
    add_memory_app(app)

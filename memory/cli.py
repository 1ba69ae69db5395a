"""The memory package's ``sessiongraph`` commands, registered through the ``sessiongraph.cli`` entry point.

:func:`register` adds the session look-up commands (seed 000, section 1; :mod:`memory.lookup`)::

    sessiongraph recent [--limit N] [--json]            most recently updated sessions (at most 30)
    sessiongraph open SESSION [--json]                  one session: title, times, head, messages, live tips
    sessiongraph read SESSION [--count N] [--before NODE] [--json]
                                                        a bounded window of the head's transcript
    sessiongraph latest SESSION [--json]                the newest message of the head's branch

``SESSION`` is an id or a unique prefix of one. Unknown sessions and nodes are reported by
:func:`graph.cli.main` as ``error: ...`` with exit status 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import orjson
import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from graph.cli import node_json, open_store, resolve_session, short
from graph.models import ImageBlock, Node, TextBlock, ToolCallBlock, ToolResultBlock
from graph.store import BaseStore
from memory.caps import LOOKUP_DEFAULT_MESSAGES, LOOKUP_MAX_SESSIONS
from memory.lookup import (
    SessionInfo,
    TranscriptWindow,
    latest_message,
    open_session,
    read_transcript,
    recent_sessions,
)
from memory.memory_cli import add_memory_app

__all__ = ["register", "window_json"]

console = Console()

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_SESSION = Annotated[str, typer.Argument(help="Session id (or a unique prefix).")]

_TEXT_WIDTH = 2_000
"""Characters of one message shown in a table before it is cut (``--json`` prints everything)."""


def _dump(data: Any) -> None:
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def _store(ctx: typer.Context) -> BaseStore:
    store = open_store(ctx)
    ctx.call_on_close(store.close)
    return store


def _message_text(node: Node) -> str:
    """A message's content for display: its text, with tool calls and images named in brackets."""
    if isinstance(node.content, str):
        text = node.content
    else:
        parts: list[str] = []
        for b in node.content:
            if isinstance(b, TextBlock | ToolResultBlock) and b.text:
                parts.append(b.text)
            elif isinstance(b, ToolCallBlock):
                parts.append(f"[tool call {b.name}]")
            elif isinstance(b, ImageBlock):
                parts.append(f"[image {b.ref}]")
        text = "\n".join(parts)
    if len(text) > _TEXT_WIDTH:
        text = (
            text[:_TEXT_WIDTH] + f"… ({len(text) - _TEXT_WIDTH} more characters; --json shows all)"
        )
    return text


def _resolve_node(store: BaseStore, session_id: str, ref: str) -> str:
    """Return the node of the session whose id is ``ref``, or uniquely starts or ends with it.

    A shortened id as the tables print it (``…53d64443``) is accepted. Unmatched or ambiguous
    references are returned as given, for :func:`~memory.lookup.read_transcript` to reject.
    """
    ids = store.index(session_id).pred
    if ref in ids:
        return ref
    part = ref.lstrip("…")
    matches = [n for n in ids if n.startswith(part) or n.endswith(part)]
    return matches[0] if len(matches) == 1 else ref


def window_json(window: TranscriptWindow) -> dict[str, Any]:
    """A transcript window as JSON-shaped data: its counts and note, then the messages (with ``text``)."""
    return window.model_dump(mode="json", exclude={"messages"}) | {
        "older_omitted": window.older_omitted,
        "next_before": window.next_before,
        "messages": [node_json(m) for m in window.messages],
    }


def _info_table(rows: list[SessionInfo]) -> Table:
    spawned = any(s.parent_session for s in rows)
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("session", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    table.add_column("msgs", justify="right")
    table.add_column("tips", justify="right")
    table.add_column("title")
    if spawned:
        table.add_column("spawned by", overflow="fold")
    for s in rows:
        cells = [
            s.id,
            s.updated_at.strftime("%Y-%m-%d %H:%M"),
            str(s.messages),
            str(len(s.live_tips)),
            escape(s.title),
        ]
        table.add_row(*cells, *([s.parent_session or ""] if spawned else []))
    return table


def recent(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option(help=f"At most this many (clamped to 1..{LOOKUP_MAX_SESSIONS}).")
    ] = LOOKUP_MAX_SESSIONS,
    json: _JSON = False,
) -> None:
    """List the most recently updated sessions (at most 30): id, title, updated, messages, live tips."""
    rows = recent_sessions(_store(ctx), limit)
    if json:
        _dump([s.model_dump(mode="json") for s in rows])
        return
    console.print(_info_table(rows))
    console.print(f"{len(rows)} session(s), most recently updated first")


def open_(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Open one session: its title, times, head, message count and live tips."""
    store = _store(ctx)
    info = open_session(store, resolve_session(store, session).id)
    if json:
        _dump(info.model_dump(mode="json"))
        return
    table = Table(show_header=False, box=None)
    for key, value in (
        ("session", info.id),
        ("title", escape(info.title)),
        ("created", info.created_at.isoformat(timespec="seconds")),
        ("updated", info.updated_at.isoformat(timespec="seconds")),
        ("head", info.head or "(empty)"),
        ("messages", f"{info.messages} on the head's branch"),
        ("live tips", "\n".join(info.live_tips) or "none"),
        ("spawned by", info.parent_session or ""),
    ):
        if value:
            table.add_row(f"[bold]{key}[/]", value)
    console.print(table)


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
    json: _JSON = False,
) -> None:
    """Read the newest messages of a session's transcript (its head's branch), oldest first, with totals."""
    store = _store(ctx)
    sid = resolve_session(store, session).id
    window = read_transcript(
        store, sid, count, _resolve_node(store, sid, before) if before else None
    )
    if json:
        _dump(window_json(window))
        return
    table = Table(
        title=f"{window.session_id}: {window.returned} of {window.total} messages",
        title_justify="left",
    )
    table.add_column("#", justify="right")
    for col in ("node", "time", "role"):
        table.add_column(col, no_wrap=True)
    table.add_column("text")
    for i, m in enumerate(window.messages, window.older + 1):
        table.add_row(
            str(i),
            short(m.id),
            m.created_at.strftime("%Y-%m-%d %H:%M"),
            m.role.value,
            escape(_message_text(m)),
        )
    console.print(table)
    console.print(escape(window.note))
    if window.next_before:
        console.print(f"older: --before {window.next_before}")


def latest(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Show the newest message of a session's head's branch."""
    store = _store(ctx)
    sid = resolve_session(store, session).id
    node = latest_message(store, sid)
    if json:
        _dump(node_json(node) if node else None)
        return
    if node is None:
        console.print(f"session {sid} has no messages")
        return
    console.print(
        f"[bold]{node.role.value}[/] [dim]{node.id} {node.created_at.isoformat(timespec='seconds')}[/]"
    )
    console.print(escape(_message_text(node)))


_COMMANDS: dict[str, Callable[..., None]] = {
    "recent": recent,
    "open": open_,
    "read": read,
    "latest": latest,
}


def register(app: typer.Typer) -> None:
    """Add the memory commands to the ``sessiongraph`` application.

    Registering twice (a test, then the entry point) adds nothing the second time.
    """
    have = {c.name for c in app.registered_commands}
    for name, command in _COMMANDS.items():
        if name not in have:
            app.command(name)(command)
    add_memory_app(app)

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
prints whole ids and ``--json`` always does. What ``recent``, ``read`` and ``latest`` print comes from
:mod:`memory.cli.quick`, which also answers their plain forms without typer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graph.cli.commands import open_store, resolve_session
from graph.terminal import dump_json, markup, print_fields
from memory.caps import LOOKUP_DEFAULT_MESSAGES, LOOKUP_MAX_SESSIONS
from memory.cli import quick
from memory.cli.quick import window_json

if TYPE_CHECKING:
    from rich.console import Console

    from graph.store.base import BaseStore

__all__ = ["register", "register_lookups", "window_json"]

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON (whole ids, RFC 3339 UTC times).")]
_FULL = Annotated[bool, typer.Option("--full", help="Print whole ids, not their short form.")]
_SESSION = Annotated[str, typer.Argument(help="Session id (or a unique prefix or suffix).")]


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, emoji=False)


def _dump(data: Any) -> None:
    print(dump_json(data))


def _store(ctx: typer.Context) -> BaseStore:
    store = open_store(ctx, create=False)
    ctx.call_on_close(store.close)
    return store


def recent(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option(help=f"At most this many (clamped to 1..{LOOKUP_MAX_SESSIONS}).")
    ] = LOOKUP_MAX_SESSIONS,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """List the most recently updated sessions (at most 30): id, title, updated, messages, live tips."""
    quick.recent(_store(ctx), limit=limit, full=full, json=json)


def open_(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Open one session: its title, times, head, message count and live tips (whole ids)."""
    from memory.lookup import open_session

    store = _store(ctx)
    info = open_session(store, resolve_session(store, session).id)
    if json:
        _dump(info.model_dump(mode="json"))
        return
    rows = [
        ("session", info.id),
        ("title", info.title),
        ("created", info.created_at.isoformat(timespec="seconds")),
        ("updated", info.updated_at.isoformat(timespec="seconds")),
        ("head", info.head or "(empty)"),
        ("messages", f"{info.messages} on the head's branch"),
        ("live tips", "\n".join(info.live_tips) or "none"),
        ("spawned by", info.parent_session or ""),
    ]
    print_fields(_console(), [(key, markup(value)) for key, value in rows])


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
    quick.read(_store(ctx), session, count=count, before=before, full=full, json=json)


def latest(ctx: typer.Context, session: _SESSION, json: _JSON = False) -> None:
    """Show the newest message of a session's head's branch."""
    quick.latest(_store(ctx), session, json=json)


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

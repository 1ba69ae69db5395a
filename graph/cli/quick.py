"""Commands answered without typer: the listings a person runs most, started in the least time.

Typer and the command tree it builds cost about a third of a small listing's start-up, and a plain
listing needs neither. :func:`run` answers the plain forms of the commands that describe themselves
with a :class:`QuickCommand` (their options and arguments, and the function that runs them), with the
same output, errors and exit status as their typer commands, which call the same functions:

    sessiongraph [--db PATH] [-q | --quiet] COMMAND [ARGUMENT...] [OPTION...]
    sessiongraph [--db PATH] [-q | --quiet] GROUP [GROUP OPTION...] COMMAND [ARGUMENT...] [OPTION...]

``sessions`` is described here (:data:`SESSIONS`); another package describes its commands through the
``sessiongraph.quick`` entry-point group, each entry point named after its command's first word and
naming its :class:`QuickCommand` (the memory package's ``recent``, ``read``, ``latest`` and
``memory status``). A flag is given by
its name, a number as ``--name N``, ``--name=N`` or ``-n N`` (ASCII digits, at least the option's
minimum), a text as ``--name VALUE`` or ``--name=VALUE`` (not starting with ``-``); an argument is
a word that does not start with ``-``. Any other word (``--help``, ``--``, an option the description
does not name, a value typer would judge) makes :func:`run` answer False without doing anything, and
the full command line takes it: every message about a mistake stays typer's.

The module imports neither typer nor rich, and keeps the typer-free helpers the commands of both
paths share (resolving an id, a node's text, an id column); the store and its models are imported when
it opens one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from graph.errors import GraphError
from graph.terminal import (
    AmbiguousReferenceError,
    CommandLineError,
    dump_json,
    error_line,
    resolve_ref,
    settings,
    short_forms,
    visible,
)

if TYPE_CHECKING:
    from graph.models import Node, Session, ToolCallBlock
    from graph.store.base import BaseStore

__all__ = [
    "GRAPH_COMMANDS",
    "QUICK",
    "SESSIONS",
    "QuickCommand",
    "content_parts",
    "default_db",
    "exit_for",
    "id_column",
    "list_sessions",
    "node_json",
    "open_target",
    "quick_command",
    "resolve_node",
    "resolve_session",
    "run",
    "session_short_forms",
    "target_of",
    "tool_call_text",
]


def _expand(path: str | Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` made the home directory.

    Raises:
        CommandLineError: ``~user`` names no user (``expanduser`` would keep it as a folder name).
    """
    out = os.path.expanduser(str(path))
    if out.startswith("~"):
        raise CommandLineError(str(path), f"no user's home directory is {out.split(os.sep)[0]}")
    return Path(out)


def default_db() -> Path | str:
    """Return the store used without ``--db``: ``$SESSIONGRAPH_DB`` (``~`` expanded) or the user data dir.

    Either names a SQLite file or a ``postgresql://`` URL (see :func:`graph.store.open_store`).
    """
    env = os.environ.get("SESSIONGRAPH_DB")
    if env:
        from graph.store import is_postgres_url

        return env if is_postgres_url(env) else _expand(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("sessiongraph")) / "sessiongraph.db"


def target_of(db: str | None) -> Path | str:
    """The store a ``--db`` value names (``~`` expanded in a path), else :func:`default_db`.

    Raises:
        CommandLineError: the value is empty, or names the home of no user.
    """
    from graph.store import is_postgres_url

    if db == "":  # an unset variable in a script: not the user's own store
        raise CommandLineError("--db", "is empty (leave it out for the default store)")
    return (db if is_postgres_url(db) else _expand(db)) if db else default_db()


def open_target(target: Path | str, *, create: bool = True) -> BaseStore:
    """Open the store ``target`` names: a SQLite file or a ``postgresql://`` URL.

    Args:
        target: The file or URL.
        create: Make a new SQLite file where none is (the commands that store something); the
            commands that only read refuse a missing file instead, so a mistyped ``--db`` is named
            rather than answered from a new, empty store left behind.

    Raises:
        CommandLineError: the file or its folder cannot be created or opened, the file is missing
            and ``create`` is False, or the database cannot be reached.
    """
    from graph.errors import StoreConnectError, StoreError
    from graph.store import is_postgres_url
    from graph.store import open_store as open_store_at

    if is_postgres_url(target):
        try:
            return open_store_at(str(target))
        except StoreConnectError as e:
            raise CommandLineError("--db", str(e)) from None
        except (StoreError, ImportError) as e:
            raise CommandLineError("--db", f"cannot open the PostgreSQL store ({e})") from None
    path = Path(target)
    if path.is_dir():
        raise CommandLineError(f"--db {path}", "is a directory, not a store file")
    if not create and str(path) != ":memory:" and not path.exists():
        raise CommandLineError(
            f"--db {path}",
            "no store there yet (`sessiongraph import FILE` makes one; check the path)",
        )
    try:
        return open_store_at(path)
    except OSError as e:
        raise CommandLineError(
            f"--db {path}", f"cannot create its folder: {e.strerror or e}"
        ) from None
    except StoreError as e:
        raise CommandLineError(f"--db {path}", f"cannot open the store ({e})") from None


def resolve_session(store: BaseStore, ref: str) -> Session:
    """Return the session whose id is ``ref``, or uniquely starts or ends with it.

    A short form as the tables print it (``…62666fbc``) is accepted. When a parent's id and its
    spawned sessions' ids all start with ``ref``, the parent is meant.

    Raises:
        UnknownSessionError: no session matches.
        AmbiguousReferenceError: several sessions match (their ids are in the message).
    """
    if store.has_session(ref):
        return store.session(ref)
    everything = store.sessions()
    try:
        found = resolve_ref(ref, {s.id for s in everything}, "session")
    except AmbiguousReferenceError as e:
        tops = [s for s in everything if s.id in e.matches and s.parent_session is None]
        if len(tops) == 1 and all(m.startswith(tops[0].id) for m in e.matches):
            return tops[0]
        raise
    if found is None:
        from graph.errors import UnknownSessionError

        raise UnknownSessionError(ref)
    return store.session(found)


def resolve_node(store: BaseStore, session_id: str, ref: str) -> str:
    """Return the node of the session that ``ref`` names (an id, a unique prefix or suffix).

    A reference that names no node is returned as given, for the store to reject with its own
    :class:`~graph.errors.UnknownNodeError`.

    Raises:
        AmbiguousReferenceError: several nodes of the session match.
    """
    return resolve_ref(ref, store.index(session_id).pred.keys(), "node") or ref


def session_short_forms(store: BaseStore) -> dict[str, str]:
    """The short form of every session id of the store (what :func:`resolve_session` takes back)."""
    return short_forms(s.id for s in store.sessions())


def tool_call_text(block: ToolCallBlock, width: int = 60) -> str:
    """``[tool call NAME] input`` with the call's input on one line, cut to ``width`` characters.

    An input with a single argument shows its value; otherwise the arguments as compact JSON.
    """
    import orjson

    args = block.arguments
    if isinstance(args, dict) and len(args) == 1:
        args = next(iter(args.values()))
    if args is None or args == {}:
        text = ""
    elif isinstance(args, str):
        text = args
    else:
        text = orjson.dumps(args, default=str).decode()
    text = " ".join(text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"[tool call {block.name}]" + (f" {text}" if text else "")


def content_parts(node: Node) -> list[str]:
    """A node's content as the parts ``show`` and ``read`` display, in block order.

    Each text and tool result, each tool call as ``[tool call NAME] input`` (:func:`tool_call_text`)
    and each image as ``[image REF]``; empty texts are left out.

    The parts are not yet made safe for a terminal: pass what is shown through
    :func:`graph.terminal.markup`.
    """
    from graph.models import ImageBlock, TextBlock, ToolCallBlock, ToolResultBlock

    if isinstance(node.content, str):
        return [node.content]
    parts: list[str] = []
    for b in node.content:
        if isinstance(b, TextBlock | ToolResultBlock) and b.text:
            parts.append(b.text)
        elif isinstance(b, ToolCallBlock):
            parts.append(tool_call_text(b))
        elif isinstance(b, ImageBlock):
            parts.append(f"[image {b.ref}]")
    return parts


def node_json(node: Node) -> dict[str, Any]:
    """A node as JSON-shaped data (for ``--json`` output)."""
    return node.model_dump(mode="json") | {"text": node.text}


def id_column(table: Any, name: str, shown: Iterable[str], full: bool) -> None:
    """Add an id column to a rich table that no terminal width cuts.

    Short forms keep their whole width on one line; whole ids (``full``) fold onto several lines
    when the terminal is narrow, every character kept.

    Args:
        table: A ``rich.table.Table``.
        name: The column's header.
        shown: The cells the column will hold (for its width).
        full: Whether the cells are whole ids.
    """
    if full:
        from rich.console import Console

        # Whole on one line when the id takes at most half the terminal, else folded.
        room = max(12, Console().width // 2 - 4)
        longest = max((len(name), *map(len, shown)))
        table.add_column(name, overflow="fold", min_width=min(longest, room))
    else:
        widest = max((len(name), *map(len, shown)))
        table.add_column(name, no_wrap=True, min_width=widest)


def list_sessions(
    store: BaseStore,
    *,
    limit: int = 50,
    runtime: str | None = None,
    project: str | None = None,
    since: datetime | None = None,
    full: bool = False,
    json: bool = False,
) -> None:
    """Print the sessions, most recently updated first: id, title, last update, nodes, spawned from.

    Args:
        store: The store.
        limit: At most this many sessions.
        runtime: Only sessions of this runtime.
        project: Only sessions whose working directory is this absolute folder or lies under it.
        since: Only sessions updated at or after this moment.
        full: Whole ids instead of their short forms.
        json: One JSON array (whole ids, RFC 3339 UTC times) instead of the table.
    """
    from graph import plain_table
    from graph.plain_table import Column

    rows = store.sessions(limit, runtime=runtime, project=project, since=since)
    if json:
        print(
            dump_json([s.model_dump(mode="json") | {"nodes": store.node_count(s.id)} for s in rows])
        )
        return
    if not rows:
        filtered = runtime is not None or project is not None or since is not None
        print(
            "no sessions match"
            if filtered
            else "no sessions; import some with `sessiongraph import`"
        )
        return
    shorts = short_forms(s.id for s in store.sessions())

    def name(sid: str | None) -> str:
        return "" if not sid else sid if full else shorts.get(sid, sid)

    width = plain_table.terminal_width()
    # Titles get the room: at under 100 columns the update time drops its century and year.
    stamp = "%m-%d %H:%M" if width < 100 else "%Y-%m-%d %H:%M"
    spawned = any(s.parent_session for s in rows)
    ids = Column("session", "fold" if full else "fixed", minimum=12)
    columns = [
        ids,
        Column("title", "wrap", minimum=20),
        Column("updated"),
        Column("nodes", right=True),
    ]
    if spawned:
        columns.append(Column("spawned from", ids.mode, minimum=12))
    table = [
        [
            visible(name(s.id)),
            visible(" ".join(s.title.split())),
            s.updated_at.strftime(stamp),
            str(store.node_count(s.id)),
            *([visible(name(s.parent_session))] if spawned else []),
        ]
        for s in rows
    ]
    print(plain_table.render(columns, table, width))


def exit_for(e: BaseException) -> NoReturn:
    """End the process for an error a command raised: one ``error:`` line on stderr and its status.

    A :class:`~graph.errors.GraphError` (a command line mistake included) and an ``OSError`` exit
    with 1 (a closed pipe, ``| head``, without a line), an interrupt with 130, anything else (a bug) with 70, or its traceback when
    ``SESSIONGRAPH_DEBUG`` is set.
    """
    if isinstance(e, GraphError):
        _report(str(e))
        raise SystemExit(1) from None
    if isinstance(e, BrokenPipeError):  # the reader went away (`| head`): not worth a line
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the last flush, too
        raise SystemExit(1) from None
    if isinstance(e, OSError):
        _report(f"{e.filename}: {e.strerror}" if e.filename else str(e))
        raise SystemExit(1) from None
    if isinstance(e, KeyboardInterrupt):
        _report("interrupted")
        raise SystemExit(130) from None
    if os.environ.get("SESSIONGRAPH_DEBUG"):
        raise e
    _report(
        f"internal error: {type(e).__name__}: {e} (a bug; SESSIONGRAPH_DEBUG=1 shows the traceback)"
    )
    raise SystemExit(70) from None


def _report(message: str) -> None:
    print(error_line(message), file=sys.stderr)


@dataclass(frozen=True)
class QuickCommand:
    """A command :func:`run` answers without typer: the words it takes and the function that runs it.

    The function is called as ``function(store, *arguments, **options)`` with the store the command
    line names (open, and closed afterwards), the arguments in order and every option: the value given
    or the option's default. It prints what the typer command prints (the typer command calls it too).

    A command of a group (``"memory status"``) is named by both words; the group's own options
    (:attr:`group_texts`) go between them, as typer takes them.

    Attributes:
        name: The command word (``"recent"``), or a group's word and its command's (``"memory status"``).
        function: ``"module:function"``, imported when the command runs.
        arguments: How many arguments it takes, each a word not starting with ``-``.
        flags: Option name (``"--json"``) to the function's parameter (``"json"``), False unless given.
        numbers: Option name (``"--limit"``, ``"-n"``) to ``(parameter, default, minimum)``.
        texts: Option name to ``(parameter, default)``.
        group_texts: The group's options before the command word, as :attr:`texts`.
        store_later: Give the function, instead of the store, a function that opens it (once; it is
            closed afterwards), for a command that judges its other inputs first, as its typer
            command does.
        creates: Make the store when its file is missing (else the command refuses it: see
            :func:`open_target`).
    """

    name: str
    function: str
    arguments: int = 0
    flags: Mapping[str, str] = field(default_factory=dict)
    numbers: Mapping[str, tuple[str, int | None, int]] = field(default_factory=dict)
    texts: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    group_texts: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    store_later: bool = False
    creates: bool = False

    def parse(self, words: list[str]) -> tuple[list[str], dict[str, Any]] | None:
        """The arguments and options of ``words`` (what follows the first word of the name), or None.

        None when a word is not one :func:`run` answers (see the module's description): the
        full command line judges it.
        """
        options: dict[str, Any] = {p: False for p in self.flags.values()}
        options |= {p: default for p, default, _ in self.numbers.values()}
        options |= {p: default for p, default in self.texts.values()}
        options |= {p: default for p, default in self.group_texts.values()}
        arguments: list[str] = []
        i = 0
        _, _, command = self.name.partition(" ")
        while command:  # a group's options, up to its command's word
            if i == len(words):
                return None
            if words[i] == command:
                i, command = i + 1, ""
                continue
            taken = _text(words, i, self.group_texts)
            if taken is None:
                return None
            parameter, options[parameter], i = taken
        while i < len(words):
            word = words[i]
            name = word.partition("=")[0]
            if word in self.flags:
                options[self.flags[word]], i = True, i + 1
            elif name in self.numbers:
                taken = _text(words, i, {name: (self.numbers[name][0], None)}, number=True)
                if taken is None or int(taken[1]) < self.numbers[name][2]:
                    return None
                parameter, value, i = taken
                options[parameter] = int(value)
            elif name in self.texts:
                taken = _text(words, i, self.texts)
                if taken is None:
                    return None
                parameter, options[parameter], i = taken
            elif word and not word.startswith("-"):
                arguments.append(word)
                i += 1
            else:
                return None
        return (arguments, options) if len(arguments) == self.arguments else None


def _text(
    words: list[str], i: int, names: Mapping[str, tuple[str, Any]], *, number: bool = False
) -> tuple[str, str, int] | None:
    """``(parameter, value, next index)`` of the option ``words[i]`` names, or None.

    The value is ``--name=VALUE`` or the next word; None when it is missing, empty, looks like an
    option, is not ASCII digits (``number``), or is written ``-n=VALUE`` (typer reads that as the
    value ``=VALUE``): values typer must judge.
    """
    name, eq, inline = words[i].partition("=")
    if name not in names:
        return None
    if eq and name.startswith("--"):
        value, after = inline, i + 1
    elif eq:
        return None
    elif i + 1 < len(words) and not words[i + 1].startswith("-"):
        value, after = words[i + 1], i + 2
    else:
        return None
    if number and not (value.isascii() and value.isdigit()):
        return None
    if not value or value.startswith("-"):
        return None
    return names[name][0], value, after


SESSIONS = QuickCommand(
    "sessions",
    "graph.cli.quick:list_sessions",
    flags={"--full": "full", "--json": "json"},
    numbers={"--limit": ("limit", 50, 1)},
)
"""``sessiongraph sessions [--full] [--json] [--limit N]`` (the filters go to typer)."""

QUICK = "sessiongraph.quick"
"""The entry-point group of other packages' :class:`QuickCommand` descriptions."""

GRAPH_COMMANDS = frozenset(
    {"sessions", "search", "show", "pending", "mark", "rm", "import", "export"}
)
"""The graph's own commands: no other package's quick description is looked for under these names."""


def quick_command(name: str) -> QuickCommand | None:
    """The description of command ``name`` (:data:`SESSIONS`, or a ``sessiongraph.quick`` entry point).

    This distribution's own entry points are read from its metadata alone
    (:func:`graph.cli.entries.load_named`); the graph's own commands look for none, nor do the
    commands this distribution adds without a quick form: only a command another package adds
    costs the scan of every installed distribution's entry points. A description that cannot be
    loaded (its module fails to import, or lacks it) leaves the command to typer.
    """
    if name == SESSIONS.name:
        return SESSIONS
    if name in GRAPH_COMMANDS:
        return None
    from graph.cli.entries import load_named, own_entry_points

    own = own_entry_points("sessiongraph.cli")
    if own is not None and name in own and name not in (own_entry_points(QUICK) or {}):
        return None  # a command of this distribution with no quick form: typer's
    try:
        loaded = load_named(QUICK, name)
    except (ImportError, AttributeError):  # a package half installed: typer reports it its way
        return None
    for found in loaded[:1]:
        described = isinstance(found, QuickCommand) and found.name.partition(" ")[0] == name
        return found if described else None
    return None


def _globals(args: list[str]) -> tuple[str | None, bool, int] | None:
    """``--db``'s value, whether ``-q`` was given and the index of the command word; None otherwise."""
    db: str | None = None
    quiet = False
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word in ("-q", "--quiet"):
            quiet, i = True, i + 1
        elif (
            word == "--db" and i + 1 < len(args) and not args[i + 1].startswith("-") and args[i + 1]
        ):
            db, i = args[i + 1], i + 2
        elif word.startswith("--db=") and len(word) > len("--db="):
            db, i = word[len("--db=") :], i + 1
        else:
            return None
    return (db, quiet, i) if i < len(args) else None


def _function(path: str) -> Callable[..., None]:
    from importlib import import_module

    module, _, name = path.partition(":")
    function: Callable[..., None] = getattr(import_module(module), name)
    return function


def run(args: list[str]) -> bool:
    """Answer ``args`` (the words after ``sessiongraph``) when it is a plain quick command line.

    Returns:
        False, having done nothing, for any other command line; True once the command has run.

    Raises:
        SystemExit: the command failed (see :func:`exit_for`).
    """
    found = _globals(args)
    if found is None:
        return False
    db, quiet, at = found
    command = quick_command(args[at])
    parsed = command.parse(args[at + 1 :]) if command is not None else None
    if command is None or parsed is None:
        return False
    arguments, options = parsed
    settings.quiet = quiet
    opened: list[BaseStore] = []
    try:
        function = _function(command.function)
        target = target_of(db)

        def store() -> BaseStore:
            if not opened:
                opened.append(open_target(target, create=command.creates))
            return opened[0]

        try:
            function(store if command.store_later else store(), *arguments, **options)
        finally:
            for each in opened:
                each.close()
    except (Exception, KeyboardInterrupt) as e:
        exit_for(e)
    return True

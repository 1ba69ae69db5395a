"""``sessiongraph sessions`` without typer: the listing a person runs most, started in the least time.

Typer and the command tree it builds cost about a third of a small listing's start-up, and the listing
needs neither. :func:`run` answers the common forms of the command itself, with the same output,
errors and exit status as the typer command (which calls :func:`list_sessions` too):

    sessiongraph [--db PATH] [-q | --quiet] sessions [--full] [--json] [--limit N]

where ``N`` is a positive integer (``--db=PATH`` and ``--limit=N`` too). Any other word (``--help``,
``--since``, a value typer would refuse) makes :func:`run` answer False without doing anything, and
the full command line takes it: every message about a mistake stays typer's.

The module imports neither typer nor rich; the store and its models are imported when it opens one.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from graph.errors import GraphError
from graph.terminal import CommandLineError, dump_json, error_line, settings, short_forms, visible

if TYPE_CHECKING:
    from graph.store.base import BaseStore

__all__ = ["default_db", "exit_for", "list_sessions", "open_target", "run", "target_of"]


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


def open_target(target: Path | str) -> BaseStore:
    """Open the store ``target`` names: a SQLite file or a ``postgresql://`` URL.

    Raises:
        CommandLineError: the file or its folder cannot be created or opened, or the database
            cannot be reached.
    """
    from graph.errors import StoreError
    from graph.store import is_postgres_url
    from graph.store import open_store as open_store_at

    if is_postgres_url(target):
        try:
            return open_store_at(str(target))
        except (StoreError, ImportError) as e:
            raise CommandLineError("--db", f"cannot open the PostgreSQL store ({e})") from None
    path = Path(target)
    if path.is_dir():
        raise CommandLineError(f"--db {path}", "is a directory, not a store file")
    try:
        return open_store_at(path)
    except OSError as e:
        raise CommandLineError(
            f"--db {path}", f"cannot create its folder: {e.strerror or e}"
        ) from None
    except StoreError as e:
        raise CommandLineError(f"--db {path}", f"cannot open the store ({e})") from None


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


def _value(args: list[str], i: int, name: str) -> tuple[str | None, int]:
    """The value of option ``name`` at ``args[i]`` (``--name VALUE`` or ``--name=VALUE``) and the next index."""
    word = args[i]
    if word.startswith(name + "="):
        return word[len(name) + 1 :], i + 1
    if i + 1 < len(args) and not args[i + 1].startswith("-"):
        return args[i + 1], i + 2
    return None, i  # a value typer must judge (missing, or looking like an option)


def _parse(args: list[str]) -> dict[str, object] | None:
    """The options of a plain ``sessions`` command line, or None for anything else."""
    got: dict[str, object] = {"db": None, "quiet": False, "full": False, "json": False, "limit": 50}
    i = 0
    while i < len(args) and args[i] != "sessions":
        word = args[i]
        if word in ("-q", "--quiet"):
            got["quiet"], i = True, i + 1
        elif word == "--db" or word.startswith("--db="):
            value, i = _value(args, i, "--db")
            if not value:
                return None
            got["db"] = value
        else:
            return None
    if i == len(args):
        return None
    i += 1
    while i < len(args):
        word = args[i]
        if word in ("--full", "--json"):
            got[word[2:]], i = True, i + 1
        elif word == "--limit" or word.startswith("--limit="):
            value, i = _value(args, i, "--limit")
            if value is None or not value.isascii() or not value.isdigit() or int(value) < 1:
                return None
            got["limit"] = int(value)
        else:
            return None
    return got


def run(args: list[str]) -> bool:
    """Answer ``args`` (the words after ``sessiongraph``) when it is a plain ``sessions`` command line.

    Returns:
        False, having done nothing, for any other command line; True once the sessions are listed.

    Raises:
        SystemExit: the command failed (see :func:`exit_for`).
    """
    got = _parse(args)
    if got is None:
        return False
    settings.quiet = bool(got["quiet"])
    try:
        store = open_target(target_of(got["db"]))  # type: ignore[arg-type]
        try:
            list_sessions(
                store,
                limit=int(got["limit"]),  # type: ignore[call-overload]
                full=bool(got["full"]),
                json=bool(got["json"]),
            )
        finally:
            store.close()
    except (Exception, KeyboardInterrupt) as e:
        exit_for(e)
    return True

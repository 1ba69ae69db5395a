"""Open a session store from one string: a SQLite file path, ``:memory:``, or a PostgreSQL URL.

The command line's ``--db`` and ``$SESSIONGRAPH_DB`` go through :func:`open_store`, so every command
works against either backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graph.store import BaseStore

__all__ = ["is_postgres_url", "open_store"]

_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    """Whether ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.startswith(_SCHEMES)


def open_store(target: str | Path, **options: Any) -> BaseStore:
    """Open the store ``target`` names.

    Args:
        target: ``postgresql://user:pass@host/db`` (the PostgreSQL store, which needs the
            ``sessiongraph[postgres]`` extra), ``:memory:``, or a SQLite file path (``~`` expanded).
        options: Keyword arguments for the store's constructor (``timeout=``, ``schema=``).

    Raises:
        StoreError: the database cannot be opened.
        ImportError: a PostgreSQL URL without psycopg installed.
    """
    if is_postgres_url(target):
        from graph.postgres_store import PostgresSessionStore

        return PostgresSessionStore(str(target), **options)
    from graph.sqlite_store import SessionStore

    path = str(target)
    return SessionStore(path if path == ":memory:" else Path(path).expanduser(), **options)

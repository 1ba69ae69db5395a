"""The session store: one base class, three backends, and :func:`open_store` to open one.

* :mod:`graph.store.base`: :class:`~graph.store.base.BaseStore`, every operation and its validation,
  written once over a few persistence primitives;
* :mod:`graph.store.sqlite`: the SQLite store of record; :mod:`graph.store.in_memory`: its in-memory
  twin; :mod:`graph.store.postgres`: the PostgreSQL store.

:func:`open_store` opens one from a string: a SQLite file path, ``:memory:``, or a PostgreSQL URL.
The command line's ``--db`` and ``$SESSIONGRAPH_DB`` go through it, so every command works against
any backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: is_postgres_url imports no store
    from graph.store.base import BaseStore

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
        from graph.store.postgres import PostgresSessionStore

        return PostgresSessionStore(str(target), **options)
    from graph.store.sqlite import SessionStore

    path = str(target)
    return SessionStore(path if path == ":memory:" else Path(path).expanduser(), **options)

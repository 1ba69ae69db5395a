"""The memory workspace on each backend of its store of record, for the workspace suites.

:class:`WorkspaceFactory` opens workspaces on SQLite (a folder's ``memory.db``) or PostgreSQL (a fresh
schema of ``$SESSIONGRAPH_TEST_POSTGRES``, views in a local folder); :func:`snapshot` digests every
table's rows and every view file, so "nothing changed" is asserted the same way on both.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from memory import MemoryWorkspace

__all__ = ["TABLES", "WorkspaceFactory", "snapshot"]

TABLES = (
    "meta",
    "sources",
    "records",
    "citations",
    "links",
    "installs",
    "watch",
    "watch_heads",
    "revisions",
    "record_versions",
    "tombstones",
    "erasures",
    "organizer_runs",
)
"""Every table of the workspace schema."""

_COLUMNS = {
    "records": "id, topic, headings, position, content, tags, time, created_at, updated_at",
}


class WorkspaceFactory:
    """Opens workspaces on one backend; the same ``name`` is the same store of record.

    Args:
        backend: ``sqlite`` or ``postgres``.
        root: A temporary folder (the workspace folders go under it).
        url: The PostgreSQL test database (``postgres`` only).
    """

    def __init__(self, backend: str, root: Path, url: str = "") -> None:
        self.backend = backend
        self.root = root
        self.url = url
        self.prefix = f"t_{uuid.uuid4().hex[:12]}"
        self.opened: list[MemoryWorkspace] = []

    def store(self, name: str = "ws") -> str | None:
        """The ``store=`` argument for workspace ``name`` (None for SQLite)."""
        if self.backend == "sqlite":
            return None
        sep = "&" if "?" in self.url else "?"
        return f"{self.url}{sep}schema={self.prefix}_{name}"

    def __call__(self, name: str = "ws", **kw: Any) -> MemoryWorkspace:
        """Open workspace ``name`` (again: another object on the same store)."""
        ws = MemoryWorkspace(self.root / name, store=self.store(name), **kw)
        self.opened.append(ws)
        return ws

    def close(self) -> None:
        """Close what was opened and drop the PostgreSQL schemas made (reset ones too)."""
        for ws in self.opened:
            try:
                ws.close()
            except Exception:
                pass
        if self.backend == "postgres":
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                    (self.prefix + "%",),
                ).fetchall()
                for (schema,) in rows:
                    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def snapshot(ws: MemoryWorkspace) -> str:
    """A digest of every table's rows (in a fixed order) and every file under the views folder."""
    h = hashlib.sha256()
    for table in TABLES:
        cols = _COLUMNS.get(table, "*")
        rows = ws.conn.execute(f"SELECT {cols} FROM {table}").fetchall()
        h.update(table.encode() + repr(sorted(repr(tuple(r)) for r in rows)).encode())
    for p in sorted(ws.views_path.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(ws.views_path)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()

"""The source archive: the exact turns handed to a writer, content-addressed and append-only.

A turn is archived once (its id is the content address of the original turn, so archiving it again is
a no-op that writes nothing). Credentials never reach the archive: every one
:func:`memory.secrets.scan` finds is replaced by ``[redacted <kind>]`` before the row is written; the
row keeps the SHA-256 of the original text (``original_hash``) and the kind and offsets of each
credential (``redactions``), never the value. Its ``content_hash`` is the hash of the stored text, so a
changed row is detected (``SOURCE_CHANGED``). Only ``memory forget`` removes rows
(:mod:`memory.forget`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from typing import Any

from graph.models import Node, to_micros, utcnow
from memory.database import WorkspaceDatabase
from memory.records import Source, content_hash, source_id
from memory.secrets import redacted

__all__ = ["Archive"]

_COLUMNS = (
    "id, session_id, node_id, speaker, text, content_hash, created_at, "
    "coalesce(original_hash, ''), redactions"
)


def _source(r: Sequence[Any]) -> Source:
    return Source(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        r[7],
        tuple((str(k), int(a), int(b)) for k, a, b in json.loads(r[8])),
    )


class Archive:
    """The archive of one workspace's store of record.

    Args:
        db: The workspace's database.
    """

    def __init__(self, db: WorkspaceDatabase) -> None:
        self.db = db
        self._digest: tuple[object, int, int, Any] | None = None

    def add(self, nodes: Sequence[Node]) -> list[Source]:
        """Archive these turns (redacted) and return their sources, in the order given.

        When every turn is already archived nothing is written at all.

        Raises:
            WorkspaceStoreError: the database failed.
        """
        sources = []
        for n in nodes:
            original = n.text
            text, found = redacted(original)
            sources.append(
                Source(
                    source_id(n.session_id, n.id, n.role.value, original),
                    n.session_id,
                    n.id,
                    n.role.value,
                    text,
                    content_hash(text),
                    n.created_at.isoformat(),
                    content_hash(original),
                    tuple((f.kind, f.start, f.end) for f in found),
                )
            )
        known = self.present([s.id for s in sources])
        todo = [s for s in sources if s.id not in known]
        if todo:
            now = to_micros(utcnow())
            with self.db.atomic():
                self.db.executemany(
                    "INSERT INTO sources (id, session_id, node_id, speaker, text, "
                    "content_hash, created_at, archived_at, original_hash, redactions) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [
                        (
                            s.id,
                            s.session_id,
                            s.node_id,
                            s.speaker,
                            s.text,
                            s.content_hash,
                            s.created_at,
                            now,
                            s.original_hash,
                            json.dumps([list(r) for r in s.redactions]),
                        )
                        for s in todo
                    ],
                )
        return sources

    def present(self, ids: Collection[str]) -> set[str]:
        """Return those of ``ids`` that are archived."""
        got: set[str] = set()
        for chunk, marks in self.db.in_chunks(list(ids)):
            got.update(
                str(r[0])
                for r in self.db.execute(f"SELECT id FROM sources WHERE id IN ({marks})", chunk)
            )
        return got

    def sources(self, ids: Collection[str] | None = None) -> list[Source]:
        """Return archived sources (those of ``ids`` that exist, or all), in archive order."""
        sql = f"SELECT {_COLUMNS} FROM sources"
        if ids is None:
            return [_source(r) for r in self.db.execute(sql + " ORDER BY rowid").fetchall()]
        rows: list[Any] = []
        for chunk, marks in self.db.in_chunks(list(ids)):
            rows += self.db.execute(
                f"SELECT rowid, {_COLUMNS} FROM sources WHERE id IN ({marks})", chunk
            ).fetchall()
        return [_source(r[1:]) for r in sorted(rows, key=lambda r: int(r[0]))]

    def session_sources(self, session_id: str) -> set[str]:
        """The ids of the archived sources of one session."""
        return {
            str(r[0])
            for r in self.db.execute("SELECT id FROM sources WHERE session_id = ?", (session_id,))
        }

    def sessions(self) -> list[str]:
        """The ids of the sessions with archived turns, sorted."""
        return [
            str(r[0])
            for r in self.db.execute("SELECT DISTINCT session_id FROM sources ORDER BY session_id")
        ]

    def extent(self) -> tuple[int, int]:
        """``(rows, highest rowid)`` of the archive now."""
        rows, top = self.db.execute(
            "SELECT count(*), coalesce(max(rowid), 0) FROM sources"
        ).fetchone()
        return int(rows), int(top)

    def digest(self, top: int) -> tuple[int, str]:
        """Count and hash (SHA-256) the archive's content hashes up to rowid ``top``, in rowid order.

        The running hash is kept and extended by the rows appended since, as long as no other
        connection committed in between (:meth:`WorkspaceDatabase.version_token`): this object only
        ever appends to the archive, so its rows below the kept top are the ones hashed. Any commit
        by another connection (a tampering one included) makes the next digest hash the whole
        archive; so does a backend that cannot tell.
        """
        version = self.db.version_token()
        kept = self._digest
        if version is not None and kept is not None and kept[0] == version and kept[1] <= top:
            _, start, rows, h = kept
            h = h.copy()
        else:
            start, rows, h = 0, 0, hashlib.sha256()
        for (digest,) in self.db.execute(
            "SELECT content_hash FROM sources WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
            (start, top),
        ):
            h.update(str(digest).encode("ascii", "replace"))
            rows += 1
        self._digest = (version, top, rows, h.copy())
        return rows, h.hexdigest()

    def forget_cache(self) -> None:
        """Drop the kept digest (after the database was replaced)."""
        self._digest = None

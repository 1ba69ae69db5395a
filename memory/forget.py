"""Forgetting a session: erase what memory holds of it (``sessiongraph memory forget SESSION``).

What is erased, in one transaction (all or nothing):

* every record whose citations all name the session's archived sources (deleted);
* the session's citations in the other records (each keeps its other citations);
* links ``[[topic#^id]]`` to the deleted records, cut from the records that kept them (the link text
  goes, the rest of the statement stays);
* deleted records waiting in their undo grace period that cite the session (their tombstones);
* the session's archived sources: the one exception to the append-only archive. The archive's
  append-only guard is lifted inside the same transaction only, and the erase is recorded in the
  ``erasures`` table (revision, session id, counts, time) without any of its content;
* the idle watcher's bookkeeping for the session;
* the content of every history version citing one of its sources (see :mod:`memory.history`).

In SQLite the database is written with ``secure_delete`` on (freed pages are zeroed) and the search
index is merged afterwards, so the erased text does not linger in the file. The session's turns in the session
store and their markers are left alone: the session stays written for this workspace, so memory does
not learn it again. Databases set aside by ``memory reset`` are not touched, and neither is the install journal (it holds node ids only, so a pass that
installed and crashed before marking is still marked rather than written again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from graph.models import to_micros, utcnow
from memory import caps
from memory.changes import ChangeSet, DeleteRecord, SourceRef, UpdateRecord
from memory.database import WorkspaceDatabase
from memory.errors import MemoryLayerError
from memory.history import erase_sources, record_revision
from memory.records import LINK_RE, Record
from memory.transactions import Plan, plan_in_steps
from memory.workspace import MemoryWorkspace

__all__ = ["ForgetReport", "NothingToForgetError", "forget_session"]


class NothingToForgetError(MemoryLayerError, LookupError):
    """No archived source belongs to a session matching the reference (or several sessions match).

    Attributes:
        ref: The session reference given.
        matches: The archived session ids it matched (empty, or more than one).
    """

    def __init__(self, ref: str, matches: tuple[str, ...] = ()) -> None:
        if matches:
            detail = f"{len(matches)} sessions match {ref!r} ({', '.join(matches[:5])}); give more of the id"
        else:
            detail = f"memory holds nothing of session {ref!r} (no archived turn of it)"
        super().__init__(detail)
        self.ref = ref
        self.matches = matches


@dataclass(frozen=True)
class ForgetReport:
    """What :func:`forget_session` erased."""

    session_id: str
    sources: int
    """Archived sources erased."""
    records_deleted: tuple[str, ...]
    """Records deleted (they cited the session only)."""
    records_updated: tuple[str, ...]
    """Records that lost the session's citations or a link to a deleted record."""
    tombstones: int
    """Deleted records in their undo grace period that were erased for good."""
    revision: int
    """The workspace revision after the erase."""


def _resolve(ws: MemoryWorkspace, ref: str) -> str:
    sessions = ws.archived_sessions()
    if ref in sessions:
        return ref
    # the forms every other command accepts: a prefix, or a suffix (the ``…`` short form shown)
    part = ref.removeprefix("…").removeprefix("...")
    matches = tuple(s for s in sessions if part and (s.startswith(part) or s.endswith(part)))
    if len(matches) != 1:
        raise NothingToForgetError(ref, matches)
    return matches[0]


def _refs(rec: Record, keep: Iterable[str] | None = None) -> tuple[SourceRef, ...]:
    return tuple(
        SourceRef(source=c.source, label=c.label, snippet=c.snippet)
        for c in rec.citations
        if keep is None or c.source in keep
    )


def _cut_links(content: str, gone: set[str]) -> str:
    cut = LINK_RE.sub(lambda m: "" if m.group(2) in gone else m.group(0), content)
    if cut == content:
        return content
    return "\n".join(re.sub(r"[ \t]{2,}", " ", line).strip() for line in cut.split("\n")).strip()


def _steps(ws: MemoryWorkspace, erased: set[str]) -> tuple[list[ChangeSet], int]:
    st = ws.state()
    gone: set[str] = set()
    trimmed: dict[str, tuple[SourceRef, ...]] = {}
    for rec in st.records.values():
        kept = {c.source for c in rec.citations} - erased
        if len(kept) == len({c.source for c in rec.citations}):
            continue
        if kept:
            trimmed[rec.id] = _refs(rec, kept)
        else:
            gone.add(rec.id)
    updates: list[UpdateRecord | DeleteRecord] = []
    for rec in st.records.values():
        if rec.id in gone:
            continue
        content = _cut_links(rec.content, gone)
        if rec.id in trimmed or content != rec.content:
            updates.append(
                UpdateRecord(
                    memory_id=rec.id,
                    content=content,
                    sources=trimmed.get(rec.id, _refs(rec)),
                    time=rec.time,
                    tags=rec.tags,
                )
            )
    # Deleting a record another record to delete still links would leave a dangling link between
    # steps: delete the linkers first (a cycle of links goes in the last step together).
    left = set(gone)
    order: list[str] = []
    while left:
        linked = {target for rid in left for _, target in _links(st.records[rid]) if target != rid}
        free = sorted(left - linked) or sorted(left)
        order += free
        left -= set(free)
    changes = [*updates, *(DeleteRecord(memory_id=rid) for rid in order)]
    size = caps.MAX_CHANGES_PER_TRANSACTION
    steps = [ChangeSet(changes=tuple(changes[i : i + size])) for i in range(0, len(changes), size)]
    return steps, len(updates)


def _links(rec: Record) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in LINK_RE.finditer(rec.content)]


def forget_session(ws: MemoryWorkspace, session: str) -> ForgetReport:
    """Erase what memory holds of ``session`` (see the module doc), all or nothing.

    Args:
        ws: The workspace.
        session: A session id, or a unique prefix or suffix of one (``…`` + suffix, the short form
            the command line prints, too), among the sessions with archived turns (the session
            need not be in the session store any more).

    Returns:
        What was erased.

    Raises:
        NothingToForgetError: no archived turn belongs to a matching session, or several match.
        RejectedError: an edit the erase needs was refused (a statement left empty by cutting its
            links); nothing changed.
        WorkspaceBusyError: another writer holds the lock.
        WorkspaceStoreError: the database failed; nothing changed.
    """
    with ws.write_lock():
        sid = _resolve(ws, session)
        erased = ws.session_sources(sid)
        steps, _ = _steps(ws, erased)
        base = ws.baseline()
        now = to_micros(utcnow())
        p = plan_in_steps(base.state, steps, archived=ws.archived, now=now)
        counts: dict[str, int] = {}

        def erase(c: WorkspaceDatabase, done: Plan) -> None:
            counts["tombstones"] = _erase_tombstones(c, erased)
            with c.archive_unguarded():
                c.execute("DELETE FROM sources WHERE session_id = ?", (sid,))
            c.execute("DELETE FROM watch WHERE session_id = ?", (sid,))
            revision = int(c.execute("SELECT value FROM meta WHERE key='revision'").fetchone()[0])
            if not done.changed:
                revision += 1  # the erase alone is a revision of its own
                c.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(revision),))
                record_revision(c, revision, "forget", [])
            counts["versions"] = erase_sources(c, erased)
            c.execute(
                "INSERT INTO erasures (revision, session_id, sources, records_deleted, "
                "records_updated, at) VALUES (?, ?, ?, ?, ?, ?)",
                (revision, sid, len(erased), len(done.deleted), len(done.updated), now),
            )

        with ws.db.erasing():
            if p.changed:
                ws.install(p, base, within=erase, kind="forget")
            else:
                with ws.atomic() as c:
                    erase(c, p)
            ws.db.compact_erased()
        ws.render_views()
        return ForgetReport(
            sid,
            len(erased),
            tuple(sorted(p.deleted)),
            tuple(sorted(p.updated)),
            counts.get("tombstones", 0),
            ws.revision,
        )


def _erase_tombstones(c: WorkspaceDatabase, erased: set[str]) -> int:
    """Drop the tombstones of deleted records citing an erased source; return how many."""
    doomed = [
        rid
        for rid, raw in c.execute("SELECT record_id, record FROM tombstones").fetchall()
        if any(cite[0] in erased for cite in json.loads(raw)["citations"])
    ]
    c.executemany("DELETE FROM tombstones WHERE record_id = ?", [(rid,) for rid in doomed])
    return len(doomed)

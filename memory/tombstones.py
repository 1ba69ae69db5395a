"""Deleting a record and taking the deletion back within a grace period.

A deletion (:func:`delete_record`) is one validated transaction (the record, its citations and its
links go; the sources stay in the archive) that also writes a *tombstone*, a copy of the record kept
for a grace period, in the ``tombstones`` table of the store of record (so a delete in one process can
be undone by another, on another machine with a shared PostgreSQL store). A deleted record leaves
search at once, in the deleting transaction. Within the grace period :func:`undo_delete` puts the
record back with its id, timestamps, citations and place (the undo is a real one: the original id and
timestamps are still there); after it the tombstone is purged and the record is gone for good.

Times are microseconds since the Unix epoch; clocks are injectable callables returning seconds
(``time.time``).
"""

from __future__ import annotations

import json
import time as _time
from collections.abc import Callable
from dataclasses import dataclass

from memory.changes import ChangeSet, DeleteRecord
from memory.database import WorkspaceDatabase
from memory.errors import MemoryLayerError, RejectedError, Rejection, UnknownRecordError
from memory.records import Citation, Record
from memory.transactions import Plan, record_links
from memory.workspace import MemoryWorkspace

__all__ = [
    "DEFAULT_GRACE",
    "MAX_GRACE_SECONDS",
    "Clock",
    "GraceExpiredError",
    "NothingToUndoError",
    "Tombstone",
    "delete_record",
    "purge_expired",
    "resolve_record",
    "tombstones",
    "undo_delete",
]

DEFAULT_GRACE = 10.0
"""Seconds a deleted record can be taken back (the command line's default)."""

MAX_GRACE_SECONDS = 1e12
"""The longest grace :func:`delete_record` takes, in seconds (some 31,700 years): its end, in
microseconds since the epoch, must fit the 64-bit column that keeps it."""

Clock = Callable[[], float]
"""Returns the current time in seconds since the Unix epoch (``time.time``)."""


class NothingToUndoError(MemoryLayerError, LookupError):
    """There is no deletion of this record to undo.

    It was never deleted, was purged long ago, or is a record again (a restore brought it back).

    Attributes:
        record_id: The record id given.
        why: Which of those, when known (appended to the message).
    """

    def __init__(self, record_id: str, why: str = "") -> None:
        super().__init__(
            f"record {record_id} has no deletion to undo" + (f": {why}" if why else "")
        )
        self.record_id = record_id


class GraceExpiredError(MemoryLayerError):
    """The grace period of a deletion ended; the record is gone for good (its tombstone was purged).

    Attributes:
        record_id: The record.
        expired_at: When the grace period ended, microseconds since the Unix epoch.
    """

    def __init__(self, record_id: str, expired_at: int) -> None:
        super().__init__(
            f"record {record_id} was deleted for good: its grace period ended "
            f"{_time.strftime('%Y-%m-%d %H:%M:%S', _time.gmtime(expired_at / 1e6))} UTC"
        )
        self.record_id = record_id
        self.expired_at = expired_at


@dataclass(frozen=True)
class Tombstone:
    """A deleted record kept for its grace period."""

    record: Record
    position: int
    after: str | None
    """The record it followed in its topic when deleted (None when it was first)."""
    deleted_at: int
    """Microseconds since the Unix epoch."""
    expires_at: int
    """End of the grace period, microseconds since the Unix epoch."""


def _micros(clock: Clock) -> int:
    return int(clock() * 1_000_000)


def resolve_record(ws: MemoryWorkspace, ref: str, ids: list[str] | None = None) -> str:
    """Return the record id that ``ref`` names: an exact id, or a unique prefix or suffix of one.

    Record ids are time-ordered, so ids made together share their start: the last 8 characters (as
    the tables show them, ``…`` optional) are usually the handier reference.

    Args:
        ws: The workspace.
        ref: The reference.
        ids: The ids to choose from (default: the workspace's records).

    Raises:
        UnknownRecordError: no id, or several, match.
    """
    pool = ids if ids is not None else list(ws.state().records)
    if ref in pool:
        return ref
    part = ref if ref.startswith("m-") else "m-" + ref
    tail = ref.lstrip("…")
    matches = tuple(sorted(i for i in pool if i.startswith(part) or i.endswith(tail)))
    if len(matches) != 1 or not ref:
        raise UnknownRecordError(ref, matches)
    return matches[0]


def _record_json(rec: Record, position: int, after: str | None) -> str:
    return json.dumps(
        {
            "topic": rec.topic,
            "headings": list(rec.headings),
            "position": position,
            "after": after,
            "content": rec.content,
            "tags": list(rec.tags),
            "time": rec.time,
            "created_at": rec.created_at,
            "updated_at": rec.updated_at,
            "citations": [[c.source, c.label, c.snippet] for c in rec.citations],
        },
        ensure_ascii=False,
    )


def _tombstone(rid: str, raw: str, deleted_at: int, expires_at: int) -> Tombstone:
    d = json.loads(raw)
    rec = Record(
        rid,
        d["topic"],
        tuple(d["headings"]),
        d["content"],
        tuple(Citation(*c) for c in d["citations"]),
        tuple(d["tags"]),
        d["time"],
        d["created_at"],
        d["updated_at"],
    )
    return Tombstone(rec, d["position"], d["after"], deleted_at, expires_at)


def tombstones(ws: MemoryWorkspace) -> list[Tombstone]:
    """Return the deletions still inside their grace period (or not yet purged), oldest first."""
    rows = ws.conn.execute(
        "SELECT record_id, record, deleted_at, expires_at FROM tombstones ORDER BY deleted_at"
    ).fetchall()
    return [_tombstone(*r) for r in rows]


def purge_expired(ws: MemoryWorkspace, clock: Clock = _time.time) -> list[str]:
    """Drop the tombstones whose grace period ended: those records are gone for good.

    Returns:
        The purged record ids (nothing is written when there are none).
    """
    now = _micros(clock)
    ids = [
        r[0]
        for r in ws.conn.execute(
            "SELECT record_id FROM tombstones WHERE expires_at <= ? ORDER BY record_id", (now,)
        )
    ]
    if ids:
        with ws.atomic() as c:
            c.executemany("DELETE FROM tombstones WHERE record_id = ?", [(i,) for i in ids])
    return ids


def delete_record(
    ws: MemoryWorkspace, ref: str, *, grace: float = DEFAULT_GRACE, clock: Clock = _time.time
) -> Tombstone:
    """Delete a record (its citations and links go with it; its sources stay archived).

    One transaction, validated like a writer's ``delete_record`` (a record another record links to is
    refused with ``DANGLING_LINK``), that also writes the tombstone when ``grace`` is above 0. The
    record leaves search and the views at once.

    Args:
        ws: The workspace.
        ref: The record id or a unique prefix.
        grace: Seconds during which :func:`undo_delete` can take the deletion back; 0 deletes for good
            (at most :data:`MAX_GRACE_SECONDS`).
        clock: Seconds since the epoch.

    Returns:
        The tombstone (its ``expires_at`` equals ``deleted_at`` when ``grace`` is 0).

    Raises:
        ValueError: ``grace`` is negative, not a number, infinite or over
            :data:`MAX_GRACE_SECONDS`; nothing changed.
        UnknownRecordError: no record, or several, match ``ref``.
        RejectedError: the transaction refused the deletion; nothing changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    if not 0 <= grace <= MAX_GRACE_SECONDS:  # NaN fails too
        raise ValueError(
            f"grace must be 0 to {MAX_GRACE_SECONDS:g} seconds, got {grace}: "
            "give a finite number of seconds"
        )
    purge_expired(ws, clock)
    st = ws.state()
    rid = resolve_record(ws, ref, list(st.records))
    rec = st.records[rid]
    order = st.order[rec.topic]
    pos = order.index(rid)
    after = order[pos - 1] if pos else None
    now = _micros(clock)
    stone = Tombstone(rec, pos, after, now, now + int(grace * 1_000_000))

    def keep(c: WorkspaceDatabase, _: Plan) -> None:
        if grace > 0:
            c.execute(
                "INSERT INTO tombstones (record_id, record, deleted_at, expires_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET "
                "record = excluded.record, deleted_at = excluded.deleted_at, "
                "expires_at = excluded.expires_at",
                (rid, _record_json(rec, pos, after), stone.deleted_at, stone.expires_at),
            )

    ws.apply(ChangeSet(changes=(DeleteRecord(memory_id=rid),)), within=keep, kind="delete")
    return stone


def undo_delete(ws: MemoryWorkspace, ref: str, *, clock: Clock = _time.time) -> Record:
    """Put a deleted record back, within its grace period, with its id, timestamps and citations.

    It returns to its topic right after the record it followed when deleted (if that one is still in
    the topic), else at its old position or the end. Like an install, the restore is one transaction
    that bumps the workspace revision; the views are rendered afterwards.

    Args:
        ws: The workspace.
        ref: The record id, or a unique prefix of a deleted record's id.
        clock: Seconds since the epoch.

    Returns:
        The restored record.

    Raises:
        NothingToUndoError: no tombstone matches ``ref``, or the record is back already (a restore
            of an earlier revision brought it back; its tombstone is dropped).
        GraceExpiredError: the grace period ended; the tombstone is purged and the record gone for good.
        RejectedError: ``DANGLING_LINK`` (it links a record that is gone since) or ``SOURCE_MISSING``;
            nothing changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    with ws.write_lock():
        rows = {
            r[0]: r
            for r in ws.conn.execute(
                "SELECT record_id, record, deleted_at, expires_at FROM tombstones"
            )
        }
        try:
            rid = resolve_record(ws, ref, list(rows))
        except UnknownRecordError:
            raise NothingToUndoError(ref) from None
        stone = _tombstone(*rows[rid])
        if stone.expires_at <= _micros(clock):
            purge_expired(ws, clock)
            raise GraceExpiredError(rid, stone.expires_at)
        rec = stone.record
        st = ws.state()
        if rid in st.records:
            # Brought back meanwhile (a restore of an earlier revision): nothing is left to undo.
            with ws.atomic() as c:
                c.execute("DELETE FROM tombstones WHERE record_id = ?", (rid,))
            raise NothingToUndoError(rid, "it is a record again (restored since it was deleted)")
        _check_restorable(ws, rec)
        order = st.order.get(rec.topic, [])
        pos = (
            order.index(stone.after) + 1
            if stone.after in order
            else min(stone.position, len(order))
        )

        def drop(c: WorkspaceDatabase) -> None:
            c.execute("DELETE FROM tombstones WHERE record_id = ?", (rid,))

        ws.reinstate(rec, pos, drop)
        ws.render_views()
    return rec


def _check_restorable(ws: MemoryWorkspace, rec: Record) -> None:
    wanted = {c.source for c in rec.citations if c.source}
    present = {s.id for s in ws.sources(wanted)}
    for sid in sorted(wanted - present):
        raise RejectedError(
            Rejection.SOURCE_MISSING,
            f"record {rec.id} cites source {sid}, which is not in the archive",
            record_id=rec.id,
            source_id=sid,
        )
    st = ws.state()
    for topic, target in record_links(rec.content, rec.topic):
        hit = st.records.get(target)
        if hit is None or hit.topic != topic:
            raise RejectedError(
                Rejection.DANGLING_LINK,
                f"record {rec.id} links [[{topic}#^{target}]], which is gone since it was deleted",
                record_id=rec.id,
                target=target,
            )

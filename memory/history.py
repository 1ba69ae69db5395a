"""Memory's history: every revision, what it changed, and the way back (``memory log|diff|restore``).

Every revision of a workspace (a writer's install, an edit, a save, a delete, an undo, a restore, a
forget) records what it changed, inside its own transaction, in two tables of the store of record:

* ``revisions``: ``(workspace_id, revision, at, kind)``; ``at`` in microseconds since the Unix epoch,
  ``kind`` one of :data:`KINDS`;
* ``record_versions``: ``(workspace_id, revision, record_id, op, record)``, one row per record the
  revision touched; ``op`` is ``created``, ``updated``, ``moved``, ``deleted``, ``restored``,
  ``baseline`` (the records a workspace held when history began) or ``erased``; ``record`` is the
  record's JSON after the revision (``topic``, ``headings``, ``position``, ``content``, ``tags``,
  ``time``, ``created_at``, ``updated_at``, ``citations`` as ``[source, label, snippet]`` lists), or
  NULL when the record is gone.

A record's state at revision ``R`` is its latest version at or before ``R``. Nothing in history is
removed by the end of an undo grace period or by ``memory reset`` (the new database receives the old
one's history, told apart by workspace id). The one exception is ``memory forget``: versions that cite
an erased source lose their content (``op`` becomes ``erased``, ``record`` NULL), since history must not
keep what the person asked memory to forget.

:func:`restore` goes back through the same validated transaction as every other change, as a new
revision: records missing now are created again with their own ids, changed ones updated and moved
back, and (for a whole revision) records created since are deleted.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.models import to_micros, utcnow
from memory.changes import (
    Change,
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MoveRecords,
    SourceRef,
    UpdateRecord,
)
from memory.database import WorkspaceDatabase
from memory.errors import MemoryLayerError
from memory.records import Record

__all__ = [
    "KINDS",
    "HistoryError",
    "RecordChange",
    "Revision",
    "diff",
    "erase_sources",
    "export_history",
    "log",
    "record_json",
    "record_revision",
    "resolve_record",
    "restore",
    "restore_changes",
    "state_at",
]

KINDS = (
    "write",
    "edit",
    "add",
    "delete",
    "undo",
    "restore",
    "forget",
    "organize",
    "change",
    "baseline",
)
"""What made a revision: a writer's batch, a Markdown edit, a person's save, a delete, an undo, a
restore, a forget, an organizer pass, any other validated change, or the start of history in an
existing workspace."""


class HistoryError(MemoryLayerError, LookupError):
    """A revision or record version that history does not hold (the message says which)."""


@dataclass(frozen=True)
class RecordChange:
    """One record's change in one revision."""

    revision: int
    record_id: str
    op: str
    record: Mapping[str, Any] | None
    """The record's JSON after the revision; None when it is gone (deleted or erased)."""


@dataclass(frozen=True)
class Revision:
    """One revision and the records it changed."""

    workspace_id: str
    revision: int
    at: int
    """Microseconds since the Unix epoch."""
    kind: str
    changes: tuple[RecordChange, ...]


def record_json(rec: Record, position: int) -> dict[str, Any]:
    """Return the JSON object history keeps for a record at ``position`` in its topic."""
    return {
        "topic": rec.topic,
        "headings": list(rec.headings),
        "position": position,
        "content": rec.content,
        "tags": list(rec.tags),
        "time": rec.time,
        "created_at": rec.created_at,
        "updated_at": rec.updated_at,
        "citations": [[c.source, c.label, c.snippet] for c in rec.citations],
    }


def record_revision(
    c: WorkspaceDatabase,
    revision: int,
    kind: str,
    changes: Collection[tuple[str, str, Mapping[str, Any] | None]],
) -> None:
    """Record revision ``revision`` and its ``(record_id, op, record JSON or None)`` changes.

    Called inside the transaction that makes the revision, so history commits or rolls back with it.
    """
    wid = str(c.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchone()[0])
    c.execute(
        "INSERT INTO revisions (workspace_id, revision, at, kind) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (workspace_id, revision) DO UPDATE SET at = excluded.at, kind = excluded.kind",
        (wid, revision, to_micros(utcnow()), kind),
    )
    c.executemany(
        "INSERT INTO record_versions (workspace_id, revision, record_id, op, record) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, revision, record_id) "
        "DO UPDATE SET op = excluded.op, record = excluded.record",
        [
            (wid, revision, rid, op, None if rec is None else json.dumps(rec, ensure_ascii=False))
            for rid, op, rec in changes
        ],
    )


def erase_sources(c: WorkspaceDatabase, sources: Collection[str]) -> int:
    """Blank every version citing one of ``sources`` (``op`` ``erased``); return how many."""
    doomed = [
        (wid, rev, rid)
        for wid, rev, rid, raw in c.execute(
            "SELECT workspace_id, revision, record_id, record FROM record_versions "
            "WHERE record IS NOT NULL"
        ).fetchall()
        if any(cite[0] in sources for cite in json.loads(raw)["citations"])
    ]
    c.executemany(
        "UPDATE record_versions SET op = 'erased', record = NULL "
        "WHERE workspace_id = ? AND revision = ? AND record_id = ?",
        doomed,
    )
    return len(doomed)


def _wid(conn: WorkspaceDatabase) -> str:
    return str(conn.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchone()[0])


def _first(conn: WorkspaceDatabase, wid: str) -> int | None:
    row = conn.execute(
        "SELECT min(revision) FROM revisions WHERE workspace_id = ?", (wid,)
    ).fetchone()
    return None if row[0] is None else int(row[0])


def _check_revision(conn: WorkspaceDatabase, revision: int) -> str:
    wid = _wid(conn)
    now = int(conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()[0])
    first = _first(conn, wid)
    if revision < 0 or revision > now:
        raise HistoryError(f"revision {revision} does not exist (the workspace is at {now})")
    if revision > 0 and (first is None or revision < first):
        raise HistoryError(
            f"history of this workspace starts at revision {first if first is not None else now}; "
            f"revision {revision} was made before it was kept"
        )
    return wid


def state_at(conn: WorkspaceDatabase, revision: int) -> dict[str, dict[str, Any]]:
    """Return the records as they were at ``revision`` (record id -> record JSON).

    Raises:
        HistoryError: the revision does not exist, or precedes the start of history.
    """
    wid = _check_revision(conn, revision)
    out: dict[str, dict[str, Any]] = {}
    for rid, raw in conn.execute(
        "SELECT v.record_id, v.record FROM record_versions v WHERE v.workspace_id = ? AND "
        "v.revision = (SELECT max(w.revision) FROM record_versions w WHERE w.workspace_id = "
        "v.workspace_id AND w.record_id = v.record_id AND w.revision <= ?)",
        (wid, revision),
    ):
        if raw is not None:
            out[str(rid)] = json.loads(raw)
    return out


def log(conn: WorkspaceDatabase, record_id: str | None = None) -> list[Revision]:
    """Return the revisions, newest first, of this workspace and those it was reset from.

    Args:
        conn: The workspace's connection.
        record_id: Only the revisions that changed this record (then each carries that change only).
    """
    rows: dict[tuple[str, int], list[RecordChange]] = {}
    sql = "SELECT workspace_id, revision, record_id, op, record FROM record_versions"
    params: tuple[str, ...] = ()
    if record_id is not None:
        sql += " WHERE record_id = ?"
        params = (record_id,)
    for wid, rev, rid, op, raw in conn.execute(sql + " ORDER BY record_id", params):
        rows.setdefault((wid, rev), []).append(
            RecordChange(rev, rid, op, None if raw is None else json.loads(raw))
        )
    out = []
    for wid, rev, at, kind in conn.execute(
        "SELECT workspace_id, revision, at, kind FROM revisions ORDER BY at DESC, revision DESC"
    ):
        changes = rows.get((wid, rev), [])
        if record_id is None or changes:
            out.append(Revision(wid, rev, at, kind, tuple(changes)))
    return out


def diff(
    conn: WorkspaceDatabase, old: int, new: int | None = None
) -> list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None, list[str]]]:
    """Compare the records at two revisions (``new`` defaults to the current one).

    Returns:
        ``(record_id, what, before, after, content_diff)`` sorted by record id, for every record that
        differs: ``what`` is ``added``, ``removed``, ``changed`` (content, citations, tags or time) or
        ``moved`` (topic, headings or position only); ``content_diff`` is a unified diff of the
        content lines (empty unless the content changed).

    Raises:
        HistoryError: a revision does not exist or precedes the start of history.
    """
    if new is None:
        new = int(conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()[0])
    a, b = state_at(conn, old), state_at(conn, new)
    out = []
    for rid in sorted(a.keys() | b.keys()):
        before, after = a.get(rid), b.get(rid)
        if before == after:
            continue
        lines: list[str] = []
        if before is None or after is None:
            what = "added" if before is None else "removed"
        else:
            payload = ("content", "citations", "tags", "time")
            what = "changed" if any(before[k] != after[k] for k in payload) else "moved"
            if what == "moved" and all(
                before[k] == after[k] for k in ("topic", "headings", "position")
            ):
                continue  # only updated_at differs
        if before is None or after is None or before["content"] != after["content"]:
            lines = list(
                difflib.unified_diff(
                    (before or {}).get("content", "").splitlines(),
                    (after or {}).get("content", "").splitlines(),
                    f"{rid}@{old}",
                    f"{rid}@{new}",
                    lineterm="",
                )
            )
        out.append((rid, what, before, after, lines))
    return out


def _refs(rec: Mapping[str, Any]) -> tuple[SourceRef, ...]:
    return tuple(SourceRef(source=s, label=lb, snippet=sn) for s, lb, sn in rec["citations"])


def restore_changes(
    current: Mapping[str, Record], target: Mapping[str, Mapping[str, Any]], ids: Collection[str]
) -> tuple[list[Change], list[str]]:
    """The changes that bring records ``ids`` from ``current`` back to ``target``.

    Returns:
        The changes (updates, moves, creations, then deletions) and the ids the creations must get,
        in order.
    """
    updates: list[Change] = []
    creates: list[Change] = []
    deletes: list[Change] = []
    create_ids: list[str] = []
    for rid in sorted(ids):
        want, now = target.get(rid), current.get(rid)
        if want is None:
            if now is not None:
                deletes.append(DeleteRecord(memory_id=rid))
            continue
        dest = Destination(topic_path=want["topic"], headings=tuple(want["headings"]))
        if now is None:
            creates.append(
                CreateRecord(
                    content=want["content"],
                    sources=_refs(want),
                    destination=dest,
                    time=want["time"],
                    tags=tuple(want["tags"]),
                )
            )
            create_ids.append(rid)
            continue
        if (
            now.content != want["content"]
            or [[c.source, c.label, c.snippet] for c in now.citations] != want["citations"]
            or list(now.tags) != want["tags"]
            or now.time != want["time"]
        ):
            updates.append(
                UpdateRecord(
                    memory_id=rid,
                    content=want["content"],
                    sources=_refs(want),
                    time=want["time"],
                    tags=tuple(want["tags"]),
                )
            )
        if (now.topic, list(now.headings)) != (want["topic"], want["headings"]):
            updates.append(MoveRecords(memory_ids=(rid,), destination=dest))
    return [*updates, *creates, *deletes], create_ids


def restore(
    conn: WorkspaceDatabase,
    current: Mapping[str, Record],
    revision: int,
    record_id: str | None = None,
) -> tuple[ChangeSet, list[str]]:
    """The change set that restores the workspace (or one record) to ``revision``.

    Args:
        conn: The workspace's connection.
        current: The records now, by id.
        revision: The revision to go back to.
        record_id: Only this record (``RECORD@REV``); else every record.

    Returns:
        The change set and the ids its creations must get (see
        :meth:`MemoryWorkspace.restore_revision <memory.workspace.MemoryWorkspace>` callers).

    Raises:
        HistoryError: the revision is not in history, or the record did not exist at it.
    """
    target = state_at(conn, revision)
    if record_id is not None:
        if record_id not in target:
            raise HistoryError(f"record {record_id} did not exist at revision {revision}")
        ids: Collection[str] = (record_id,)
    else:
        ids = target.keys() | current.keys()
    changes, create_ids = restore_changes(current, target, ids)
    return ChangeSet(changes=tuple(changes)), create_ids


def resolve_record(conn: WorkspaceDatabase, ref: str) -> str:
    """Return the id of the record history knows by ``ref``: an id, or a unique prefix or suffix.

    Deleted records count: history keeps them.

    Raises:
        HistoryError: no record, or several, match.
    """
    ids = [str(r[0]) for r in conn.execute("SELECT DISTINCT record_id FROM record_versions")]
    if ref in ids:
        return ref
    part = ref if ref.startswith("m-") else "m-" + ref
    tail = ref.lstrip("…")
    matches = sorted(i for i in ids if ref and (i.startswith(part) or i.endswith(tail)))
    if len(matches) != 1:
        raise HistoryError(
            f"no record in history matches {ref!r}"
            if not matches
            else f"{len(matches)} records in history match {ref!r}; give more of the id"
        )
    return matches[0]


def _lines(conn: WorkspaceDatabase) -> Iterator[str]:
    for rev in reversed(log(conn)):
        yield json.dumps(
            {
                "workspace_id": rev.workspace_id,
                "revision": rev.revision,
                "at": rev.at,
                "kind": rev.kind,
                "changes": [
                    {"record_id": ch.record_id, "op": ch.op, "record": ch.record}
                    for ch in rev.changes
                ],
            },
            ensure_ascii=False,
        )


def export_history(conn: WorkspaceDatabase, path: str | Path) -> int:
    """Write the whole history as JSON Lines to ``path``, oldest revision first; return the count.

    One object per revision: ``workspace_id``, ``revision``, ``at``, ``kind`` and ``changes`` (each
    ``record_id``, ``op``, ``record``).
    """
    lines = list(_lines(conn))
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), "utf-8")
    tmp.replace(target)
    return len(lines)

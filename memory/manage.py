"""What a person can see, find, delete and take back in a memory workspace.

Built on :class:`~memory.workspace.MemoryWorkspace`; the ``sessiongraph memory`` commands
(:mod:`memory.memory_cli`) are a thin layer over these functions:

* :func:`record_views` / :func:`record_view`: records with each citation's snippet and its source's
  session and node (sources are read from the archive, never from the graph store);
* :func:`search_page`: lexical search one page at a time, with the total, inside the caps of
  :mod:`memory.caps` (a query or page size over them raises :class:`~memory.caps.CapExceeded`);
* :func:`delete_record` / :func:`undo_delete`: a deletion is one validated transaction (the record, its
  citations and its links go; the sources stay in the archive) that also writes a *tombstone*, a copy of
  the record kept for a grace period. Within it :func:`undo_delete` puts the record back with its id,
  timestamps, citations and place; after it the tombstone is purged and the record is gone for good. A
  deleted record leaves search at once, in the deleting transaction (the undo is a
  real one: the original id and timestamps are still there);
* :func:`export_markdown`, :func:`workspace_status`.

Tombstones live in the workspace database (table ``tombstones``, created by the first deletion), so a delete
in one process can be undone by another. Times are microseconds since the Unix epoch; clocks are
injectable callables returning seconds (``time.time``).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time as _time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graph.store import BaseStore
from memory import caps
from memory.changes import ChangeSet, DeleteRecord
from memory.errors import MemoryLayerError, RejectedError, Rejection, WorkspaceStoreError
from memory.history import record_json, record_revision
from memory.pipeline import owed_ids
from memory.records import Citation, Record
from memory.transactions import Plan, record_links
from memory.workspace import MemoryWorkspace, SearchHit

__all__ = [
    "DEFAULT_GRACE",
    "CitationView",
    "GraceExpiredError",
    "NothingToUndoError",
    "RecordView",
    "SearchPage",
    "Tombstone",
    "UnknownRecordError",
    "WorkspaceStatus",
    "delete_record",
    "export_markdown",
    "purge_expired",
    "record_view",
    "record_views",
    "resolve_record",
    "search_page",
    "tombstones",
    "undo_delete",
    "workspace_status",
]

DEFAULT_GRACE = 10.0
"""Seconds a deleted record can be taken back (the CLI's default; the issue's figure)."""

Clock = Callable[[], float]
"""Returns the current time in seconds since the Unix epoch (``time.time``)."""

_TOMBSTONES = """
CREATE TABLE IF NOT EXISTS tombstones (
    record_id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
)
"""


class UnknownRecordError(MemoryLayerError, LookupError):
    """No record (or several) matches a reference.

    Attributes:
        ref: The reference given (an id or a prefix of one).
        matches: The ids that matched (empty, or more than one).
    """

    def __init__(self, ref: str, matches: tuple[str, ...] = ()) -> None:
        how = f"{len(matches)} records match" if matches else "no record matches"
        super().__init__(f"{how} {ref!r}" + (f": {', '.join(matches[:5])}" if matches else ""))
        self.ref = ref
        self.matches = matches


class NothingToUndoError(MemoryLayerError, LookupError):
    """There is no tombstone for this record: it was never deleted, or was purged long ago.

    Attributes:
        record_id: The record id given.
    """

    def __init__(self, record_id: str) -> None:
        super().__init__(f"record {record_id} has no deletion to undo")
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
class CitationView:
    """One citation with its archived source's origin."""

    source_id: str
    label: str
    snippet: str
    session_id: str
    """The session the cited turn came from (empty if the source is not archived)."""
    node_id: str
    """The graph node of the cited turn."""
    speaker: str
    """``user`` or ``assistant``."""


@dataclass(frozen=True)
class RecordView:
    """A record as a person reads it: its place, content, tags, times and citations."""

    record: Record
    position: int
    """Its position in its topic (0-based)."""
    citations: tuple[CitationView, ...]

    def as_json(self) -> dict[str, object]:
        """JSON-shaped data (``--json`` output)."""
        r = self.record
        return {
            "id": r.id,
            "topic": r.topic,
            "headings": list(r.headings),
            "position": self.position,
            "content": r.content,
            "tags": list(r.tags),
            "time": r.time,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "citations": [c.__dict__ for c in self.citations],
        }


@dataclass(frozen=True)
class SearchPage:
    """One page of search results and the total."""

    query: str
    page: int
    """1-based."""
    per_page: int
    total: int
    """Records matching, over every page."""
    hits: tuple[SearchHit, ...]

    @property
    def pages(self) -> int:
        """How many pages the total makes (at least 1)."""
        return max(1, -(-self.total // self.per_page))


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


@dataclass(frozen=True)
class WorkspaceStatus:
    """What ``sessiongraph memory status`` shows."""

    workspace_id: str
    path: str
    revision: int
    records: int
    topics: int
    sources: int
    tombstones: int
    pending: tuple[tuple[str, str, int], ...]
    """``(session_id, title, turns owed on every live tip)`` for sessions owing turns."""
    last_failure: tuple[str, str, int] | None
    """``(session_id, reason code, at micros)`` of the latest recorded failure, or None."""


@contextmanager
def _txn(ws: MemoryWorkspace) -> Iterator[sqlite3.Connection]:
    try:
        ws.conn.execute("BEGIN IMMEDIATE")
        try:
            yield ws.conn
        except BaseException:
            ws.conn.execute("ROLLBACK")
            raise
        ws.conn.execute("COMMIT")
    except sqlite3.Error as e:
        raise WorkspaceStoreError(f"sqlite: {e}") from e


def _has_tombstones(ws: MemoryWorkspace) -> bool:
    """Whether the tombstones table exists (it is created by the first deletion's transaction)."""
    row = ws.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tombstones'").fetchone()
    return row is not None


def _micros(clock: Clock) -> int:
    return int(clock() * 1_000_000)


# ---------------------------------------------------------------- reading


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


def _views(
    ws: MemoryWorkspace, records: list[Record], positions: dict[str, int]
) -> list[RecordView]:
    srcs = {s.id: s for s in ws.sources({c.source for r in records for c in r.citations})}
    out = []
    for r in records:
        cites = []
        for c in r.citations:
            s = srcs.get(c.source)
            cites.append(
                CitationView(
                    c.source,
                    c.label,
                    c.snippet,
                    s.session_id if s else "",
                    s.node_id if s else "",
                    s.speaker if s else "",
                )
            )
        out.append(RecordView(r, positions[r.id], tuple(cites)))
    return out


def record_views(ws: MemoryWorkspace, topic: str | None = None) -> list[RecordView]:
    """Return the records (of one topic, or all) with their citations, topic by topic in order."""
    st = ws.state()
    topics = [topic] if topic is not None else sorted(st.order)
    records = [r for t in topics for r in st.topic_records(t)]
    positions = {rid: n for ids in st.order.values() for n, rid in enumerate(ids)}
    return _views(ws, records, positions)


def record_view(ws: MemoryWorkspace, ref: str) -> RecordView:
    """Return one record (an id or a unique prefix) with its citations.

    Raises:
        UnknownRecordError: no record, or several, match ``ref``.
    """
    st = ws.state()
    rid = resolve_record(ws, ref, list(st.records))
    rec = st.records[rid]
    return _views(ws, [rec], {rid: st.order[rec.topic].index(rid)})[0]


def search_page(
    ws: MemoryWorkspace,
    query: str,
    page: int = 1,
    per_page: int = caps.DEFAULT_RESULTS_PER_PAGE,
    keep: Callable[[str], bool] | None = None,
) -> SearchPage:
    """Search records lexically, one page at a time, with the total.

    The query is read exactly as :meth:`MemoryWorkspace.search` reads it (each word a quoted FTS5
    term, bound as a parameter, terms OR-ed, bm25 order, ties by id), so quotes, ``*``, ``:``,
    ``NEAR`` or ``AND`` are plain words and never raise; a query without a word matches nothing.

    Args:
        ws: The workspace.
        query: The words, at most ``caps.MAX_QUERY_CHARS`` characters.
        page: 1-based page number.
        per_page: Results per page, 1..``caps.MAX_RESULTS_PER_PAGE``.
        keep: Only the records (by id) it accepts count, in the total too (``--branch head``:
            :meth:`memory.branches.BranchView.on_head_branch`).

    Raises:
        CapExceeded: the query or the page size is over its cap.
        ValueError: ``page`` or ``per_page`` is below 1.
    """
    caps.check_len(query, "MAX_QUERY_CHARS", "search query")
    caps.check_range(per_page, "MAX_RESULTS_PER_PAGE", "results per page")
    if page < 1 or per_page < 1:
        raise ValueError(f"page ({page}) and per_page ({per_page}) start at 1")
    terms = list(dict.fromkeys(re.findall(r"\w+", query)))[:32]
    if not terms:
        return SearchPage(query, page, per_page, 0, ())
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    if keep is not None:
        return _kept_page(ws, query, match, page, per_page, keep)
    try:
        total = ws.conn.execute(
            "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?", (match,)
        ).fetchone()[0]
        scores = dict(
            ws.conn.execute(
                "SELECT r.id, bm25(records_fts) AS score FROM records_fts "
                "JOIN records r ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? "
                "ORDER BY score, r.id LIMIT ? OFFSET ?",
                (match, per_page, (page - 1) * per_page),
            ).fetchall()
        )
    except sqlite3.Error as e:
        raise WorkspaceStoreError(f"sqlite: {e}") from e
    return _page(ws, query, page, per_page, int(total), scores)


def _kept_page(
    ws: MemoryWorkspace,
    query: str,
    match: str,
    page: int,
    per_page: int,
    keep: Callable[[str], bool],
) -> SearchPage:
    """A page of the matches ``keep`` accepts (all matches are ranked, then filtered)."""
    try:
        ranked = [
            (str(rid), float(score))
            for rid, score in ws.conn.execute(
                "SELECT r.id, bm25(records_fts) AS score FROM records_fts "
                "JOIN records r ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? "
                "ORDER BY score, r.id",
                (match,),
            )
        ]
    except sqlite3.Error as e:
        raise WorkspaceStoreError(f"sqlite: {e}") from e
    kept = [(rid, score) for rid, score in ranked if keep(rid)]
    start = (page - 1) * per_page
    return _page(ws, query, page, per_page, len(kept), dict(kept[start : start + per_page]))


def _page(
    ws: MemoryWorkspace, query: str, page: int, per_page: int, total: int, scores: dict[str, float]
) -> SearchPage:
    st = ws.state()
    srcs = {
        s.id: s for s in ws.sources({c.source for i in scores for c in st.records[i].citations})
    }
    hits = []
    for rid in scores:
        rec = st.records[rid]
        hits.append(
            SearchHit(
                rid,
                rec.topic,
                rec.headings,
                rec.content,
                float(scores[rid]),
                tuple(
                    (c.source, srcs[c.source].session_id, srcs[c.source].node_id)
                    for c in rec.citations
                    if c.source in srcs
                ),
            )
        )
    return SearchPage(query, page, per_page, total, tuple(hits))


# ---------------------------------------------------------------- delete and undo


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
    if not _has_tombstones(ws):
        return []
    rows = ws.conn.execute(
        "SELECT record_id, record, deleted_at, expires_at FROM tombstones ORDER BY deleted_at"
    ).fetchall()
    return [_tombstone(*r) for r in rows]


def purge_expired(ws: MemoryWorkspace, clock: Clock = _time.time) -> list[str]:
    """Drop the tombstones whose grace period ended: those records are gone for good.

    Returns:
        The purged record ids (nothing is written when there are none).
    """
    if not _has_tombstones(ws):
        return []
    now = _micros(clock)
    ids = [
        r[0]
        for r in ws.conn.execute(
            "SELECT record_id FROM tombstones WHERE expires_at <= ? ORDER BY record_id", (now,)
        )
    ]
    if ids:
        with _txn(ws) as c:
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
        grace: Seconds during which :func:`undo_delete` can take the deletion back; 0 deletes for good.
        clock: Seconds since the epoch.

    Returns:
        The tombstone (its ``expires_at`` equals ``deleted_at`` when ``grace`` is 0).

    Raises:
        UnknownRecordError: no record, or several, match ``ref``.
        RejectedError: the transaction refused the deletion; nothing changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    if grace < 0:
        raise ValueError(f"grace must be 0 or more seconds, got {grace}")
    purge_expired(ws, clock)
    st = ws.state()
    rid = resolve_record(ws, ref, list(st.records))
    rec = st.records[rid]
    order = st.order[rec.topic]
    pos = order.index(rid)
    after = order[pos - 1] if pos else None
    now = _micros(clock)
    stone = Tombstone(rec, pos, after, now, now + int(grace * 1_000_000))

    def keep(c: sqlite3.Connection, _: Plan) -> None:
        if grace > 0:
            c.execute(_TOMBSTONES)
            c.execute(
                "INSERT OR REPLACE INTO tombstones (record_id, record, deleted_at, expires_at) "
                "VALUES (?, ?, ?, ?)",
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
        NothingToUndoError: no tombstone matches ``ref``.
        GraceExpiredError: the grace period ended; the tombstone is purged and the record gone for good.
        RejectedError: ``DANGLING_LINK`` (it links a record that is gone since) or ``SOURCE_MISSING``;
            nothing changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    if not _has_tombstones(ws):
        raise NothingToUndoError(ref)
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
        _check_restorable(ws, rec)
        st = ws.state()
        order = st.order.get(rec.topic, [])
        pos = (
            order.index(stone.after) + 1
            if stone.after in order
            else min(stone.position, len(order))
        )
        with _txn(ws) as c:
            c.execute(
                "UPDATE records SET position = position + 1 WHERE topic = ? AND position >= ?",
                (rec.topic, pos),
            )
            cur = c.execute(
                "INSERT INTO records (id, topic, headings, position, content, tags, time, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    rec.topic,
                    json.dumps(list(rec.headings), ensure_ascii=False),
                    pos,
                    rec.content,
                    json.dumps(list(rec.tags), ensure_ascii=False),
                    rec.time,
                    rec.created_at,
                    rec.updated_at,
                ),
            )
            c.executemany(
                "INSERT INTO citations (record_id, ordinal, source_id, label, snippet) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (rid, n, ci.source or None, ci.label, ci.snippet)
                    for n, ci in enumerate(rec.citations)
                ],
            )
            c.executemany(
                "INSERT OR IGNORE INTO links (from_record, to_record) VALUES (?, ?)",
                [(rid, target) for _, target in record_links(rec.content, rec.topic)],
            )
            c.execute(
                "INSERT INTO records_fts (rowid, content, tags, headings, topic) "
                "VALUES (?, ?, ?, ?, ?)",
                (cur.lastrowid, rec.content, " ".join(rec.tags), " ".join(rec.headings), rec.topic),
            )
            c.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'revision'")
            c.execute("DELETE FROM tombstones WHERE record_id = ?", (rid,))
            revision = int(c.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()[0])
            record_revision(c, revision, "undo", [(rid, "restored", record_json(rec, pos))])
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


# ---------------------------------------------------------------- export and status


def export_markdown(ws: MemoryWorkspace, directory: str | Path) -> list[Path]:
    """Write the workspace's Markdown views (``topics/**/*.md``, ``core.md``, ``views.json``).

    The files are rendered from the database now (the grammar is in :mod:`memory.views`); a directory
    written here can be edited and applied back with :func:`memory.editing.apply_edits` as long as the
    workspace has not changed since.

    Files are written inside ``directory`` only: a symlinked folder on the way is refused
    (``ValueError``), and a file that is a symlink is replaced by a regular file, its target left
    alone.

    Returns:
        The files written, sorted.
    """
    ws.render_views()
    root = Path(directory)
    out = []
    for src in sorted(p for p in ws.views_path.rglob("*") if p.is_file()):
        rel = src.relative_to(ws.views_path)
        target = root / rel
        # Never write through a link: a folder on the way that is a symlink is refused, and a
        # file that is one is replaced (the link, not its target) by writing beside it and renaming.
        where = root
        for part in rel.parts[:-1]:
            where = where / part
            if where.is_symlink():
                raise ValueError(f"{where} is a symlink; export writes only inside {root}")
            where.mkdir(parents=True, exist_ok=True)
        root.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        with open(tmp, "xb") as f:
            f.write(src.read_bytes())
        os.replace(tmp, target)
        out.append(target)
    return out


def workspace_status(ws: MemoryWorkspace, store: BaseStore) -> WorkspaceStatus:
    """Count what the workspace holds and what each session still owes it.

    Pending turns are counted on every live tip of each session (a turn shared by branches once), for
    this workspace's id (the markers of other providers and of earlier workspace ids do not count). The last failure is the latest
    ``failed`` entry of the workspace's watch bookkeeping (the idle watcher's and ``memory write``'s).
    """
    c = ws.conn
    pending = []
    for s in store.sessions(100_000):
        n = len(owed_ids(store, s.id, ws.id))
        if n:
            pending.append((s.id, s.title, n))
    failure = c.execute(
        "SELECT session_id, reason, at FROM watch WHERE status = 'failed' ORDER BY at DESC LIMIT 1"
    ).fetchone()
    return WorkspaceStatus(
        workspace_id=ws.id,
        path=str(ws.path),
        revision=ws.revision,
        records=c.execute("SELECT count(*) FROM records").fetchone()[0],
        topics=c.execute("SELECT count(DISTINCT topic) FROM records").fetchone()[0],
        sources=c.execute("SELECT count(*) FROM sources").fetchone()[0],
        tombstones=len(tombstones(ws)),
        pending=tuple(pending),
        last_failure=(str(failure[0]), str(failure[1]), int(failure[2])) if failure else None,
    )

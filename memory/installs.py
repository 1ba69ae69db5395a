"""Records and their installs: reading the records, and the one code path that writes them.

Every change to records (a writer's batch, an edit, a save, a delete, a restore, a forget) is a
validated :class:`~memory.transactions.Plan` installed by :meth:`Records.install`; an undone deletion
puts its record back through :meth:`Records.reinstate`. Nothing else writes ``records``,
``citations``, ``links`` or the full-text index. Each install, in one transaction:

1. checks the archive against the :class:`Baseline` read before the writer ran (rows archived before
   it are all there with the same content hashes; every source of the batch and every source the plan
   cites is present and intact) and that no other install happened since (the revision);
2. writes only the rows the plan created, changed or shifted, their citations and links, and their
   full-text index entries;
3. bumps the revision, records what changed in history (:mod:`memory.history`) and, for a writer's
   batch, the install journal (``installs``: session and node ids);
4. runs the caller's ``within`` hook (its own rows commit or roll back with the install).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from graph.models import to_micros, utcnow
from memory.archive import Archive
from memory.database import WorkspaceDatabase
from memory.errors import RejectedError, Rejection, WorkspaceBusyError
from memory.records import Citation, Record, content_hash
from memory.transactions import Plan, State, record_links

__all__ = ["Baseline", "Records", "Within"]

Within = Callable[[WorkspaceDatabase, Plan], None]
"""A hook run last inside an install's transaction with the database and the plan."""


@dataclass(frozen=True)
class Baseline:
    """What a transaction is measured against, read before the writer runs."""

    state: State
    """The records."""
    revision: int
    """The workspace revision."""
    archive_rows: int
    """How many sources were archived."""
    archive_top: int
    """The highest archive rowid."""
    archive_digest: str
    """SHA-256 over the content hashes of sources up to ``archive_top``, in rowid order."""


def _tags(rec: Record) -> str:
    return json.dumps(list(rec.tags), ensure_ascii=False)


def _headings(rec: Record) -> str:
    return json.dumps(list(rec.headings), ensure_ascii=False)


class Records:
    """The records of one workspace's store of record, read and installed.

    Args:
        db: The workspace's database.
        archive: Its source archive.
        lock_where: The write lock's name, for :class:`WorkspaceBusyError`.
    """

    def __init__(self, db: WorkspaceDatabase, archive: Archive, lock_where: str) -> None:
        self.db = db
        self.archive = archive
        self.lock_where = lock_where
        self._cache: tuple[tuple[object, int], State] | None = None

    # ---------------------------------------------------------------- reading

    def revision(self) -> int:
        """The number of installs so far (0 for a new workspace)."""
        return int(self.db.one("SELECT value FROM meta WHERE key = 'revision'"))

    def state(self) -> State:
        """Read every record, with its citations, into a :class:`~memory.transactions.State`.

        The last state read is handed out again (as a copy) while no other connection committed and
        the revision is the same (every change of records bumps it; archiving does not touch
        records): a write pipeline reads the records twice per batch.
        """
        token = self.db.version_token()
        key = (token, self.revision())
        if token is not None and self._cache is not None and self._cache[0] == key:
            return self._cache[1].copy()
        st = self._read()
        self._cache = (key, st.copy())
        return st

    def _read(self) -> State:
        cites: dict[str, list[Citation]] = {}
        st = State()
        for rid, src, label, snippet in self.db.execute(
            "SELECT record_id, coalesce(source_id, ''), label, snippet FROM citations "
            "ORDER BY record_id, ordinal"
        ):
            cites.setdefault(rid, []).append(Citation(src, label, snippet))
        for rid, topic, headings, content, tags, tm, created, updated in self.db.execute(
            "SELECT id, topic, headings, content, tags, time, created_at, updated_at "
            "FROM records ORDER BY topic, position"
        ):
            st.records[rid] = Record(
                rid,
                topic,
                tuple(json.loads(headings)),
                content,
                tuple(cites.get(rid, ())),
                tuple(json.loads(tags)),
                tm,
                int(created),
                int(updated),
            )
            st.order.setdefault(topic, []).append(rid)
        return st

    def forget_cache(self) -> None:
        """Drop the kept state (after the database was replaced)."""
        self._cache = None

    def baseline(self) -> Baseline:
        """Read what the next transaction will be measured against."""
        rows, top = self.archive.extent()
        _, digest = self.archive.digest(top)
        return Baseline(self.state(), self.revision(), rows, top, digest)

    def installed_prefix(self, session_id: str, node_ids: Sequence[str]) -> list[str]:
        """Return the longest installed batch that is a prefix of ``node_ids`` (else empty)."""
        if not node_ids:
            return []
        best: list[str] = []
        for (raw,) in self.db.execute(
            "SELECT node_ids FROM installs WHERE session_id = ? AND first_node = ?",
            (session_id, node_ids[0]),
        ):
            ids = json.loads(raw)
            if len(ids) > len(best) and list(node_ids[: len(ids)]) == ids:
                best = ids
        return best

    # ---------------------------------------------------------------- writing

    def install(
        self,
        p: Plan,
        base: Baseline,
        *,
        batch_sources: Collection[str] = (),
        journal: tuple[str, Sequence[str]] | None = None,
        within: Within | None = None,
        kind: str | None = None,
    ) -> int:
        """Install a validated plan in one transaction and return the new revision.

        Args:
            p: The plan (validated against ``base``).
            base: The baseline the plan was validated against.
            batch_sources: The batch's source ids (checked present and intact).
            journal: ``(session_id, node_ids)`` of the batch written, recorded in ``installs``.
            within: Called last inside the transaction with the database and the plan.
            kind: What the revision is in history (default ``write`` with a journal, else
                ``change``).

        Raises:
            RejectedError: ``SOURCE_MISSING`` or ``SOURCE_CHANGED``; nothing installed.
            WorkspaceBusyError: the workspace changed since the baseline (someone wrote without the
                lock); nothing installed.
            WorkspaceStoreError: the database failed; nothing installed.
        """
        now = to_micros(utcnow())
        db = self.db
        with db.atomic():
            self._check_archive(p, base, batch_sources)
            revision = self.revision()
            if revision != base.revision:
                raise WorkspaceBusyError(self.lock_where, 0.0)
            self._write(p)
            revision += 1
            db.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(revision),))
            from memory.history import (
                record_revision,
            )  # installs alone need history (and pydantic's changes)

            record_revision(db, revision, kind or ("write" if journal else "change"), _versions(p))
            if journal is not None:
                session_id, node_ids = journal
                db.execute(
                    "INSERT INTO installs (revision, session_id, first_node, node_ids, at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (revision, session_id, node_ids[0], json.dumps(list(node_ids)), now),
                )
            if within is not None:
                within(db, p)
        if within is None:
            # The records are now exactly the plan's: the next read of them needs no query.
            self._cache = ((db.version_token(), revision), p.after.copy())
        else:
            self._cache = None
        return revision

    def _rowids(self, ids: Collection[str]) -> list[int]:
        out: list[int] = []
        for chunk, marks in self.db.in_chunks(sorted(ids)):
            out += [
                int(r[0])
                for r in self.db.execute(f"SELECT rowid FROM records WHERE id IN ({marks})", chunk)
            ]
        return out

    def _write(self, p: Plan) -> None:
        db = self.db
        after = p.after
        if p.deleted:
            db.unindex_records(self._rowids(p.deleted))
            for rid in p.deleted:
                db.execute("DELETE FROM citations WHERE record_id = ?", (rid,))
                db.execute("DELETE FROM links WHERE from_record = ?", (rid,))
        created = set(p.created)
        touched = created | set(p.updated) | set(p.moved)
        for topic in p.topics:
            # Rows keep their position unless something before them moved: only records created,
            # changed or shifted are written (appending to a large topic writes the new rows).
            old_order = p.before.order.get(topic, [])
            new_order = after.order.get(topic, [])
            skip = len(old_order) if new_order[: len(old_order)] == old_order else 0
            was = {rid: n for n, rid in enumerate(old_order)} if not skip else {}
            kept = []
            if skip:
                for rid in touched - created:
                    if after.records[rid].topic == topic:
                        at = new_order.index(rid)
                        if at < skip:
                            kept.append(at)
            for pos in [*kept, *range(skip, len(new_order))]:
                rid = new_order[pos]
                if rid not in touched and was.get(rid) == pos:
                    continue
                rec = after.records[rid]
                if rid in created:
                    self._insert(rec, pos)
                else:
                    db.execute(
                        "UPDATE records SET topic = ?, headings = ?, position = ?, content = ?, "
                        "tags = ?, time = ?, updated_at = ? WHERE id = ?",
                        (
                            rec.topic,
                            _headings(rec),
                            pos,
                            rec.content,
                            _tags(rec),
                            rec.time,
                            rec.updated_at,
                            rid,
                        ),
                    )
        for rid in touched:
            self._cite_and_link(after.records[rid], replace=True)
        if touched:
            db.index_records(self._rowids(touched))
        # Last, so the links of records that pointed at them are already replaced.
        for rid in p.deleted:
            db.execute("DELETE FROM records WHERE id = ?", (rid,))

    def _insert(self, rec: Record, pos: int) -> None:
        self.db.execute(
            "INSERT INTO records (id, topic, headings, position, content, tags, time, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.id,
                rec.topic,
                _headings(rec),
                pos,
                rec.content,
                _tags(rec),
                rec.time,
                rec.created_at,
                rec.updated_at,
            ),
        )

    def _cite_and_link(self, rec: Record, *, replace: bool) -> None:
        db = self.db
        if replace:
            db.execute("DELETE FROM citations WHERE record_id = ?", (rec.id,))
            db.execute("DELETE FROM links WHERE from_record = ?", (rec.id,))
        db.executemany(
            "INSERT INTO citations (record_id, ordinal, source_id, label, snippet) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (rec.id, n, ci.source or None, ci.label, ci.snippet)
                for n, ci in enumerate(rec.citations)
            ],
        )
        db.executemany(
            "INSERT INTO links (from_record, to_record) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(rec.id, target) for _, target in record_links(rec.content, rec.topic)],
        )

    def reinstate(
        self, rec: Record, pos: int, then: Callable[[WorkspaceDatabase], None] | None = None
    ) -> int:
        """Put a deleted record back at ``pos`` in its topic with its own id, times and citations.

        One transaction, like an install: the records after ``pos`` shift down, the revision is
        bumped and history records the record as ``restored``; ``then`` runs last inside it.
        The caller has checked that what it cites and links is there.

        Returns:
            The new revision.

        Raises:
            WorkspaceStoreError: the database failed; nothing changed.
        """
        db = self.db
        with db.atomic():
            db.execute(
                "UPDATE records SET position = position + 1 WHERE topic = ? AND position >= ?",
                (rec.topic, pos),
            )
            self._insert(rec, pos)
            self._cite_and_link(rec, replace=False)
            db.index_records(self._rowids([rec.id]))
            revision = self.revision() + 1
            db.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(revision),))
            from memory.history import record_json, record_revision

            record_revision(db, revision, "undo", [(rec.id, "restored", record_json(rec, pos))])
            if then is not None:
                then(db)
        self._cache = None
        return revision

    def _check_archive(self, p: Plan, base: Baseline, batch_sources: Collection[str]) -> None:
        cited = {
            ci.source
            for rid in (*p.created, *p.updated)
            for ci in p.after.records[rid].citations
            if ci.source
        }
        wanted = set(batch_sources) | cited
        found = {s.id: s for s in self.archive.sources(wanted)}
        for sid in sorted(wanted):
            s = found.get(sid)
            if s is None:
                raise RejectedError(
                    Rejection.SOURCE_MISSING,
                    f"source {sid} is not in the archive any more",
                    source_id=sid,
                )
            if content_hash(s.text) != s.content_hash:
                raise RejectedError(
                    Rejection.SOURCE_CHANGED,
                    f"archived source {sid} no longer matches its content hash",
                    source_id=sid,
                )
        rows, digest = self.archive.digest(base.archive_top)
        if (rows, digest) != (base.archive_rows, base.archive_digest):
            raise RejectedError(
                Rejection.SOURCE_CHANGED,
                f"the source archive changed since the write began ({base.archive_rows} rows "
                f"before, {rows} now, or a content hash differs); archived sources are never edited",
            )


def _versions(p: Plan) -> list[tuple[str, str, dict[str, object] | None]]:
    """What a plan changes, record by record, as history keeps it."""
    from memory.history import record_json

    at = {rid: n for ids in p.after.order.values() for n, rid in enumerate(ids)}
    out: list[tuple[str, str, dict[str, object] | None]] = []
    seen: set[str] = set()
    for op, ids in (("created", p.created), ("updated", p.updated), ("moved", p.moved)):
        for rid in ids:
            if rid in p.after.records and rid not in seen:
                seen.add(rid)
                out.append((rid, op, record_json(p.after.records[rid], at[rid])))
    out += [(rid, "deleted", None) for rid in p.deleted]
    return out

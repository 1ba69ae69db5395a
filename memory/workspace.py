"""The memory workspace: a store of record and a folder of Markdown views rendered from it.

A workspace is a folder (its views, and its store of record unless that is elsewhere) and a store of
record, one of:

* ``memory.db`` in the folder (SQLite; the default), with ``write.lock`` beside it, the cross-process
  write lock (``fcntl.flock``; its bytes never change);
* a PostgreSQL database given by a ``postgresql://`` URL (``store=``), in a PostgreSQL schema of the
  workspace's own (``memory`` unless the URL's ``?schema=`` says otherwise), so a team's machines share
  one memory; the write lock is then an advisory lock of that database. The views are still rendered
  to the local folder.

The folder holds ``views -> .views/<name>`` (the rendered Markdown, swapped atomically; see
:mod:`memory.views`) and, after :meth:`MemoryWorkspace.reset` of a SQLite workspace,
``memory.<old-id>.db`` (the database set aside, kept, never read).

This module is the workspace's face; the nouns behind it have a module each: :mod:`memory.schema`
(the tables and their version), :mod:`memory.database` (the connection and its transactions),
:mod:`memory.locking` (the write lock), :mod:`memory.archive` (the source archive),
:mod:`memory.installs` (records and the one path that writes them), :mod:`memory.recall` (search),
:mod:`memory.tombstones` (deletions and their undo), :mod:`memory.history` and :mod:`memory.forget`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from graph.ids import new_id
from graph.models import Node, to_micros, utcnow
from memory import caps
from memory.archive import Archive
from memory.config import is_store_url
from memory.database import SqliteWorkspaceDatabase, WorkspaceDatabase
from memory.errors import (
    UnknownRecordError,
    WorkspaceBusyError,
    WorkspacePathError,
    WorkspaceStoreError,
)
from memory.installs import Baseline, Records, Within
from memory.locking import DEFAULT_LOCK_TIMEOUT, FileWriteLock, WriteLock
from memory.records import Record, Source
from memory.schema import SCHEMA_VERSION
from memory.transactions import Plan, State, plan, plan_in_steps

if TYPE_CHECKING:  # the rest is imported by the methods that use it (`memory status` needs none)
    from memory.changes import ChangeSet
    from memory.recall import SearchHit

__all__ = [
    "SCHEMA_VERSION",
    "Baseline",
    "MemoryWorkspace",
    "approx_tokens",
    "is_store_url",
]


def approx_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` as one per four characters, at least one (the default counter)."""
    return max(1, (len(text) + 3) // 4)


class MemoryWorkspace:
    """A memory workspace at a folder (created when missing).

    Opening creates the schema or checks its version (a newer one is refused, an older one migrated),
    ensures the full-text index (rebuilt from the records when it is out of step) and the views
    (re-rendered when they do not show the current revision, as after a crash between an install and
    its render).

    Not thread-safe: use one object per thread; processes share a workspace through the write lock.

    Args:
        path: The workspace folder (the views; the SQLite store of record too, unless ``store``).
        count_tokens: The token counter for ``core.md``'s budget (default :func:`approx_tokens`).
        core_budget: ``core.md``'s token budget (default ``caps.CORE_TOKEN_BUDGET``).
        timeout: Seconds the database waits for another connection's lock.
        store: A ``postgresql://`` URL: keep the store of record in PostgreSQL (needs
            ``sessiongraph[postgres]``); None keeps it in ``<path>/memory.db``.

    Raises:
        WorkspacePathError: ``path`` is ``":memory:"`` or empty: a workspace needs a folder (its
            views are files a person edits), so there is no in-memory workspace; use a temporary
            folder for a throwaway one.
        WorkspaceStoreError: the folder cannot be created, or the database cannot be opened or is
            not a workspace's.
        WorkspaceSchemaError: the store was written by a newer library.
        SearchIndexMissingError: the database cannot have a full-text index (SQLite without FTS5).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        count_tokens: Callable[[str], int] = approx_tokens,
        core_budget: int = caps.CORE_TOKEN_BUDGET,
        timeout: float = 5.0,
        store: str | None = None,
    ) -> None:
        if str(path) == ":memory:" or (isinstance(path, str) and not path.strip()):
            raise WorkspacePathError(
                str(path),
                "a workspace is a folder (its views, its write lock, its store of record); "
                "give a folder, a temporary one for a throwaway workspace",
            )
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise WorkspaceStoreError(
                f"workspace {self.path}: cannot create the workspace folder: {e.strerror or e}"
            ) from e
        self.store_url = store
        self.db_path = self.path / "memory.db"
        self.lock_path = self.path / "write.lock"
        self.count_tokens = count_tokens
        self.core_budget = core_budget
        self._timeout = timeout
        self._open()

    # ---------------------------------------------------------------- opening

    def _connect(self) -> tuple[WorkspaceDatabase, WriteLock]:
        if self.store_url is not None:
            from memory.postgres import AdvisoryWriteLock, PostgresWorkspaceDatabase

            pg = PostgresWorkspaceDatabase(self.store_url, timeout=self._timeout)
            try:
                return pg, AdvisoryWriteLock(pg)
            except BaseException:
                pg.close()
                raise
        lock = FileWriteLock(self.lock_path)
        return SqliteWorkspaceDatabase(self.db_path, self._timeout), lock

    def _open(self) -> None:
        self.db, self._lock = self._connect()
        try:
            self.db.open_schema(new_id())
        except BaseException:
            self.db.close()
            raise
        self._archive = Archive(self.db)
        self._records = Records(self.db, self._archive, self._lock.where)
        self._refresh_views()

    @property
    def conn(self) -> WorkspaceDatabase:
        """The store of record's database (its ``execute`` takes ``?`` placeholders on every backend)."""
        return self.db

    @contextmanager
    def atomic(self) -> Iterator[WorkspaceDatabase]:
        """A write transaction on the store of record (a savepoint when one is open).

        Raises:
            WorkspaceStoreError: the database failed; nothing of the block was written.
        """
        with self.db.atomic() as db:
            yield db

    def _refresh_views(self) -> None:
        """Render the views when they do not show the current revision or are incomplete.

        Done only when the write lock is free at once: a writer holding it renders when it ends,
        and two renders never run together (each removes the other renderings it finds).
        """
        if self._views_complete():
            return
        try:
            with self.write_lock(timeout=0.0):
                if not self._views_complete():
                    self.render_views()
        except WorkspaceBusyError:
            return

    def _views_complete(self) -> bool:
        """Whether ``views/`` names this workspace and revision and holds every file it should."""
        if self._views_revision() != (self.id, self.revision):
            return False
        root = self.views_path
        return (root / "core.md").is_file() and all(
            (root / "topics" / f"{t}.md").is_file() for t in self.topics()
        )

    def _meta(self, key: str) -> str:
        value = self.db.one("SELECT value FROM meta WHERE key = ?", (key,))
        if value is None:
            raise WorkspaceStoreError(f"workspace {self.db.where} has no {key!r} in its meta table")
        return str(value)

    def ensure_search_index(self) -> None:
        """Create the full-text index over records if it is missing, and rebuild it if out of step.

        Idempotent; called at open.

        Raises:
            SearchIndexMissingError: the database cannot have one (SQLite built without FTS5).
        """
        with self.db.atomic():
            self.db.ensure_search_index()

    def close(self) -> None:
        """Close the database; the object is unusable afterwards."""
        self._lock.close()
        self.db.close()

    def __enter__(self) -> MemoryWorkspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def id(self) -> str:
        """The workspace id: the value of this workspace's ``written["memory"]`` markers."""
        return self._meta("workspace_id")

    @property
    def revision(self) -> int:
        """The number of installs so far (0 for a new workspace)."""
        return self._records.revision()

    @property
    def views_path(self) -> Path:
        """The rendered views directory (``<workspace>/views``)."""
        return self.path / "views"

    def reset(self) -> str:
        """Start an empty workspace with a new id; return the id.

        Nothing is destroyed: a SQLite store of record is set aside as ``memory.<old-id>.db``, a
        PostgreSQL one renamed to the schema ``<schema>_<old id>``. The new store inherits the old
        one's history; markers carrying the old id no longer count, so every session reads as
        unwritten.

        Raises:
            WorkspaceBusyError: another writer holds the lock (1 second).
        """
        with self.write_lock():
            self.db.reset(self.id, new_id())
            self._archive = Archive(self.db)
            self._records = Records(self.db, self._archive, self._lock.where)
            self.render_views()
            return self.id

    def restore_revision(self, revision: int, record_id: str | None = None) -> Plan:
        """Bring every record (or one) back to how it was at ``revision``, as a new revision.

        Records missing now are created again with their own ids, changed ones are updated and moved
        back, and (for a whole revision) records created since are deleted; all through the same
        validation as any change, recorded in history as a ``restore``.

        Raises:
            HistoryError: the revision is not in history, or the record did not exist at it.
            RejectedError: the restored records are refused (a cited source was erased since:
                ``SOURCE_MISSING``/``UNKNOWN_SOURCE``; a link to a record that is gone); nothing
                changed.
            WorkspaceBusyError: another writer holds the lock.
        """
        from memory.history import restore as history_restore

        with self.write_lock():
            base = self.baseline()
            changes, create_ids = history_restore(self.db, base.state.records, revision, record_id)
            ids = iter(create_ids)
            p = plan_in_steps(
                base.state,
                [changes],
                archived=self.archived,
                now=to_micros(utcnow()),
                make_id=lambda: next(ids),
            )
            if p.changed:
                self.install(p, base, kind="restore")
                self.render_views()
            return p

    # ---------------------------------------------------------------- the write lock

    @contextmanager
    def write_lock(self, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the workspace's cross-process write lock (re-entrant within this object).

        Args:
            timeout: Seconds to wait for another holder; 1 second by default (a chatting session
                should not wait: the next turn comes back).

        Raises:
            WorkspaceBusyError: the lock stayed held for ``timeout`` seconds.
        """
        with self._lock.hold(timeout):
            yield

    # ---------------------------------------------------------------- the source archive

    def archive(self, nodes: Sequence[Node]) -> list[Source]:
        """Archive the turns handed to a writer and return their sources, in the order given.

        Content-addressed, append-only and redacted (see :mod:`memory.archive`): a turn already
        archived is not written again, and when every turn is already there nothing is written.

        Raises:
            WorkspaceStoreError: the database failed.
        """
        return self._archive.add(nodes)

    def archived(self, ids: Collection[str]) -> set[str]:
        """Return those of these source ids that are in the archive."""
        return self._archive.present(ids)

    _present = archived

    def archived_sessions(self) -> list[str]:
        """Return the ids of the sessions with archived turns, sorted."""
        return self._archive.sessions()

    def session_sources(self, session_id: str) -> set[str]:
        """Return the ids of one session's archived sources."""
        return self._archive.session_sources(session_id)

    def sources(self, ids: Collection[str] | None = None) -> list[Source]:
        """Return archived sources (those of ``ids`` that exist, or all), in archive order."""
        return self._archive.sources(ids)

    # ---------------------------------------------------------------- records

    def state(self) -> State:
        """Read every record, with its citations, into a :class:`~memory.transactions.State`.

        The last state read is handed out again (as a copy) while nothing else committed.
        """
        return self._records.state()

    def records(self, topic: str | None = None) -> list[Record]:
        """Return the records (of one topic, or all), topic by topic in position order."""
        st = self.state()
        topics = [topic] if topic is not None else sorted(st.order)
        return [r for t in topics for r in st.topic_records(t)]

    def record(self, record_id: str) -> Record:
        """Return one record.

        Raises:
            UnknownRecordError: no such record (also a ``LookupError``).
        """
        rec = self.state().records.get(record_id)
        if rec is None:
            raise UnknownRecordError(record_id)
        return rec

    def topics(self) -> list[str]:
        """Return the topic paths that hold records, sorted."""
        return [
            str(r[0]) for r in self.db.execute("SELECT DISTINCT topic FROM records ORDER BY topic")
        ]

    def citations_of(self, node_ids: Collection[str]) -> dict[str, list[str]]:
        """Return, for each of these graph node ids that is cited, the ids of the records citing it."""
        out: dict[str, list[str]] = {}
        for chunk, marks in self.db.in_chunks(list(node_ids)):
            for node, rid in self.db.execute(
                "SELECT s.node_id, c.record_id FROM citations c JOIN sources s ON s.id = c.source_id "
                f"WHERE s.node_id IN ({marks}) ORDER BY c.record_id, c.ordinal",
                chunk,
            ):
                out.setdefault(node, []).append(rid)
        return out

    # ---------------------------------------------------------------- transactions

    def baseline(self) -> Baseline:
        """Read what the next transaction will be measured against."""
        return self._records.baseline()

    def plan(
        self,
        changes: ChangeSet,
        *,
        batch: Collection[str] | None = None,
        baseline: Baseline | None = None,
    ) -> Plan:
        """Validate ``changes`` against the baseline (or the records now) without installing them.

        Raises:
            RejectedError: see :func:`memory.transactions.plan`.
        """
        base = baseline or self.baseline()
        return plan(
            base.state, changes, archived=self.archived, batch=batch, now=to_micros(utcnow())
        )

    def apply(
        self,
        changes: ChangeSet,
        *,
        batch: Collection[str] | None = None,
        within: Within | None = None,
        kind: str = "change",
    ) -> Plan:
        """Validate, install and render ``changes`` under the write lock, all or nothing.

        The entry point for changes that are not a writer's batch (a human edit, a reorganization).

        Args:
            changes: The operations.
            batch: Source ids new citations must come from; None allows any archived source.
            within: Called inside the install transaction with the database and the plan (the
                caller's own rows, such as a deletion's tombstone, commit or roll back with it).
            kind: What the revision is in history (:data:`memory.history.KINDS`).

        Returns:
            The installed plan (nothing is installed when ``plan.changed`` is False).

        Raises:
            RejectedError: refused; nothing changed.
            WorkspaceBusyError: another writer holds the lock.
        """
        with self.write_lock():
            base = self.baseline()
            p = self.plan(changes, batch=batch, baseline=base)
            if p.changed:
                self.install(p, base, within=within, kind=kind)
                self.render_views()
            return p

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

        See :meth:`memory.installs.Records.install` (the archive is checked against the baseline
        first; what changed is recorded in history in the same transaction).

        Raises:
            RejectedError: ``SOURCE_MISSING`` or ``SOURCE_CHANGED``; nothing installed.
            WorkspaceBusyError: the workspace changed since the baseline; nothing installed.
        """
        return self._records.install(
            p, base, batch_sources=batch_sources, journal=journal, within=within, kind=kind
        )

    def reinstate(
        self, rec: Record, pos: int, then: Callable[[WorkspaceDatabase], None] | None = None
    ) -> int:
        """Put a deleted record back at ``pos`` with its own id (see :mod:`memory.tombstones`)."""
        return self._records.reinstate(rec, pos, then)

    def installed_prefix(self, session_id: str, node_ids: Sequence[str]) -> list[str]:
        """Return the longest installed batch that is a prefix of ``node_ids`` (else empty).

        The pipeline uses it to recognize a batch it installed but did not mark (a crash between the
        two steps) so that the batch is marked, not written again.
        """
        return self._records.installed_prefix(session_id, node_ids)

    # ---------------------------------------------------------------- views

    def _views_revision(self) -> tuple[str, int] | None:
        try:
            meta = json.loads((self.views_path / "views.json").read_text("utf-8"))
            return str(meta["workspace_id"]), int(meta["revision"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def render_views(self) -> list[str]:
        """Render ``topics/**/*.md``, ``core.md`` and ``views.json`` and swap them in atomically.

        Only the files whose records changed since this process last rendered them are rendered;
        the others are carried over (see :func:`memory.views.render_workspace_views`). Holds the
        write lock while it swaps and cleans up (see :func:`memory.views.render_views_dir`).

        Returns:
            The relative paths whose bytes changed (added, changed or removed), sorted.

        Raises:
            WorkspaceBusyError: another process holds the write lock (1 second).
            WorkspaceStoreError: the views cannot be written (``views`` is a real directory, say).
        """
        from memory.views import render_workspace_views

        st = self.state()
        with self.write_lock():
            try:
                done = render_workspace_views(
                    self.path, self.id, self.revision, st, self.core_budget, self.count_tokens
                )
            except OSError as e:
                raise WorkspaceStoreError(f"cannot render the views: {e}") from e
        return list(done.changed)

    def core_left_out(self) -> list[str]:
        """Return the core records the last render of ``core.md`` left out for the budget."""
        try:
            meta = json.loads((self.views_path / "views.json").read_text("utf-8"))
            return list(meta["core_left_out"])
        except (OSError, ValueError, KeyError):
            return []

    # ---------------------------------------------------------------- recall

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """Search records lexically, best first (see :mod:`memory.recall` for how a query is read).

        ``limit`` is clamped to 1..``caps.MAX_RESULTS_PER_PAGE``; a query with no word, or no match,
        is an empty list.

        Raises:
            SearchIndexMissingError: the index is gone (it is created at open, so someone dropped it).
        """
        from memory.recall import hits, matches

        limit = max(1, min(limit, caps.MAX_RESULTS_PER_PAGE))
        _, ranked = matches(self.db, query, limit=limit)
        if not ranked:
            return []
        return hits(self.state(), self.sources, ranked)

    # ---------------------------------------------------------------- idle-watcher bookkeeping

    def watch_status(self, session_id: str) -> tuple[int, str, str] | None:
        """Return the watcher's record for a session: ``(updated_at micros, status, reason)``, or None."""
        row = self.db.execute(
            "SELECT updated_at, status, reason FROM watch WHERE session_id = ?", (session_id,)
        ).fetchone()
        return (int(row[0]), str(row[1]), str(row[2])) if row else None

    def set_watch_status(self, session_id: str, updated_at: int, status: str, reason: str) -> None:
        """Durably record that the watcher finished a session as of ``updated_at`` (micros)."""
        with self.db.atomic():
            self.db.execute(
                "INSERT INTO watch (session_id, updated_at, status, reason, at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                "updated_at = excluded.updated_at, status = excluded.status, "
                "reason = excluded.reason, at = excluded.at",
                (session_id, updated_at, status, reason, to_micros(utcnow())),
            )

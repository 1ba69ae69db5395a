"""The organizer: rearranges what memory holds, off the write path, through the validated transaction.

An organizer looks at every record and returns a :class:`~memory.changes.ChangeSet` of moves, merges
(one ``update_record`` and ``delete_record`` for the others), splits (one ``update_record`` and
``create_record`` for the new parts) and deletions. :func:`reorganize` checks that the plan only
rearranges (no ``rewrite_topic``, and every citation names a source some record already cites: an
organizer never writes new content from sessions) and installs it through the same validated
transaction as a writer's changes, as one revision of kind ``organize``. It never touches the session
store, so it never moves markers. It reports the view files whose bytes changed, not those it read.

Two organizers:

* :class:`OfflineOrganizer` (the default, deterministic, no model): merges exact duplicates (the same
  content after whitespace is collapsed) into the first of them, keeping every citation and tag
  (up to the caps) and pointing links at the kept record. The views cannot hold an empty heading (a
  heading exists only through the records under it), so there is none to drop.
* :class:`ModelOrganizer`: any ``complete(prompt) -> str`` (the same callable a
  :class:`~memory.writers.ModelWriter` uses) plans the pass; it is asked to keep the core topic to
  rules, preferences and identity facts and to move project progress, stale and duplicate items out.

:class:`OrganizeSchedule` says when a pass is due: after 5 installs or 40,000 tokens of archived turns
since the last pass, and once a day at 03:00 local time (configurable). :func:`run_if_due` runs a pass
when it is; the idle watcher's loop calls it after every poll.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Protocol

from graph.models import to_micros, utcnow
from memory import caps
from memory.changes import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    RewriteTopic,
    SourceRef,
    UpdateRecord,
    parse_changes,
)
from memory.database import WorkspaceDatabase
from memory.errors import RejectedError, Rejection, WriterUnavailableError
from memory.records import CORE_TOPIC, LINK_RE, Record
from memory.topic_files import render_core, render_topic
from memory.transactions import Plan, State
from memory.workspace import MemoryWorkspace, approx_tokens

__all__ = [
    "ModelOrganizer",
    "OfflineOrganizer",
    "OrganizeResult",
    "OrganizeSchedule",
    "Organizer",
    "reorganize",
    "run_if_due",
]


class Organizer(Protocol):
    """Plans a reorganization of a workspace's records."""

    name: str

    def organize(self, state: State) -> ChangeSet:
        """Return the moves, merges, splits and deletions to make (empty: nothing to do)."""
        ...


def _norm(text: str) -> str:
    return " ".join(text.split())


def _refs(rec: Record) -> list[SourceRef]:
    return [SourceRef(source=c.source, label=c.label, snippet=c.snippet) for c in rec.citations]


class OfflineOrganizer:
    """Merges exact duplicates into the first of them (topic by topic, in position order).

    Args:
        apart: Says whether two records (by id) must never be merged: alternatives from mutually
            exclusive branches (:func:`memory.branches.alternatives`). None: any may be merged.
    """

    name = "offline"

    def __init__(self, apart: Callable[[str, str], bool] | None = None) -> None:
        self.apart = apart

    def organize(self, state: State) -> ChangeSet:
        """Return the merges: one update of the kept record and a delete per duplicate."""
        keep: dict[str, list[str]] = {}
        merged: dict[str, list[Record]] = {}
        for topic in sorted(state.order):
            for rec in state.topic_records(topic):
                kept = keep.setdefault(_norm(rec.content), [])
                into = next(
                    (k for k in kept if self.apart is None or not self.apart(k, rec.id)), None
                )
                if into is not None:
                    merged[into].append(rec)
                else:
                    kept.append(rec.id)
                    merged[rec.id] = []
        gone = {d.id: kid for kid, dups in merged.items() for d in dups}
        if not gone:
            return ChangeSet()
        ops: list[UpdateRecord | DeleteRecord] = []
        for rec in (state.records[i] for t in sorted(state.order) for i in state.order[t]):
            if rec.id in gone:
                continue
            content = _relink(rec, gone, state)
            dups = merged.get(rec.id, [])
            if not dups and content == rec.content:
                continue
            refs = _refs(rec)
            tags = list(rec.tags)
            for d in dups:
                refs += [r for r in _refs(d) if r not in refs]
                tags += [t for t in d.tags if t not in tags]
            ops.append(
                UpdateRecord(
                    memory_id=rec.id,
                    content=content,
                    sources=tuple(refs[: caps.MAX_CITATIONS_PER_RECORD]),
                    time=rec.time,
                    tags=tuple(tags[: caps.MAX_TAGS]),
                )
            )
        ops += [DeleteRecord(memory_id=rid) for rid in sorted(gone)]
        return ChangeSet(changes=tuple(ops))


def _relink(rec: Record, gone: dict[str, str], state: State) -> str:
    def repl(m: re.Match[str]) -> str:
        target = gone.get(m.group(2))
        if target is None:
            return m.group(0)
        kept = state.records[target]
        topic = "" if kept.topic == rec.topic else kept.topic
        return f"[[{topic}#^{target}]]"

    return LINK_RE.sub(repl, rec.content)


_PROMPT = """You organize a long-term memory. Do not add facts: only rearrange what is there.
Allowed operations, as JSON {"changes": [...]}:
- move_records: {"op": "move_records", "memory_ids": [...], "destination": {"topic_path": "...",
  "headings": [...], "position": "end"}}
- merge: one update_record of the kept record (complete content and sources) and a delete_record per
  merged record
- split: one update_record of the record (its first part) and create_record for each other part,
  citing the same sources
- delete_record: {"op": "delete_record", "memory_id": "..."} for stale or duplicate items
Keep the "core" topic to rules, preferences and identity facts; move project progress, stale and
duplicate items out of it. Never merge records tagged as alternatives of each other. Cite only the
sources the records already cite, exactly. Answer with the JSON object and nothing else; {"changes": []}
when nothing should change.

Records (JSON, one per line):
"""


class ModelOrganizer:
    """A model plans the pass: moves, merges, splits and deletions as JSON changes.

    Args:
        complete: Called with the whole prompt; returns the model's answer (the same callable a
            :class:`~memory.writers.ModelWriter` takes).
        name: Shown in errors.
        max_chars: The most characters of records put in the prompt (later ones are left out).

    ``complete`` raising ``ConnectionError``, ``TimeoutError`` or ``OSError`` is reported as
    :class:`~memory.errors.WriterUnavailableError` (retryable).
    """

    def __init__(
        self, complete: Callable[[str], str], *, name: str = "model", max_chars: int = 24_000
    ) -> None:
        self.complete = complete
        self.name = name
        self.max_chars = max_chars

    def prompt(self, state: State) -> str:
        """Return the prompt for the records of ``state``."""
        lines: list[str] = []
        used = 0
        for topic in sorted(state.order):
            for rec in state.topic_records(topic):
                line = json.dumps(
                    {
                        "memory_id": rec.id,
                        "topic": rec.topic,
                        "headings": list(rec.headings),
                        "content": rec.content,
                        "tags": list(rec.tags),
                        "sources": [
                            {"source": c.source, "label": c.label, "snippet": c.snippet}
                            for c in rec.citations
                        ],
                    },
                    ensure_ascii=False,
                )
                if used + len(line) > self.max_chars:
                    return _PROMPT + "\n".join(lines) + "\n(further records left out)\n"
                lines.append(line)
                used += len(line)
        return _PROMPT + "\n".join(lines) + "\n"

    def organize(self, state: State) -> ChangeSet:
        """Ask the model and parse its answer.

        Raises:
            RejectedError: ``MALFORMED``: the answer is not the JSON change shape.
            WriterUnavailableError: ``complete`` could not reach the model.
        """
        if not state.records:
            return ChangeSet()
        try:
            answer = self.complete(self.prompt(state))
        except (ConnectionError, TimeoutError, OSError) as e:
            raise WriterUnavailableError(self.name, f"{type(e).__name__}: {e}") from e
        return parse_changes(answer)


@dataclass(frozen=True)
class OrganizeResult:
    """What one pass did."""

    changed_files: list[str]
    """View paths whose bytes changed (``topics/x.md``, ``core.md``), sorted; empty if none."""
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()
    revision: int = 0


def _check_rearranges(state: State, changes: ChangeSet) -> None:
    cited = {c.source for rec in state.records.values() for c in rec.citations}
    for i, ch in enumerate(changes.changes):
        if isinstance(ch, RewriteTopic):
            raise RejectedError(
                Rejection.MALFORMED,
                "an organizer moves, merges, splits and deletes records; rewrite_topic is not one "
                "of its operations",
                change=i,
            )
        if isinstance(ch, CreateRecord | UpdateRecord):
            for ref in ch.sources:
                if ref.source not in cited:
                    raise RejectedError(
                        Rejection.SOURCE_NOT_IN_BATCH,
                        f"the organizer cites {ref.source!r}, which no record cites; an organizer "
                        "never writes new content from sessions",
                        source_id=ref.source,
                        change=i,
                    )


def _record_run(ws: MemoryWorkspace, changed: bool, now: datetime) -> None:
    with ws.atomic() as c:
        revision = int(c.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()[0])
        top = int(c.execute("SELECT coalesce(max(rowid), 0) FROM sources").fetchone()[0])
        c.execute(
            "INSERT INTO organizer_runs (at, revision, archive_top, changed) VALUES (?, ?, ?, ?)",
            (to_micros(now), revision, top, int(changed)),
        )


def reorganize(
    ws: MemoryWorkspace, organizer: Organizer | None = None, *, now: datetime | None = None
) -> OrganizeResult:
    """Run one organizer pass (the offline one by default) and install it, all or nothing.

    Args:
        ws: The workspace.
        organizer: What plans the pass (default :class:`OfflineOrganizer`).
        now: When the pass runs (aware; default now), recorded for :class:`OrganizeSchedule`.

    Returns:
        What changed; ``changed_files`` lists only the view files whose bytes changed.

    Raises:
        RejectedError: the plan was refused (it would add content, lose a record, break a link, ...);
            nothing changed, but the run is recorded (a failed plan does not make the next one due
            sooner).
        WriterUnavailableError: the model could not be reached; nothing changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    chosen = organizer or OfflineOrganizer()
    at = now or utcnow()
    with ws.write_lock():
        state = ws.state()
        changes = chosen.organize(state)
        try:
            _check_rearranges(state, changes)
            p = ws.apply(changes, batch=None, kind="organize")
        except RejectedError:
            _record_run(ws, False, at)
            raise
        files = _changed_files(p, ws) if p.changed else []
        _record_run(ws, p.changed, at)
        return OrganizeResult(files, p.created, p.updated, p.deleted, p.moved, ws.revision)


def _changed_files(p: Plan, ws: MemoryWorkspace) -> list[str]:
    out = []
    for topic in sorted(p.topics):
        old = (
            render_topic(topic, p.before.topic_records(topic))
            if p.before.order.get(topic)
            else None
        )
        new = (
            render_topic(topic, p.after.topic_records(topic)) if p.after.order.get(topic) else None
        )
        if old != new:
            out.append(f"topics/{topic}.md")
    core_before = render_core(p.before.topic_records(CORE_TOPIC), ws.core_budget, ws.count_tokens)
    core_after = render_core(p.after.topic_records(CORE_TOPIC), ws.core_budget, ws.count_tokens)
    if core_before.text != core_after.text:
        out.append("core.md")
    return sorted(out)


@dataclass
class OrganizeSchedule:
    """When an organizer pass is due.

    Args:
        batches: Installs (written batches) since the last pass that make one due.
        tokens: Tokens of turns archived since the last pass that make one due.
        daily_at: The local time of the daily pass; None: no daily pass.
        count_tokens: The token counter (one per four characters by default).
    """

    batches: int = 5
    tokens: int = 40_000
    daily_at: time | None = field(default_factory=lambda: time(3, 0))
    count_tokens: Callable[[str], int] = approx_tokens

    def due(self, ws: MemoryWorkspace, now: datetime) -> str | None:
        """Why a pass is due at ``now`` (aware), or None: ``batches``, ``tokens`` or ``daily``.

        Counted since the last pass: installed batches (the install journal past its revision) and
        the tokens of turns archived after it. The daily pass is due when the latest ``daily_at``
        (local time) at or before ``now`` came after the last pass, and memory holds records.
        """
        return self._due(ws, now)

    def _due(self, ws: MemoryWorkspace, now: datetime) -> str | None:
        at, revision, top = _last_run(ws.conn)
        installs = int(
            ws.conn.execute(
                "SELECT count(*) FROM installs WHERE revision > ?", (revision,)
            ).fetchone()[0]
        )
        if installs >= self.batches:
            return "batches"
        total = 0
        for (text,) in ws.conn.execute("SELECT text FROM sources WHERE rowid > ?", (top,)):
            total += self.count_tokens(text)
            if total >= self.tokens:
                return "tokens"
        if self.daily_at is not None:
            local = now.astimezone()
            slot = datetime.combine(local.date(), self.daily_at, local.tzinfo)
            if local < slot:
                slot -= timedelta(days=1)
            has_records = ws.conn.execute("SELECT 1 FROM records LIMIT 1").fetchone() is not None
            if at < to_micros(slot) and has_records:
                return "daily"
        return None


def _last_run(conn: WorkspaceDatabase) -> tuple[int, int, int]:
    """``(at, revision, archive_top)`` of the last pass, or zeros when none ran."""
    row = conn.execute(
        "SELECT at, revision, archive_top FROM organizer_runs "
        "ORDER BY at DESC, revision DESC LIMIT 1"
    ).fetchone()
    return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))


def run_if_due(
    ws: MemoryWorkspace,
    schedule: OrganizeSchedule,
    now: datetime,
    organizer: Organizer | None = None,
) -> tuple[str, OrganizeResult] | None:
    """Run a pass when ``schedule`` says one is due at ``now``; return why and what it did, or None.

    Raises:
        As :func:`reorganize`.
    """
    why = schedule.due(ws, now)
    if why is None:
        return None
    return why, reorganize(ws, organizer, now=now)

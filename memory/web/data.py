"""What the Memory page and the memory panel show, read from a workspace.

* :func:`topic_tree`: the folder tree of topic files (``core`` is left out: the Core section manages
  it);
* :func:`timeline`: records grouped by year, month and day of their own time (``Record.time`` when it
  is a date, whole or partial, else the record's creation time), never by when a view was rebuilt;
* :func:`recent`: the newest records first, at most ``limit``;
* :func:`core_state`: the core topic's file, the rendered ``core.md``, the block actually injected
  (empty when injection is off), its token count and the budget;
* :func:`save_core`: a save of the core topic's edited file, compare-and-set on the revision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory.changes import ChangeSet
from memory.errors import MemoryLayerError
from memory.reading import RecordView, record_views
from memory.records import CORE_TOPIC, Record
from memory.topic_files import parse_topic, render_core, render_topic
from memory.workspace import MemoryWorkspace

__all__ = [
    "DEFAULT_RECENT_LIMIT",
    "Folder",
    "StaleRevisionError",
    "TimelineDay",
    "core_state",
    "record_data",
    "records_data",
    "recent",
    "record_date",
    "save_core",
    "source_times",
    "timeline",
    "topic_tree",
]

DEFAULT_RECENT_LIMIT = 50
"""Records the Recent section shows (the ``memory.recent.limit`` setting)."""

_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


class StaleRevisionError(MemoryLayerError):
    """A save was based on a revision that is no longer the workspace's; nothing was written.

    Attributes:
        expected: The revision the draft was made from.
        got: The workspace's revision now.
    """

    def __init__(self, expected: int, got: int) -> None:
        super().__init__(
            f"the memory changed since this draft was opened (revision {expected}, now {got}); "
            "the draft was not saved"
        )
        self.expected = expected
        self.got = got


@dataclass
class Folder:
    """A folder of the topic tree: sub-folders and the topics in it."""

    name: str
    path: str
    """``/``-joined path from the root ("" for the root)."""
    folders: list[Folder] = field(default_factory=list)
    topics: list[tuple[str, str, int]] = field(default_factory=list)
    """``(name, topic path, record count)``, by name."""

    @property
    def count(self) -> int:
        """Records in this folder and below."""
        return sum(c for _, _, c in self.topics) + sum(f.count for f in self.folders)


def topic_tree(ws: MemoryWorkspace) -> Folder:
    """The folder tree of the workspace's topics, without the core topic."""
    counts: dict[str, int] = {}
    for rec in ws.records():
        counts[rec.topic] = counts.get(rec.topic, 0) + 1
    root = Folder("", "")
    for topic in sorted(counts):
        if topic == CORE_TOPIC:
            continue
        *dirs, name = topic.split("/")
        at = root
        for i, d in enumerate(dirs):
            nxt = next((f for f in at.folders if f.name == d), None)
            if nxt is None:
                nxt = Folder(d, "/".join(dirs[: i + 1]))
                at.folders.append(nxt)
            at = nxt
        at.topics.append((name, topic, counts[topic]))
    return root


def record_date(rec: Record, said: Mapping[str, str] | None = None) -> tuple[str, str, str]:
    """The ``(year, month, day)`` a record is filed under in the Timeline ("" for a missing part).

    Its own ``time`` when that starts with a date (``2025``, ``2025-06``, ``2025-06-01...``), else
    when its earliest cited turn was said (``said``: source id -> ISO 8601 time), else the day it
    was created (UTC). Never the time a view was rebuilt.
    """
    if rec.time:
        m = _DATE.match(rec.time.strip())
        if m is not None:
            return m.group(1), m.group(2) or "", m.group(3) or ""
    if said:
        times = sorted(said[c.source] for c in rec.citations if said.get(c.source))
        m = _DATE.match(times[0]) if times else None
        if m is not None:
            return m.group(1), m.group(2) or "", m.group(3) or ""
    at = datetime.fromtimestamp(rec.created_at / 1e6, UTC)
    return f"{at.year:04d}", f"{at.month:02d}", f"{at.day:02d}"


@dataclass
class TimelineDay:
    """One day (or a partial date) of the Timeline and its records, in topic order."""

    key: str
    """``YYYY-MM-DD``, or ``YYYY-MM`` / ``YYYY`` for partial dates."""
    records: list[Record]


def timeline(ws: MemoryWorkspace) -> list[tuple[str, list[tuple[str, list[TimelineDay]]]]]:
    """Records by year, month and day, newest first: ``[(year, [(month, [day, ...]), ...]), ...]``."""
    days: dict[str, list[Record]] = {}
    records = ws.records()
    said = source_times(ws, records)
    for rec in records:
        y, m, d = record_date(rec, said)
        key = "-".join(p for p in (y, m, d) if p)
        days.setdefault(key, []).append(rec)
    years: dict[str, dict[str, list[TimelineDay]]] = {}
    for key in sorted(days, reverse=True):
        y, _, rest = key.partition("-")
        m = rest.split("-")[0] if rest else ""
        years.setdefault(y, {}).setdefault(m, []).append(TimelineDay(key, days[key]))
    return [(y, list(ms.items())) for y, ms in years.items()]


def source_times(ws: MemoryWorkspace, records: Iterable[Record]) -> dict[str, str]:
    """When each source the records cite was said: source id -> ISO 8601 time (UTC)."""
    wanted = {c.source for rec in records for c in rec.citations}
    return {s.id: s.created_at for s in ws.sources(wanted)} if wanted else {}


def recent(ws: MemoryWorkspace, limit: int = DEFAULT_RECENT_LIMIT) -> list[RecordView]:
    """The newest records first (by creation time, then id), at most ``limit``."""
    views = record_views(ws)
    views.sort(key=lambda v: (v.record.created_at, v.record.id), reverse=True)
    return views[: max(0, limit)]


def record_data(view: RecordView, said: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A record as the panel and the API show it: the record view's JSON, its snippet and date.

    ``said`` (from :func:`source_times`) dates an undated record by its cited turns.
    """
    data = view.as_json()
    data["snippet"] = next((c.snippet for c in view.citations if c.snippet), "")
    y, m, d = record_date(view.record, said)
    data["date"] = "-".join(p for p in (y, m, d) if p)
    return data


def records_data(ws: MemoryWorkspace, views: Sequence[RecordView]) -> list[dict[str, Any]]:
    """:func:`record_data` of each view, dated by their cited turns (one archive read)."""
    said = source_times(ws, [v.record for v in views])
    return [record_data(v, said) for v in views]


def core_state(ws: MemoryWorkspace, *, inject: bool = True) -> dict[str, Any]:
    """The Core section's data (``GET /api/memory/core``).

    Returns:
        ``topic`` ("core"), ``canonical`` (the text of ``topics/core.md``, the editable full records),
        ``content``/``size``/``mtime`` (the same file's text, bytes and modification time),
        ``rendered`` (``core.md``), ``effective`` (what is injected: ``rendered``, or "" when
        ``inject`` is off), ``inject``, ``tokens`` (of the effective block), ``budget`` (tokens),
        ``left_out`` (core records over the budget), ``records`` (core records) and ``revision``.
        Read in one read transaction, so an install running meanwhile is seen whole or not at all.
    """
    with ws.conn.reading():
        revision = ws.revision
        records = ws.records(CORE_TOPIC)
    canonical = render_topic(CORE_TOPIC, records) if records else ""
    block = render_core(records, ws.core_budget, ws.count_tokens)
    path = ws.views_path / "topics" / f"{CORE_TOPIC}.md"
    try:
        mtime: float | None = path.stat().st_mtime
    except OSError:
        mtime = None
    return {
        "topic": CORE_TOPIC,
        "canonical": canonical,
        "content": canonical,
        "size": len(canonical.encode("utf-8")),
        "mtime": mtime,
        "rendered": block.text,
        "effective": block.text if inject else "",
        "inject": inject,
        "tokens": block.tokens if inject else 0,
        "budget": ws.core_budget,
        "left_out": list(block.left_out),
        "records": len(records),
        "revision": revision,
    }


def save_core(ws: MemoryWorkspace, text: str, revision: int) -> tuple[int, list[str]]:
    """Save the edited core topic file if the workspace is still at ``revision``.

    The compare-and-set runs under the workspace's write lock, and the edit goes through the same
    validated transaction as every writer (:meth:`MemoryWorkspace.apply`).

    Args:
        ws: The workspace.
        text: The edited ``topics/core.md``.
        revision: The revision the draft was made from.

    Returns:
        ``(the new revision, ids of the records updated or created)``.

    Raises:
        StaleRevisionError: the workspace is at another revision; nothing was written.
        EditError: the text cannot be read back (at its line).
        RejectedError: the transaction refused it.
        CapExceeded: the text is over the record caps.
        WorkspaceBusyError: another writer holds the lock.
    """
    with ws.write_lock():
        now = ws.revision
        if now != revision:
            raise StaleRevisionError(revision, now)
        parsed = parse_topic(text, "topics/core.md", CORE_TOPIC)
        p = ws.apply(ChangeSet(changes=(parsed.change,)))
        return ws.revision, [*p.updated, *p.created]

"""What a person reads of a memory workspace: records with their sources, pages of search, status.

The ``sessiongraph memory`` commands, the MCP tools and the web pages are thin layers over these:

* :func:`record_views` / :func:`record_view`: records with each citation's snippet and its source's
  session and node (sources are read from the archive, never from the graph store);
* :func:`search_page`: search one page at a time, with the total, inside the caps of
  :mod:`memory.caps` (a query or page size over them raises :class:`~memory.caps.CapExceeded`); the
  query is read as every search reads it (:mod:`memory.recall`);
* :func:`export_markdown`: the Markdown views written to a folder of the person's choice;
* :func:`workspace_status`: counts, what each session still owes, the last failure.

Deleting and taking a deletion back are :mod:`memory.tombstones`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graph.store.base import BaseStore
from memory import caps
from memory.records import Record
from memory.tombstones import resolve_record, tombstones
from memory.workspace import MemoryWorkspace

if TYPE_CHECKING:  # recall and the pipeline are imported by the functions that use them
    from memory.recall import SearchHit

__all__ = [
    "CitationView",
    "RecordView",
    "SearchPage",
    "WorkspaceStatus",
    "export_markdown",
    "record_view",
    "record_views",
    "search_page",
    "workspace_status",
]


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
    """Search records, one page at a time, with the total.

    The query is read exactly as :meth:`MemoryWorkspace.search` reads it (:mod:`memory.recall`:
    each word a plain term, bound as a parameter, terms OR-ed, best first, ties by id), so quotes,
    ``*``, ``:``, ``NEAR`` or ``AND`` are plain words and never raise; a query without a word matches
    nothing.

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
        SearchIndexMissingError: the full-text index is gone.
    """
    caps.check_len(query, "MAX_QUERY_CHARS", "search query")
    caps.check_range(per_page, "MAX_RESULTS_PER_PAGE", "results per page")
    if page < 1 or per_page < 1:
        raise ValueError(f"page ({page}) and per_page ({per_page}) start at 1")
    offset = min((page - 1) * per_page, 2**63 - 1)  # past every record; and SQLite binds 64 bits
    from memory.recall import hits, matches

    total, ranked = matches(ws.db, query, limit=per_page, offset=offset, keep=keep)
    found = hits(ws.state(), ws.sources, ranked) if ranked else []
    return SearchPage(query, page, per_page, total, tuple(found))


def export_markdown(ws: MemoryWorkspace, directory: str | Path) -> list[Path]:
    """Write the workspace's Markdown views (``topics/**/*.md``, ``core.md``, ``views.json``).

    The files are rendered from the database now (the grammar is in :mod:`memory.topic_files`); a directory
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
    from memory.pipeline import owed_ids

    c = ws.db
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
        records=int(c.one("SELECT count(*) FROM records")),
        topics=int(c.one("SELECT count(DISTINCT topic) FROM records")),
        sources=int(c.one("SELECT count(*) FROM sources")),
        tombstones=len(tombstones(ws)),
        pending=tuple(pending),
        last_failure=(str(failure[0]), str(failure[1]), int(failure[2])) if failure else None,
    )

"""Helpers the format modules share: times, content blocks, rewind stamps, session upkeep."""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graph.ids import NodeId
from graph.importers.jsonl import Line, LineProblems, LineReader, Slim
from graph.importers.report import FileReport, TranscriptError
from graph.models import Content, ImageBlock, Kind, Node, Role, Session, TextBlock, content_text
from graph.store.base import BaseStore, paused_gc

__all__ = [
    "CHUNK",
    "EPOCH",
    "add_chunked",
    "ensure_session",
    "predecessors_first",
    "file_import",
    "holders",
    "image_block",
    "parse_time",
    "preview",
    "refuse_another_transcript",
    "rereading",
    "stamp_subtrees",
    "stored_ids",
    "text_blocks",
    "unstamp_kept",
    "write_planned",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The time given to an entry that carries none and follows none."""

CHUNK = 500
"""Nodes made and handed to the store at a time by :func:`add_chunked`."""


def predecessors_first(ids: Sequence[str], pred: Mapping[str, str | None]) -> list[int] | None:
    """The positions of ``ids`` ordered so that each comes after its predecessor among them.

    File order is kept wherever it already puts predecessors first; a predecessor outside ``ids``
    (stored already, or none) places nothing. None when ``pred`` links some of ``ids`` in a cycle
    (no order exists: the caller hands them to the store together, which names the cycle).
    """
    at = {node_id: i for i, node_id in enumerate(ids)}
    state: dict[int, int] = {}  # 1: on the path being followed, 2: placed
    order: list[int] = []
    for i in range(len(ids)):
        path = []
        j: int | None = i
        while j is not None and j not in state:
            state[j] = 1
            path.append(j)
            p = pred.get(ids[j])
            j = at.get(p) if p is not None else None
        if j is not None and state[j] == 1:
            return None
        for k in reversed(path):
            state[k] = 2
            order.append(k)
    return order


@contextmanager
def rereading(
    path: Path, keep: Callable[[dict[str, Any]], dict[str, Any]]
) -> Iterator[Callable[[Line], Line]]:
    """Yield ``whole(line) -> Line``: a line read slim (``keep``, a :class:`Slim`), read whole again.

    A line that holds its object whole already (``data`` not a :class:`Slim`) is returned as it
    is. The object is read from the line's byte offset (:class:`LineReader`) and must be the one
    read before: the line's bytes of the same digest as when
    :func:`~graph.importers.jsonl.read_jsonl` kept it (a slim entry without one: ``keep`` of the
    object equal to the slim entry kept).

    Raises:
        TranscriptError: (from ``whole``) the line no longer holds the object it was read as (the
            file was rewritten while it was imported); nothing of the file is stored.
        OSError: the file cannot be read.
    """
    with LineReader(path) as reader:

        def whole(line: Line) -> Line:
            if not isinstance(line.data, Slim):
                return line
            data = reader.data(line)
            if data is None or (not hasattr(line.data, "digest") and keep(data) != line.data):
                raise TranscriptError(path, f"line {line.number} changed while it was imported")
            return Line(line.number, data, line.offset, line.part)

        yield whole


def add_chunked(
    store: BaseStore, session_id: str, nodes: Iterable[Node], *, head: str | None
) -> int:
    """Hand ``nodes`` to the store :data:`CHUNK` at a time; return how many were added.

    ``nodes`` may be a generator: only one chunk's nodes are alive at once, so an import holds what
    its rules keep of the entries (:func:`rereading` reads each whole as its node is made), not
    every node model and row of the file as well. Each node must come after
    its predecessor (or the predecessor be stored). The head moves to ``head`` with the last
    chunk. Run it inside the import's transaction: the chunks are stored together or not at all.

    Raises:
        GraphError: the store refused a chunk (see
            :meth:`~graph.store.base.BaseStore.add_nodes`); the caller's transaction rolls back.
    """
    added = 0
    it = iter(nodes)
    chunk = list(itertools.islice(it, CHUNK))
    while True:
        after = list(itertools.islice(it, CHUNK))
        if not after:
            return added + len(store.add_nodes(session_id, chunk, head=head))
        added += len(store.add_nodes(session_id, chunk))
        chunk = after


@contextmanager
def file_import(path: Path, fmt: str) -> Iterator[tuple[FileReport, LineProblems]]:
    """Frame one file's import: yield its report and line-problem log, then fill the report in.

    The cyclic GC is paused throughout (a transcript's lines stay alive until its one transaction
    commits, and collecting them over and over slows a large import). On leaving, the skipped and repaired lines join the report and
    ``report.seconds`` is set to the wall time taken (seconds). The caller opens the transaction.
    """
    start = time.perf_counter()
    report = FileReport(Path(path), fmt)
    problems = LineProblems()
    with paused_gc():
        yield report, problems
    report.skipped += problems.skipped
    report.repaired += problems.repaired
    report.seconds = time.perf_counter() - start


def parse_time(value: Any, fallback: datetime) -> datetime:
    """Read a transcript time: an ISO-8601 string (``Z`` allowed) or Unix milliseconds.

    Returns ``fallback`` when the value is missing or unreadable.
    """
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return fallback
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return fallback
    return fallback


def image_block(source: Any, media_type: str = "") -> ImageBlock:
    """An image reference for a transcript image: its URL or path, or a hash of inline base64 data.

    The image bytes are never stored in the graph (:class:`graph.models.ImageBlock`).
    """
    if isinstance(source, Mapping):
        media_type = str(source.get("media_type") or source.get("mimeType") or media_type)
        if source.get("url"):
            return ImageBlock(ref=str(source["url"]), media_type=media_type)
        data = source.get("data")
        if isinstance(data, str):
            digest = hashlib.sha256(data.encode()).hexdigest()
            return ImageBlock(ref=f"sha256:{digest}", media_type=media_type)
    if isinstance(source, str) and source:
        return ImageBlock(ref=source, media_type=media_type)
    return ImageBlock(ref="", media_type=media_type)


def preview(content: Content, width: int = 80) -> str:
    """The first ``width`` characters of a content's text on one line (used for titles)."""
    text = " ".join(content_text(content).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def text_blocks(parts: Iterable[str]) -> tuple[TextBlock, ...]:
    """Text blocks for the non-empty strings of ``parts``."""
    return tuple(TextBlock(text=p) for p in parts if p)


def stored_ids(store: BaseStore, session_id: str) -> Mapping[str, str | None]:
    """The session's node ids (id -> predecessor), or an empty map when the session does not exist."""
    return store.index(session_id).pred if store.has_session(session_id) else {}


def ensure_session(
    store: BaseStore,
    session_id: str,
    *,
    title: str,
    metadata: Mapping[str, Any],
    created_at: datetime,
    spawned_from: str | None = None,
    parent_session: str | None = None,
) -> Session:
    """Create the session, or bring an existing one's title and metadata up to date.

    An existing session keeps its title when ``title`` is empty; its metadata is replaced only when it
    differs (a metadata-only write, :meth:`BaseStore.update_session`).
    """
    if not store.has_session(session_id):
        return store.create_session(
            title,
            id=session_id,
            metadata=metadata,
            created_at=created_at,
            spawned_from=spawned_from,
            parent_session=parent_session,
        )
    current = store.session(session_id)
    new_title = title if title and title != current.title else None
    new_meta = dict(metadata) if dict(current.metadata) != dict(metadata) else None
    if new_title is None and new_meta is None:
        return current
    return store.update_session(session_id, title=new_title, metadata=new_meta)


def refuse_another_transcript(
    store: BaseStore,
    path: Path,
    session_id: str,
    stored_entries: Callable[[], Sequence[tuple[str, int, Kind, Role, Content]]],
    new_entries: int,
) -> None:
    """Refuse a file that names a stored session another file holds with other entries.

    A session stored from another path is the same conversation read from a moved or copied file
    when the entries both hold match. Two different conversations can share an id, though (a
    sanitizer's placeholder in place of every session id): their entries get the same node ids,
    and would be taken for the stored ones (or, holding none of them, be joined to that session).

    Args:
        store: The store.
        path: The file being imported.
        session_id: The session it names, stored already.
        stored_entries: Gives ``(node id, line number, kind, role, content)`` of each entry of
            the file whose node id the session holds; called only when the session is stored from
            another path (the contents are read again from the file then, not on every re-import).
        new_entries: How many entries of the file the session does not hold.

    Raises:
        TranscriptError: naming the file (and the first line that differs) and the other file.
    """
    other = store.session(session_id).metadata.get("path")
    if not isinstance(other, str) or other == str(path):
        return
    why = f"two conversations with one session id (a placeholder?); nothing of {path} was stored"
    stored = stored_entries()
    if not stored:
        if new_entries:
            raise TranscriptError(
                path,
                f"session {session_id} is stored from {other}, which holds none of its entries: {why}",
            )
        return
    there = store.nodes(session_id, [e[0] for e in stored])
    for (node_id, number, kind, role, content), node in zip(stored, there, strict=True):
        if (kind, role, content) != (node.kind, node.role, node.content):
            raise TranscriptError(
                path,
                f"line {number}: entry {node_id} differs from the one session {session_id} "
                f"holds, stored from {other}: {why}",
            )


def stamp_subtrees(store: BaseStore, session_id: str, fork_point: str, children: list[str]) -> int:
    """Stamp rewound every node below ``fork_point`` through ``children`` (abandoned branches).

    The head does not move (:meth:`BaseStore.stamp_rewound`). Nodes already stamped are left alone.

    Returns:
        How many nodes were newly stamped.
    """
    kids = store.index(session_id).children
    below: list[str] = []
    stack = list(children)
    while stack:
        n = stack.pop()
        below.append(n)
        stack.extend(kids.get(n, ()))
    return len(store.stamp_rewound(session_id, below))


def _below(kids: Mapping[str, Sequence[str]], roots: Iterable[str]) -> set[str]:
    """``roots`` and every node below them."""
    out: set[str] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(kids.get(n, ()))
    return out


def unstamp_kept(
    store: BaseStore, session_id: str, rewinds: Iterable[tuple[str, Sequence[str]]]
) -> int:
    """Remove the rewound stamps of the branches the rewinds keep (see :func:`stamp_subtrees`).

    ``rewinds`` is ``(fork point, abandoned children)`` of every rewind of the transcript. An
    import of the file while it was shorter may have stamped a child the conversation went on
    from later (the head's branch passes through it now): one import of the whole file stamps
    only the abandoned children's subtrees, so every stamp below a child of a fork point that is
    not abandoned, and in no abandoned subtree, is removed (:meth:`BaseStore.unstamp_rewound`:
    metadata only, ``updated_at`` unchanged). Nothing is walked when no such child is stamped.

    Returns:
        How many stamps were removed.
    """
    idx = store.index(session_id)
    kids = idx.children
    rewinds = list(rewinds)
    kept = [
        k
        for point, gone in rewinds
        for k in kids.get(point, ())
        if k not in gone and idx.is_rewound(k)
    ]
    if not kept:
        return 0
    abandoned = _below(kids, (k for _, gone in rewinds for k in gone))
    todo = [n for n in _below(kids, kept) if n not in abandoned and idx.is_rewound(n)]
    return len(store.unstamp_rewound(session_id, todo))


_REPORT_LISTS = ("session_ids", "skipped", "repaired", "dangling", "relinked", "dropped", "notes")

Plan = tuple[Callable[[], bool], Callable[[], None]]
"""What an importer worked out from reads: ``(still_true, write)``."""


def holders(store: BaseStore, ids: Iterable[str]) -> dict[str, str]:
    """Map each of ``ids`` to the session holding it (``""``: none), in one bounded lookup."""
    wanted = list(dict.fromkeys(ids))
    found = store.locate(wanted)
    return {i: str(found.get(NodeId(i), "")) for i in wanted}


def write_planned(store: BaseStore, report: FileReport, plan: Callable[[], Plan]) -> None:
    """Work out an import from reads outside the write lock, then check and write it under the lock.

    ``plan()`` reads the store (never writes) and returns ``(still_true, write)``: ``still_true()``
    says, under the lock, whether what it read still holds (another process may have imported the
    same file, or stored what it links to, in between); ``write()`` writes it. When it no longer
    holds, what the plan added to ``report`` is taken back and the plan is worked out again under
    the lock. Readers and other writers wait only for the check and the write, not for the rules
    and the node models.

    Raises:
        GraphError: the store refused the write; nothing was written.
    """
    marks = {name: len(getattr(report, name)) for name in _REPORT_LISTS}
    still_true, write = plan()
    with store.atomic():
        if not still_true():
            for name, n in marks.items():
                del getattr(report, name)[n:]
            still_true, write = plan()
        write()

"""pi coding agent transcripts (``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``) as sessions.

Mapping (pi's session format: a header line, then entries linked by ``id``/``parentId``):

* The header line (``type: "session"``) is the session: its ``id`` is the session id and the whole
  header is kept in the session metadata (``header``). A ``session_info`` entry's ``name`` is the title,
  else the first user prompt.
* Entries have ``id``/``parentId`` (v2, v3). pi's short ids (8 hex digits) are unique only inside one
  file, and this store's node ids are global, so a short id is stored as ``<session id>/<entry id>``;
  full-length ids (UUIDs, newer pi) are kept as they are. The entry's own id is always in
  ``metadata["entry_id"]``.
* v1 files have no ids: each entry follows the previous one in file order and gets the id
  ``<session id>/L<line>`` (``.<k>`` added for the k-th further object split from one line), so a
  re-import finds the same ids.
* ``message`` entries are messages by role: ``user``, ``assistant``, ``toolResult`` and
  ``bashExecution`` (role ``tool``), ``custom`` (``system``); ``branchSummary``/``compactionSummary``
  messages are summaries without covers. ``custom_message`` is a ``system`` message. ``model_change``,
  ``thinking_level_change``, ``custom``, ``label``, ``session_info`` and unknown types are events.
* ``compaction``: a summary covering what pi summarised into it: the branch from the previous
  compaction's first kept entry (the root, for the first) up to the entry before its own
  ``firstKeptEntryId`` (v1: ``firstKeptEntryIndex``, an index into the entries pi held, the header at
  0), the previous compaction included, so that one's span is covered through it; inline layout.
  pi's context is the latest compaction's summary, then the kept entries (written before it), then
  what follows, and :meth:`BaseStore.context` gives that order. A compaction that keeps nothing
  (v1: the index is the entry count, or names the compaction itself) covers that whole span; so
  does one whose first kept entry resolves to nothing or lies off its branch, which the report
  notes: like pi, the context then holds the summary and nothing of the old history.
* Damaged links are reported and the rest of the file imports: a repeated entry id (the later line
  is skipped), a parent in no file (the entry becomes a root, ``metadata["dangling_parent"]``), a
  parent link closing a cycle, self parents included (cut, ``metadata["cycle_parent"]``). An entry
  whose parent is written on a later line (pi writes a parent first: damage) is a root until that
  line exists; stored so, it stays one when the line arrives (links are fixed once stored), where
  one import of the whole file links it, and cuts a cycle the two lines close at the later line.
  When the later line does close a cycle through the stored root, the root's note becomes
  ``cycle_parent`` (:meth:`BaseStore.note_cycle_parents`), and a resumed import leaves a file
  whose new entries include such a parent to a full one.
* ``branch_summary``: when the entry it summarises (``fromId``) lies below its parent (the fork point
  the user went back to), a sibling-layout summary covering that abandoned branch; otherwise a summary
  without covers.
* Forks inside a file stay forks: pi's ``/tree`` keeps every branch navigable, so each tip stays live
  (no rewind stamps).
* ``/fork`` files (header ``parentSession``, the source file's path) copy the source's path with the
  same entry ids. When the source session is stored (or its file exists and is imported first), the
  fork file's entries go into the source session under the source's ids, so the copied path maps onto
  the stored nodes and only the new entries are added, as a branch at the cut (tagged
  ``metadata["transcript_session"]``); the source's head is left alone. Without the source the fork
  file is a session of its own, ``parentSession`` kept in its metadata, and stays one on later
  imports (a source stored afterwards does not move it). A source that is the file itself, or forks
  from it, is not followed.
* The head is the last entry in file order.
* A file is read in two passes: the first keeps of each entry only what the rules read
  (:func:`_slim`: its ids, parent, type, time and the references a summary makes), the second
  reads each entry whole again by its byte offset as its chunk of nodes is made, so an import
  holds about the same per entry whatever the entries' size. A line that no longer holds its entry
  then (the file rewritten meanwhile) fails the import, and nothing of the file is stored.
* A last line pi is still writing (no newline yet, torn) stores nothing, not even an object found
  inside it (:func:`graph.importers.resume.without_torn_tail`): the next import reads it whole. A
  file whose first line (the header) is still torn stores nothing at all.
* A file imported before is resumed from where that import stopped (:mod:`graph.importers.resume`):
  only the appended lines are read, so a grown file costs about its new lines. Appended lines the
  resumed path does not take (a compaction or branch summary, whose covers reach back through the
  stored branch; an id stored already; a ``/fork`` or v1 file) are imported in full, as is a file
  truncated, rewritten or replaced since (named in the report's notes).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from graph.importers._common import (
    EPOCH,
    Plan,
    add_chunked,
    ensure_session,
    file_import,
    holders,
    image_block,
    parse_time,
    predecessors_first,
    preview,
    refuse_another_transcript,
    rereading,
    stored_ids,
    write_planned,
)
from graph.importers.jsonl import (
    Line,
    LineProblems,
    ReadPosition,
    Slim,
    read_jsonl,
    without_bom,
)
from graph.importers.report import FileReport, TranscriptError
from graph.importers.resume import (
    FileState,
    nothing_complete_yet,
    read_complete,
    resumed,
    save_state,
)
from graph.models import Block, Content, Kind, Node, Role, TextBlock, ToolCallBlock, ToolResultBlock
from graph.store.base import BaseStore

__all__ = ["FORMAT", "header", "import_file"]

FORMAT = "pi"
"""The format name :func:`graph.importers.detect_format` gives these files."""

_EVENTS = ("model_change", "thinking_level_change", "custom", "label", "session_info")
_TYPES = frozenset(
    {"session", "message", "compaction", "branch_summary", "custom_message", *_EVENTS}
)
"""The entry types pi writes: a file holding none of them is not a pi session."""


_KEPT = ("type", "id", "parentId", "timestamp", "firstKeptEntryId", "firstKeptEntryIndex", "fromId")
"""The fields of an entry the rules read (besides a ``session_info``'s name and a message's role)."""
_SHARED_TYPES = {t: t for t in _TYPES}
_SHARED_MESSAGES = {
    r: {"role": r}
    for r in ("user", "assistant", "toolResult", "bashExecution", "custom")
    + ("branchSummary", "compactionSummary")
}
"""One copy of each entry type and of each role's slim ``message`` for every slim entry (read only)."""


def _slim(data: dict[str, Any]) -> dict[str, Any]:
    """What the rules read of an entry (:data:`_KEPT`): the rest stays in the file until written.

    The header is kept whole (it is the session's metadata). An entry's texts and blocks are read again
    when the entry's node is made (:func:`graph.importers._common.rereading`), so a read holds
    about the same per entry whatever the entries' size.
    """
    kind = data.get("type")
    if kind == "session":
        return data
    out = Slim({k: data[k] for k in _KEPT if k in data})
    if isinstance(kind, str):
        out["type"] = _SHARED_TYPES.get(kind, kind)
    if kind == "session_info" and "name" in data:
        out["name"] = data["name"]
    m = data.get("message")
    if isinstance(m, Mapping) and "role" in m:
        role = m["role"]
        shared = _SHARED_MESSAGES.get(role) if isinstance(role, str) else None
        out["message"] = shared if shared is not None else {"role": role}
    return out


def header(path: Path) -> dict[str, Any] | None:
    """The header object of a pi file (its first line), or None when it has none."""
    try:
        with path.open("rb") as f:
            first = without_bom(f.readline())
        obj = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) and obj.get("type") == "session" else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in value
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _blocks(value: Any) -> tuple[Content, list[str]]:
    if isinstance(value, str):
        return value, []
    blocks: list[Block] = []
    thinking: list[str] = []
    for b in value if isinstance(value, list) else []:
        if not isinstance(b, Mapping):
            continue
        kind = b.get("type")
        if kind == "text":
            blocks.append(TextBlock(text=str(b.get("text", ""))))
        elif kind == "toolCall":
            blocks.append(
                ToolCallBlock(
                    id=str(b.get("id", "")),
                    name=str(b.get("name", "")),
                    arguments=b.get("arguments"),
                )
            )
        elif kind == "image":
            blocks.append(
                image_block(b.get("data") and {"data": b["data"]}, str(b.get("mimeType", "")))
            )
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
    return tuple(blocks), thinking


def _message(entry: Mapping[str, Any]) -> tuple[Kind, Role, Content, dict[str, Any]]:
    """Kind, role, content and extra metadata of an entry."""
    kind = entry.get("type")
    extra: dict[str, Any] = {}
    if kind == "message":
        raw = entry.get("message")
        m: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        role = m.get("role")
        extra["message"] = {k: v for k, v in m.items() if k != "content"}
        if role in ("user", "assistant"):
            content, thinking = _blocks(m.get("content"))
            if thinking:
                extra["thinking"] = thinking
            return Kind.MESSAGE, Role(role), content, extra
        if role == "toolResult":
            result = ToolResultBlock(
                call_id=str(m.get("toolCallId", "")),
                text=_text(m.get("content")),
                is_error=bool(m.get("isError", False)),
            )
            return Kind.MESSAGE, Role.TOOL, (result,), extra
        if role == "bashExecution":
            text = f"$ {m.get('command', '')}\n{m.get('output', '')}".rstrip()
            return Kind.MESSAGE, Role.TOOL, text, extra
        if role in ("branchSummary", "compactionSummary"):
            return Kind.SUMMARY, Role.SYSTEM, str(m.get("summary", "")), extra
        return Kind.MESSAGE, Role.SYSTEM, _text(m.get("content")), extra
    if kind in ("compaction", "branch_summary"):
        return Kind.SUMMARY, Role.SYSTEM, str(entry.get("summary", "")), extra
    if kind == "custom_message":
        return Kind.MESSAGE, Role.SYSTEM, _text(entry.get("content")), extra
    if kind == "model_change":
        text = f"model: {entry.get('provider', '')}/{entry.get('modelId', '')}"
    elif kind == "thinking_level_change":
        text = f"thinking level: {entry.get('thinkingLevel', '')}"
    elif kind == "label":
        text = f"label: {entry.get('label', '')}"
    elif kind == "session_info":
        text = f"name: {entry.get('name', '')}"
    else:
        text = str(kind)
    return Kind.EVENT, Role.SYSTEM, text, extra


def _source_session(
    store: BaseStore, parent_path: str, report: FileReport, importing: frozenset[Path]
) -> str | None:
    """The stored session of a ``/fork`` file's source, importing the source file first if needed.

    ``importing`` holds the files whose import is under way; a source among them (a file naming
    itself, or forks naming each other) is not imported again.
    """
    source = Path(parent_path)
    try:
        looped = source.resolve() in importing
        head = header(source) if source.is_file() else None
    except (OSError, ValueError):  # unreadable, or not a path at all (a NUL byte)
        looped, head = False, None
    if head is not None and isinstance(head.get("id"), str):
        if store.has_session(head["id"]):
            return str(head["id"])
        if looped:
            report.notes.append(f"the fork's source {source} is this file or forks from it")
            return None
        # The source may itself be a fork whose entries joined its own source's session.
        sub = _import_file(store, source, importing)
        report.notes.append(f"imported the fork's source {source} first ({sub.nodes_added} nodes)")
        report.notes.extend(f"{source}: {note}" for note in sub.notes)
        report.notes.extend(f"{source}: line {n} skipped: {why}" for n, why in sub.skipped)
        return sub.session_ids[0] if sub.session_ids else None
    for s in store.sessions():
        if s.metadata.get("runtime") == FORMAT and s.metadata.get("path") == parent_path:
            return s.id
    return None


def import_file(store: BaseStore, path: Path, *, resume: bool = True) -> FileReport:
    """Import one pi session file in one transaction.

    Re-importing changes nothing; a file that grew adds only its new entries, read from where the
    last import stopped when the resumed path takes them (see the module docstring).

    Args:
        store: The store to import into.
        path: The session file.
        resume: False reads the whole file even when a recorded state would let it resume.

    Returns:
        The file's report (see :class:`~graph.importers.report.FileReport`).

    Raises:
        OSError: the file cannot be read.
        TranscriptError: the file holds no pi entry, or a second session header.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    return _import_file(store, Path(path), frozenset(), resume)


def _import_file(
    store: BaseStore, path: Path, importing: frozenset[Path], resume: bool = True
) -> FileReport:
    importing = importing | {path.resolve()}
    with file_import(path, FORMAT) as (report, problems):
        if resume and resumed(store, path, FORMAT, report, problems, _resume):
            return report
        position = ReadPosition()
        lines = read_complete(path, problems, position, _slim)
        if nothing_complete_yet(path, lines, position, report):
            return report
        _check_one_session(path, lines)
        head = lines[0].data if lines and lines[0].data.get("type") == "session" else {}
        if head.get("parentSession"):  # its source may be imported first, in the same transaction
            with store.atomic():
                _import(store, path, lines, report, importing, position)[1]()
        else:  # worked out outside the write lock, checked and written under it
            write_planned(
                store, report, lambda: _import(store, path, lines, report, importing, position)
            )
    return report


def _check_one_session(path: Path, lines: list[Line]) -> None:
    """Refuse a file that holds no pi entry, or a second session header (two sessions in one file).

    Raises:
        TranscriptError: naming the file, and the line of the second header.
    """
    if lines and not any(line.data.get("type") in _TYPES for line in lines):
        raise TranscriptError(path, f"no pi entry in it ({len(lines)} objects of no pi type)")
    for line in lines[1:]:
        if line.data.get("type") == "session":
            raise TranscriptError(
                path,
                f"line {line.number}: another session header (id {line.data.get('id')!r}): "
                "two sessions in one file",
            )


class _EntryIds(NamedTuple):
    """The entries of a read with their node ids, a repeated id dropped.

    pi checks ids for collisions: a repeat is damage, not a node.
    """

    entries: list[Line]
    ids: list[str]
    """Each kept entry's node id, in the entries' order."""
    raw: dict[str, str]
    """Node id -> the entry's own id, or ``L<line>[.<k>]`` for an entry without one (v1)."""
    first_line: dict[str, int]
    """Node id -> the line it was read from."""
    skipped: list[tuple[int, str]]
    """(line, why) of each entry dropped as a repeated id."""


def _entry_ids(lines: list[Line], nid: Callable[[str], str], v1: bool) -> _EntryIds:
    """Number the entries of a read: their own ``id`` (v2 and later) or their line (v1).

    ``nid`` turns an entry's id into its node id (short ids are prefixed with the session).
    """
    out = _EntryIds([], [], {}, {}, [])
    per_line: dict[int, int] = {}
    for e in lines:
        k = per_line.get(e.number, 0)
        per_line[e.number] = k + 1
        given = None if v1 else e.data.get("id")
        raw = str(given) if given else f"L{e.number}" + (f".{k}" if k else "")
        node_id = nid(raw)
        if node_id in out.first_line:
            first = out.first_line[node_id]
            out.skipped.append((e.number, f"duplicate entry id {raw!r} (first on line {first})"))
            continue
        out.first_line[node_id] = e.number
        out.entries.append(e)
        out.ids.append(node_id)
        out.raw[node_id] = raw
    return out


def _import(
    store: BaseStore,
    path: Path,
    lines: list[Line],
    report: FileReport,
    importing: frozenset[Path],
    position: ReadPosition,
) -> Plan:
    """Work out a file's import from reads (a fork's source is imported first): ``(still_true, write)``."""
    head_line = lines[0].data if lines and lines[0].data.get("type") == "session" else {}
    entries = lines[1:] if head_line else lines
    own = str(head_line.get("id") or path.stem)
    sid = own
    parent_path = head_line.get("parentSession")
    if isinstance(parent_path, str) and parent_path and store.has_session(own):
        report.notes.append(f"the fork was stored apart before, as session {own}; it stays there")
    elif isinstance(parent_path, str) and parent_path:
        source = _source_session(store, parent_path, report, importing)
        if source is not None and source != own:
            sid = source
            report.notes.append(f"fork of session {source}: its new entries join that session")
        elif source is None:
            report.notes.append(f"the fork's source {parent_path} is not available; kept apart")
    v1 = not any("id" in e.data for e in entries)

    def nid(raw: str) -> str:
        return raw if len(raw) >= 32 else f"{sid}/{raw}"

    entries, ids, raw_ids, first_line, repeats = _entry_ids(entries, nid, v1)
    report.skipped += repeats
    inside = set(ids)
    known = stored_ids(store, sid)
    with rereading(path, _slim) as whole:
        if known and sid == own:

            def stored() -> list[tuple[str, int, Kind, Role, Content]]:
                held = ((i, e) for i, e in zip(ids, entries, strict=True) if i in known)
                return [(i, e.number, *_message(whole(e).data)[:3]) for i, e in held]

            new = sum(i not in known for i in ids)
            refuse_another_transcript(store, path, sid, stored, new)
        named, prompted, title = _title(entries, whole)
    covers_of: dict[str, tuple[str, ...]] = dict(store.index(sid).covers) if known else {}
    pred: dict[str, str | None] = {}
    for i, e in enumerate(entries):
        if v1:
            pred[ids[i]] = ids[i - 1] if i else None
            continue
        p = e.data.get("parentId")
        pred[ids[i]] = nid(str(p)) if p else None
    named_parent = dict(pred)  # the parents the file names
    for node_id in ids:
        if node_id in known:  # the stored link wins over the file's
            pred[node_id] = known[node_id]
    dangling: dict[str, str] = {}
    for node_id in ids:
        p = pred[node_id]
        if p is not None and p not in inside and p not in known:
            dangling[node_id] = p
            pred[node_id] = None
    cut = _break_cycles(ids, pred)
    for node_id, parent in cut.items():
        report.notes.append(
            f"line {first_line[node_id]}: entry {raw_ids[node_id]}: its parent {parent} would "
            "close a cycle; the entry is kept as a root"
        )
        pred[node_id] = None
    closed = _closed_later(ids, known, named_parent, pred, inside)
    waiting = {
        parent
        for node_id, parent in named_parent.items()
        if parent is not None and pred[node_id] is None and parent not in inside
    }

    report.session_ids.append(sid)
    times: dict[str, datetime] = {}
    last = parse_time(head_line.get("timestamp"), EPOCH)
    for i, e in enumerate(entries):
        last = parse_time(e.data.get("timestamp"), last)
        times[ids[i]] = last
    planned: dict[int, tuple[str, ...]] = {}  # position -> covers: the nodes made when written
    for i, e in enumerate(entries):
        node_id = ids[i]
        if node_id in known:
            continue
        p = pred[node_id]
        covers = _covers(e, i, ids, p, pred, known, covers_of, nid, bool(head_line), report)
        if covers:
            covers_of[node_id] = covers
        if node_id in dangling:
            report.dangling.append((node_id, dangling[node_id]))
        planned[i] = covers

    def nodes(whole: Callable[[Line], Line]) -> Iterator[Node]:
        for i in predecessors_first(ids, pred) or range(len(ids)):  # a cycle: the store names it
            if i in planned:
                node_id = ids[i]
                yield _node(
                    whole(entries[i]),
                    node_id,
                    raw_ids[node_id],
                    pred[node_id],
                    sid,
                    own,
                    cut,
                    dangling,
                    times,
                    planned[i],
                )

    existed = store.has_session(sid)
    state = {
        "session": sid,
        "resumable": sid == own and not parent_path and not v1,
        "time": last.isoformat(),
        "named": named,
        "prompted": prompted,
        "tail": [i for i, e in zip(ids, entries, strict=True) if e.number > position.line],
    }
    if waiting:
        state["waiting"] = sorted(waiting)
    seen = holders(store, [*ids, *dangling.values()])

    def still_true() -> bool:
        return store.has_session(sid) == existed and holders(store, seen) == seen

    def write() -> None:
        if sid == own:
            ensure_session(
                store,
                sid,
                title=title,
                metadata={"runtime": FORMAT, "path": str(path), "header": head_line},
                created_at=parse_time(
                    head_line.get("timestamp"), min(times.values(), default=EPOCH)
                ),
            )
        head = ids[-1] if ids else None
        if sid != own and store.session(sid).head is not None:
            head = store.session(sid).head
        with rereading(path, _slim) as whole:  # the entries' contents, a chunk at a time
            report.nodes_added += add_chunked(store, sid, nodes(whole), head=head)
        for node_id in store.note_cycle_parents(sid, closed) if closed else ():
            report.notes.append(
                f"line {first_line[node_id]}: entry {raw_ids[node_id]}: its parent "
                f"{closed[node_id]}, written later, would close a cycle; the entry stays a root"
            )
        save_state(store, path, FORMAT, position, state)

    return still_true, write


def _title(
    entries: list[Line], whole: Callable[[Line], Line] = lambda e: e
) -> tuple[bool, bool, str]:
    """``(named, prompted, title)`` of a file's entries, or of the entries appended to it.

    The title is the newest ``session_info`` name (``named``), else the first user prompt's text
    (``prompted``: a user message was met, even one whose text is empty). ``whole`` reads a slim
    entry whole (the prompt's text).
    """
    title = ""
    for e in entries:
        if e.data.get("type") == "session_info" and e.data.get("name"):
            title = str(e.data["name"])
    if title:
        return True, any(_is_user(e) for e in entries), title
    for e in entries:
        if _is_user(e):
            return False, True, preview(_blocks(whole(e).data["message"].get("content"))[0])
    return False, False, ""


def _is_user(e: Line) -> bool:
    m = e.data.get("message")
    return isinstance(m, Mapping) and m.get("role") == "user"


def _node(
    e: Line,
    node_id: str,
    raw: str,
    p: str | None,
    sid: str,
    own: str,
    cut: Mapping[str, str],
    dangling: Mapping[str, str],
    times: Mapping[str, datetime],
    covers: tuple[str, ...],
) -> Node:
    """The node of an entry (its dangling parent, cycle cut and line in its metadata)."""
    meta: dict[str, Any] = {k: v for k, v in e.data.items() if k not in ("message", "parentId")}
    meta["entry_id"] = raw
    meta["line"] = e.number
    if sid != own:
        meta["transcript_session"] = own
    if node_id in cut:
        meta["cycle_parent"] = cut[node_id]
    if node_id in dangling:
        meta["dangling_parent"] = dangling[node_id]
    kind, role, content, extra = _message(e.data)
    meta.update(extra)
    return Node(
        id=node_id,
        session_id=sid,
        predecessor=p,
        kind=kind,
        role=role,
        content=content,
        created_at=times[node_id],
        metadata=meta,
        covers=covers,
    )


def _first_record(path: Path, line: Line) -> bool:
    """Whether ``line`` is the file's first JSON object, the one a full import takes as the header.

    Reads only up to that first object (the first line, in every file but a damaged one).
    """
    first = next(read_jsonl(path, LineProblems()), None)  # the reader, dropped, closes the file
    return first is not None and (first.offset, first.part) == (line.offset, line.part)


def _resume(
    store: BaseStore, path: Path, saved: FileState, problems: LineProblems, report: FileReport
) -> bool:
    """Import the lines appended since ``saved``, inside the caller's transaction.

    The new entries link to stored nodes or to each other; their parents are read by one bounded
    lookup, never the session's whole index. Nothing is written, and False returned, when a full
    import is needed: the file was not resumable (a ``/fork`` or v1 file), the session is gone, or
    a new entry is a compaction or branch summary or has an id stored already (other than those of
    an unterminated last line the import before read, which this one reads again, complete).

    Returns:
        Whether the file was imported.
    """
    st = saved.state
    sid = st.get("session")
    if not st.get("resumable") or not isinstance(sid, str) or not store.has_session(sid):
        return False
    position = saved.position
    lines = read_complete(path, problems, position)
    if lines and lines[0].data.get("type") == "session" and _first_record(path, lines[0]):
        # read again from the file's first record (nothing before the offset held one: the file
        # was one unterminated line, maybe after blank or damaged lines): its header is no entry
        lines = lines[1:]
    if any(e.data.get("type") in ("compaction", "branch_summary", "session") for e in lines):
        return False  # (a session header: a second session, which the full read refuses)

    def nid(raw: str) -> str:
        return raw if len(raw) >= 32 else f"{sid}/{raw}"

    entries, ids, raw_ids, first_line, skipped = _entry_ids(lines, nid, False)
    pred: dict[str, str | None] = {}
    for node_id, e in zip(ids, entries, strict=True):
        p = e.data.get("parentId")
        pred[node_id] = nid(str(p)) if p else None
    wanted = [*ids, *(p for p in pred.values() if p is not None)]
    located = {str(i): str(s) for i, s in store.locate(wanted).items()}
    tail = st.get("tail") or []  # the entries of an unterminated last line read before
    if any(i in located and i not in tail for i in ids):
        return False
    if not set(st.get("waiting") or ()).isdisjoint(ids):
        return (
            False  # a stored root's parent is written: whether it closes a cycle is a full read's
        )
    fresh = [i for i in ids if i not in located]
    inside = set(ids)
    dangling: dict[str, str] = {}
    for node_id in fresh:
        p = pred[node_id]
        if p is not None and p not in inside and located.get(p) != sid:
            dangling[node_id] = p
            pred[node_id] = None
    cut = _break_cycles(fresh, {i: pred[i] for i in fresh})
    report.skipped += skipped
    for node_id, parent in cut.items():
        report.notes.append(
            f"line {first_line[node_id]}: entry {raw_ids[node_id]}: its parent {parent} would "
            "close a cycle; the entry is kept as a root"
        )
        pred[node_id] = None
    times: dict[str, datetime] = {}
    last = parse_time(st.get("time"), EPOCH)
    for node_id, e in zip(ids, entries, strict=True):
        last = parse_time(e.data.get("timestamp"), last)
        times[node_id] = last
    named, prompted, title = _title(entries)
    if not named and (st.get("named") or st.get("prompted")):
        title = ""  # the title a full import gives is the stored one
    report.dangling += [(i, dangling[i]) for i in ids if i not in located and i in dangling]
    new = (
        _node(entries[k], ids[k], raw_ids[ids[k]], pred[ids[k]], sid, sid, cut, dangling, times, ())
        for k in predecessors_first(ids, pred) or range(len(ids))  # a cycle: the store names it
        if ids[k] not in located
    )
    report.session_ids.append(sid)
    if title and title != store.session(sid).title:
        store.update_session(sid, title=title)
    if ids:
        report.nodes_added += add_chunked(store, sid, new, head=ids[-1])
    state = {
        **st,
        "time": last.isoformat(),
        "named": bool(st.get("named")) or named,
        "prompted": bool(st.get("prompted")) or prompted,
        "tail": [i for i, e in zip(ids, entries, strict=True) if e.number > position.line],
    }
    waiting = {*(st.get("waiting") or ()), *dangling.values()}
    if waiting:
        state["waiting"] = sorted(waiting)
    save_state(store, path, FORMAT, position, state)
    return True


def _closed_later(
    ids: Sequence[str],
    known: Mapping[str, str | None],
    named: Mapping[str, str | None],
    pred: Mapping[str, str | None],
    inside: Container[str],
) -> dict[str, str]:
    """The stored roots whose named parent, in the file now, descends from them -> that parent.

    Such an entry was stored as a root with a ``dangling_parent`` note (its parent was not written
    yet); the link would now close a cycle, the note an import of the whole file writes
    (``cycle_parent``, :meth:`BaseStore.note_cycle_parents`). Each walk follows ``pred`` (acyclic
    once cycles are cut) from the parent up, at most ``len(pred)`` steps.
    """
    out: dict[str, str] = {}
    for node_id in ids:
        parent = named.get(node_id)
        if parent in (None, node_id) or node_id not in known or known[node_id] is not None:
            continue  # (a self parent was cut when stored)
        if parent not in inside:
            continue
        n: str | None = parent
        for _ in range(len(pred)):
            if n is None or n == node_id:
                break
            n = pred.get(n)
        if n == node_id:
            out[node_id] = parent
    return out


def _break_cycles(order: list[str], pred: Mapping[str, str | None]) -> dict[str, str]:
    """The entries whose parent link closes a cycle among ``order``, each with the parent it names.

    Parent links come from the file and may loop (a self parent, two entries naming each other).
    Each entry is visited once (iterative colouring), so the cost is linear in the entries; the entry
    of a cycle met last on the walk is the one cut, so the rest of the cycle keeps its links.
    """
    state: dict[str, int] = {}  # 1: on the current walk, 2: finished
    cut: dict[str, str] = {}
    for start in order:
        walk: list[str] = []
        n: str | None = start
        while n is not None and n in pred and n not in state:
            state[n] = 1
            walk.append(n)
            n = pred[n]
        if n is not None and state.get(n) == 1:
            last = walk[-1]  # its parent is on this very walk: the link that closes the loop
            cut[last] = n
        for m in walk:
            state[m] = 2
    return cut


def _ancestors(
    start: str | None, pred: Mapping[str, str | None], known: Mapping[str, Any]
) -> list[str]:
    """``start`` and its predecessors, ``start`` first (bounded: a repeated node ends the walk)."""
    out: list[str] = []
    seen: set[str] = set()
    n = start
    while n is not None and n not in seen:
        out.append(n)
        seen.add(n)
        n = known[n] if n in known else pred.get(n)
    return out


def _since_last_compaction(
    start: str | None,
    pred: Mapping[str, str | None],
    known: Mapping[str, Any],
    covers_of: Mapping[str, tuple[str, ...]],
) -> list[str]:
    """``start`` and its predecessors, newest first, down to the span of the last summary passed.

    The walk ends at the root, or at the last node covered by a summary it went through (that
    summary's span belongs to it already), so it is bounded by the entries since that summary.
    """
    out: list[str] = []
    seen: set[str] = set()
    ends: set[str] = set()
    n = start
    while n is not None and n not in seen and n not in ends:
        out.append(n)
        seen.add(n)
        cv = covers_of.get(n)
        if cv:
            ends.add(cv[-1])
        n = known[n] if n in known else pred.get(n)
    return out


def _first_kept(
    line: Line, position: int, ids: list[str], nid: Any, has_header: bool
) -> tuple[str | None, str | None]:
    """The compaction's first kept entry, and why none is (``None`` when it keeps nothing).

    ``firstKeptEntryId`` names the entry (v2, v3). v1's ``firstKeptEntryIndex`` indexes the entries
    pi held when it wrote the compaction, the header at 0; an index at the compaction itself or past
    it (pi: the entry count) keeps nothing.

    Returns:
        ``(node id, None)`` for a kept entry; ``(None, None)`` when the compaction keeps nothing;
        ``(None, reason)`` when the reference cannot be resolved.
    """
    first = line.data.get("firstKeptEntryId")
    if isinstance(first, str) and first:
        return nid(first), None
    index = line.data.get("firstKeptEntryIndex")
    if isinstance(index, int) and not isinstance(index, bool):
        k = index - 1 if has_header else index
        if k >= position:
            return None, None
        if k < 0:
            return None, f"firstKeptEntryIndex {index} is not an entry"
        return ids[k], None
    return None, "it names no first kept entry"


def _covers(
    line: Line,
    position: int,
    ids: list[str],
    predecessor: str | None,
    pred: Mapping[str, str | None],
    known: Mapping[str, Any],
    covers_of: Mapping[str, tuple[str, ...]],
    nid: Any,
    has_header: bool,
    report: FileReport,
) -> tuple[str, ...]:
    """The covers of a ``compaction`` or ``branch_summary`` entry; ``()`` for any other entry.

    A compaction covers the entries pi summarised into it: from the previous compaction's first
    kept entry (the root for the first compaction) up to the entry before its own first kept one,
    the previous compaction included, which stands for what that one covered. One that keeps
    nothing covers all of that span; so does one whose first kept entry is missing or off that
    branch, which is reported: pi then sends the summary and nothing before it, never the whole old
    history. Each compaction's walk ends at the previous one's span, so the covers of a chain of
    compactions stay linear in its length.
    """
    data = line.data
    kind = data.get("type")
    node_id = ids[position]
    if kind == "compaction":
        path = _since_last_compaction(predecessor, pred, known, covers_of)
        kept, why = _first_kept(line, position, ids, nid, has_header)
        if kept == node_id:  # pi's own v1 migration names the compaction itself: keep nothing
            kept = None
        elif kept is not None and kept not in path:
            why = f"its first kept entry {kept} is not on its branch"
        if why is not None:
            report.notes.append(
                f"line {line.number}: compaction {node_id}: {why}; "
                "the summary covers the whole branch before it"
            )
            kept = None
        span = path if kept is None else path[path.index(kept) + 1 :]
        return tuple(reversed(span))
    if kind == "branch_summary":
        from_id = data.get("fromId")
        if not from_id or from_id == "root" or predecessor is None:
            return ()
        abandoned = _ancestors(nid(str(from_id)), pred, known)
        if predecessor not in abandoned or abandoned[0] == predecessor:
            return ()
        span = abandoned[: abandoned.index(predecessor)]
        return tuple(reversed(span))
    return ()

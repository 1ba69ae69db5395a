r"""Edited Markdown topic files back into record changes, through the writer's transaction.

A person corrects memory by editing the rendered topic files (``views/topics/<topic>.md``, grammar in
:mod:`memory.topic_files`) in a staging directory; :func:`parse_topic` reads one file back into a
:class:`~memory.changes.RewriteTopic` and :func:`apply_edits` applies every changed file through
:meth:`MemoryWorkspace.apply <memory.workspace.MemoryWorkspace.apply>`, the same validated transaction a
writer's changes go through. An edit that cannot be read, or that the transaction refuses, raises
:class:`EditError` naming the file and the line; nothing changes.

What an edit may do:

* change a record's content lines, its ``<!-- record {...} -->`` tags and time, its headings, or the
  label and snippet of its footnotes; reorder blocks; point a footnote at another archived source;
  move a record to another topic (cut its block and footnotes from one file, paste them into
  another);
* add a record: a block without an anchor whose last line ends with footnote references
  (``[^any-label]``) defined below as ``[^any-label]: [label](source:<source-id> "<snippet JSON>")``.

What it may not (each an :class:`EditError` with a :class:`~memory.errors.Rejection` code):

* remove a record's anchor ``^<id>`` or its whole block (``RECORD_LOST``: use ``sessiongraph memory
  delete``, which can be undone); name an anchor that is not a record (``UNKNOWN_RECORD``);
* cite a source that is not in the archive (``UNKNOWN_SOURCE``), reference a footnote that is not defined,
  define one nobody references, or write a footnote line outside the grammar (``MALFORMED``);
* anything the transaction refuses (caps, secrets, dangling links), reported at the record's line;
* change ``core.md``: it is rendered from the core topic and not read back, so an edited ``core.md``
  in the directory is refused (``MALFORMED``) with a pointer to ``topics/core.md``, never ignored.

A footnote may also be a bare snippet, ``(source: "<snippet JSON>")`` with no source id: a person's own
save with nothing to cite (its snippet must not be empty).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from pathlib import Path

from memory import caps
from memory.changes import ChangeSet, RewriteTopic
from memory.errors import MemoryLayerError, RejectedError, Rejection
from memory.records import CORE_TOPIC
from memory.secrets import scan
from memory.topic_files import EditError, ParsedTopic, parse_topic
from memory.transactions import State, plan
from memory.workspace import MemoryWorkspace

__all__ = [
    "EditError",
    "EditFolderError",
    "apply_edits",
    "edited_changes",
    "stage_topics",
]


class EditFolderError(MemoryLayerError, ValueError):
    """The folder of edited files to apply is missing, is a file, or holds no topic files.

    Attributes:
        path: The folder as given.
        reason: What is wrong with it.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def _read_utf8(file: Path) -> str:
    """A topic file's text; bytes that are not UTF-8 are refused at their line and column.

    A file whose every line ends with CR LF (an editor saving Windows line ends) is read with LF
    line ends, as it was rendered; a file that mixes them is read as it is. A byte order mark
    before the first line (Windows editors write one) is not part of the text.
    """
    raw = file.read_bytes()
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise EditError(
            str(file),
            line,
            Rejection.MALFORMED,
            f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {column}); save the file as UTF-8",
        ) from None
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        return text.replace("\r\n", "\n")
    return text


def _check_folder(root: Path) -> None:
    if not root.exists():
        raise EditFolderError(root, "no such folder")
    if not root.is_dir():
        raise EditFolderError(root, "is a file, not a folder of edited topic files")
    if not (root / "views.json").exists() and not any((root / "topics").rglob("*.md")):
        raise EditFolderError(
            root,
            "holds no topic files (topics/**/*.md); write them with 'sessiongraph memory export -o "
            f"{root}' and edit them there",
        )


def stage_topics(ws: MemoryWorkspace, directory: str | Path) -> list[Path]:
    """Write the workspace's topic files and ``views.json`` into ``directory`` for editing.

    The files are rendered from the database now (the same bytes as ``views/``), so a staging
    directory is exactly what :func:`apply_edits` compares against.

    Returns:
        The topic files written, sorted.
    """
    root = Path(directory)
    ws.render_views()
    out = []
    for src in sorted((ws.views_path / "topics").rglob("*.md")):
        rel = src.relative_to(ws.views_path)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src.read_text("utf-8"), "utf-8", newline="\n")
        out.append(target)
    (root / "views.json").write_text((ws.views_path / "views.json").read_text("utf-8"), "utf-8")
    return out


def _topic_of(root: Path, file: Path) -> str:
    return file.relative_to(root / "topics").with_suffix("").as_posix()


def edited_changes(
    ws: MemoryWorkspace, directory: str | Path
) -> tuple[ChangeSet, list[ParsedTopic]]:
    """Read a directory of edited topic files into the change set that installs them.

    Only files whose text differs from the workspace's current rendering become changes. The
    directory's ``views.json`` (written by :func:`stage_topics` or found in ``views/``), when present,
    must name this workspace and its current revision, so an edit of a stale rendering is refused
    instead of silently undoing what a writer installed since.

    Args:
        ws: The workspace.
        directory: Holds ``topics/**/*.md`` (and usually ``views.json``).

    Returns:
        The change set (one ``rewrite_topic`` per changed file, sorted by path) and the parsed files.

    Raises:
        EditFolderError: ``directory`` does not exist, is a file, or holds neither topic files
            (``topics/**/*.md``) nor the ``views.json`` of a rendering; or a ``*.md`` there is a
            folder (or a link to none).
        EditError: a file cannot be read (or is not UTF-8), names an unknown record or source, or
            drops a record (``RECORD_LOST``), at its file and line.
    """
    root = Path(directory)
    _check_folder(root)
    _check_fresh(ws, root)
    _check_core_view(ws, root)
    st = ws.state()
    current = _rendered(ws)
    files = {_topic_of(root, f): f for f in sorted((root / "topics").rglob("*.md"))}
    for file in files.values():
        if not file.is_file():  # a folder named like a topic file
            raise EditFolderError(file, "is not a file; a topic file is a Markdown file")
    for topic in sorted(current.keys() - files.keys()):
        raise EditError(
            str(root / "topics" / f"{topic}.md"),
            1,
            Rejection.RECORD_LOST,
            f"the file of topic {topic!r} was removed; delete records with "
            "'sessiongraph memory delete RECORD' instead",
        )
    parsed: list[ParsedTopic] = []
    unchanged: set[str] = set()
    for topic, file in files.items():
        text = _read_utf8(file)
        if current.get(topic) == text:
            unchanged.add(topic)
            continue
        p = parse_topic(text, str(file), topic)
        _check_records(p, st, ws)
        parsed.append(p)
    _check_copies(parsed, st, unchanged, root)
    _check_lost(parsed, st)
    return ChangeSet(changes=tuple(p.change for p in parsed)), parsed


def _rendered(ws: MemoryWorkspace) -> dict[str, str]:
    root = ws.views_path / "topics"
    if not root.exists():
        return {}
    return {
        f.relative_to(root).with_suffix("").as_posix(): f.read_text("utf-8")
        for f in root.rglob("*.md")
    }


def _check_core_view(ws: MemoryWorkspace, root: Path) -> None:
    """Refuse an edited ``core.md``: it is rendered from the core topic and never read back."""
    edited = root / "core.md"
    if not edited.exists():
        return
    rendered = ws.views_path / "core.md"
    current = rendered.read_text("utf-8") if rendered.exists() else None
    if edited.read_text("utf-8") != current:
        raise EditError(
            str(edited),
            1,
            Rejection.MALFORMED,
            "core.md is rendered from the core topic and is not read back; make the change in "
            f"topics/{CORE_TOPIC}.md instead (nothing was applied)",
        )


def _check_fresh(ws: MemoryWorkspace, root: Path) -> None:
    meta_file = root / "views.json"
    if not meta_file.exists():
        return
    try:
        meta = json.loads(meta_file.read_text("utf-8"))
        seen = (str(meta["workspace_id"]), int(meta["revision"]))
    except (ValueError, KeyError, TypeError):
        raise EditError(
            str(meta_file), 1, Rejection.MALFORMED, "views.json is not the one rendered"
        ) from None
    if seen != (ws.id, ws.revision):
        raise EditError(
            str(meta_file),
            1,
            Rejection.MALFORMED,
            f"these files were rendered from workspace {seen[0]} revision {seen[1]}, but the "
            f"workspace is now {ws.id} revision {ws.revision}; render them again and redo the edit",
        )


def _check_records(p: ParsedTopic, st: State, ws: MemoryWorkspace) -> None:
    """Check one parsed file record by record, so every refusal names its line."""
    for n, rec in enumerate(p.change.records):
        if rec.memory_id is not None and rec.memory_id not in st.records:
            raise EditError(
                p.path,
                p.record_lines[n],
                Rejection.UNKNOWN_RECORD,
                f"anchor ^{rec.memory_id} is not a record of this workspace; keep anchors as "
                "rendered (a new record has none)",
                record_id=rec.memory_id,
            )
        present = ws.sources([s.source for s in rec.sources])
        known = {s.id for s in present} | {""}
        for k, ref in enumerate(rec.sources):
            if ref.source not in known:
                raise EditError(
                    p.path,
                    p.footnote_lines[n][k],
                    Rejection.UNKNOWN_SOURCE,
                    f"source:{ref.source} is not in the archive; a citation must name an archived "
                    "source exactly (copy one from another footnote)",
                    record_id=rec.memory_id,
                )
        # The transaction's own field checks (caps, secrets, form), on this record alone.
        alone = ChangeSet(
            changes=(
                RewriteTopic(
                    topic_path=p.change.topic_path,
                    records=(rec.model_copy(update={"memory_id": None}),),
                ),
            )
        )
        try:
            plan(State(), alone, archived=set, batch=None, now=0)
        except RejectedError as e:
            if e.reason in (Rejection.DANGLING_LINK, Rejection.UNKNOWN_SOURCE):
                continue  # judged against the whole workspace by the transaction
            raise _at(p, n, e) from None


def _at(p: ParsedTopic, n: int, e: RejectedError) -> EditError:
    """Turn a rejection of record ``n`` of ``p`` into an :class:`EditError` at the line at fault."""
    rec = p.change.records[n]
    line = p.record_lines[n]
    if e.field == "content":
        line = p.content_lines[n][0] + rec.content.count("\n", 0, e.start or 0)
    elif e.field in ("snippet", "label", "sources") and p.footnote_lines[n]:
        line = p.footnote_lines[n][0]
        for k, ref in enumerate(rec.sources):
            value = ref.snippet if e.field == "snippet" else ref.label
            if e.field != "sources" and (
                len(value) > caps.CAPS.get(e.kind or "", len(value)) or scan(value)
            ):
                line = p.footnote_lines[n][k]
                break
    elif e.field in ("tags", "time"):
        line = p.meta_lines[n]
    elif e.field == "headings" and p.heading_lines[n]:
        line = p.heading_lines[n][0]
    elif e.reason is Rejection.UNKNOWN_POSITION:
        line = 1
    return EditError(p.path, line, e.reason, e.detail, record_id=rec.memory_id)


def _check_copies(
    parsed: Iterable[ParsedTopic], st: State, unchanged: set[str], root: Path
) -> None:
    """Refuse a record pasted into another topic's file while its own file still holds it.

    Only changed files are read back, so the copy would otherwise move the record out of the
    unchanged file that still shows it.
    """
    for p in parsed:
        for rec, line in zip(p.change.records, p.record_lines, strict=True):
            rid = rec.memory_id
            home = st.records[rid].topic if rid is not None and rid in st.records else None
            if home is not None and home != p.change.topic_path and home in unchanged:
                raise EditError(
                    p.path,
                    line,
                    Rejection.MALFORMED,
                    f"record {rid} is also in {root / 'topics' / home}.md; a record is in one "
                    "topic: cut it from that file to move it here, or give this copy no anchor "
                    "to make a new record",
                    record_id=rid,
                )


def _check_lost(parsed: Iterable[ParsedTopic], st: State) -> None:
    kept = {r.memory_id for p in parsed for r in p.change.records if r.memory_id is not None}
    for p in parsed:
        topic = p.change.topic_path
        for rid in st.order.get(topic, []):
            if rid in kept:
                continue
            line, how = _where_lost(p, rid, st)
            raise EditError(
                p.path,
                line,
                Rejection.RECORD_LOST,
                f"record {rid} {how}; keep its anchor ^{rid} at the end of its last line (to delete "
                "it use 'sessiongraph memory delete', which can be undone)",
                record_id=rid,
            )


def _where_lost(p: ParsedTopic, rid: str, st: State) -> tuple[int, str]:
    """The line where a dropped record was: its footnote references, else its former neighbours."""
    for n, rec in enumerate(p.change.records):
        if rec.memory_id is None and any(
            s.source in {c.source for c in st.records[rid].citations} for s in rec.sources
        ):
            return p.record_lines[n], "lost its anchor here"
    order = st.order[p.change.topic_path]
    after = order[order.index(rid) + 1 :]
    for nxt in after:
        line = p.line_of(nxt)
        if line is not None:
            return line, f"was removed (it stood before the record ending on line {line})"
    return (p.record_lines[-1] if p.record_lines else 1), "was removed (it stood last)"


def apply_edits(ws: MemoryWorkspace, directory: str | Path) -> tuple[list[str], list[str]]:
    """Apply a directory of edited topic files through the workspace's validated transaction.

    Args:
        ws: The workspace.
        directory: The edited files (see :func:`edited_changes`).

    Returns:
        ``(changed topic paths, updated or created record ids)``; both empty when nothing changed.

    Raises:
        EditFolderError: ``directory`` does not exist, is a file, or holds no topic files.
        EditError: refused (by the parser or by the transaction), at its file and line; nothing
            changed.
        WorkspaceBusyError: another writer holds the lock.
    """
    # One hold of the lock from the freshness check to the install: a writer installing in
    # between would otherwise have its change undone by a file rendered before it.
    with ws.write_lock():
        changes, parsed = edited_changes(ws, directory)
        if not changes.changes:
            return [], []
        try:
            result = ws.apply(changes, batch=None, kind="edit")
        except RejectedError as e:
            raise _locate(parsed, e) from None
    return sorted(result.topics), [*result.updated, *result.created]


def _locate(parsed: list[ParsedTopic], e: RejectedError) -> EditError:
    if e.record_id is not None:
        for p in parsed:
            for n, rec in enumerate(p.change.records):
                if rec.memory_id == e.record_id:
                    if e.source_id is not None:
                        for k, ref in enumerate(rec.sources):
                            if ref.source == e.source_id:
                                return EditError(
                                    p.path,
                                    p.footnote_lines[n][k],
                                    e.reason,
                                    e.detail,
                                    record_id=e.record_id,
                                )
                    return _at(p, n, e)
    if e.change is not None and e.change < len(parsed):
        p = parsed[e.change]
        return EditError(p.path, 1, e.reason, e.detail, record_id=e.record_id)
    p = parsed[0]
    return EditError(p.path, 1, e.reason, e.detail, record_id=e.record_id)

r"""Topic files: their grammar, the renderer and the parser, in one place.

A topic file (``views/topics/<topic>.md``) is rendered from a topic's records by :func:`render_topic`
and read back by :func:`parse_topic` after a person edits it; ``render_topic`` then ``parse_topic``
gives the same records (a property test checks it). ``core.md`` is rendered by :func:`render_core`
and never parsed back.

Topic file grammar (lines; ``\n`` line ends; UTF-8; the file ends with one newline)::

    file      := "# " topic-path "\n" { "\n" block } [ "\n" footnotes ]
    block     := [ top "\n" ] { heading "\n" } [ meta "\n" ] content-lines
    top       := "# " topic-path          back to the topic's top level (an empty heading path)
    heading   := "#"{k+1} " " text        k = 1.. the depth in the heading path (``##`` is depth 1)
    meta      := "<!-- record " json-object " -->"
    content-lines := line { "\n" line } " " refs " ^" record-id "\n"
    refs      := "[^" record-id "-" n "]" { " [^" record-id "-" n "]" }     n = 1, 2, ... in order
    footnotes := { "[^" record-id "-" n "]: [" label "](source:" source-id " " json-string ")\n" }

* Blocks appear in position order. Before a block come the headings of its heading path from the
  first depth at which that path differs from the previous block's (so a block whose path is a
  prefix of the previous one's repeats its whole path). A block with no headings after one with
  headings is preceded by the file's title line again (``# <topic-path>``), which ends every section.
  A parser keeps a current heading path: a ``#{k+1}`` line sets depth ``k`` and drops every deeper
  heading; the title line empties it. The blocks of the file in order,
  each with the heading path current at it, are the topic's records.
* ``meta`` is present only when the record has tags or a time: a JSON object with the keys ``tags``
  (list of strings) and/or ``time`` (string); every ``>`` inside it is written ``\u003e`` so the
  comment cannot close early.
* A record's content is its lines verbatim, except that a line starting with ``#``, ``[^``, ``<!--``
  or ``\`` gets one ``\`` prepended (a parser removes one leading ``\`` from every content line that
  has one), and a line ending like an anchor or a reference (`` ^word`` or `` [^word]``, with any
  ``\`` before the ``^``) gets one ``\`` before that ``^`` (a parser removes one there).
  Content never holds a blank line (transactions refuse it). The last content line ends
  with a space, the record's citation references in order, a space, ``^`` and the record id (an
  Obsidian block anchor); a parser strips `` ^<id>`` and then the `` [^<id>-<n>]`` references from
  the end of that line.
* Footnotes follow the last block, one per citation, grouped by record in block order. ``label`` has
  ``\``, ``[`` and ``]`` escaped with a ``\``; the link target ``source:<source-id>`` carries the
  source's identity (the label is display text only, never the identity); the link title is the
  snippet as a JSON string literal (``json.loads`` recovers it exactly). A bare snippet citation (a
  person's own save with no source) has an empty id: ``(source: "the snippet")``.
* ``[[topic#^record-id]]`` inside content is a link to another record and is left as written.

``core.md`` is the injected core block, rendered from the ``core`` topic: ``# Core memory``, then each
record's content as one paragraph in position order while the running token count (the workspace's
counter) stays within the budget; records that do not fit are left out (they stay in
``topics/core.md`` and in search) and listed in a final ``<!-- left out: id, id -->`` comment and in
``views.json``. The budget never rejects a write. ``core.md`` carries no ids or footnotes and is not
parsed back: edit ``topics/core.md`` instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from memory.changes import RewriteTopic, SourceRef, TopicRecord
from memory.errors import MemoryLayerError, Rejection
from memory.records import Citation, Record

__all__ = [
    "CoreBlock",
    "EditError",
    "ParsedTopic",
    "parse_topic",
    "render_core",
    "render_topic",
]

_ESCAPED_STARTS = ("#", "[^", "<!--", "\\")


class CoreBlock:
    """The rendered ``core.md`` and the ids of the records left out of it."""

    __slots__ = ("left_out", "text", "tokens")

    def __init__(self, text: str, tokens: int, left_out: tuple[str, ...]) -> None:
        self.text = text
        """The file's text."""
        self.tokens = tokens
        """Tokens of the records rendered (by the workspace's counter)."""
        self.left_out = left_out
        """Ids of the core records that did not fit, in position order."""


# A content line ending the way an anchor (`` ^id``) or a citation reference (`` [^ref]``) ends
# would be read as one: the renderer writes one more ``\`` before that last ``^`` (the group), and
# the parser removes one where there is at least one.
_TAIL_ANCHOR = re.compile(r" (\\*)\^[A-Za-z0-9-]+$")
_TAIL_REF = re.compile(r" \[(\\*)\^[^\]\s]+\]$")


def _line(line: str) -> str:
    for tail in (_TAIL_ANCHOR, _TAIL_REF):
        m = tail.search(line)
        if m is not None:
            line = line[: m.start(1)] + "\\" + line[m.start(1) :]
            break
    return "\\" + line if line.startswith(_ESCAPED_STARTS) else line


def _unescape_tail(line: str) -> str:
    for tail in (_TAIL_ANCHOR, _TAIL_REF):
        m = tail.search(line)
        if m is not None and m.group(1):
            return line[: m.start(1)] + line[m.start(1) + 1 :]
    return line


def _label(label: str) -> str:
    return label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _footnote(record_id: str, n: int, c: Citation) -> str:
    title = json.dumps(c.snippet, ensure_ascii=False)
    return f"[^{record_id}-{n}]: [{_label(c.label)}](source:{c.source} {title})"


_RENDERED: dict[str, tuple[Record, tuple[str, tuple[str, ...]]]] = {}
_RENDERED_MAX = 1 << 17


def _record_text(rec: Record) -> tuple[str, tuple[str, ...]]:
    """A record's block below its headings (meta line, content lines) and its footnotes.

    Kept by record id while the record is the same object or an equal one (records are immutable):
    a write that appends to a large topic renders the new records and reuses the others' text.
    """
    hit = _RENDERED.get(rec.id)
    if hit is not None and (hit[0] is rec or hit[0] == rec):
        return hit[1]
    if len(_RENDERED) >= _RENDERED_MAX:
        _RENDERED.clear()
    out = _render_record(rec)
    _RENDERED[rec.id] = (rec, out)
    return out


def _render_record(rec: Record) -> tuple[str, tuple[str, ...]]:
    block: list[str] = []
    meta: dict[str, object] = {}
    if rec.tags:
        meta["tags"] = list(rec.tags)
    if rec.time is not None:
        meta["time"] = rec.time
    if meta:
        body = json.dumps(meta, ensure_ascii=False).replace(">", "\\u003e")
        block.append(f"<!-- record {body} -->")
    lines = [_line(x) for x in rec.content.split("\n")]
    refs = " ".join(f"[^{rec.id}-{n}]" for n in range(1, len(rec.citations) + 1))
    lines[-1] = f"{lines[-1]} {refs} ^{rec.id}" if refs else f"{lines[-1]} ^{rec.id}"
    block.extend(lines)
    notes = tuple(_footnote(rec.id, n, c) for n, c in enumerate(rec.citations, 1))
    return "\n".join(block) + "\n", notes


def render_topic(topic: str, records: Iterable[Record]) -> str:
    """Render one topic file (the grammar is in the module docstring).

    Args:
        topic: The topic path.
        records: Its records in position order.

    Returns:
        The file's text, ending with one newline.
    """
    out = [f"# {topic}\n"]
    notes: list[str] = []
    previous: tuple[str, ...] = ()
    first = True
    for rec in records:
        path = rec.headings
        body, footnotes = _record_text(rec)
        if first or path != previous:
            same = 0
            while same < min(len(path), len(previous)) and path[same] == previous[same]:
                same += 1
            if same == len(path) and len(path) < len(previous):
                same = 0  # back to a parent section: repeat its whole path
            heads = "".join("#" * (k + 2) + " " + path[k] + "\n" for k in range(same, len(path)))
            if not path and previous:
                heads = f"# {topic}\n"  # back to the top level: the title line ends every section
            out.append("\n" + heads + body)
        else:
            out.append("\n" + body)
        previous, first = path, False
        notes.extend(footnotes)
    if notes:
        out.append("\n" + "\n".join(notes) + "\n")
    return "".join(out)


def render_core(
    records: Iterable[Record], budget: int, count_tokens: Callable[[str], int]
) -> CoreBlock:
    """Render ``core.md`` from the core topic's records within ``budget`` tokens.

    Records are taken in position order until the next one would exceed the budget; it and every
    later record are left out (put what must stay first: that is an ordinary edit of the topic).
    """
    parts = ["# Core memory\n"]
    used = 0
    left_out: list[str] = []
    for rec in records:
        cost = count_tokens(rec.content)
        if left_out or used + cost > budget:
            left_out.append(rec.id)
            continue
        used += cost
        parts.append("\n" + rec.content + "\n")
    if left_out:
        parts.append(f"\n<!-- left out: {', '.join(left_out)} -->\n")
    return CoreBlock("".join(parts), used, tuple(left_out))


class EditError(MemoryLayerError, ValueError):
    """An edited topic file was refused; the workspace was left exactly as it was.

    Attributes:
        path: The file at fault (as given to the parser).
        line: The 1-based line at fault.
        reason: The :class:`~memory.errors.Rejection` code.
        detail: What is wrong and how to fix it (never a secret's value).
        record_id: The record at fault, when one is.
    """

    def __init__(
        self,
        path: str,
        line: int,
        reason: Rejection,
        detail: str,
        *,
        record_id: str | None = None,
    ) -> None:
        super().__init__(f"{path}:{line}: {reason.value}: {detail}")
        self.path = path
        self.line = line
        self.reason = reason
        self.detail = detail
        self.record_id = record_id


_ANCHOR = re.compile(r" \^([A-Za-z0-9-]+)$")
_REF = re.compile(r" \[\^([^\]\s]+)\]$")
_FOOTNOTE = re.compile(
    r'^\[\^([^\]\s]+)\]: \[((?:\\.|[^\\\]])*)\]\(source:(\S*) ("(?:\\.|[^"\\])*")\)$'
)
_META = re.compile(r"^<!-- record (\{.*\}) -->$")
_HEADING = re.compile(r"^(#{2,}) (.+)$")


@dataclass
class _Block:
    """One record being read: its lines, and where each part of it is in the file."""

    first: int
    headings: tuple[str, ...]
    heading_lines: tuple[int, ...]
    meta: dict[str, object] = field(default_factory=dict)
    meta_line: int = 0
    lines: list[tuple[int, str]] = field(default_factory=list)
    record_id: str | None = None
    refs: list[str] = field(default_factory=list)
    closed: bool = False


@dataclass(frozen=True)
class ParsedTopic:
    """One edited topic file read back, with the lines of each record's parts (for error reports)."""

    path: str
    """The file, as given."""
    change: RewriteTopic
    """The topic's complete new list of records."""
    record_lines: tuple[int, ...]
    """Per record (in ``change.records`` order): the line of its anchor (or last line, when new)."""
    content_lines: tuple[tuple[int, ...], ...]
    """Per record: the line of each of its content lines."""
    meta_lines: tuple[int, ...]
    """Per record: the line of its ``<!-- record -->`` comment, or its anchor line when it has none."""
    footnote_lines: tuple[tuple[int, ...], ...]
    """Per record: the line of each citation's footnote, in citation order."""
    heading_lines: tuple[tuple[int, ...], ...]
    """Per record: the line of each heading of its heading path."""

    def line_of(self, record_id: str) -> int | None:
        """The anchor line of an existing record in this file, or None."""
        for rec, line in zip(self.change.records, self.record_lines, strict=True):
            if rec.memory_id == record_id:
                return line
        return None


def _unescape_label(label: str) -> str:
    return re.sub(r"\\(.)", r"\1", label)


def parse_topic(text: str, path: str, topic: str) -> ParsedTopic:
    """Read an edited topic file (the grammar of the module docstring) into a ``rewrite_topic``.

    Reading checks the form only; whether the records, sources and ids exist is checked by
    :func:`edited_changes` and the transaction.

    Args:
        text: The file's text.
        path: The file's name for error messages.
        topic: The topic path the file must hold (from its place under ``topics/``).

    Returns:
        The parsed topic.

    Raises:
        EditError: ``MALFORMED`` at the line that breaks the grammar (a first line other than
            ``# <topic>``, a mangled footnote or record comment, text after a record's anchor, a
            footnote reference without a definition or a definition without a reference, a new
            record without citations).
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0] != f"# {topic}":
        raise EditError(
            path, 1, Rejection.MALFORMED, f"the first line must be '# {topic}' (the topic path)"
        )
    blocks: list[_Block] = []
    notes: dict[str, tuple[int, SourceRef]] = {}
    headings: list[str] = []
    heading_lines: list[int] = []
    block: _Block | None = None
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            if block is not None:
                _close(block, path)
            block = None
            continue
        if line.startswith("[^"):
            m = _FOOTNOTE.match(line)
            if m is None:
                raise EditError(
                    path,
                    no,
                    Rejection.MALFORMED,
                    "a footnote line must read [^<ref>]: [<label>](source:<source-id> "
                    '"<snippet as a JSON string>"); escape a content line starting with [^ as \\[^',
                )
            ref, label, source, title = m.groups()
            try:
                snippet = json.loads(title)
            except ValueError:
                raise EditError(
                    path, no, Rejection.MALFORMED, "the footnote's snippet is not a JSON string"
                ) from None
            if ref in notes:
                raise EditError(
                    path, no, Rejection.MALFORMED, f"footnote [^{ref}] is defined twice"
                )
            notes[ref] = (
                no,
                SourceRef(source=source, label=_unescape_label(label), snippet=snippet),
            )
            continue
        if block is not None and block.closed:
            raise EditError(
                path,
                no,
                Rejection.MALFORMED,
                f"text after the anchor ^{block.record_id} of the record ending on line "
                f"{block.lines[-1][0]}; end the record's last line with its anchor, or leave a "
                "blank line before a new record",
                record_id=block.record_id,
            )
        if line == f"# {topic}":
            if block is not None and block.lines:
                raise EditError(
                    path, no, Rejection.MALFORMED, "a heading in the middle of a record"
                )
            del headings[:], heading_lines[:]
            block = None
            continue
        if line.startswith("#"):
            m = _HEADING.match(line)
            if m is None:
                raise EditError(
                    path,
                    no,
                    Rejection.MALFORMED,
                    "a heading is '## text' (one '#' more per level); escape a content line "
                    "starting with # as \\#",
                )
            if block is not None and block.lines:
                raise EditError(
                    path, no, Rejection.MALFORMED, "a heading in the middle of a record"
                )
            depth = len(m.group(1)) - 1
            if depth > len(headings) + 1:
                raise EditError(
                    path,
                    no,
                    Rejection.MALFORMED,
                    f"heading level {depth + 1} follows level {len(headings) + 1}; skip no level",
                )
            del headings[depth - 1 :], heading_lines[depth - 1 :]
            headings.append(m.group(2))
            heading_lines.append(no)
            block = None
            continue
        if block is None:
            block = _Block(no, tuple(headings), tuple(heading_lines))
            blocks.append(block)
        if line.startswith("<!--"):
            m = _META.match(line)
            if m is None or block.lines or block.meta_line:
                raise EditError(
                    path,
                    no,
                    Rejection.MALFORMED,
                    'a record comment reads <!-- record {"tags": [...], "time": "..."} --> '
                    "on the line before the record's first content line; escape a content line "
                    "starting with <!-- as \\<!--",
                )
            try:
                meta = json.loads(m.group(1))
            except ValueError:
                meta = None
            if not isinstance(meta, dict) or not set(meta) <= {"tags", "time"}:
                raise EditError(
                    path,
                    no,
                    Rejection.MALFORMED,
                    'the record comment must hold a JSON object with "tags" and/or "time"',
                )
            block.meta, block.meta_line = meta, no
            continue
        if line.startswith("\\"):
            line = line[1:]
        a = _ANCHOR.search(line)
        if a is not None:
            block.record_id = a.group(1)
            line = line[: a.start()]
            while (r := _REF.search(line)) is not None:
                block.refs.insert(0, r.group(1))
                line = line[: r.start()]
            block.closed = True
        block.lines.append((no, line))
    if block is not None:
        _close(block, path)
    return _assemble(path, topic, blocks, notes)


def _close(block: _Block, path: str) -> None:
    if block.closed:
        return
    if not block.lines:
        raise EditError(
            path, block.first, Rejection.MALFORMED, "a record comment without a record below it"
        )
    # A new record: its footnote references end its last line, with no anchor.
    no, line = block.lines[-1]
    while (r := _REF.search(line)) is not None:
        block.refs.insert(0, r.group(1))
        line = line[: r.start()]
    block.lines[-1] = (no, line)
    if not block.refs:
        raise EditError(
            path,
            no,
            Rejection.MALFORMED,
            "this block has no record anchor (^<record-id>) and no citations: an existing record "
            "keeps its anchor at the end of its last line, and a new record ends its last line with "
            "footnote references [^ref] defined below",
        )
    block.closed = True


def _assemble(
    path: str, topic: str, blocks: list[_Block], notes: Mapping[str, tuple[int, SourceRef]]
) -> ParsedTopic:
    used: dict[str, int] = {}
    records: list[TopicRecord] = []
    rec_lines: list[int] = []
    content_lines: list[tuple[int, ...]] = []
    meta_lines: list[int] = []
    note_lines: list[tuple[int, ...]] = []
    head_lines: list[tuple[int, ...]] = []
    for b in blocks:
        last = b.lines[-1][0]
        sources: list[SourceRef] = []
        lines_of_notes: list[int] = []
        for ref in b.refs:
            if ref not in notes:
                raise EditError(
                    path,
                    last,
                    Rejection.MALFORMED,
                    f"footnote reference [^{ref}] has no definition '[^{ref}]: ...' below the records",
                    record_id=b.record_id,
                )
            if ref in used:
                raise EditError(
                    path,
                    last,
                    Rejection.MALFORMED,
                    f"footnote [^{ref}] is referenced twice (lines {used[ref]} and {last})",
                    record_id=b.record_id,
                )
            used[ref] = last
            line, src = notes[ref]
            sources.append(src)
            lines_of_notes.append(line)
        tags = b.meta.get("tags", [])
        time = b.meta.get("time")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise EditError(
                path, b.meta_line, Rejection.MALFORMED, '"tags" must be a list of strings'
            )
        if time is not None and not isinstance(time, str):
            raise EditError(path, b.meta_line, Rejection.MALFORMED, '"time" must be a string')
        records.append(
            TopicRecord(
                memory_id=b.record_id,
                headings=b.headings,
                content="\n".join(_unescape_tail(text) for _, text in b.lines),
                sources=tuple(sources),
                tags=tuple(tags),
                time=time,
            )
        )
        rec_lines.append(last)
        content_lines.append(tuple(n for n, _ in b.lines))
        meta_lines.append(b.meta_line or b.first)
        note_lines.append(tuple(lines_of_notes))
        head_lines.append(b.heading_lines)
    for ref, (line, _) in notes.items():
        if ref not in used:
            raise EditError(
                path,
                line,
                Rejection.MALFORMED,
                f"footnote [^{ref}] is defined but no record references it; remove it, or add "
                f"[^{ref}] before the anchor of the record it supports",
            )
    return ParsedTopic(
        path,
        RewriteTopic(topic_path=topic, records=tuple(records)),
        tuple(rec_lines),
        tuple(content_lines),
        tuple(meta_lines),
        tuple(note_lines),
        tuple(head_lines),
    )

r"""Robust reading of JSON Lines transcripts: malformed lines are reported, never fatal, never silent.

Agent runtimes append one JSON object per line, and real files break that in several ways, each handled
here and reported with its 1-based line number:

* a torn write (the process died mid-line, usually the last line): the line is skipped;
* two objects joined on one line by concurrent writers (seen in real pi v1 files): the line is split
  and every object on it is kept;
* a torn fragment with a complete record appended after it on the same line (the runtime crashed
  mid-write and appended again after a restart, ``…"prNu{"parentUuid":…}``): the complete record is
  recovered and kept, the fragment is skipped, and both are reported;
* bytes that are not UTF-8: undecodable bytes are replaced with U+FFFD and the line is kept;
* an escaped lone surrogate (``"\\ud800"``, which no store encoding can hold): it is replaced with
  U+FFFD and the line is kept;
* JSON nested deeper than :data:`MAX_DEPTH` levels: the line is skipped (deeper values cannot be
  stored, and parsing them recursively would exhaust the stack).

Lines are parsed with orjson; the stdlib decoder is used only for lines orjson refuses. Work per line
is bounded: at most :data:`MAX_RESYNC` restarts are tried when looking for a record after a fragment.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "MAX_RESYNC",
    "ByteProgress",
    "Line",
    "LineProblems",
    "LineReader",
    "ReadPosition",
    "Slim",
    "line_digest",
    "read_jsonl",
    "reading_progress",
    "without_bom",
]

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark some editors (Windows ones) write at the start of a text file."""

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects a kept line may have (the entry itself is level 1)."""

MAX_RESYNC = 64
"""How many ``{"`` positions are tried, per line, as the start of a record after a torn fragment."""

ByteProgress = Callable[[Path, int, int], None]
"""Called as ``progress(path, bytes_read, file_bytes)`` while a file's lines are handed over."""

_progress: ContextVar[ByteProgress | None] = ContextVar("sessiongraph_read_progress", default=None)
_EVERY = 2_000  # lines between two progress calls


@contextmanager
def reading_progress(callback: ByteProgress) -> Iterator[None]:
    """Call ``callback(path, bytes_read, file_bytes)`` while :func:`read_jsonl` runs, in this context.

    ``bytes_read`` counts the bytes of the lines handed to the importer so far (every 2,000 lines,
    and once at the end of the file), so a progress bar moves within one large file.
    """
    token = _progress.set(callback)
    try:
        yield
    finally:
        _progress.reset(token)


@dataclass(frozen=True, slots=True)
class Line:
    """One JSON object read from a transcript."""

    number: int
    """The 1-based line number in the file (objects split from one line share it)."""
    data: dict[str, Any]
    """The parsed object."""
    offset: int = -1
    """The byte offset of the line's start in the file (-1: not read from a file)."""
    part: int = 0
    """Which object of the line it is (0-based; more than one when a line was split)."""


class Slim(dict[str, Any]):
    """What an importer keeps of an object while it reads a large file: the fields its rules read.

    The rest stays in the file; :func:`graph.importers._common.rereading` reads the object whole
    again, from the line's byte offset, when its node is made. A :class:`Line` whose ``data`` is
    a plain dict holds the object whole (kept so, or made by the importer).
    """

    __slots__ = ("digest",)
    digest: bytes
    """:func:`line_digest` of the line the object was read from (set by :func:`read_jsonl`; a
    slim object made otherwise has none, and the second read compares what it keeps instead)."""


def line_digest(raw: bytes) -> bytes:
    """A digest (BLAKE2b, 16 bytes) of a line's bytes, its newline left out.

    :class:`LineReader` compares it to tell that a line still holds the bytes it was read as
    (two different lines share one with odds of 2**-128). The newline is left out so that a
    complete last line that had none when it was read, and has one now, is the same line.
    """
    return hashlib.blake2b(raw[:-1] if raw.endswith(b"\n") else raw, digest_size=16).digest()


@dataclass
class LineProblems:
    """What :func:`read_jsonl` had to do to read a file."""

    skipped: list[tuple[int, str]] = field(default_factory=list)
    """(line number, reason) of lines, or parts of lines, left out."""
    repaired: list[tuple[int, str]] = field(default_factory=list)
    """(line number, what was done) of lines kept after splitting or replacing characters."""


class _TooDeep(ValueError):
    """A value nests deeper than :data:`MAX_DEPTH`."""


def without_bom(first_line: bytes) -> bytes:
    """A file's first line without its UTF-8 byte order mark (an encoding mark, not content)."""
    return first_line[len(BOM) :] if first_line.startswith(BOM) else first_line


def _parse_int(digits: str) -> int | float | str:
    # What orjson gives on the fast path: an integer within 64 bits, a float beyond; the digits
    # themselves when a float overflows too (no store or JSON writer takes a larger integer).
    if len(digits) <= 21:
        value = int(digits)
        if -(2**63) <= value < 2**64:
            return value
    as_float = float(digits)  # inf past the largest float, never an error
    return digits if math.isinf(as_float) else as_float


_decoder = json.JSONDecoder(parse_int=_parse_int)
_WS = " \t\r\n"


def _decode(text: str, i: int) -> tuple[Any, int]:
    """Parse one JSON value at ``text[i:]``; ValueError (``_TooDeep`` included) when it is not one."""
    try:
        return _decoder.raw_decode(text, i)
    except RecursionError as e:
        raise _TooDeep(f"nested deeper than {MAX_DEPTH} levels") from e


def _values_to_end(text: str, i: int) -> list[Any]:
    """Parse every JSON value from ``text[i:]`` to the end of the line; ValueError if one is not."""
    out: list[Any] = []
    n = len(text)
    while True:
        while i < n and text[i] in _WS:
            i += 1
        if i >= n:
            return out
        value, i = _decode(text, i)
        out.append(value)


def _split(text: str) -> tuple[list[Any], list[str]]:
    """Parse a line orjson refused: its values, and a reason for each part that had to be dropped.

    Values are read left to right. Where one does not parse, the line is resynchronised at the next
    ``{"`` from which the rest of the line parses completely (the record appended after a torn
    fragment); the dropped part is described in the second list.

    Raises:
        ValueError: nothing on the line parses (the reason is the first error).
    """
    out: list[Any] = []
    dropped: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WS:
            i += 1
        if i >= n:
            return out, dropped
        try:
            value, i = _decode(text, i)
        except ValueError as e:
            rest = _resync(text, i)
            if rest is None:
                if not out:
                    raise
                dropped.append(f"unparseable tail after {len(out)} value(s) ({e})")
                return out, dropped
            start, values = rest
            dropped.append(f"torn fragment of {start - i} characters before a complete record")
            return out + values, dropped
        out.append(value)


def _resync(text: str, i: int) -> tuple[int, list[Any]] | None:
    """The first ``{"`` after ``i`` from which the rest of the line parses, with its values."""
    start = i
    for _ in range(MAX_RESYNC):
        start = text.find('{"', start + 1)
        if start < 0:
            return None
        try:
            return start, _values_to_end(text, start)
        except ValueError:
            continue
    return None


def _depth_ok(value: Any) -> bool:
    """Whether ``value`` nests at most :data:`MAX_DEPTH` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            return False
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))
    return True


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(s: str) -> str:
    return _SURROGATE.sub("\ufffd", s) if _has_surrogate(s) else s


def _without_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with lone surrogates in its strings (keys too) replaced by U+FFFD; whether any were."""
    if isinstance(value, str):
        cleaned = _clean(value)
        return cleaned, cleaned is not value
    if not isinstance(value, dict | list):
        return value, False
    if not _has_surrogate(json.dumps(value, ensure_ascii=False, check_circular=False)):
        return value, False
    # Rebuild iteratively: containers are replaced in place after a shallow copy of the root.
    root: Any = dict(value) if isinstance(value, dict) else list(value)
    stack: list[Any] = [root]
    while stack:
        c = stack.pop()
        if isinstance(c, dict):
            items = list(c.items())
            c.clear()
            for k, v in items:
                if isinstance(v, dict | list):
                    v = dict(v) if isinstance(v, dict) else list(v)
                    stack.append(v)
                c[_clean(k) if isinstance(k, str) else k] = _clean(v) if isinstance(v, str) else v
        else:
            for j, v in enumerate(c):
                if isinstance(v, dict | list):
                    v = dict(v) if isinstance(v, dict) else list(v)
                    stack.append(v)
                    c[j] = v
                elif isinstance(v, str):
                    c[j] = _clean(v)
    return root, True


@dataclass
class ReadPosition:
    """Where :func:`read_jsonl` starts and how far it got: a byte offset and the lines before it."""

    offset: int = 0
    """Bytes from the start of the file to the start of the next line to read (after a newline)."""
    line: int = 0
    """How many lines lie before ``offset`` (the next line read is number ``line + 1``)."""


def _raw_lines(f: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each line of ``f`` (newline kept) with whether it is the last one, read in blocks.

    A line counts as the last when nothing follows it, or only a blank, unterminated remainder.
    """
    pending: bytes | None = None
    for raw in f:
        if pending is not None:
            if not raw.endswith(b"\n") and not raw.strip():
                yield pending, True
                yield raw, True
                return
            yield pending, False
        pending = raw
    if pending is not None:
        yield pending, True


def read_jsonl(
    path: Path,
    problems: LineProblems,
    position: ReadPosition | None = None,
    keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Iterator[Line]:
    """Yield the JSON objects of a JSON Lines file in file order, recording what had to be repaired.

    Blank lines are ignored. A line that is not a JSON object (a torn write, a bare value, a value
    nested too deep) is skipped and recorded in ``problems.skipped``; split lines, lines whose
    record was recovered after a torn fragment and lines whose characters were replaced are recorded
    in ``problems.repaired`` (a recovered record also records its fragment as skipped).

    The file is streamed: one line is held at a time, whatever the file's size.

    Args:
        path: The file.
        problems: Filled in while the iterator runs.
        position: Where to start (a line boundary an earlier read ended at; None: the start). It is
            moved forward past every line that ends with a newline as the lines are handed over, so
            once the iterator is exhausted it says how far the file was read completely: a last line
            still being written (no newline yet) is read, but left after the position.
        keep: Turns each object into what the caller keeps of it as it is read (None: the object
            whole). A :class:`Slim` it returns is given the :func:`line_digest` of its line, which
            :meth:`LineReader.data` checks when it reads the object whole again.

    Raises:
        OSError: the file cannot be read.
    """
    at = position if position is not None else ReadPosition()
    report = _progress.get()
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(at.offset)
        offset, number = at.offset, at.line
        for chunk, is_last in _raw_lines(f):
            number += 1
            start = offset
            offset += len(chunk)
            if start == 0 and chunk.startswith(BOM):  # the entry starts after the mark
                chunk, start = chunk[len(BOM) :], len(BOM)
            if chunk.endswith(b"\n"):
                at.offset, at.line = offset, number
            if report is not None and (number % _EVERY == 0 or is_last):
                report(path, min(offset, size), size)
            if chunk[:1] != b"{" and not chunk.strip():  # (a record's line is never blank)
                continue
            try:
                obj = orjson.loads(chunk)
            except orjson.JSONDecodeError:
                pass
            else:
                if not isinstance(obj, dict):
                    problems.skipped.append((number, f"not a JSON object ({type(obj).__name__})"))
                elif chunk.count(b"{") + chunk.count(b"[") > MAX_DEPTH and not _depth_ok(obj):
                    problems.skipped.append((number, f"nested deeper than {MAX_DEPTH} levels"))
                elif keep is None:
                    yield Line(number, obj, start)
                else:
                    yield Line(number, _kept(keep(obj), chunk), start)
                continue
            parts = _slow_line(number, chunk.rstrip(b"\n"), is_last, problems, start)
            if keep is None:
                yield from parts
            else:
                for x in parts:
                    yield Line(x.number, _kept(keep(x.data), chunk), x.offset, x.part)


def _kept(kept: dict[str, Any], raw: bytes) -> dict[str, Any]:
    """``kept`` (what a ``keep`` made of the object on line ``raw``), a :class:`Slim` given its digest."""
    if isinstance(kept, Slim):
        kept.digest = line_digest(raw)
    return kept


def _slow_line(
    number: int, chunk: bytes, is_last: bool, problems: LineProblems, offset: int = -1
) -> Iterator[Line]:
    """The objects of a line orjson refused (split, torn, repaired), with what was done recorded."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        text = chunk.decode("utf-8", errors="replace")
        problems.repaired.append((number, "invalid UTF-8 replaced with U+FFFD"))
    try:
        values, dropped = _split(text)
    except _TooDeep as e:
        problems.skipped.append((number, str(e)))
        return
    except ValueError as e:
        reason = "torn write (truncated last line)" if is_last else f"malformed JSON ({e})"
        problems.skipped.append((number, reason))
        return
    for what in dropped:
        problems.skipped.append((number, what))
    if dropped and values:
        problems.repaired.append((number, f"{len(values)} complete value(s) recovered"))
    elif len(values) > 1:
        problems.repaired.append((number, f"{len(values)} JSON values on one line, split"))
    surrogates = False
    for part, value in enumerate(values):
        if not isinstance(value, dict):
            problems.skipped.append(
                (number, f"a value on the line is not a JSON object ({type(value).__name__})")
            )
            continue
        if not _depth_ok(value):
            problems.skipped.append((number, f"nested deeper than {MAX_DEPTH} levels"))
            continue
        value, replaced = _without_surrogates(value)
        surrogates = surrogates or replaced
        yield Line(number, value, offset, part)
    if surrogates:
        problems.repaired.append((number, "lone surrogate replaced with U+FFFD"))


class LineReader:
    """Reads again, by byte offset, objects :func:`read_jsonl` handed over, as it read them.

    An importer that keeps only what its rules need of each entry while it reads a large file
    re-reads the full entries a chunk at a time when it writes them, so the parsed file is never
    held whole. A line is parsed the way :func:`read_jsonl` parsed it (split, recovered, repaired),
    and the object at the same position of the line is returned. Use it as a context manager.

    Args:
        path: The file the lines were read from.

    Raises:
        OSError: the file cannot be opened.
    """

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = Path(path).open("rb")

    def __enter__(self) -> LineReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def data(self, line: Line) -> dict[str, Any] | None:
        """The object ``line`` was read as, parsed again from the file; None when it is not there.

        None means the bytes at ``line.offset`` no longer hold an object at ``line.part`` (the file
        was rewritten since it was read), or, for a :class:`Slim` object :func:`read_jsonl` kept,
        that the line's bytes are not the ones it was read from (their digest differs). Else the
        caller tells whether the object is still the one it read (an id it carries).

        Raises:
            OSError: the file cannot be read.
        """
        if line.offset < 0:
            return line.data
        digest = getattr(line.data, "digest", None) if isinstance(line.data, Slim) else None
        return self.data_at(line.offset, line.part, line.number, digest)

    def data_at(
        self, offset: int, part: int = 0, number: int = 0, digest: bytes | None = None
    ) -> dict[str, Any] | None:
        """The object at ``part`` of the line starting at byte ``offset`` (see :meth:`data`).

        ``number`` is the line's number (it names the line in what a repair records).
        ``digest``, when given, is the :func:`line_digest` the line had: None is returned when
        its bytes now have another.

        Raises:
            OSError: the file cannot be read.
        """
        self._file.seek(offset)
        chunk = self._file.readline()
        if digest is not None and line_digest(chunk) != digest:
            return None
        if part == 0:
            try:
                obj = orjson.loads(chunk)
            except orjson.JSONDecodeError:
                pass
            else:
                return obj if isinstance(obj, dict) else None
        text = chunk.rstrip(b"\n")
        for found in _slow_line(number, text, False, LineProblems()):
            if found.part == part:
                return found.data
        return None

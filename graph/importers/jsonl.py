"""Robust reading of JSON Lines transcripts (DESIGN.md 5: malformed lines are reported, never fatal).

Agent runtimes append one JSON object per line, and real files break that in three ways, each handled
here and reported with its 1-based line number:

* a torn write (the process died mid-line, usually the last line): the line is skipped;
* two objects joined on one line by concurrent writers (seen in real pi v1 files): the line is split
  and every object on it is kept;
* bytes that are not UTF-8: undecodable bytes are replaced with U+FFFD and the line is kept.

Lines are parsed with orjson; the stdlib decoder is used only to split joined objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = ["ByteProgress", "Line", "LineProblems", "read_jsonl", "reading_progress"]

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


@dataclass
class LineProblems:
    """What :func:`read_jsonl` had to do to read a file."""

    skipped: list[tuple[int, str]] = field(default_factory=list)
    """(line number, reason) of lines left out."""
    repaired: list[tuple[int, str]] = field(default_factory=list)
    """(line number, what was done) of lines kept after splitting or replacing bytes."""


_decoder = json.JSONDecoder()


def _split(text: str) -> list[Any]:
    """Parse every JSON value on one line; raises ValueError when something is not JSON."""
    out: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return out
        value, i = _decoder.raw_decode(text, i)
        out.append(value)


def read_jsonl(path: Path, problems: LineProblems) -> Iterator[Line]:
    """Yield the JSON objects of a JSON Lines file in file order, recording what had to be repaired.

    Blank lines are ignored. A line that is not a JSON object (a torn write, a bare value) is skipped
    and recorded in ``problems.skipped``; split and byte-replaced lines in ``problems.repaired``.

    Args:
        path: The file.
        problems: Filled in while the iterator runs.

    Raises:
        OSError: the file cannot be read.
    """
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    last = len(lines)
    report, size, offset = _progress.get(), len(raw), 0
    for number, chunk in enumerate(lines, 1):
        offset += len(chunk) + 1
        if report is not None and (number % _EVERY == 0 or number == last):
            report(path, min(offset, size), size)
        if not chunk.strip():
            continue
        try:
            obj = orjson.loads(chunk)
        except orjson.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict):
                yield Line(number, obj)
            else:
                problems.skipped.append((number, f"not a JSON object ({type(obj).__name__})"))
            continue
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            text = chunk.decode("utf-8", errors="replace")
            problems.repaired.append((number, "invalid UTF-8 replaced with U+FFFD"))
        try:
            values = _split(text)
        except ValueError as e:
            torn = number == last or (number == last - 1 and not lines[-1].strip())
            reason = "torn write (truncated last line)" if torn else f"malformed JSON ({e})"
            problems.skipped.append((number, reason))
            continue
        objects = [v for v in values if isinstance(v, dict)]
        if len(values) > 1:
            problems.repaired.append((number, f"{len(values)} JSON values on one line, split"))
        if len(objects) < len(values):
            problems.skipped.append((number, "a value on the line is not a JSON object"))
        for obj in objects:
            yield Line(number, obj)

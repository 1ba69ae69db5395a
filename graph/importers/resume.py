"""Re-importing a grown transcript from where the last import stopped, in time proportional to the new bytes.

After importing a file, an importer records in the store (:meth:`graph.store.base.BaseStore.set_import_state`,
in the same transaction as the nodes) a :class:`FileState`: the byte offset it read up to (the end of
the last line that ends with a newline), the number of lines before it, the file's identity at that
offset, and the format's own state (what its rules need to continue: the session id, the last entries
and their links, ...). The next import of the same path resumes from the offset when the file is
still the one that was read, and imports it in full otherwise:

* the inode differs (the file was replaced, as an editor or a rotation does);
* the file is shorter than the offset (truncated);
* the first KiB, or the KiB before the offset, hash differently (rewritten in place);
* nothing follows the offset, now as when it was read, but the modification time moved (written in
  place without growing: an append-only writer that appended nothing did not write at all);
* the format's state is missing, of another format, or of another version.

The identity check reads at most 2 KiB, whatever the file's size. A resumed import reports only the
new lines (their line numbers are the file's).

What it cannot see: an edit in place, outside those two KiB, of a file that also grew. An
append-only writer never changes a byte before the offset, and no file-system metadata tells an
append from an append plus an edit (both move the modification time and the size), so noticing it
would mean hashing every byte before the offset on every resume: time proportional to the file
instead of to the new bytes. Such a file is read from the offset;
``import_file(store, path, resume=False)`` reads it whole.

A last line with no newline yet lies after the offset, so the next import reads it again. When it is
not one whole JSON object (the runtime is still writing it), what the reader recovered from it (an
object inside it: a content block, a tool call with its own ``id``) is not an entry and is not
stored (:func:`without_torn_tail`): the line is read again, complete, once its writer is done.

Claude Code session files, pi files and Codex rollouts resume
(:func:`graph.importers.claude_code.import_file`, :func:`graph.importers.pi.import_file`,
:func:`graph.importers.codex.import_file`); each format's docstring says which appended lines it
leaves to a full import (a compaction, whose covers reach back through the stored branch, in all
three).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.importers.jsonl import Line, LineProblems, ReadPosition, read_jsonl
from graph.importers.report import FileReport
from graph.store.base import BaseStore

__all__ = [
    "STATE_VERSION",
    "FileState",
    "read_complete",
    "resume_point",
    "resumed",
    "save_state",
    "state_key",
    "without_torn_tail",
]

STATE_VERSION = 1
"""The version of the recorded state; a state of another version is ignored (a full import)."""

_KIB = 1024


def state_key(path: Path) -> str:
    """The key a file's state is kept under: its resolved path."""
    return str(Path(path).resolve())


def _digest(f: Any, start: int, length: int) -> str:
    f.seek(start)
    return hashlib.sha256(f.read(length)).hexdigest()


def _identity(path: Path, offset: int) -> tuple[os.stat_result, str, str]:
    """(the file's status, hash of the first KiB before ``offset``, hash of the KiB before it)."""
    with path.open("rb") as f:
        status = os.fstat(f.fileno())
        head = _digest(f, 0, min(_KIB, offset))
        tail = _digest(f, max(0, offset - _KIB), min(_KIB, offset))
    return status, head, tail


@dataclass
class FileState:
    """What an importer recorded about one file after importing it."""

    format: str
    """The format's name (``"claude-code"``, ...)."""
    offset: int
    """Bytes read completely (the end of the last newline-terminated line)."""
    line: int
    """Lines before ``offset``."""
    inode: int
    """The file's inode when it was read."""
    head_hash: str
    """SHA-256 (hex) of the file's first ``min(1024, offset)`` bytes."""
    tail_hash: str
    """SHA-256 (hex) of the ``min(1024, offset)`` bytes before ``offset``."""
    state: dict[str, Any] = field(default_factory=dict)
    """The format's own state (JSON-shaped)."""
    mtime_ns: int | None = None
    """The file's modification time (nanoseconds) when it was read, kept only when nothing followed
    ``offset`` then (None otherwise, and in states recorded before it was kept)."""

    @property
    def position(self) -> ReadPosition:
        """Where reading resumes."""
        return ReadPosition(self.offset, self.line)

    def to_json(self) -> dict[str, Any]:
        """The mapping stored for this state."""
        return {
            "version": STATE_VERSION,
            "format": self.format,
            "offset": self.offset,
            "line": self.line,
            "inode": self.inode,
            "head_hash": self.head_hash,
            "tail_hash": self.tail_hash,
            "state": self.state,
            "mtime_ns": self.mtime_ns,
        }

    @classmethod
    def from_json(cls, raw: Any) -> FileState | None:
        """The state a stored mapping describes, or None when it is not one this version wrote."""
        if not isinstance(raw, dict) or raw.get("version") != STATE_VERSION:
            return None
        mtime = raw.get("mtime_ns")
        try:
            return cls(
                format=str(raw["format"]),
                offset=int(raw["offset"]),
                line=int(raw["line"]),
                inode=int(raw["inode"]),
                head_hash=str(raw["head_hash"]),
                tail_hash=str(raw["tail_hash"]),
                state=dict(raw["state"]),
                mtime_ns=int(mtime) if mtime is not None else None,
            )
        except (KeyError, TypeError, ValueError):
            return None


def resume_point(store: BaseStore, path: Path, fmt: str) -> tuple[FileState | None, str]:
    """The recorded state to resume ``path`` from, or None with the reason a full import is needed.

    Args:
        store: The store the file was imported into.
        path: The file.
        fmt: The format the caller reads it as.

    Returns:
        ``(state, "")`` when the file still starts with the bytes that were read, else
        ``(None, why)`` (``why`` is ``""`` when the file was never imported into this store).

    Raises:
        OSError: the file cannot be read.
    """
    saved = FileState.from_json(store.import_state(state_key(path)))
    if saved is None:
        return None, ""
    if saved.format != fmt:
        return None, f"read as {saved.format} before"
    size = Path(path).stat().st_size
    if size < saved.offset:
        return None, f"truncated ({size} bytes, {saved.offset} read before)"
    status, head, tail = _identity(Path(path), saved.offset)
    if status.st_ino != saved.inode:
        return None, "replaced (another inode)"
    if (head, tail) != (saved.head_hash, saved.tail_hash):
        return None, "rewritten (the bytes read before changed)"
    if (
        saved.mtime_ns is not None
        and status.st_size == saved.offset
        and status.st_mtime_ns != saved.mtime_ns
    ):
        return None, "rewritten (written since it was read, without growing)"
    return saved, ""


def resumed(
    store: BaseStore,
    path: Path,
    fmt: str,
    report: FileReport,
    problems: LineProblems,
    resume: Callable[[BaseStore, Path, FileState, LineProblems, FileReport], bool],
) -> bool:
    """Resume the import of ``path`` from its recorded state when it can be, else prepare a full one.

    Args:
        store: The store the file is imported into.
        path: The file.
        fmt: The format it is read as.
        report: The file's report; says why the file is read in full when it is.
        problems: The reader's record of skipped and repaired lines.
        resume: The format's continuation from a :class:`FileState`, run in one transaction: True
            when it imported the new lines, False (having written nothing) when they hold something
            only a full import takes.

    Returns:
        True when the file was resumed; False after forgetting what the attempt reported, so the
        caller reads the whole file.

    Raises:
        OSError: the file cannot be read.
        GraphError: the store refused a write; nothing was stored.
    """
    with store.atomic():
        saved, why = resume_point(store, path, fmt)
        if saved is not None and resume(store, path, saved, problems, report):
            return True
    problems.skipped.clear()
    problems.repaired.clear()
    report.dropped.clear()
    if why:
        report.notes.append(f"imported in full: the file was {why}")
    return False


def save_state(
    store: BaseStore, path: Path, fmt: str, position: ReadPosition, state: dict[str, Any]
) -> FileState:
    """Record how far ``path`` was read and the format's ``state``, in the caller's transaction.

    Returns:
        The state recorded.

    Raises:
        OSError: the file cannot be read.
    """
    status, head, tail = _identity(Path(path), position.offset)
    mtime = status.st_mtime_ns if status.st_size == position.offset else None
    saved = FileState(
        fmt, position.offset, position.line, status.st_ino, head, tail, state, mtime_ns=mtime
    )
    store.set_import_state(state_key(path), saved.to_json())
    return saved


def without_torn_tail(
    lines: list[Line], problems: LineProblems, position: ReadPosition
) -> list[Line]:
    """``lines`` without the objects recovered from a last line that is still being written.

    The last line counts as still being written when it has no newline yet (it lies after
    ``position``, where the read ended) and the reader skipped part of it: a torn write, where an
    object inside the line parses to its end, or whole objects followed by a torn one. Its objects
    are dropped and its problems reported as one torn write, as for a last line with nothing
    recoverable: it is read again, complete, by the next import. A last line of whole objects
    (only its newline missing, or objects joined on it) is kept.

    Args:
        lines: What :func:`graph.importers.jsonl.read_jsonl` yielded, in file order.
        problems: The same read's record of skipped and repaired lines; updated in place.
        position: Where that read ended (the end of the last newline-terminated line).

    Returns:
        ``lines`` itself, or a copy without the torn last line's objects.
    """
    if not lines or lines[-1].number <= position.line:
        return lines
    last = lines[-1].number
    if not any(n == last for n, _ in problems.skipped):
        return lines  # whole objects, only the newline missing: entries as they will stay
    problems.skipped[:] = [(n, why) for n, why in problems.skipped if n != last]
    problems.repaired[:] = [(n, why) for n, why in problems.repaired if n != last]
    problems.skipped.append((last, "torn write (truncated last line)"))
    return [line for line in lines if line.number != last]


def read_complete(
    path: Path,
    problems: LineProblems,
    position: ReadPosition,
    keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> list[Line]:
    """Read ``path`` from ``position`` (:func:`graph.importers.jsonl.read_jsonl`), torn tail dropped.

    The objects of a last line still being written are left for the next import
    (:func:`without_torn_tail`). ``problems`` and ``position`` are updated as the read goes.
    ``keep``, when given, turns each object into what the caller keeps of it as it is read (a
    :class:`graph.importers.jsonl.Slim` entry, read whole again later), so the file's parsed
    objects are never all alive at once.

    Raises:
        OSError: the file cannot be read.
    """
    return without_torn_tail(list(read_jsonl(path, problems, position, keep)), problems, position)


def nothing_complete_yet(
    path: Path, lines: list[Line], position: ReadPosition, report: FileReport
) -> bool:
    """Whether a whole read found no complete line in a file that has bytes.

    Its first line (the header naming the session) is still being written: ``report`` says so, and
    the caller stores nothing.

    Raises:
        OSError: the file cannot be read.
    """
    if lines or position.offset >= path.stat().st_size:
        return False
    report.notes.append("the first line is not complete yet: nothing stored")
    return True

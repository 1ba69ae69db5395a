"""What an import reports: one :class:`FileReport` per file and an :class:`ImportReport` over them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.errors import GraphError
from graph.store.base import SessionStats

__all__ = ["FileReport", "ImportReport", "TranscriptError", "failure"]


class TranscriptError(GraphError, ValueError):
    """A file is not a transcript this package can read (its format cannot be told, or it has none).

    Attributes:
        path: The file.
        reason: Why it cannot be read.
    """

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


@dataclass
class FileReport:
    """What importing one file did. Line numbers are 1-based; times are seconds."""

    path: Path | str
    """The file; for a database read by URL (``import --langgraph postgresql://...``), the URL
    without its password (a ``str``)."""
    format: str
    """``claude-code``, ``pi``, ``codex`` or ``bundle``."""
    session_ids: list[str] = field(default_factory=list)
    """The sessions the file's entries went to, the main one first, then spawned ones."""
    nodes_added: int = 0
    """Nodes newly stored (0 on a re-import of an unchanged file)."""
    skipped: list[tuple[int, str]] = field(default_factory=list)
    """(line number, reason) for each line left out (torn writes, malformed JSON)."""
    repaired: list[tuple[int, str]] = field(default_factory=list)
    """(line number, what was done) for lines kept after a repair (split, bytes replaced)."""
    dangling: list[tuple[str, str]] = field(default_factory=list)
    """(node id, parent id) for nodes whose parent is in no file read: the node became a root and
    the parent is kept in its metadata (``dangling_parent``)."""
    relinked: list[tuple[int, str, str]] = field(default_factory=list)
    """(line number, node id, what was done) for links not stored as recorded: a cycle or self parent
    cut, a ``logicalParentUuid`` naming nothing, a preserved compaction segment laid out, an id another
    session holds differently (stored under another id)."""
    dropped: list[tuple[int, str, str]] = field(default_factory=list)
    """(line number, entry id, why) for entries of parsed lines not stored as nodes of this file's
    sessions (a replayed uuid, an identical copy of another session's node, stored there)."""
    notes: list[str] = field(default_factory=list)
    """Facts worth telling the user (a fork joined to its source session, an unlinked sub-agent)."""
    seconds: float = 0.0
    """Wall time of the file's import."""
    error: str | None = None
    """Set when the file failed as a whole: its transaction was rolled back and nothing was stored.
    ``ErrorClass: message`` (the class tells a retryable ``StoreBusyError`` from the others)."""
    reason: str | None = None
    """With :attr:`error`: the failure as a person reads it, without the class, the file's path
    or its line (``line 12: node 'u3' already exists ...``); see :func:`failure`."""

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-shaped data."""
        return {
            "path": str(self.path),
            "format": self.format,
            "session_ids": self.session_ids,
            "nodes_added": self.nodes_added,
            "skipped": [list(s) for s in self.skipped],
            "repaired": [list(r) for r in self.repaired],
            "dangling": [list(d) for d in self.dangling],
            "relinked": [list(r) for r in self.relinked],
            "dropped": [list(d) for d in self.dropped],
            "notes": self.notes,
            "seconds": round(self.seconds, 6),
            "error": self.error,
        }


def _line_of(path: Path, node_id: str) -> int | None:
    """The first line of text file ``path`` that holds ``node_id`` (its last ``/`` part), if any."""
    wanted = node_id.rpartition("/")[2].encode()
    if not wanted:
        return None
    try:
        with path.open("rb") as f:
            for number, line in enumerate(f, 1):
                if wanted in line:
                    return number
    except OSError:
        return None
    return None


def failure(path: Path | str, e: BaseException) -> FileReport:
    """The report of a file that failed as a whole with ``e`` (``format`` "unknown"; callers set it).

    :attr:`FileReport.error` is ``ErrorClass: message``; :attr:`FileReport.reason` is the message
    without the file's path (the caller prints it), and for an error naming a node
    (``e.node_id``) of a transcript read line by line, led by the line that holds the node.
    """
    text = " ".join(str(e).split())
    reason = text.removeprefix(f"{path}: ")
    node_id = getattr(e, "node_id", None)
    if isinstance(node_id, str) and isinstance(path, Path) and path.suffix == ".jsonl":
        number = _line_of(path, node_id)
        if number is not None:
            reason = f"line {number}: {reason}"
    return FileReport(path, "unknown", error=f"{type(e).__name__}: {e}", reason=reason)


@dataclass
class ImportReport:
    """What :func:`graph.importers.import_paths` did."""

    files: list[FileReport] = field(default_factory=list)
    """One report per file, in import order."""
    stats: dict[str, SessionStats] = field(default_factory=dict)
    """Per session touched: the store's counts after the import (:meth:`BaseStore.stats`)."""

    @property
    def nodes_added(self) -> int:
        """Nodes newly stored over all files."""
        return sum(f.nodes_added for f in self.files)

    @property
    def failed(self) -> list[FileReport]:
        """The files that failed as a whole (nothing of them was stored)."""
        return [f for f in self.files if f.error is not None]

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-shaped data."""
        return {
            "files": [f.to_json() for f in self.files],
            "sessions": {sid: st._asdict() for sid, st in self.stats.items()},
        }

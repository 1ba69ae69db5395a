"""Following the runtimes' transcript folders as they write: ``sessiongraph import --watch``.

A :class:`TranscriptWatcher` remembers each transcript file's size, modification time and inode. Each
:meth:`~TranscriptWatcher.poll_once` looks at the files again and imports the ones that are new or
changed with :func:`graph.importers.import_paths`, so a pass reports exactly what ``import`` reports
and keeps its guarantees: one transaction per file, ids kept, re-importing changes nothing, a grown
file adds only its new entries.

What a pass does not store yet, it stores later:

* a torn last line (the runtime is mid-write) is skipped by the importer; the file's size changes when
  the line is completed, and the next pass imports it. The watcher reports such a line as a note
  ("not complete yet") instead of a skipped line, since nothing is lost;
* a file that is still empty, or holds only part of its first line, is left for a later pass (it
  cannot be told to be a transcript yet);
* a file that fails as a whole (its transaction rolled back) is tried again when it next changes,
  or on the next pass when only the store was in the way (:class:`~graph.errors.StoreBusyError`:
  another process held the write lock past the store's timeout), since nothing else would bring
  a file that stopped growing back;
* a file is looked at *before* it is read, so a write that lands during its import shows up as a
  change on the next pass;
* the watcher keeps no state of its own: a watcher that is killed and started again imports every
  file once more on its first pass, which stores exactly what was missing (imports are idempotent).
  A Claude Code, pi or Codex file is read from where its last import stopped (the store keeps
  that offset, see :mod:`graph.importers.resume`), so a pass costs about the bytes appended since.

A Claude Code sub-agent file (``<session>/subagents/agent-*.jsonl``) is imported through its session's
file, as ``import`` does; a change to it re-imports that file. Polling is plain ``os.stat`` calls: no
file-system notification library is needed, and :func:`watch` passes every ``interval`` seconds
(half a second by default, so an append is stored within about a second).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from graph.errors import StoreBusyError
from graph.importers import ImportReport, import_paths
from graph.importers import claude_code as _claude_code
from graph.importers.report import FileReport
from graph.store.base import BaseStore

__all__ = ["DEFAULT_INTERVAL", "TranscriptWatcher", "watch"]

DEFAULT_INTERVAL = 0.5
"""Seconds between two passes of :func:`watch`."""

_SUFFIXES = (".jsonl", ".sgbundle", ".msgpack")
_TORN = "torn write"
_BUSY = f"{StoreBusyError.__name__}: "
"""How a file's report's ``error`` starts when only the store's lock was in the way."""

Signature = tuple[int, int, int]
"""``(size in bytes, modification time in nanoseconds, inode)`` of a file as last seen."""


def _signature(path: Path) -> Signature | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _main_file(path: Path) -> Path:
    """The file whose import brings ``path`` in: its Claude Code session's file, or ``path`` itself."""
    if not _claude_code.is_agent_file(path):
        return path
    if path.parent.name == "subagents":
        main = path.parent.parent.with_suffix(".jsonl")
        if main.exists():
            return main
    sid = _claude_code._first_session_id(path)  # noqa: SLF001
    if sid and (path.parent / f"{sid}.jsonl").exists():
        return path.parent / f"{sid}.jsonl"
    return path


def _has_an_entry(path: Path) -> bool:
    """Whether a file holds a complete line yet (a runtime creates its file, then writes to it).

    A JSON Lines file that is empty or holds only part of its first line cannot be told apart from
    other files; it is imported once a later write changes it. Bundles are always imported.
    """
    if path.suffix != ".jsonl":
        return True
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 16):
                if b"\n" in chunk:
                    return True
    except OSError:
        return True  # let the import report why it cannot be read
    return False


def _hold_back_torn_lines(report: FileReport) -> None:
    """Move a torn last line from the skipped lines to the notes: the next pass stores it."""
    torn = [(line, reason) for line, reason in report.skipped if reason.startswith(_TORN)]
    if not torn:
        return
    report.skipped = [s for s in report.skipped if not s[1].startswith(_TORN)]
    for line, _ in torn:
        report.notes.append(
            f"line {line} is not complete yet (a write in progress); it is imported once completed"
        )


class TranscriptWatcher:
    """Imports what changed in a set of transcript files and directories since the last look.

    Args:
        store: The store to import into.
        paths: Transcript files and directories (searched recursively for ``*.jsonl`` files and
            session bundles, as ``import`` does). Directories that do not exist yet are looked at
            again on every pass.

    Not thread-safe: call :meth:`poll_once` from one thread at a time.
    """

    def __init__(self, store: BaseStore, paths: Sequence[Path]) -> None:
        self.store = store
        self.paths = [Path(p) for p in paths]
        self._seen: dict[Path, Signature] = {}

    def _candidates(self) -> list[Path]:
        out: list[Path] = []
        for p in self.paths:
            if p.is_dir():
                out.extend(f for f in p.rglob("*") if f.suffix in _SUFFIXES and f.is_file())
            elif p.exists():
                out.append(p)
        return out

    def changed(self) -> list[Path]:
        """Look at every file once and return the files to import (new or changed since the last look).

        The files' signatures are remembered as they are now, before anything is read, so a write
        that lands after this call is seen by the next one. Files that disappeared are forgotten.
        """
        now: dict[Path, Signature] = {}
        for f in self._candidates():
            sig = _signature(f)
            if sig is not None:
                now[f] = sig
        todo = [f for f, sig in now.items() if self._seen.get(f) != sig]
        self._seen = now
        return list(dict.fromkeys(_main_file(f) for f in todo))

    def poll_once(self) -> ImportReport:
        """Import the files that are new or changed since the last pass (every file on the first).

        Returns:
            The pass's report, as :func:`graph.importers.import_paths` makes it (empty when nothing
            changed), with torn last lines reported as notes rather than skipped lines. A file that
            failed because the store was busy is in the next pass too, changed or not.
        """
        files = [f for f in self.changed() if _has_an_entry(f)]
        if not files:
            return ImportReport()
        report = import_paths(self.store, files)
        for fr in report.files:
            _hold_back_torn_lines(fr)
            if fr.error is not None and fr.error.startswith(_BUSY):
                self._seen.pop(Path(fr.path), None)  # the next pass tries it again
        return report


def watch(
    store: BaseStore,
    paths: Sequence[Path],
    on_pass: Callable[[ImportReport], None],
    *,
    interval: float = DEFAULT_INTERVAL,
    stop: threading.Event | None = None,
) -> None:
    """Import ``paths`` and then whatever is appended to them, until ``stop`` is set.

    Args:
        store: The store to import into.
        paths: Transcript files and directories.
        on_pass: Called with each pass's report: the first pass (everything, like ``import``) always,
            later passes only when they imported or found something.
        interval: Seconds between passes.
        stop: Set it to end the loop (from another thread or a signal handler); None runs until
            the process is interrupted.
    """
    watcher = TranscriptWatcher(store, paths)
    stop = stop or threading.Event()
    first = True
    while not stop.is_set():
        report = watcher.poll_once()
        if first or report.files:
            on_pass(report)
        first = False
        stop.wait(interval)

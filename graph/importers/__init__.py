"""Importers: the transcripts agent runtimes write, as sessions in a store, ids kept.

:func:`import_paths` takes files or directories, tells each file's format (:func:`detect_format`) and
imports it with its format's ``import_file``, one transaction per file: a file that fails leaves
nothing behind and the others still import. Re-importing changes nothing; a grown file adds only its
new entries (a Claude Code, pi or Codex file is read from where its last import stopped: :mod:`~graph.importers.resume`). Formats: :mod:`~graph.importers.claude_code`, :mod:`~graph.importers.pi`,
:mod:`~graph.importers.codex`, the session bundles of :mod:`graph.bundle`, and LangGraph
``SqliteSaver`` checkpoint databases (:mod:`~graph.importers.langgraph`).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from graph.importers import claude_code, codex, langgraph, pi
from graph.importers.jsonl import without_bom
from graph.importers.report import FileReport, ImportReport, TranscriptError, failure
from graph.store.base import BaseStore

__all__ = [
    "FORMATS",
    "FileReport",
    "ImportReport",
    "Progress",
    "TranscriptError",
    "default_locations",
    "detect_format",
    "import_file",
    "import_paths",
    "transcript_files",
]

FORMATS = ("claude-code", "pi", "codex", "bundle", "langgraph")
"""The formats :func:`detect_format` tells apart."""

Progress = Callable[[int, int, Path], None]
"""Called as ``progress(done, total, path)`` after each file is imported."""

_BUNDLE_SUFFIXES = (".sgbundle", ".msgpack")
_CLAUDE_TYPES = {"user", "assistant", "system", "progress", "summary", "file-history-snapshot"}
_CLAUDE_TYPES |= {"queue-operation", "custom-title", "ai-title", "last-prompt", "attachment"}
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}


def _is_bundle(path: Path) -> bool:
    if path.suffix in _BUNDLE_SUFFIXES:
        return True
    from graph.bundle import MAGIC

    try:
        with path.open("rb") as f:
            return MAGIC in f.read(64)
    except OSError:
        return False


def detect_format(path: Path) -> str:
    """Tell a file's format from its name and its header entries.

    A pi session header (``{"type":"session",...}``) or a Codex ``session_meta`` among the first 50
    lines decides, wherever it is: a stray line before it (a Claude-like ``{"type":"user"}``) does
    not make the file Claude Code. Otherwise a line with Claude Code's ``uuid``/``parentUuid``/
    ``sessionId`` or entry types makes it Claude Code, then pi entries without a header (v1).

    Returns:
        ``"claude-code"``, ``"pi"``, ``"codex"``, ``"bundle"`` or ``"langgraph"``.

    Raises:
        TranscriptError: no entry of the first lines looks like any of them, the path is not
            a regular file (a pipe or device), or it is an SQLite file that is no ``SqliteSaver``
            database (the reason says what it is: locked, unreadable, a sessiongraph store).
        OSError: the file cannot be read.
    """
    path = Path(path)
    _check_regular(path)
    if _is_bundle(path):
        return "bundle"
    if langgraph.is_checkpoint_db(path):
        return "langgraph"
    fault = langgraph.sqlite_fault(path)
    if fault is not None:
        raise TranscriptError(path, fault)
    claude = pi_entries = False
    with path.open("rb") as f:
        for i, raw in zip(range(50), f, strict=False):
            try:
                obj = orjson.loads(without_bom(raw) if i == 0 else raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(obj, dict):
                continue
            kind = obj.get("type")
            if kind == "session" and ("cwd" in obj or "version" in obj or "id" in obj):
                return "pi"
            if kind in _CODEX_TYPES and "payload" in obj:
                return "codex"
            if "uuid" in obj or "parentUuid" in obj or "sessionId" in obj or kind in _CLAUDE_TYPES:
                claude = True
            elif "parentId" in obj and kind in ("message", "model_change", "compaction"):
                pi_entries = True
    if claude:
        return "claude-code"
    if pi_entries:
        return "pi"
    raise TranscriptError(path, "not a Claude Code, pi or Codex transcript, nor a session bundle")


def _check_regular(path: Path) -> None:
    """Refuse a path that is not a regular file (a pipe, a device) before anything opens it.

    A named pipe blocks its reader until a writer comes and can be read only once, and an import
    reads a file several times (its format, its place in the run, its entries).

    Raises:
        TranscriptError: ``path`` exists and is not a regular file.
        OSError: ``path`` cannot be looked at.
    """
    if not stat.S_ISREG(path.stat().st_mode):
        raise TranscriptError(path, "not a regular file (a pipe or device cannot be imported)")


_BLANK_AT_MOST = 65_536
"""Bytes a file may have and still be read whole to tell whether it is blank."""


def _blank(path: Path) -> bool:
    """Whether a file holds nothing but blank lines (a byte order mark allowed): nothing to import.

    A runtime may create a session file before it writes its first entry.

    Raises:
        OSError: the file cannot be read.
    """
    if path.stat().st_size > _BLANK_AT_MOST:
        return False
    return not without_bom(path.read_bytes()).strip()


def default_locations() -> list[Path]:
    """The runtimes' transcript directories on this machine that exist.

    ``$CLAUDE_CONFIG_DIR/projects`` (default ``~/.claude/projects``), ``~/.pi/agent/sessions``
    (``$PI_CODING_AGENT_DIR/sessions`` when set), ``$CODEX_HOME/sessions`` and
    ``$CODEX_HOME/archived_sessions`` (default ``~/.codex``).
    """
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    pi_dir = Path(os.environ.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    candidates = [
        claude / "projects",
        pi_dir / "sessions",
        codex_home / "sessions",
        codex_home / "archived_sessions",
    ]
    return [p for p in candidates if p.is_dir()]


def _handled_by_main(path: Path) -> bool:
    """Whether a Claude Code agent file found in a directory is imported with its session file."""
    if not claude_code.is_agent_file(path):
        return False
    if path.parent.name == "subagents" and path.parent.parent.with_suffix(".jsonl").exists():
        return True
    sid = claude_code._first_session_id(path)  # noqa: SLF001
    return bool(sid) and (path.parent / f"{sid}.jsonl").exists()


def transcript_files(paths: Sequence[Path]) -> list[Path]:
    """The files to import for ``paths``: files as given, directories searched recursively.

    In directories, ``*.jsonl`` and bundle files are taken, except Claude Code sub-agent files whose
    session file is there (that file's import brings them in).
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.is_file() and (f.suffix == ".jsonl" or f.suffix in _BUNDLE_SUFFIXES)
            )
            out.extend(f for f in found if not _handled_by_main(f))
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def _order_key(path: Path) -> tuple[str, bool, str]:
    """Sort key of a file in an import run: its first timestamp, copies after sources, its path.

    A fork's source is older than the fork, and a Claude Code ``/branch`` copy keeps the source's
    timestamps but marks its entries ``forkedFrom``, so a copy sorts after the file it copies.
    """
    try:
        _check_regular(path)
        with path.open("rb") as f:
            obj = orjson.loads(without_bom(f.readline()))
    except (OSError, orjson.JSONDecodeError, TranscriptError):
        return "", False, str(path)
    if not isinstance(obj, dict):
        return "", False, str(path)
    payload = obj.get("payload")
    stamp = payload.get("timestamp") if isinstance(payload, dict) else obj.get("timestamp")
    return (stamp if isinstance(stamp, str) else ""), "forkedFrom" in obj, str(path)


def import_file(store: BaseStore, path: Path, fmt: str | None = None) -> FileReport:
    """Import one file in its format (detected when ``fmt`` is None), in one transaction.

    A file of blank lines only (an empty one: a runtime created it and wrote nothing yet) stores
    nothing and is no failure: its report notes it.

    Raises:
        TranscriptError: the format cannot be told, or the path is not a regular file.
        OSError, GraphError: the file could not be imported; nothing of it was stored.
    """
    path = Path(path)
    _check_regular(path)
    if fmt is None and _blank(path):
        return FileReport(path, "unknown", notes=["empty: nothing to import yet"])
    fmt = fmt or detect_format(path)
    readers = {
        "claude-code": claude_code.import_file,
        "pi": pi.import_file,
        "codex": codex.import_file,
        "langgraph": langgraph.import_file,
    }
    if fmt in readers:
        return readers[fmt](store, path)
    if fmt == "bundle":
        from graph.bundle import import_bundle

        start = time.perf_counter()
        got = import_bundle(store, path)
        return FileReport(
            path,
            "bundle",
            session_ids=got.session_ids,
            nodes_added=got.nodes_added,
            seconds=time.perf_counter() - start,
        )
    raise TranscriptError(path, f"unknown format {fmt!r}")


def import_paths(
    store: BaseStore, paths: Sequence[Path], *, progress: Progress | None = None
) -> ImportReport:
    """Import every transcript under ``paths`` (files or directories), each in its own transaction.

    Files are imported oldest first by their first timestamp (so a fork's source precedes the fork),
    a Claude Code ``/branch`` copy after its source, then by path. A file that cannot be read or that the store refuses is reported with ``error`` set
    and leaves nothing behind; the others still import.

    Args:
        store: The store to import into.
        paths: Files or directories.
        progress: Called after each file (see :data:`Progress`).

    Returns:
        One :class:`FileReport` per file and the stats of every session touched.
    """
    files = transcript_files(paths)
    files.sort(key=_order_key)
    report = ImportReport()
    for done, path in enumerate(files, 1):
        start = time.perf_counter()
        try:
            fr = import_file(store, path)
        except Exception as e:  # GraphError, OSError, or anything unforeseen: this file only
            fr = failure(path, e)
            fr.format = _safe_format(path)
            fr.seconds = time.perf_counter() - start
        report.files.append(fr)
        if progress is not None:
            progress(done, len(files), path)
    for fr in report.files:
        for sid in fr.session_ids:
            report.stats[sid] = store.stats(sid)
    return report


def _safe_format(path: Path) -> str:
    try:
        return detect_format(path)
    except (TranscriptError, OSError):
        return "unknown"

"""LangGraph checkpoint databases: a ``SqliteSaver`` file as the graph :class:`SessionGraphSaver` writes.

``SqliteSaver`` (``langgraph-checkpoint-sqlite``) keeps two tables. ``checkpoints``: ``thread_id``,
``checkpoint_ns``, ``checkpoint_id``, ``parent_checkpoint_id``, ``type`` and ``checkpoint`` (the
payload as LangGraph's serializer wrote it, ``serde.dumps_typed``), ``metadata`` (JSON). ``writes``:
the pending writes of each checkpoint, keyed by ``task_id`` and ``idx``, with ``task_path``,
``channel``, ``type`` and ``value``.

Importing replays every checkpoint, oldest id first (LangGraph's ids are time-ordered, so a parent
and a subgraph's parent namespace come before what follows them), through
:meth:`graph.checkpoint.SessionGraphSaver.put_stored`: the same sessions, message nodes, compaction
summaries, checkpoint nodes and heads the saver writes when the app runs on it, with the payload
bytes kept as they were. Importing again changes nothing. The file is opened read-only.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from graph.importers._common import file_import
from graph.importers.report import FileReport, TranscriptError
from graph.store import BaseStore

__all__ = ["FORMAT", "import_file", "is_checkpoint_db"]

FORMAT = "langgraph"
"""The format name :func:`graph.importers.detect_format` gives a LangGraph checkpoint database."""

_MAGIC = b"SQLite format 3\x00"


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)


def is_checkpoint_db(path: Path) -> bool:
    """Whether ``path`` is an SQLite file with ``SqliteSaver``'s ``checkpoints`` and ``writes`` tables."""
    try:
        with Path(path).open("rb") as f:
            if f.read(16) != _MAGIC:
                return False
        conn = _connect(Path(path))
        try:
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return False
    return {"checkpoints", "writes"} <= names


def import_file(store: BaseStore, path: Path) -> FileReport:
    """Import a ``SqliteSaver`` database into ``store``, in one transaction.

    Returns:
        The file's report: one session id per thread and namespace, nodes added; a checkpoint whose
        payload cannot be decoded is left out and listed in ``skipped`` as (row number, reason).

    Raises:
        TranscriptError: the file is not a readable checkpoint database, or the ``langgraph`` extra
            is not installed.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    path = Path(path)
    try:
        from graph.checkpoint import SessionGraphSaver, session_id_of
    except ImportError as e:  # the optional extra
        raise TranscriptError(
            path, f"reading LangGraph checkpoints needs sessiongraph[langgraph] ({e})"
        ) from e
    try:
        conn = _connect(path)
        try:
            checkpoints = conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
                " checkpoint, metadata FROM checkpoints ORDER BY checkpoint_id, thread_id,"
                " checkpoint_ns"
            ).fetchall()
            cols = {r[1] for r in conn.execute("PRAGMA table_info(writes)")}
            task_path = "task_path" if "task_path" in cols else "''"
            writes = conn.execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, {task_path}, idx,"
                " channel, type, value FROM writes ORDER BY thread_id, checkpoint_ns,"
                " checkpoint_id, task_id, idx"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise TranscriptError(path, f"not a LangGraph SqliteSaver database: {e}") from e
    with file_import(path, FORMAT) as (report, _):
        saver = SessionGraphSaver(store)
        with store.atomic():
            for number, (thread, ns, _cid, parent, type_, blob, meta) in enumerate(checkpoints, 1):
                try:
                    metadata: Any = orjson.loads(meta) if meta else {}
                    report.nodes_added += saver.put_stored(
                        str(thread), ns or "", parent, (type_, bytes(blob)), metadata
                    )
                except (ValueError, TypeError, orjson.JSONDecodeError) as e:
                    report.skipped.append((number, f"checkpoint {_cid}: {e}"))
                    continue
                sid = session_id_of(str(thread), ns or "")
                if sid not in report.session_ids:
                    report.session_ids.append(sid)
            grouped: dict[tuple[str, str, str], list[tuple[str, str, int, str, str, bytes]]] = {}
            for thread, ns, cid, task, tpath, idx, channel, type_, value in writes:
                grouped.setdefault((str(thread), ns or "", cid), []).append(
                    (task, tpath or "", int(idx), channel, type_, bytes(value))
                )
            for (thread, ns, cid), ws in grouped.items():
                saver.put_stored_writes(thread, ns, cid, ws)
    return report

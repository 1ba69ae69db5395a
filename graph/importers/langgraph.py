"""LangGraph checkpoint databases (``SqliteSaver``, ``PostgresSaver``) as the graph the saver writes.

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

``PostgresSaver`` (``langgraph-checkpoint-postgres``) keeps three tables in a PostgreSQL database:
``checkpoints`` (the checkpoint as JSONB with only its primitive channel values inline, and its
metadata as JSONB), ``checkpoint_blobs`` (every other channel value, serialized by LangGraph's
serializer, keyed by ``channel`` and ``version``; type ``empty`` for a channel without a value) and
``checkpoint_writes`` (the pending writes, as ``SqliteSaver``'s ``writes``). :func:`import_postgres`
puts each checkpoint back together as ``PostgresSaver`` reads it (the blob of each channel at the
version the checkpoint names, over the inline values), then replays them as for ``SqliteSaver``
through :meth:`graph.checkpoint.SessionGraphSaver.put_checkpoint`; the pending writes keep their
bytes. It reads in one read-only transaction (one snapshot) and needs psycopg (the ``postgres``
extra), not ``langgraph-checkpoint-postgres``. Not read: the delta-channel histories of a channel
declared as a ``DeltaChannel`` (its snapshot blob is taken as the value) and the pending sends of
checkpoints older than format version 4, which ``PostgresSaver`` itself migrates on read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import orjson

from graph.importers._common import file_import
from graph.importers.report import FileReport, TranscriptError
from graph.store.base import BaseStore

__all__ = [
    "FORMAT",
    "import_file",
    "import_postgres",
    "is_checkpoint_db",
    "postgres_label",
    "sqlite_fault",
]

FORMAT = "langgraph"
"""The format name :func:`graph.importers.detect_format` gives a LangGraph checkpoint database."""

_MAGIC = b"SQLite format 3\x00"


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)


def _tables(path: Path) -> set[str] | None:
    """The tables of an SQLite file, or None when ``path`` is no SQLite file.

    Raises:
        OSError: the file cannot be read.
        sqlite3.Error: it starts as an SQLite file and SQLite cannot read it.
    """
    with Path(path).open("rb") as f:
        if f.read(16) != _MAGIC:
            return None
    conn = _connect(Path(path))
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def is_checkpoint_db(path: Path) -> bool:
    """Whether ``path`` is an SQLite file with ``SqliteSaver``'s ``checkpoints`` and ``writes`` tables."""
    try:
        names = _tables(path)
    except (OSError, sqlite3.Error):
        return False
    return names is not None and {"checkpoints", "writes"} <= names


def sqlite_fault(path: Path) -> str | None:
    """Why an SQLite file is no ``SqliteSaver`` database to import; None when it is one or no SQLite file.

    So that format detection names an SQLite file for what it is (locked, unreadable, a
    sessiongraph store, another database) rather than as no transcript.
    """
    try:
        names = _tables(path)
    except OSError:
        return None  # the caller's own reading says why
    except sqlite3.Error as e:
        if "locked" in str(e):  # a saver writing it without WAL holds readers out
            return f"an SQLite database locked by a writer (a saver at work?): {e}; try again"
        return f"an SQLite database that cannot be read (truncated or damaged?): {e}"
    if names is None or {"checkpoints", "writes"} <= names:
        return None
    if {"sessions", "nodes"} <= names:
        return "a sessiongraph store, not a LangGraph SqliteSaver database (open it with --db)"
    return "an SQLite database without LangGraph SqliteSaver's checkpoints and writes tables"


def import_file(store: BaseStore, path: Path) -> FileReport:
    """Import a ``SqliteSaver`` database into ``store``, in one transaction.

    Returns:
        The file's report: one session id per thread and namespace, nodes added; a checkpoint whose
        payload cannot be decoded (a type tag the serializer does not know, metadata that is no JSON
        object) or is no checkpoint of its row's id, or whose row has no ``thread_id``, is left out
        and listed in ``skipped`` as (row number, reason), and so is a pending write whose index is
        no integer, whose value is no blob or that lacks its task, channel or type tag (its row
        number in ``writes``, the reason saying "pending write"). Payload columns are read as
        their bytes whatever their storage class. A checkpoint whose parent is in neither the file nor
        the store (or was left out) is listed in ``dangling`` as (node id, the parent's node id), and one that is
        its own parent in ``relinked``: the saver stores each as a root. A row whose id or
        type column (``thread_id``, ``checkpoint_ns``, ``checkpoint_id``, ``parent_checkpoint_id``,
        ``task_id``, ``task_path``, ``channel``, ``type``) is no UTF-8 is left out and listed in
        ``skipped`` the same way. A thread one of whose session ids is held by a session that is
        not that LangGraph thread (an imported transcript of that id) is left out whole, named
        in ``notes`` (file, thread, the session in the way); the other threads import.

    Raises:
        TranscriptError: the file is not a readable checkpoint database, a writer keeps it locked
            past the timeout (5 s), or the ``langgraph`` extra is not installed.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    path = Path(path)
    try:
        from graph.checkpoint import SessionGraphSaver
    except ImportError as e:  # the optional extra
        raise TranscriptError(
            path, f"reading LangGraph checkpoints needs sessiongraph[langgraph] ({e})"
        ) from e
    try:
        conn = _connect(path)
        try:
            checkpoints = conn.execute(
                # every text column as its bytes: a column of text that is no UTF-8 fails a
                # row, not the whole file
                "SELECT CAST(thread_id AS BLOB), CAST(checkpoint_ns AS BLOB),"
                " CAST(checkpoint_id AS BLOB), CAST(parent_checkpoint_id AS BLOB),"
                " CAST(type AS BLOB), CAST(checkpoint AS BLOB), CAST(metadata AS BLOB)"
                " FROM checkpoints ORDER BY checkpoint_id, thread_id, checkpoint_ns"
            ).fetchall()
            cols = {r[1] for r in conn.execute("PRAGMA table_info(writes)")}
            task_path = "task_path" if "task_path" in cols else "''"
            writes = conn.execute(
                "SELECT CAST(thread_id AS BLOB), CAST(checkpoint_ns AS BLOB),"
                " CAST(checkpoint_id AS BLOB), CAST(task_id AS BLOB),"
                f" CAST({task_path} AS BLOB), idx, CAST(channel AS BLOB), CAST(type AS BLOB),"
                " CAST(value AS BLOB) FROM writes ORDER BY thread_id, checkpoint_ns,"
                " checkpoint_id, task_id, idx"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.OperationalError as e:
        if "locked" in str(e):  # a saver writing it without WAL holds readers out
            raise TranscriptError(
                path, f"the database is locked by a writer (a saver at work?): {e}; try again"
            ) from e
        raise TranscriptError(path, f"not a LangGraph SqliteSaver database: {e}") from e
    except sqlite3.Error as e:
        raise TranscriptError(path, f"not a LangGraph SqliteSaver database: {e}") from e
    with file_import(path, FORMAT) as (report, _):
        saver = SessionGraphSaver(store)
        rows = []
        undecodable = set()
        for number, row in enumerate(checkpoints, 1):
            try:
                rows.append((*_texts(row[:5], _CHECKPOINT_TEXTS), *row[5:]))
            except ValueError as e:
                report.skipped.append((number, f"checkpoint row {number}: {e}"))
                undecodable.add(number)
                rows.append((None, "", "", None, "", b"", b""))  # (left out: in skipped)
        refused = _refused(
            store, saver, {(str(r[0]), r[1] or "") for r in rows if r[0] is not None}
        )
        for thread, why in refused.items():
            report.notes.append(f"{path}: thread {thread!r} skipped: {why}")
        with store.atomic():
            for number, (thread, ns, _cid, parent, type_, blob, meta) in enumerate(rows, 1):
                if number in undecodable or str(thread) in refused:
                    continue
                try:
                    if thread is None:
                        raise ValueError("no thread_id")
                    metadata: Any = orjson.loads(meta) if meta else {}
                    if not isinstance(metadata, dict):
                        raise ValueError(f"metadata is no JSON object ({type(metadata).__name__})")
                    report.nodes_added += saver.put_stored(
                        str(thread),
                        ns or "",
                        parent,
                        (type_, bytes(blob)),
                        cast(Any, metadata),
                        checkpoint_id=_cid,
                    )
                # (the serializer raises NotImplementedError for a type tag it does not know)
                except (ValueError, TypeError, NotImplementedError, orjson.JSONDecodeError) as e:
                    report.skipped.append((number, f"checkpoint {_cid}: {e}"))
                    continue
                sid = saver.session_id(str(thread), ns or "")
                if sid not in report.session_ids:
                    report.session_ids.append(sid)
            _report_links(
                saver,
                [(str(r[0]), r[1] or "", r[2], r[3]) for r in rows],
                report,
                {n for n, r in enumerate(rows, 1) if str(r[0]) in refused},
            )
            grouped: dict[tuple[str, str, str], list[tuple[str, str, int, str, str, bytes]]] = {}
            for number, raw in enumerate(writes, 1):
                try:
                    thread, ns, cid, task, tpath = _texts(raw[:5], _WRITE_TEXTS)
                    channel, type_ = _texts(raw[6:8], ("channel", "type"))
                except ValueError as e:
                    report.skipped.append((number, f"pending write {number}: {e}"))
                    continue
                idx, value = raw[5], raw[8]
                if str(thread) in refused:
                    continue
                fault = _write_fault(task, idx, channel, type_, value)
                if fault:
                    report.skipped.append(
                        (number, f"pending write {number} (checkpoint {cid}, task {task}): {fault}")
                    )
                    continue
                grouped.setdefault((str(thread), ns or "", cid), []).append(
                    (task, tpath or "", idx, channel, type_, value)
                )
            for (thread, ns, cid), ws in grouped.items():
                saver.put_stored_writes(thread, ns, cid, ws)
    return report


_CHECKPOINT_TEXTS = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type")
_WRITE_TEXTS = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path")


def _texts(values: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """Text columns read as their bytes, decoded (NULL stays None).

    Raises:
        ValueError: a column is no UTF-8 (named, with the bytes it holds).
    """
    out = []
    for name, value in zip(names, values, strict=True):
        if isinstance(value, bytes):
            try:
                value = value.decode()
            except UnicodeDecodeError as e:
                raise ValueError(f"its {name} is no UTF-8 ({value!r}: {e.reason})") from e
        out.append(value)
    return tuple(out)


def _refused(store: BaseStore, saver: Any, keys: set[tuple[str, str]]) -> dict[str, str]:
    """The threads of ``keys`` (thread, namespace) whose session some other writer holds.

    Returns:
        thread id -> why, for each thread one of whose session ids is held by a session that is
        not that LangGraph thread (an imported transcript of that id, another thread's namespace):
        the saver would refuse its checkpoints, so the thread is left out whole.
    """
    refused: dict[str, str] = {}
    for thread, ns in sorted(keys):
        if thread in refused or not thread:
            continue
        sid = saver.session_id(thread, ns)
        if not store.has_session(sid):
            continue
        info = store.session(sid).metadata.get("langgraph")
        if not isinstance(info, dict) or info.get("thread_id") != thread:
            refused[thread] = f"session {sid!r} exists and is not LangGraph thread {thread!r}"
    return refused


def _write_fault(task: Any, idx: Any, channel: Any, type_: Any, value: Any) -> str | None:
    """Why a ``writes`` row is no pending write ``SqliteSaver`` could read back, or None."""
    if not isinstance(idx, int) or not isinstance(value, bytes):
        return f"index {idx!r} is no integer or its value is no blob"
    if task is None or not isinstance(channel, str) or not isinstance(type_, str):
        return f"task {task!r}, channel {channel!r} or type tag {type_!r} missing"
    return None


def _report_links(
    saver: Any,
    checkpoints: list[tuple[str, str, str, str | None]],
    report: FileReport,
    refused: Collection[int] = (),
) -> None:
    """Report the parent links the saver could not keep: the checkpoint became a root.

    ``checkpoints`` holds ``(thread, namespace, checkpoint id, parent id)`` per row, in row order.
    A checkpoint that is its own parent goes to ``report.relinked`` (row number, node id, why); one
    whose parent is neither in the database nor stored (a row deleted, a database pruned) goes to
    ``report.dangling`` as (node id, the parent's node id), and so does one whose parent's row was
    left out (in ``report.skipped`` already, which holds only checkpoint rows when this runs). The
    rows numbered in ``refused`` (a thread left out whole) are neither. A checkpoint's node id is
    ``<session>/<checkpoint id>``.
    """
    store = saver.store
    left_out = {number for number, _ in report.skipped} | set(refused)
    held = {
        (thread, ns, cid)
        for number, (thread, ns, cid, _) in enumerate(checkpoints, 1)
        if number not in left_out
    }
    missing: dict[str, str] = {}
    for number, (thread, ns, cid, parent) in enumerate(checkpoints, 1):
        sid = saver.session_id(thread, ns)
        if not parent or number in left_out:
            continue
        if parent == cid:
            report.relinked.append(
                (number, f"{sid}/{cid}", "its own parent (a cycle of one); a root")
            )
        elif (thread, ns, parent) not in held:
            missing[f"{sid}/{cid}"] = f"{sid}/{parent}"
    stored = store.locate(missing.values()) if missing else {}
    report.dangling += [(n, p) for n, p in missing.items() if p not in stored]


def postgres_label(url: str) -> str:
    """The URL as given without its password, for reports: ``postgresql://user@host:5432/db``.

    The password goes from the user part and from the query (libpq's ``password`` parameter);
    the user, every host and port, the database and the other parameters stay as written.
    """
    parts = urlsplit(url)
    user, at, hosts = parts.netloc.rpartition("@")
    netloc = f"{user.partition(':')[0]}@{hosts}" if at else hosts
    query = "&".join(
        kv for kv in parts.query.split("&") if kv and kv.partition("=")[0] != "password"
    )
    tail = (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")
    return f"{parts.scheme}://{netloc}{parts.path}{tail}"


@contextmanager
def _read_only(url: str, where: str) -> Iterator[Any]:
    """A psycopg connection to ``url`` inside one read-only, repeatable-read transaction."""
    try:
        import psycopg
    except ImportError as e:  # the optional extra
        raise TranscriptError(
            where, f"reading a PostgreSQL database needs sessiongraph[postgres] ({e})"
        ) from e
    try:
        from graph.store.postgres import connect_options

        with psycopg.connect(url, **connect_options(url)) as conn:
            conn.read_only = True
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            with conn.transaction():
                yield conn
    except psycopg.Error as e:
        raise TranscriptError(where, f"not a readable LangGraph PostgresSaver database: {e}") from e


def import_postgres(store: BaseStore, url: str) -> FileReport:
    """Import a ``PostgresSaver`` database (a ``postgresql://`` URL) into ``store``, in one transaction.

    Returns:
        The database's report (its path is the URL as given, without a password, a ``str``:
        ``Path`` would fold its ``//``): one session id per thread
        and namespace, nodes added; a checkpoint that cannot be put back together (a blob LangGraph's
        serializer cannot decode, a row whose checkpoint, channel values or versions or metadata are
        no JSON objects) is left out and listed in ``skipped`` as (row number, reason).

    Raises:
        TranscriptError: the database cannot be read, lacks ``PostgresSaver``'s tables, or an extra
            (``langgraph``, ``postgres``) is not installed.
        GraphError: the store refused a write; nothing of the database was stored.
    """
    where = postgres_label(url)
    try:
        from graph.checkpoint import SessionGraphSaver
    except ImportError as e:  # the optional extra
        raise TranscriptError(
            where, f"reading LangGraph checkpoints needs sessiongraph[langgraph] ({e})"
        ) from e
    with _read_only(url, where) as conn:
        tables = conn.execute(
            "SELECT to_regclass('checkpoints') IS NOT NULL AND"
            " to_regclass('checkpoint_blobs') IS NOT NULL AND"
            " to_regclass('checkpoint_writes') IS NOT NULL"
        ).fetchone()
        if not (tables and tables[0]):
            raise TranscriptError(
                where,
                "no PostgresSaver tables (checkpoints, checkpoint_blobs, checkpoint_writes)"
                " on the connection's search_path",
            )
        checkpoints = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint,"
            " metadata FROM checkpoints ORDER BY checkpoint_id, thread_id, checkpoint_ns"
        ).fetchall()
        blobs = {
            (t, ns, ch, ver): (type_, blob)
            for t, ns, ch, ver, type_, blob in conn.execute(
                "SELECT thread_id, checkpoint_ns, channel, version, type, blob"
                " FROM checkpoint_blobs"
            )
        }
        has_path = conn.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name ="
            " 'checkpoint_writes' AND column_name = 'task_path'"
            " AND table_schema = ANY(current_schemas(false))"
        ).fetchone()
        task_path = "task_path" if has_path and has_path[0] else "''"
        writes = conn.execute(
            f"SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, {task_path}, idx, channel,"
            " type, blob FROM checkpoint_writes ORDER BY thread_id, checkpoint_ns, checkpoint_id,"
            " task_id, idx"
        ).fetchall()
    with file_import(Path(where), FORMAT) as (report, _):
        report.path = where  # the URL itself: Path() folds its "//"
        saver = SessionGraphSaver(store)
        refused = _refused(store, saver, {(str(r[0]), r[1] or "") for r in checkpoints})
        for thread, why in refused.items():
            report.notes.append(f"{where}: thread {thread!r} skipped: {why}")
        with store.atomic():
            for number, (thread, ns, cid, parent, cp, meta) in enumerate(checkpoints, 1):
                if str(thread) in refused:
                    continue
                try:
                    checkpoint = _assembled(saver, blobs, str(thread), ns or "", cp)
                    report.nodes_added += saver.put_checkpoint(
                        str(thread),
                        ns or "",
                        parent,
                        checkpoint,
                        cast(Any, dict(meta or {})),
                        checkpoint_id=cid,
                    )
                except (ValueError, TypeError, KeyError) as e:
                    report.skipped.append((number, f"checkpoint {cid}: {e}"))
                    continue
                sid = saver.session_id(str(thread), ns or "")
                if sid not in report.session_ids:
                    report.session_ids.append(sid)
            _report_links(
                saver,
                [(str(r[0]), r[1] or "", r[2], r[3]) for r in checkpoints],
                report,
                {n for n, r in enumerate(checkpoints, 1) if str(r[0]) in refused},
            )
            grouped: dict[tuple[str, str, str], list[tuple[str, str, int, str, str, bytes]]] = {}
            for thread, ns, cid, task, tpath, idx, channel, type_, value in writes:
                if str(thread) in refused:
                    continue
                grouped.setdefault((str(thread), ns or "", cid), []).append(
                    (task, tpath or "", int(idx), channel, type_ or "", bytes(value))
                )
            for (thread, ns, cid), ws in grouped.items():
                saver.put_stored_writes(thread, ns, cid, ws)
    return report


def _assembled(
    saver: Any,
    blobs: dict[tuple[str, str, str, str], tuple[str, bytes | None]],
    thread: str,
    ns: str,
    stored: dict[str, Any],
) -> Any:
    """The checkpoint ``PostgresSaver`` reads: each channel's blob at its version over the inline values.

    Raises:
        ValueError: a blob that LangGraph's serializer cannot decode, or a stored checkpoint whose
            channel values or versions are no JSON objects.
    """
    if not isinstance(stored, dict):
        raise ValueError(f"the checkpoint is no JSON object (a {type(stored).__name__})")
    parts = {k: stored.get(k) or {} for k in ("channel_values", "channel_versions")}
    for name, part in parts.items():
        if not isinstance(part, dict):
            raise ValueError(f"its {name} are no JSON object (a {type(part).__name__})")
    values = dict(parts["channel_values"])
    for channel, version in parts["channel_versions"].items():
        got = blobs.get((thread, ns, channel, str(version)))
        if got is None or got[0] == "empty" or got[1] is None:
            continue
        try:
            values[channel] = saver.serde.loads_typed((got[0], bytes(got[1])))
        except Exception as e:  # the serializer's own errors are not typed
            raise ValueError(f"channel {channel!r} version {version}: {e}") from e
    return {**stored, "channel_values": values}

"""A ``SqliteSaver`` database damaged or odd in the ways real ones are, imported.

A checkpoint whose payload cannot be read (a type tag LangGraph's serializer does not know, a
metadata column that is no JSON object or no UTF-8, a payload that is no checkpoint of its row's
id) or whose row has no thread, and a pending write whose row is not one (no value, an index that
is no integer, no task, channel or type tag) are each left out and reported with their row; the
rest of the file imports. Before, each of these failed the whole file with an untyped error
(``NotImplementedError``, ``AttributeError``, ``TypeError``, ``ValueError``, ``KeyError``, a
``StoreError`` of a NOT NULL column), or stored a thread named "None".
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402

from graph.importers import import_file  # noqa: E402
from graph.importers.report import TranscriptError  # noqa: E402
from graph.store.in_memory import MemorySessionStore  # noqa: E402
from tests.importkit import dump  # noqa: E402

__all__: list[str] = []


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real SqliteSaver file: two threads of three turns each."""
    path = tmp_path_factory.mktemp("lg") / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)

    def bot(state: MessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    app = g.compile(checkpointer=saver)
    for thread in ("t1", "t2"):
        for i in range(3):
            app.invoke(
                {"messages": [HumanMessage(f"hi {i}")]}, {"configurable": {"thread_id": thread}}
            )
    conn.commit()
    conn.close()
    return path


def _loose(c: sqlite3.Connection) -> None:
    """The tables without their NOT NULL constraints (a hand-made or older database)."""
    for table in ("checkpoints", "writes"):
        c.execute(f"CREATE TABLE loose AS SELECT * FROM {table}")
        c.execute(f"DROP TABLE {table}")
        c.execute(f"ALTER TABLE loose RENAME TO {table}")


def _changed(saved: Path, tmp_path: Path, *sql: str, loose: bool = False) -> Path:
    path = tmp_path / "changed.sqlite"
    shutil.copy(saved, path)
    c = sqlite3.connect(path)
    if loose:
        _loose(c)
    for q in sql:
        c.execute(q)
    c.commit()
    c.close()
    return path


THIRD = "(SELECT checkpoint_id FROM checkpoints WHERE thread_id = 't1' ORDER BY checkpoint_id LIMIT 1 OFFSET 2)"

CHECKPOINTS: dict[str, tuple[str, str]] = {
    "unknown type tag": (
        f"UPDATE checkpoints SET type = 'msgpack2' WHERE checkpoint_id = {THIRD}",
        "msgpack2",
    ),
    "pickle without the fallback": (
        f"UPDATE checkpoints SET type = 'pickle' WHERE checkpoint_id = {THIRD}",
        "pickle",
    ),
    "empty type tag": (f"UPDATE checkpoints SET type = '' WHERE checkpoint_id = {THIRD}", "type"),
    "metadata a JSON list": (
        f"UPDATE checkpoints SET metadata = '[1, 2]' WHERE checkpoint_id = {THIRD}",
        "metadata",
    ),
    "metadata JSON null": (
        f"UPDATE checkpoints SET metadata = 'null' WHERE checkpoint_id = {THIRD}",
        "metadata",
    ),
    "metadata a JSON string": (
        f"UPDATE checkpoints SET metadata = '\"x\"' WHERE checkpoint_id = {THIRD}",
        "metadata",
    ),
    "metadata text that is no UTF-8": (
        f"UPDATE checkpoints SET metadata = CAST(X'7b2278223a2280ff227d' AS TEXT)"
        f" WHERE checkpoint_id = {THIRD}",
        "UTF-8",
    ),
    "a payload without a checkpoint id": (
        f"UPDATE checkpoints SET type = 'msgpack', checkpoint = X'81a161a162'"
        f" WHERE checkpoint_id = {THIRD}",
        "id",
    ),
    "a payload of another checkpoint id": (
        f"UPDATE checkpoints SET checkpoint = (SELECT checkpoint FROM checkpoints"
        f" WHERE thread_id = 't1' ORDER BY checkpoint_id LIMIT 1) WHERE checkpoint_id = {THIRD}",
        "payload",
    ),
    "channel values that are no map": (
        "UPDATE checkpoints SET type = 'msgpack', checkpoint = X'86a17604a26964a178a27473a0ae"
        "6368616e6e656c5f76616c7565739101b06368616e6e656c5f76657273696f6e7380ad76657273696f6e73"
        f"5f7365656e80' WHERE checkpoint_id = {THIRD}",
        "channel_values",
    ),
}


@pytest.mark.parametrize("sql, why", list(CHECKPOINTS.values()), ids=list(CHECKPOINTS))
def test_an_unreadable_checkpoint_is_skipped_and_reported(
    saved: Path, tmp_path: Path, sql: str, why: str
) -> None:
    whole = MemorySessionStore()
    base = import_file(whole, saved)
    store = MemorySessionStore()
    report = import_file(store, _changed(saved, tmp_path, sql))
    assert [n for n, _ in report.skipped] == [3]
    assert why in report.skipped[0][1]
    assert report.session_ids == base.session_ids
    # its child's parent was left out: before, the child was stored as a root unreported
    child = _cid(saved, 3)
    assert [n for n, _ in report.dangling] == [f"t1/{child}"]
    assert dump(store)["t2"] == dump(whole)["t2"]  # the other thread is whole


WRITES: dict[str, tuple[str, bool]] = {
    "no value": ("UPDATE writes SET value = NULL WHERE rowid = 1", False),
    "no index": ("UPDATE writes SET idx = NULL WHERE rowid = 1", True),
    "an index that is text": ("UPDATE writes SET idx = 'x' WHERE rowid = 1", False),
    "no channel": ("UPDATE writes SET channel = NULL WHERE rowid = 1", True),
    "no task": ("UPDATE writes SET task_id = NULL WHERE rowid = 1", True),
    "no type tag": ("UPDATE writes SET type = NULL WHERE rowid = 1", True),
}


@pytest.mark.parametrize("sql, loose", list(WRITES.values()), ids=list(WRITES))
def test_an_unreadable_pending_write_is_skipped_and_reported(
    saved: Path, tmp_path: Path, sql: str, loose: bool
) -> None:
    store = MemorySessionStore()
    report = import_file(store, _changed(saved, tmp_path, sql, loose=loose))
    assert len(report.skipped) == 1
    assert "pending write" in report.skipped[0][1]
    assert report.session_ids == ["t1", "t2"]
    again = dump(store)
    import_file(store, _changed(saved, tmp_path, sql, loose=loose))
    assert dump(store) == again


def test_a_payload_kept_as_text_imports_as_its_bytes(saved: Path, tmp_path: Path) -> None:
    """A hand-made file may keep the payload blobs in text columns: their bytes, not UTF-8."""
    whole = MemorySessionStore()
    import_file(whole, saved)
    store = MemorySessionStore()
    text = "UPDATE {} SET {} = CAST({} AS TEXT)"
    report = import_file(
        store,
        _changed(
            saved,
            tmp_path,
            text.format("checkpoints", "checkpoint", "checkpoint"),
            text.format("writes", "value", "value"),
        ),
    )
    assert report.skipped == []
    assert dump(store) == dump(whole)


def test_a_checkpoint_without_a_thread_is_skipped_not_stored_as_thread_none(
    saved: Path, tmp_path: Path
) -> None:
    store = MemorySessionStore()
    sql = f"UPDATE checkpoints SET thread_id = NULL WHERE checkpoint_id = {THIRD}"
    report = import_file(store, _changed(saved, tmp_path, sql, loose=True))
    assert [n for n, _ in report.skipped] == [3]
    assert "thread" in report.skipped[0][1]
    assert report.session_ids == ["t1", "t2"]
    assert not store.has_session("None")


def test_a_file_whose_tables_lack_the_columns_is_refused_naming_it(
    saved: Path, tmp_path: Path
) -> None:
    path = _changed(saved, tmp_path, "ALTER TABLE checkpoints RENAME COLUMN checkpoint TO payload")
    with pytest.raises(TranscriptError, match="changed.sqlite"):
        import_file(MemorySessionStore(), path, "langgraph")


def test_a_database_a_live_saver_is_writing_imports_what_was_committed(
    saved: Path, tmp_path: Path
) -> None:
    path = tmp_path / "live.sqlite"
    shutil.copy(saved, path)
    committed = dump_of(path)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM checkpoints WHERE thread_id = 't2'")
        assert dump_of(path) == committed  # the open transaction is not seen, and does not block
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def dump_of(path: Path) -> dict[str, object]:
    store = MemorySessionStore()
    import_file(store, path, "langgraph")
    return dump(store)


Changer = Callable[[sqlite3.Connection], None]


def _cid(saved: Path, offset: int) -> str:
    c = sqlite3.connect(saved)
    try:
        (cid,) = c.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 't1'"
            " ORDER BY checkpoint_id LIMIT 1 OFFSET ?",
            (offset,),
        ).fetchone()
    finally:
        c.close()
    return str(cid)


def test_a_checkpoint_whose_parent_is_missing_is_reported(saved: Path, tmp_path: Path) -> None:
    third, missing = _cid(saved, 2), "1f000000-0000-6000-8000-000000000000"
    path = _changed(
        saved,
        tmp_path,
        f"UPDATE checkpoints SET parent_checkpoint_id = '{missing}' WHERE checkpoint_id = '{third}'",
    )
    report = import_file(MemorySessionStore(), path)
    assert report.dangling == [(f"t1/{third}", f"t1/{missing}")]
    assert report.skipped == []


def test_a_checkpoint_that_is_its_own_parent_is_reported(saved: Path, tmp_path: Path) -> None:
    third = _cid(saved, 2)
    path = _changed(
        saved,
        tmp_path,
        f"UPDATE checkpoints SET parent_checkpoint_id = checkpoint_id WHERE checkpoint_id = '{third}'",
    )
    report = import_file(MemorySessionStore(), path)
    assert [(n, c) for n, c, _ in report.relinked] == [(3, f"t1/{third}")]
    assert "its own parent" in report.relinked[0][2]


def test_a_parent_stored_by_an_earlier_import_is_no_dangling_parent(
    saved: Path, tmp_path: Path
) -> None:
    store = MemorySessionStore()
    import_file(store, saved)
    second = _cid(saved, 1)
    path = _changed(saved, tmp_path, f"DELETE FROM checkpoints WHERE checkpoint_id = '{second}'")
    assert import_file(store, path).dangling == []


def test_a_database_locked_by_a_writer_is_named_so(saved: Path, tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite"
    shutil.copy(saved, path)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=DELETE")  # a saver without WAL locks out readers
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("DELETE FROM writes")
        with pytest.raises(TranscriptError) as e:
            import_file(MemorySessionStore(), path, "langgraph")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "locked" in str(e.value) and "not a LangGraph" not in str(e.value)


def test_an_sqlite_file_that_is_no_checkpoint_database_is_named_for_what_it_is(
    saved: Path, tmp_path: Path
) -> None:
    """Told apart by the format detection too: before, each was "not a Claude Code ... transcript"."""
    from graph import SessionStore

    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(saved.read_bytes()[:3000])
    with pytest.raises(TranscriptError, match="cannot be read") as e:
        import_file(MemorySessionStore(), truncated)
    store_file = tmp_path / "store.db"
    SessionStore(store_file).close()
    with pytest.raises(TranscriptError, match="sessiongraph store") as f:
        import_file(MemorySessionStore(), store_file)
    locked = tmp_path / "locked.sqlite"
    shutil.copy(saved, locked)
    writer = sqlite3.connect(locked, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=DELETE")
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("DELETE FROM writes")
        with pytest.raises(TranscriptError, match="locked") as g:
            import_file(MemorySessionStore(), locked)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    for err in (e, f, g):
        assert "Claude Code" not in str(err.value)


def test_a_file_of_the_schema_before_task_path_imports(saved: Path, tmp_path: Path) -> None:
    """langgraph-checkpoint-sqlite's one migration adds ``writes.task_path``; a file before it."""
    whole = MemorySessionStore()
    import_file(whole, saved)
    path = _changed(
        saved,
        tmp_path,
        "CREATE TABLE old AS SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx,"
        " channel, type, value FROM writes",
        "DROP TABLE writes",
        "ALTER TABLE old RENAME TO writes",
    )
    store = MemorySessionStore()
    report = import_file(store, path)
    assert report.skipped == [] and report.session_ids == ["t1", "t2"]
    assert dump(store) == dump(whole)
    assert store.has_session("t1")


ID_TEXTS: dict[str, str] = {
    "thread_id": f"UPDATE checkpoints SET thread_id = CAST(X'7431ff' AS TEXT) WHERE checkpoint_id = {THIRD}",
    "checkpoint_ns": f"UPDATE checkpoints SET checkpoint_ns = CAST(X'80' AS TEXT) WHERE checkpoint_id = {THIRD}",
    "checkpoint_id": f"UPDATE checkpoints SET checkpoint_id = CAST(X'31ff' AS TEXT) WHERE checkpoint_id = {THIRD}",
}


@pytest.mark.parametrize("sql", list(ID_TEXTS.values()), ids=list(ID_TEXTS))
def test_a_checkpoint_id_column_that_is_no_utf8_is_skipped_and_reported(
    saved: Path, tmp_path: Path, sql: str
) -> None:
    """Before, one such row failed the whole file (sqlite3 could not decode the column)."""
    whole = MemorySessionStore()
    import_file(whole, saved)
    store = MemorySessionStore()
    report = import_file(store, _changed(saved, tmp_path, sql))
    assert len(report.skipped) == 1  # (row 3, or last when its checkpoint id sorts there)
    assert "UTF-8" in report.skipped[0][1]
    assert report.session_ids == ["t1", "t2"]
    assert dump(store)["t2"] == dump(whole)["t2"]


def test_a_pending_write_whose_task_id_is_no_utf8_is_skipped_and_reported(
    saved: Path, tmp_path: Path
) -> None:
    sql = "UPDATE writes SET task_id = CAST(X'ff' AS TEXT) WHERE rowid = 1"
    store = MemorySessionStore()
    report = import_file(store, _changed(saved, tmp_path, sql))
    assert len(report.skipped) == 1
    assert "pending write" in report.skipped[0][1] and "task_id" in report.skipped[0][1]
    assert report.session_ids == ["t1", "t2"]


def test_a_thread_held_by_another_session_is_left_out_and_the_rest_imports(
    saved: Path,
) -> None:
    """Before, the store's own session "t1" (not a LangGraph thread) failed the whole import."""
    whole = MemorySessionStore()
    import_file(whole, saved)
    store = MemorySessionStore()
    store.create_session("a transcript", id="t1")
    report = import_file(store, saved)
    assert report.error is None
    assert report.session_ids == ["t2"]
    assert len(report.notes) == 1 and "'t1'" in report.notes[0] and str(saved) in report.notes[0]
    assert report.dangling == [] and report.skipped == []
    assert dump(store)["t2"] == dump(whole)["t2"]
    assert store.node_count("t1") == 0


def test_a_checkpoint_whose_thread_id_is_empty_is_skipped_and_reported(
    saved: Path, tmp_path: Path
) -> None:
    """An empty ``thread_id`` names no thread: its rows are left out, the rest imports."""
    whole = MemorySessionStore()
    import_file(whole, saved)
    store = MemorySessionStore()
    changed = _changed(
        saved,
        tmp_path,
        f"UPDATE checkpoints SET thread_id = '' WHERE checkpoint_id = {THIRD}",
        f"UPDATE writes SET thread_id = '' WHERE checkpoint_id = {THIRD}",
    )
    report = import_file(store, changed)
    cid = _cid(saved, 2)  # (the row THIRD names)
    assert [n for n, why in report.skipped if why.startswith("checkpoint ")] == [3]
    assert any(cid in why and "thread_id" in why for _, why in report.skipped)
    assert report.session_ids == ["t1", "t2"]
    assert dump(store)["t2"] == dump(whole)["t2"]

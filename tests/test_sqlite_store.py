"""What only the SQLite store does: files, schema versions, other processes, driver errors."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from builder import build, chain

from graph import SchemaVersionError, SessionStore, StoreBusyError, StoreError, UnknownNodeError
from graph.errors import ForeignDatabaseError
from graph.store.sqlite import MIGRATIONS, SCHEMA_VERSION
from tests.clikit import console

V1 = Path(__file__).parent / "fixtures" / "store" / "v1.db"
"""A store file written by schema version 1 (markers one value per node and provider)."""


def run(db: Path, code: str) -> None:
    script = f"from graph import SessionStore\nst = SessionStore({str(db)!r})\n{code}\n"
    subprocess.run([sys.executable, "-c", script], check=True)


def test_second_process_writes_are_seen_without_a_full_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 50))
    idx = st._index(sid)
    pred_dict = idx.pred
    run(db, "st.mark('s', ['m1', 'm2', 'm3'], 'memory', 'w')")
    assert [n.id for n in st.pending(sid, "memory", "w")][:1] == ["m4"]
    run(db, "st.append('s', 'm51', role='assistant', id='m51')")
    assert st.session(sid).head == "m51"
    assert st.pending_ids(sid, "memory", "w")[-1] == "m51"
    assert st._index(sid) is idx and idx.pred is pred_dict  # refreshed in place, not rebuilt
    assert len(idx) == 51


def test_a_flag_changed_by_another_process_is_read_without_a_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, "m1-m2-m3; m2-p1", head="m3")
    idx = st._index(sid)
    pred_dict = idx.pred
    assert sorted(st.tips(sid)) == ["m3", "p1"]
    run(db, "st.set_artifact('s', {'p1': True})")
    assert st.tips(sid) == ["m3"] and st.node("p1").metadata == {"artifact": True}
    run(db, "st.set_artifact('s', {'p1': False, 'm3': True})")
    assert st._index(sid).is_artifact("m3") and not st._index(sid).is_artifact("p1")
    assert st._index(sid) is idx and idx.pred is pred_dict  # refreshed in place, not rebuilt
    assert st.tips(sid) == ["p1"]


def test_refresh_reads_only_rows_newer_than_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 20))
    st.index(sid)
    seen: list[str] = []
    st.conn.set_trace_callback(seen.append)
    other = SessionStore(db)
    other.mark(sid, ["m1"], "memory", "w")
    st.pending_ids(sid, "memory", "w")
    node_reads = [s for s in seen if "FROM nodes" in s]
    assert node_reads and all("seq>0" not in s.replace(" ", "") for s in node_reads)
    assert st.index(sid).marks[("memory", "w")] == {"m1"}


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 5))
    st.mark(sid, ["m1", "m2"], "memory", "w")
    st.rewind(sid, "m4")
    st.close()
    again = SessionStore(db)
    assert again.schema_version == SCHEMA_VERSION
    assert [n.id for n in again.pending(sid, "memory", "w")] == ["m3", "m4"]
    assert again.node("m5").rewound
    assert again.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    with sqlite3.connect(db) as c:
        c.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(SchemaVersionError) as e:
        SessionStore(db)
    assert (e.value.expected, e.value.got) == (SCHEMA_VERSION, 99)


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError) as e:
        SessionStore(bad)
    assert isinstance(e.value.__cause__, sqlite3.Error)


def test_a_locked_database_raises_a_retryable_busy_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db, timeout=0.05)
    sid = build(st, "m1")
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreBusyError) as e:
        st.append(sid, "x", role="user", id="x")
    assert isinstance(e.value, StoreError) and e.value.retryable
    assert "retry" in str(e.value)
    blocker.execute("ROLLBACK")
    assert [n.id for n in st.branch(sid)] == ["m1"]
    st.append(sid, "x", role="user", id="x")  # the retry works
    assert [n.id for n in st.branch(sid)] == ["m1", "x"]


def test_readers_open_and_read_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 3))
    st.mark(sid, ["m1"], "memory", "w")
    st.close()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    blocker.execute("UPDATE sessions SET title='being written'")
    try:
        reader = SessionStore(db, timeout=0.05)  # opening a current file takes no lock
        assert [n.id for n in reader.branch(sid)] == ["m1", "m2", "m3"]
        assert [n.id for n in reader.pending(sid, "memory", "w")] == ["m2", "m3"]
        assert [s.id for s in reader.sessions()] == [sid]
        assert reader.session(sid).title == sid  # the uncommitted write is not seen
        with pytest.raises(StoreBusyError):
            reader.mark(sid, ["m2"], "memory", "w")
    finally:
        blocker.execute("ROLLBACK")
    reader.mark(sid, ["m2"], "memory", "w")


def test_opening_a_current_file_runs_no_write_statement(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    seen: list[str] = []
    SessionStore(db, tracer=lambda sql, params: seen.append(sql)).close()
    assert seen and not [s for s in seen if s.split()[0].upper() in ("BEGIN", "CREATE", "INSERT")]


def test_the_tracer_sees_every_statement_of_the_hot_paths(tmp_path: Path) -> None:
    seen: list[str] = []
    st = SessionStore(tmp_path / "s.db", tracer=lambda sql, params: seen.append(sql))
    counts = {}
    for name, op in [
        ("create_session", lambda: st.create_session("t", id="s")),
        ("append", lambda: st.append("s", "hi", role="user", id="m1")),
        ("mark", lambda: st.mark("s", ["m1"], "memory", "w")),
        ("pending", lambda: st.pending("s", "memory", "w2")),
    ]:
        seen.clear()
        op()
        counts[name] = len(seen)
    assert all(counts.values()), counts
    seen.clear()
    st.append("s", "again", role="assistant", id="m2")
    assert any(s.startswith("INSERT INTO nodes") and "'m2'" in s for s in seen)
    assert any(s.startswith("BEGIN IMMEDIATE") for s in seen) and "COMMIT" in seen


def test_a_v1_file_is_migrated_and_keeps_everything(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    shutil.copyfile(V1, db)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT value FROM meta").fetchone() == ("1",)
    st = SessionStore(db)
    assert st.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    assert st.session("s").head == "sum1" and st.session("s").metadata == {"runtime": "test"}
    assert st.branch_ids("s") == ["m1", "m2", "m3", "m4", "m5", "m6", "sum1"]
    assert st.node("sum1").covers == ("m1", "m2")
    assert st.node("b1").rewound and st.tips("s") == ["m6"]
    assert st.node("m1").written == {"memory": ("ws-a",), "search": ("idx",)}
    assert [n.id for n in st.pending("s", "memory", "ws-a", head="m6")] == ["m4", "m5", "m6"]
    assert st.node("o1").written == {"memory": ("ws-a",)}
    # and the new schema keeps a second value of the provider beside the migrated one
    st.mark("s", ["m1", "m2"], "memory", "ws-b")
    assert st.node("m1").written["memory"] == ("ws-a", "ws-b")
    assert [n.id for n in st.pending("s", "memory", "ws-a", head="m6")] == ["m4", "m5", "m6"]
    st.close()
    again = SessionStore(db)
    assert again.node("m2").written == {"memory": ("ws-a", "ws-b")}
    (seq,) = again.conn.execute("SELECT max(seq) FROM marks").fetchone()
    again.mark("s", ["m3"], "memory", "ws-b")
    (new,) = again.conn.execute(
        "SELECT seq FROM marks WHERE value='ws-b' AND node_id='m3'"
    ).fetchone()
    assert new > seq  # seqs keep growing past the migrated rows (other readers refresh by seq)


def _open_at_once(db: Path, count: int) -> list[BaseException]:
    """Open ``count`` stores on ``db`` from as many threads released together; their errors."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            SessionStore(db, timeout=10).close()
        except BaseException as e:  # pragma: no cover - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=open_it) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_a_migration_waits_for_the_lock_and_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    shutil.copyfile(V1, db)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreBusyError):
        SessionStore(db, timeout=0.05)  # a migration needs the lock
    blocker.execute("ROLLBACK")
    blocker.close()
    assert _open_at_once(db, 3) == []
    st = SessionStore(db)
    assert st.schema_version == SCHEMA_VERSION
    assert st.node("m1").written == {"memory": ("ws-a",), "search": ("idx",)}


def test_stores_opening_a_new_file_at_once_all_wait_for_its_creation(tmp_path: Path) -> None:
    # A new file starts in rollback-journal mode; switching it to WAL is the one step where SQLite
    # answers "locked" without waiting, so before the store retried it about one open in five failed.
    for attempt in range(20):
        db = tmp_path / f"new-{attempt}.db"
        assert _open_at_once(db, 6) == [], attempt
        st = SessionStore(db)
        assert st.schema_version == SCHEMA_VERSION
        assert st.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        st.close()


def test_the_callers_own_transaction_is_never_committed(tmp_path: Path) -> None:
    st = SessionStore(tmp_path / "s.db")
    sid = build(st, "m1")
    st.conn.execute("BEGIN")
    st.append(sid, "inside", role="assistant", id="x")
    st.conn.execute("ROLLBACK")
    st._forget()
    assert [n.id for n in st.branch(sid)] == ["m1"]


def test_latest_message_and_node_count_read_rows_without_building_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 6))
    st.set_head(sid, "m6")
    st.append(sid, "progress", role="system", kind="event", id="e1")
    st.rewind(sid, "m4")
    st.append(sid, "after the rewind", role="system", kind="event", id="e2")
    st.close()
    fresh = SessionStore(db)
    assert fresh.latest_message_id(sid) == "m4"  # e2 is an event; m5, m6 are rewound
    assert fresh.latest_message_id(sid, head="e1") == "m4"  # rewound messages are on no branch
    assert fresh.node_count(sid) == 8
    assert fresh.node("m4").text == "m4" and fresh.nodes(sid, ["m5"])[0].rewound
    from memory.lookup import latest_message

    assert latest_message(fresh, sid).id == "m4"  # type: ignore[union-attr]
    assert fresh._cache == {}  # nothing built the session's index
    with pytest.raises(UnknownNodeError):
        fresh.latest_message_id(sid, head="ghost")
    assert fresh.latest_message_id(sid) == fresh._db_latest_message(sid, None)
    fresh.index(sid)  # with an index cached, the same answers come from it
    assert (fresh.latest_message_id(sid), fresh.node_count(sid)) == ("m4", 8)


def test_pending_tips_in_the_cli_reads_nodes_in_bounded_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from typer.testing import CliRunner

    from graph.cli.commands import app
    from graph.store.base import BaseStore

    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 1_200) + "; m600-" + chain("f", 1, 700))
    st.close()
    sizes: list[int] = []
    real = BaseStore._read_nodes

    def counting(self: BaseStore, idx: object, ids: list[str]) -> object:
        sizes.append(len(ids))
        return real(self, idx, ids)  # type: ignore[arg-type]

    monkeypatch.setattr(BaseStore, "_read_nodes", counting)
    r = CliRunner().invoke(app, ["--db", str(db), "pending", sid, "--tips", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert [g["tip"] for g in got] == ["f700", "m1200"]
    assert [len(g["pending"]) for g in got] == [1_300, 1_200]
    assert got[0]["pending"][0]["id"] == "m1" and got[0]["pending"][-1]["id"] == "f700"
    assert sizes and max(sizes) <= 500


def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """A mistaken ``--db`` (a SQLite file of something else) got the store's tables added beside
    its own; it is refused, naming its tables, and nothing is written to it."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    with pytest.raises(ForeignDatabaseError, match=r"holds other tables \(checkpoints\)") as e:
        SessionStore(path)
    assert e.value.tables == ["checkpoints"]
    with sqlite3.connect(path) as c:
        names = [n for (n,) in c.execute("SELECT name FROM sqlite_master")]
    assert names == ["checkpoints"]
    sqlite3.connect(tmp_path / "empty.db").close()  # an empty database is made a store
    assert SessionStore(tmp_path / "empty.db").sessions() == []
    done = console("--db", str(path), "sessions")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "not a sessiongraph store: it holds other tables (checkpoints)" in done.stderr


def _index_sql(conn: sqlite3.Connection, name: str) -> str:
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name=?", (name,)).fetchone()
    return str(sql)


def test_a_version_7_file_is_migrated_and_keeps_every_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graph.store.sqlite as sqlite_store

    db = tmp_path / "v7.db"
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:7])
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", 7)
    old = SessionStore(db)
    assert old.schema_version == 7
    assert "WHERE" not in _index_sql(old.conn, "sessions_by_runtime")
    for i, runtime in enumerate(["pi", None, "codex", "pi", None]):
        meta = {"runtime": runtime} if runtime else {}
        old.create_session(f"s{i}", id=f"s{i}", metadata=meta)
        old.append(f"s{i}", f"turn {i}", role="user", id=f"m{i}")
    want = {r: [s.id for s in old.sessions(runtime=r)] for r in ("pi", "codex", None)}
    old.close()
    monkeypatch.undo()
    store = SessionStore(db)
    try:
        assert store.schema_version == SCHEMA_VERSION == 8
        assert _index_sql(store.conn, "sessions_by_runtime").endswith("WHERE runtime IS NOT NULL")
        assert {r: [s.id for s in store.sessions(runtime=r)] for r in want} == want
        assert want["pi"] == ["s3", "s0"] and len(want[None]) == 5
        assert [n.id for n in store.branch("s1")] == ["m1"]
        plan = store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE sessions.runtime=?"
            " ORDER BY updated_at DESC LIMIT 5",
            ("pi",),
        ).fetchall()
        assert any("sessions_by_runtime" in row[-1] for row in plan), plan
    finally:
        store.close()


def test_a_new_file_keeps_sessions_without_a_runtime_out_of_the_runtime_index(
    tmp_path: Path,
) -> None:
    # Every head move rewrites updated_at; a session the index leaves out costs no index page then.
    st = SessionStore(tmp_path / "s.db")
    assert _index_sql(st.conn, "sessions_by_runtime").endswith("WHERE runtime IS NOT NULL")
    st.create_session("t", id="plain")
    st.create_session("t", id="imported", metadata={"runtime": "pi"})
    for sid in ("plain", "imported"):
        st.append(sid, "hi", role="user")
    assert [s.id for s in st.sessions(runtime="pi")] == ["imported"]
    assert {s.id for s in st.sessions()} == {"plain", "imported"}
    st.close()

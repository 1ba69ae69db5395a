"""A LangGraph PostgresSaver database of a real run imports to the graph SessionGraphSaver writes."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("langgraph.graph", reason="the langgraph extra is not installed")
pytest.importorskip(
    "langgraph.checkpoint.postgres", reason="langgraph-checkpoint-postgres is not installed"
)
psycopg = pytest.importorskip("psycopg", reason="psycopg (the postgres extra) is not installed")

from conftest import postgres_url  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from test_langgraph_saver import _build, _graph, _texts, _turn  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.checkpoint import SessionGraphSaver  # noqa: E402
from graph.importers import TranscriptError  # noqa: E402
from graph.importers.langgraph import import_postgres, postgres_label  # noqa: E402
from graph.store.base import BaseStore  # noqa: E402


def _in_schema(url: str, schema: str) -> str:
    """``url`` with the connection's ``search_path`` set to ``schema`` (libpq ``options``)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-c search_path={schema}')}"


@pytest.fixture
def saver_db() -> Iterator[str]:
    """A fresh schema of the test database, as the URL a PostgresSaver and the import use."""
    url, schema = postgres_url(), f"lgps_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield _in_schema(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


class Tee(SessionGraphSaver):
    """Our saver, also writing every checkpoint and write to a PostgresSaver (the same run twice)."""

    def __init__(self, store: BaseStore, other: PostgresSaver) -> None:
        super().__init__(store)
        self.other = other

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.other.put(config, checkpoint, metadata, new_versions)
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.other.put_writes(config, writes, task_id, task_path)
        super().put_writes(config, writes, task_id, task_path)


@pytest.fixture
def run(saver_db: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Turns with a subgraph and a summarization, a time-travel fork, an update_state fork, 2 threads."""
    store = SessionStore(tmp_path / "live.db")
    with psycopg.connect(saver_db, autocommit=True, row_factory=dict_row) as conn:
        peer = PostgresSaver(conn)
        peer.setup()
        saver = Tee(store, peer)
        app = _build(saver)
        t1 = {"configurable": {"thread_id": "t1"}}
        for i in range(3):
            _turn(app, t1, f"q{i}", f"h{i}")
        fork = next(h for h in app.get_state_history(t1) if h.metadata["step"] == 4)
        _turn(app, fork.config, "alt", "halt")
        edited = app.update_state(fork.config, {"messages": [HumanMessage("edit", id="hed")]})
        _turn(app, edited, "after edit", "h-after")
        _turn(app, {"configurable": {"thread_id": "t2"}}, "other", "o0")
        yield {"store": store, "saver": saver, "url": saver_db, "t1": t1}
    store.close()


def test_the_postgres_saver_database_imports_to_the_same_graph(
    run: dict[str, Any], tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "imported.db")
    report = import_postgres(store, run["url"])
    assert report.error is None and report.skipped == []
    assert report.format == "langgraph" and report.path == postgres_label(run["url"])
    live = run["store"]
    sids = sorted(s.id for s in live.sessions())
    assert len(sids) > 2  # two threads and the subgraph runs' spawned sessions
    assert sorted(report.session_ids) == sids == sorted(s.id for s in store.sessions())
    for sid in sids:
        assert _graph(store, sid) == _graph(live, sid), sid
    assert len(store.tips("t1")) == 3  # the fork point's three children, as the saver wrote them
    # the subgraph's answer is a turn of its spawned session; the parent's node of it is a copy
    assert _texts(store.pending("t2", "memory", "ws")) == ["other", "echo looked up other"]
    (sub,) = store.spawns("t2")
    assert _texts(store.pending(sub.id, "memory", "ws")) == ["looked up other"]
    again = import_postgres(store, run["url"])
    assert again.nodes_added == 0 and again.skipped == []
    assert [_graph(store, sid) for sid in sids] == [_graph(live, sid) for sid in sids]
    imported, want = SessionGraphSaver(store), run["saver"]
    expected_all = list(want.list({"configurable": {"thread_id": "t1"}}))
    assert len(expected_all) > 20
    for got, expected in zip(
        imported.list({"configurable": {"thread_id": "t1"}}), expected_all, strict=True
    ):
        assert got.config == expected.config
        assert got.checkpoint == expected.checkpoint
        assert got.metadata == expected.metadata
        assert got.pending_writes == expected.pending_writes


def test_a_database_without_the_saver_tables_is_refused(saver_db: str, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises(TranscriptError, match="no PostgresSaver tables"):
        import_postgres(store, saver_db)
    assert store.sessions() == []


def test_the_report_names_the_database_without_its_password() -> None:
    label = postgres_label("postgresql://user:secret@db.example:5433/app?sslmode=require")
    assert label == "postgresql://user@db.example:5433/app?sslmode=require"


def test_the_import_command_takes_a_postgres_saver_url(run: dict[str, Any], tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from graph.cli.commands import main; main()", "--db"]
    cmd += [str(tmp_path / "s.db"), "import", "--langgraph", run["url"], "--json"]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert '"format": "langgraph"' in got.stdout.replace('":"', '": "')
    store = SessionStore(tmp_path / "s.db")
    assert _graph(store, "t1") == _graph(run["store"], "t1")


def test_the_import_command_refuses_what_is_not_a_postgres_url(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from graph.cli.commands import main; main()", "--db"]
    cmd += [str(tmp_path / "s.db"), "import", "--langgraph", "checkpoints.sqlite"]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert got.returncode != 0
    assert got.stderr.strip().splitlines() == [
        "error: --langgraph: 'checkpoints.sqlite' is not a postgresql:// URL"
    ]


_DAMAGED = {
    "a checkpoint that is a JSON array": "checkpoint = '[1]'::jsonb",
    "channel versions that are a string": (
        "checkpoint = jsonb_set(checkpoint, '{channel_versions}', '\"x\"')"
    ),
    "channel values that are a list": "checkpoint = jsonb_set(checkpoint, '{channel_values}', '[1]')",
    "metadata that is a JSON array": "metadata = '[1, 2]'::jsonb",
}


@pytest.mark.parametrize("change", list(_DAMAGED.values()), ids=list(_DAMAGED))
def test_a_damaged_checkpoint_row_is_skipped_and_reported(
    run: dict[str, Any], tmp_path: Path, change: str
) -> None:
    """Before, the first two failed the whole import with a bare AttributeError."""
    with psycopg.connect(run["url"], autocommit=True) as conn:
        conn.execute(
            f"UPDATE checkpoints SET {change} WHERE checkpoint_id = (SELECT checkpoint_id FROM"
            " checkpoints WHERE thread_id = 't2' ORDER BY checkpoint_id DESC LIMIT 1)"
        )
    store = SessionStore(tmp_path / "imported.db")
    report = import_postgres(store, run["url"])
    assert len(report.skipped) == 1 and "checkpoint" in report.skipped[0][1]
    assert "t1" in report.session_ids

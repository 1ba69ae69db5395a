"""``sessiongraph search`` and ``sessions --runtime/--project/--since`` on an imported transcript."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from graph import SessionStore
from graph.cli.commands import app, parse_since
from graph.importers import import_paths

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    store = SessionStore(path)
    assert not [f.error for f in import_paths(store, [EXAMPLE]).files if f.error]
    other = store.create_session(metadata={"runtime": "pi", "header": {"cwd": "/srv/elsewhere"}})
    store.append(other.id, "fetch_json is mentioned on pi too", role="user")
    store.close()
    return path


def test_search_prints_session_node_time_and_snippet(db: Path) -> None:
    r = runner.invoke(app, ["--db", str(db), "search", "fetch_json retry"], terminal_width=100)
    assert r.exit_code == 0, r.output
    assert "hit(s)" in r.output and "fetch_json" in r.output


def test_search_json_has_whole_ids_and_filters_apply(db: Path) -> None:
    def run(*args: str) -> list[dict[str, object]]:
        r = runner.invoke(app, ["--db", str(db), "search", "fetch_json", "--json", *args])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)  # type: ignore[no-any-return]

    every = run()
    runtimes = {h["session_id"] for h in run("--runtime", "pi")}
    assert len(runtimes) == 1 and len(every) > len(runtimes)
    store = SessionStore(db)
    for hit in every:
        assert store.node(str(hit["node_id"])).session_id == hit["session_id"]
    (cc,) = [
        s
        for s in store.sessions()
        if s.metadata.get("runtime") == "claude-code" and not s.parent_session
    ]
    store.close()
    own = run("--session", cc.id[:8])
    assert own and all(str(h["session_id"]).startswith(cc.id) for h in own)
    assert run("--since", "2999-01-01") == []


def test_search_with_no_match_says_so_and_exits_0(db: Path) -> None:
    r = runner.invoke(app, ["--db", str(db), "search", '"" AND ( NEAR'])
    assert r.exit_code == 0
    assert "no match" in r.output


def test_sessions_filters(db: Path) -> None:
    def ids(*args: str) -> set[str]:
        r = runner.invoke(app, ["--db", str(db), "sessions", "--json", *args])
        assert r.exit_code == 0, r.output
        return {s["id"] for s in json.loads(r.output)}

    every = ids()
    pi = ids("--runtime", "pi")
    assert len(pi) == 1 and pi < every
    assert ids("--project", "/srv") == pi
    assert ids("--runtime", "codex") == set()
    assert ids("--since", "1d") == pi  # created now; the transcript is from 2025
    r = runner.invoke(app, ["--db", str(db), "sessions", "--since", "last tuesday"])
    assert r.exit_code != 0 and "not a date" in r.output


def test_parse_since_reads_dates_and_ages() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now=now) == now - timedelta(days=7)
    assert parse_since("90m", now=now) == now - timedelta(minutes=90)
    assert parse_since("2026-11-30") == datetime(2026, 11, 30, tzinfo=UTC)
    assert parse_since("2026-11-30T14:00+01:00").utcoffset() == timedelta(hours=1)
    with pytest.raises(typer.BadParameter):
        parse_since("soon")

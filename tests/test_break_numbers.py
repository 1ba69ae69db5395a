"""Numbers too large for SQLite or JSON (beyond 64 bits) in limits, pages, offsets, counts and ages.

A user typing ``--limit 99999999999999999999`` or a client sending ``?offset=1e20`` as digits gets
an answer (everything, or nothing past the end) or a one-line refusal, never an internal error:
SQLite binds only 64-bit integers and orjson writes only 64-bit integers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from starlette.testclient import TestClient

from graph import SessionStore
from graph.cli.commands import parse_since
from graph.importers import import_file
from memory import MemoryWorkspace
from memory.reading import search_page
from tests.serverkit import EXAMPLE, SESSION, client, make_app, written_store

HUGE = 10**22  # past 2**63 - 1, the largest integer SQLite binds


def test_a_huge_session_limit_lists_every_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    assert len(store.sessions(HUGE)) == len(store.sessions()) == 2


def test_a_huge_search_offset_is_past_every_hit(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    assert store.search("retry")
    assert store.search("retry", offset=HUGE) == []


def test_a_huge_memory_search_page_is_an_empty_page(tmp_path: Path) -> None:
    store, ws_dir = written_store(tmp_path)
    ws = MemoryWorkspace(ws_dir)
    try:
        assert search_page(ws, "retry").total > 0
        page = search_page(ws, "retry", page=HUGE)
        assert page.hits == () and page.total > 0
    finally:
        ws.close()
        store.close()


def test_an_age_reaching_before_year_one_is_a_usage_error() -> None:
    with pytest.raises(typer.BadParameter, match="99999999999w"):
        parse_since("99999999999w")


@pytest.fixture
def api(tmp_path: Path) -> TestClient:
    store, ws = written_store(tmp_path)
    return client(make_app(store, ws))


@pytest.mark.parametrize(
    "url",
    [
        f"/api/lookup/sessions/{SESSION}/transcript?count={HUGE}",
        f"/api/lookup/sessions/{SESSION}/transcript?count=-{HUGE}",
        f"/api/search?q=retry&offset={HUGE}",
        f"/api/memory/search?q=retry&page={HUGE}",
    ],
)
def test_the_api_answers_huge_integers_without_an_internal_error(api: TestClient, url: str) -> None:
    r = api.get(url)
    assert r.status_code in (200, 422), r.text
    if r.status_code == 422:
        assert r.json()["error"]["code"] in ("OUT_OF_RANGE", "OVER_CAP", "MALFORMED")


def test_a_page_clamps_a_huge_limit(api: TestClient) -> None:
    r = api.get(f"/?limit={HUGE}")
    assert r.status_code == 200 and "<html" in r.text


def test_the_command_line_takes_a_huge_limit(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    import_file(store, EXAMPLE)
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    for args in (
        ["sessions", "--limit", str(HUGE)],
        ["memory", "-w", str(tmp_path / "ws"), "search", "retry", "--page", str(HUGE)],
    ):
        p = subprocess.run(
            [
                sys.executable,
                "-c",
                "from graph.cli.launch import main; main()",
                "--db",
                str(db),
                *args,
            ],
            capture_output=True,
            text=True,
            env=env | {"COLUMNS": "120", "NO_COLOR": "1"},
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        assert "error" not in p.stderr, p.stderr

"""``sessiongraph serve`` over a workspace it cannot open answers its memory routes with a clear 503.

The server opens its memory workspace on first use, so a workspace from a newer sessiongraph (or
a ``memory.db`` that is not a database) used to surface as ``500 INTERNAL`` on every memory route.
Those routes now answer ``503 WORKSPACE_UNAVAILABLE`` with the reason; the session pages and API,
which do not need the workspace, still answer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graph import SessionStore
from graph.importers import import_file
from memory import MemoryWorkspace
from tests.serverkit import EXAMPLE, client, make_app


def _newer(ws: Path) -> None:
    MemoryWorkspace(ws).close()
    with sqlite3.connect(ws / "memory.db") as c:
        c.execute("UPDATE meta SET value='99' WHERE key='schema_version'")


def _junk(ws: Path) -> None:
    ws.mkdir()
    (ws / "memory.db").write_text("not a database\n")


@pytest.mark.parametrize(("spoil", "reason"), [(_newer, "newer"), (_junk, "not a database")])
def test_memory_routes_say_the_workspace_is_unavailable(
    tmp_path: Path, spoil: object, reason: str
) -> None:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    ws = tmp_path / "ws"
    spoil(ws)  # type: ignore[operator]
    api = client(make_app(store, ws))
    for url in ("/api/memory/records", "/api/memory/search?q=retry", "/api/memory/core"):
        r = api.get(url)
        assert r.status_code == 503, (url, r.text)
        assert r.json()["error"]["code"] == "WORKSPACE_UNAVAILABLE"
        assert reason in r.json()["error"]["message"]
    assert api.get("/api/sessions").status_code == 200
    assert api.get("/").status_code == 200

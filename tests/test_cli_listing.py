"""``sessiongraph sessions``: what it prints on an empty store, titles given the room at 80 columns,
and a listing read without building any session's graph or loading rich's layout or sqlite-utils."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph import Role, SessionStore
from graph.plain_table import Column, render
from graph.store.sqlite import SessionStore as SqliteStore


def run(db: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"},
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_an_empty_store_says_how_to_fill_it(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.db").close()  # made, with nothing imported yet
    out = run(tmp_path / "s.db", "sessions").stdout
    assert out.strip() == "no sessions; import some with `sessiongraph import`"
    filtered = run(tmp_path / "s.db", "sessions", "--runtime", "pi").stdout
    assert filtered.strip() == "no sessions match"


def test_titles_get_the_room_at_80_columns(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    title = "refactor the retry loop of the uploader so that it backs off exponentially"
    parent = store.create_session(title)
    store.append(parent.id, "go", role=Role.USER)
    store.spawn(parent.id, store.session(parent.id).head or "", title="a sub-agent")
    store.close()
    out = run(db, "sessions").stdout
    lines = out.splitlines()
    assert all(len(ln) <= 80 for ln in lines), out
    assert "refactor the retry loop of the" in out  # 30+ characters of the title on one line
    assert "nodes" in lines[0] and "spawned from" in lines[0]


def test_the_listing_builds_no_session_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from graph.cli.commands import app

    db = tmp_path / "s.db"
    store = SessionStore(db)
    for i in range(3):
        sid = store.create_session(f"session {i}").id
        for j in range(i + 1):
            store.append(sid, f"turn {j}", role=Role.USER)
    store.close()

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the listing built a session's index")

    monkeypatch.setattr(SqliteStore, "_index", refuse)
    monkeypatch.setattr(SqliteStore, "index", refuse)
    r = CliRunner().invoke(app, ["--db", str(db), "sessions"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    counts = [ln.split()[-1] for ln in r.output.splitlines()[2:]]
    assert sorted(counts) == ["1", "2", "3"]


def test_the_listing_loads_neither_rich_layout_nor_sqlite_utils(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).create_session("one")
    code = (
        "import sys; from graph.cli.launch import main\n"
        "sys.argv = ['sessiongraph', 'sessions']\n"
        "main()\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env | {"SESSIONGRAPH_DB": str(db)},
        timeout=120,
    )
    loaded = set(p.stderr.split())
    assert "graph.store.sqlite" in loaded, p.stderr
    assert not loaded & {"sqlite_utils", "rich.console", "rich.table", "rich.markup"}


@pytest.mark.parametrize("width", [40, 80, 200])
def test_a_plain_table_keeps_to_the_width_and_every_character(width: int) -> None:
    whole = "01a23200-e148-7000-9c7f-6462b39a170b/agent-" + "a1b2c3d4e5" * 4
    columns = [Column("id", "fold", minimum=12), Column("title", "wrap"), Column("n", right=True)]
    rows = [[whole, "写一首关于编程的俳句 and some words " * 3, "12"], ["x", "", "3"]]
    out = render(columns, rows, width)
    lines = out.splitlines()
    from rich.cells import cell_len

    assert all(cell_len(ln) <= width for ln in lines), out
    ids = "".join(ln[: lines[1].index(" ")] for ln in lines[2:]).replace(" ", "")
    assert whole in ids
    assert lines[2].endswith("12") or any(ln.endswith("12") for ln in lines)

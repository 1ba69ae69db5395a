"""With nothing to show, a command says so in one line instead of printing an empty table.

``pending`` with nothing pending (at the head, at a ``--head``, or with ``--tips``), ``import
--show`` of a written session, and ``memory status``, ``write``, ``list``, ``search`` and ``log``
on an empty or fully written workspace printed a table's header with no rows (``--tips``
printed nothing at all). Each now prints one line naming the consumer and where it looked, and
exits 0; ``--json`` still gives its empty list.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from graph.importers import import_file
from memory import MemoryWorkspace
from tests.clikit import by_typer
from tests.serverkit import EXAMPLE, SESSION

HEAD = "…2222780d"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("SESSIONGRAPH_MEMORY", str(tmp_path / "ws"))
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    for s in store.sessions():
        store.mark(s.id, store.pending_ids(s.id, "memory", "default"), "memory", "default")
    store.close()
    return tmp_path / "s.db"


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], f"nothing pending for memory=default at {HEAD} (the head)"),
        (["--head", "21470675"], "nothing pending for memory=default at …21470675"),
        (["--tips"], f"nothing pending for memory=default at any live tip of {SESSION}"),
    ],
    ids=["head", "given-head", "tips"],
)
def test_pending_with_nothing_pending_says_so(
    db: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    out, err, code = by_typer(["--db", str(db), "pending", SESSION, *args], capsys)
    assert code in (0, None) and not err
    assert _lines(out) == [said]


def test_pending_json_is_still_a_list(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _, _ = by_typer(["--db", str(db), "pending", SESSION, "--json"], capsys)
    assert orjson.loads(out) == [{"tip": "8418ead5-5ce3-41cc-8973-a8fc2222780d", "pending": []}]
    out, _, _ = by_typer(["--db", str(db), "pending", SESSION, "--tips", "--json"], capsys)
    assert orjson.loads(out) == []


def test_import_show_of_a_written_session_says_nothing_is_pending(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, code = by_typer(["--db", str(db), "import", str(EXAMPLE), "--show"], capsys)
    assert code in (0, None)
    assert _lines(out)[-1] == f"nothing pending for memory=default at the head of {SESSION}"


def test_memory_commands_on_an_empty_workspace_say_so(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = MemoryWorkspace(tmp_path / "ws")
    ws = workspace.id
    workspace.close()
    store = SessionStore(db)
    for s in store.sessions():
        store.mark(s.id, store.pending_ids(s.id, "memory", ws), "memory", ws)
    store.close()
    base = ["--db", str(db), "memory"]
    out, _, code = by_typer([*base, "status"], capsys)
    assert code in (0, None) and _lines(out)[-1] == f"nothing pending for workspace {ws}"
    out, err, code = by_typer([*base, "write"], capsys)
    assert code in (0, None) and _lines(out) == [f"nothing pending for workspace {ws}; 0 record(s)"]
    assert not err, "no progress bar for nothing"
    for args, said in [
        (["list"], f"no records in workspace {ws}"),
        (["list", "--topic", "notes"], f"no records in topic notes of workspace {ws}"),
        (["search", "backoff"], "no record matches 'backoff'"),
        (["log"], f"no revisions of workspace {ws} yet"),
    ]:
        out, err, code = by_typer([*base, *args], capsys)
        assert (code in (0, None), _lines(out)) == (True, [said]), args
    assert orjson.loads(by_typer([*base, "list", "--json"], capsys)[0]) == []
    assert orjson.loads(by_typer([*base, "log", "--json"], capsys)[0]) == []

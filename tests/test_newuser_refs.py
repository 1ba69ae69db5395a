"""Ids shown are ids accepted back, by every command a new user tries, and the help says so.

The command line prints a session as ``…`` + the shortest unique end of its id; every command takes
an id whole, a unique prefix or a unique suffix (that short form included). ``memory forget`` took
prefixes only, so the id ``memory status`` printed was refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import SessionStore
from memory import MemoryWorkspace, WritePipeline
from memory.forget import NothingToForgetError, forget_session
from tests.clikit import by_typer

SESSIONS = ("0a1b2c3d-0000-4000-8000-00000000aaaa", "0a1b2c3d-0000-4000-8000-00000000bbbb")


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, Path]:
    db, wsdir = tmp_path / "s.db", tmp_path / "ws"
    store = SessionStore(db)
    ws = MemoryWorkspace(wsdir)
    for sid in SESSIONS:
        store.create_session(f"about {sid[-4:]}", id=sid)
        store.append(sid, f"Remember {sid[-4:]}", role="user")
        store.append(sid, "Noted.", role="assistant")
        assert WritePipeline(ws, store).write(sid, force=True) is None
    ws.close()
    store.close()
    return db, wsdir


@pytest.mark.parametrize("ref", ["aaaa", "…0000aaaa", "...0000aaaa", SESSIONS[0]], ids=repr)
def test_forget_takes_a_suffix_and_the_short_form(written: tuple[Path, Path], ref: str) -> None:
    _, wsdir = written
    ws = MemoryWorkspace(wsdir)
    report = forget_session(ws, ref)
    assert report.session_id == SESSIONS[0]
    assert ws.archived_sessions() == [SESSIONS[1]]


@pytest.mark.parametrize("ref", ["0a1b2c3d", "4000", "…", "zzzz"], ids=repr)
def test_forget_refuses_an_ambiguous_or_unknown_reference(
    written: tuple[Path, Path], ref: str
) -> None:
    _, wsdir = written
    ws = MemoryWorkspace(wsdir)
    with pytest.raises(NothingToForgetError):
        forget_session(ws, ref)
    assert ws.archived_sessions() == sorted(SESSIONS)


def test_the_memory_forget_command_takes_the_short_form_status_prints(
    written: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    db, wsdir = written
    base = ["--db", str(db), "memory", "-w", str(wsdir)]
    out, err, code = by_typer([*base, "forget", "…0000bbbb", "--yes"], capsys)
    assert code == 0, err
    assert SESSIONS[1] in out


@pytest.mark.parametrize(
    "command",
    [["export"], ["search"], ["memory", "forget"]],
    ids=" ".join,
)
def test_help_says_a_suffix_is_accepted(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out, err, code = by_typer([*command, "--help"], capsys)
    assert code == 0, err
    assert "prefix or suffix" in out

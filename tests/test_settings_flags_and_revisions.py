"""A yes/no server setting and a revision number given on the command line are read strictly:
``memory.core.inject=flase`` was taken as true, and ``memory restore ²`` or a 5,000-digit revision
printed Python's own int() error."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import SessionStore
from graph.server import ServerContext
from memory.web import extension
from tests.clikit import console


@pytest.mark.parametrize("value", ["flase", "", "2", "truthy", "ja"], ids=repr)
def test_a_yes_no_setting_that_is_neither_is_refused_by_name(tmp_path: Path, value: str) -> None:
    store = SessionStore(tmp_path / "s.db")
    ctx = ServerContext(store, {"memory.core.inject": value})
    with pytest.raises(ValueError, match="memory.core.inject must be true or false"):
        extension(ctx, workspace=tmp_path / "ws")


@pytest.mark.parametrize("value", ["true", " Yes ", "1", "on", "false", "NO", "0", "off"])
def test_the_usual_spellings_of_yes_and_no_are_taken(tmp_path: Path, value: str) -> None:
    store = SessionStore(tmp_path / "s.db")
    assert extension(ServerContext(store, {"memory.core.inject": value}), workspace=tmp_path / "ws")


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("²", "write REV or RECORD@REV (REV a number)"),
        ("x@٣", "write REV or RECORD@REV (REV a number)"),
        ("9" * 5000, "revision 9999999999999999999… does not exist"),
        ("99999999999999999999", "revision 9999999999999999999… does not exist"),
    ],
    ids=["superscript", "arabic digit", "5000 digits", "past 64 bits"],
)
def test_a_restore_target_that_names_no_revision_is_one_error_line(
    tmp_path: Path, target: str, says: str
) -> None:
    done = console(
        "--db", str(tmp_path / "s.db"), "memory", "-w", str(tmp_path / "ws"), "restore", target
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], done.stderr

"""``--help`` names repeated positional arguments ``NAME...``, never by their Python type."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from graph.cli.commands import app
from memory.cli.lookup import register


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        out.append((*path, name))
        if hasattr(command, "commands"):
            out += _commands(command, (*path, name))
    return out


def test_no_help_shows_a_list_type() -> None:
    register(app)
    from graph.cli.importing import register as register_importing

    register_importing(app)
    root = typer.main.get_command(app)
    commands = _commands(root)
    assert ("memory", "write") in commands and ("import",) in commands
    for path in commands:
        r = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
        assert r.exit_code == 0, (path, r.output)
        assert "<list[" not in r.output, (path, r.output)
    cases = {("mark",): "NODE...", ("import",): "PATH...", ("memory", "write"): "SESSION..."}
    for path, name in cases.items():
        out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"}).output
        arguments = out.split("Arguments:")[1].split("\n\n")[0]
        assert any(ln.split()[:1] == [name] for ln in arguments.splitlines()), out

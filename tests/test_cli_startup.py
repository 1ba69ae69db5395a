"""Start-up of the command line: only the named command is built, values convert without pydantic, and
neither changes what a user sees (help, accepted values, error messages)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._click import Command, Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from graph import Role, SessionStore
from graph.cli.commands import _register_commands, app
from graph.cli.startup import LazyCommands, lazy_command

_register_commands([])  # every command, the memory group's too

SAMPLES: dict[Any, list[Any]] = {
    str: ["", "x", "two words", "ünï", 5, None],
    bool: [True, False, None, "yes", "0", ""],
    int: ["5", "-5", "+5", "05", " 5 ", "1_000", "1.0", "1.5", "0", "-0", "", "x", "٣", 7, None],
    float: ["5", "1.5", ".5", "1.", "1e3", "-2", "inf", "nan", "1_0", "", "x", 0.01, 3, None],
    Path: ["a/b", "", ".", "~/x", Path("c"), None],
}


def _parameters(command: Command) -> list[tuple[Command, Any]]:
    found = [(command, p) for p in command.params]
    for sub in getattr(command, "commands", {}).values():
        found += _parameters(sub)
    return found


def _outcome(runtime: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        got = runtime.coerce(value, param=param, ctx=ctx)
    except BadParameter as e:
        return "error", e.format_message()
    return type(got).__name__, repr(got)


def test_plain_values_agree_with_typers_own_conversion() -> None:
    root = lazy_command(app)
    checked = 0
    for command, param in _parameters(root) + [(root, root.get_help_option(Context(root)))]:
        descriptor = param.type_descriptor
        base = descriptor.annotation
        if getattr(base, "__origin__", None) is list:
            base = base.__args__[0]
        ctx = Context(command)
        typer_own = build_runtime_param(descriptor)
        ours = param.get_runtime_param()
        for value in SAMPLES.get(base, []):
            given = [value] if descriptor.is_list and value is not None else value
            assert _outcome(ours, given, param, ctx) == _outcome(typer_own, given, param, ctx), (
                command.name,
                param.name,
                given,
            )
            checked += 1
    assert checked > 300


def test_only_the_named_command_is_built(tmp_path: Path) -> None:
    root = lazy_command(app)
    assert isinstance(root.commands, LazyCommands)
    assert "sessions" in root.commands and "memory" in list(root.commands)
    SessionStore(tmp_path / "s.db").close()
    root.main(["--db", str(tmp_path / "s.db"), "sessions"], standalone_mode=False)
    assert set(root.commands.built()) == {"sessions"}


def _help(command: Command, path: list[str]) -> dict[str, str]:
    ctx = Context(command, info_name=path[-1], terminal_width=100)
    found = {" ".join(path): command.get_help(ctx)}
    for name in getattr(command, "list_commands", lambda ctx: [])(ctx):
        found |= _help(command.get_command(ctx, name), [*path, name])  # type: ignore[attr-defined]
    return found


def test_every_help_is_typers_own() -> None:
    eager = _help(typer.main.get_command(app), ["sessiongraph"])
    lazy = _help(lazy_command(app), ["sessiongraph"])
    assert list(lazy) == list(eager)
    assert "sessiongraph memory status" in lazy
    for name, text in eager.items():
        assert lazy[name] == text, name


def test_listing_a_store_loads_no_pydantic_validators_for_its_options(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    store.append(store.create_session("one").id, "hello", role=Role.USER)
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    script = (
        "import sys\nfrom graph.cli.launch import main\nmain()\n"
        "print('typer._adapters' in sys.modules, file=sys.stderr)"
    )
    p = subprocess.run(
        [sys.executable, "-c", script, "--db", str(db), "sessions", "--limit", "5", "--full"],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": "120"},
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "one" in p.stdout
    assert p.stderr.strip() == "False"  # typer's pydantic adapters were neither imported nor built


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sessions", "--limit", "0"], "Input should be greater than or equal to 1"),
        (["sessions", "--limit", "x"], "Input should be a valid integer"),
    ],
    ids=["out-of-range", "not-a-number"],
)
def test_a_bad_value_keeps_typers_message(tmp_path: Path, args: list[str], message: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-m", "graph.cli.launch", "--db", str(tmp_path / "s.db"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2
    assert p.stderr.startswith("error: sessiongraph sessions: Invalid value for '--limit': ")
    assert message in p.stderr and "Traceback" not in p.stderr


def test_no_help_shows_docstring_markup() -> None:
    for name, text in _help(lazy_command(app), ["sessiongraph"]).items():
        for markup in ("``", ":func:", ":class:", ":meth:", ":data:", ":mod:"):
            assert markup not in text, (name, markup)

"""``memory status`` answered without typer: the same output, errors and status as typer's.

The console script answers ``sessiongraph [--db PATH] [-q] memory [-w W] [--views V] status [--full]
[--json]`` through :func:`graph.cli.quick.run` (the ``memory`` entry point of the
``sessiongraph.quick`` group names :data:`memory.cli.quick.MEMORY_STATUS`); any other form goes to
typer. Each command line runs both ways in one process and must print the same bytes on stdout and
stderr and end with the same status; the settings, the workspace and the store are judged in the
same order, so the first refusal is the same one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graph import SessionStore
from graph.cli import commands, quick
from memory.cli.quick import MEMORY_STATUS
from memory.config import BACKEND_ENV, CONFIG_ENV, MEMORY_ENV
from memory.workspace import MemoryWorkspace
from tests.clikit import by_launch, by_typer


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a store of three sessions (one with a hostile title), a workspace that has
    archived one session's turns and recorded a failure, and a file that is no folder."""
    root = tmp_path_factory.mktemp("status")
    st = SessionStore(root / "s.db")
    for i in range(2):
        sid = st.create_session(f"session {i}").id
        for j in range(3 + i):
            st.append(sid, f"turn {j}", role="user" if j % 2 == 0 else "assistant")
    hostile = st.create_session("title \x1b]0;pwned\x07 [bold]not markup[/]").id
    st.append(hostile, "plain \x1b[2m dimmed", role="user")
    st.close()
    ws = MemoryWorkspace(root / "ws")
    ws.set_watch_status(hostile, 1_780_000_000_000_000, "failed", "the writer said \x1b[31mno[/]")
    ws.close()
    (root / "a-file").write_text("not a folder")
    (root / "a-dir").mkdir()
    (root / "off.toml").write_text('[memory]\nbackend = "none"\n')
    (root / "bad.toml").write_text('[memory]\nmodel = "gpt-4"\n')
    return root


ANSWERED = [
    ["memory", "-w", "WS", "status"],
    ["memory", "-w", "WS", "status", "--full"],
    ["memory", "-w", "WS", "status", "--json"],
    ["memory", "--workspace=WS", "status", "--json", "--full"],
    ["memory", "--workspace", "NEW", "-w", "WS", "status"],
    ["-q", "memory", "-w", "WS", "status", "--json", "--json"],
    ["memory", "status"],  # $SESSIONGRAPH_MEMORY
    ["memory", "-w", "NEW", "status"],  # made by the first run, read by the second
    # Refusals: one error line and status 1, the same one from both paths.
    ["memory", "-w", "FILE", "status"],
    ["memory", "-w", "WS", "--views", "ROOT/views", "status"],
    ["memory", "-w", "~no-such-user-x/ws", "status"],
    ["--db", "DIR", "memory", "-w", "WS", "status"],
    ["--db", "DIR", "memory", "-w", "FILE", "status"],  # the workspace is judged first
    ["--db", "~no-such-user-x/s.db", "memory", "-w", "FILE", "status"],  # the store's name first
    ["OFF", "--db", "DIR", "memory", "-w", "FILE", "status"],  # the settings before both
    ["BAD", "memory", "-w", "WS", "status"],
    ["NOBACKEND", "memory", "-w", "WS", "status"],
]


def _fill(words: list[str], place: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv(MEMORY_ENV, str(place / "ws"))
    if words[0] in ("OFF", "BAD"):
        monkeypatch.setenv(
            CONFIG_ENV, str(place / ("off.toml" if words[0] == "OFF" else "bad.toml"))
        )
        words = words[1:]
    elif words[0] == "NOBACKEND":
        monkeypatch.setenv(BACKEND_ENV, "none")
        words = words[1:]
    names = {
        "WS": place / "ws",
        "NEW": place / "new-ws",
        "FILE": place / "a-file",
        "DIR": place / "a-dir",
        "ROOT": place,
    }
    out = []
    for w in words:
        for key, value in names.items():
            w = w.replace(key, str(value))
        out.append(w)
    return out if "--db" in out else ["--db", str(place / "s.db"), *out]


@pytest.mark.parametrize("words", ANSWERED, ids=lambda w: " ".join(w))
@pytest.mark.parametrize("width", ["60", "140"])
def test_the_quick_status_prints_what_the_typer_command_prints(
    place: Path,
    words: list[str],
    width: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    args = _fill(words, place, monkeypatch)
    want = by_typer(args, capsys)
    assert MEMORY_STATUS.parse(args[args.index("memory") + 1 :]) is not None  # answered quickly
    got = by_launch(args, capsys, monkeypatch)
    assert got == want
    out, err, code = got
    if "--json" not in words:
        assert "\x1b" not in out and "\x07" not in out
    assert (code, err) == (0, "") or (code == 1 and err.count("\n") == 1 and err[:7] == "error: ")


def test_the_status_shows_the_pending_sessions_and_the_failure(
    place: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, err, code = by_launch(
        _fill(["memory", "-w", "WS", "status"], place, monkeypatch), capsys, monkeypatch
    )
    assert (err, code) == ("", 0)
    assert "the writer said \\x1b[31mno[/]" in out and "title \\x1b]0;pwned\\x07" in out
    assert out.rstrip().endswith("8 pending turn(s) in 3 session(s)")


@pytest.mark.parametrize(
    "args",
    [
        ["memory"],
        ["memory", "--help"],
        ["memory", "status", "--help"],
        ["memory", "status", "extra"],
        ["memory", "status", "-w", "x"],
        ["memory", "status", "--limit", "1"],
        ["memory", "-q", "status"],
        ["memory", "-w"],
        ["memory", "-w", "status"],
        ["memory", "-w", "--json", "status"],
        ["memory", "-w=x", "status"],
        ["memory", "-wx", "status"],
        ["memory", "--workspace=", "status"],
        ["memory", "--views", "-x", "status"],
        ["memory", "list"],
        ["memory", "-w", "x", "list"],
        ["memory", "--", "status"],
    ],
    ids=" ".join,
)
def test_other_memory_command_lines_are_left_to_typer(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert quick.run(args) is False
    assert capsys.readouterr() == ("", "")


def _status_command() -> Any:
    from graph.cli.startup import lazy_command

    commands._register_commands(["memory"])
    group: Any = lazy_command(commands.app).commands["memory"]
    return group, group.commands["status"]


def _options(command: Any) -> dict[str, Any]:
    return {o: p for p in command.params for o in (*p.opts, *p.secondary_opts) if o[0] == "-"}


def test_the_description_matches_the_typer_group_and_command() -> None:
    group, command = _status_command()
    assert MEMORY_STATUS.name == f"{group.name} {command.name}"
    group_options, options = _options(group), _options(command)
    assert set(MEMORY_STATUS.group_texts) == set(group_options) - {"--help"}
    for option, (parameter, default) in MEMORY_STATUS.group_texts.items():
        assert group_options[option].name == parameter and group_options[option].default == default
    assert set(MEMORY_STATUS.flags) == set(options) - {"--help"}
    for option, parameter in MEMORY_STATUS.flags.items():
        assert options[option].name == parameter and options[option].is_flag
        assert options[option].default is False
    assert not [p for p in command.params if p.param_type_name == "argument"]


def test_the_quick_status_loads_no_typer(place: Path) -> None:
    probe = (
        "import sys; sys.argv[1:] = sys.argv[2:]\n"
        "from graph.cli.launch import main\n"
        "main()\n"
        "print(sorted(m for m in ('typer', 'click', 'memory.cli.memory', 'importlib.metadata')"
        " if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            "-",
            "--db",
            str(place / "s.db"),
            "memory",
            "-w",
            str(place / "ws"),
            "status",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert p.stdout.splitlines()[-1] == "[]"
    assert "pending turn(s) in 3 session(s)" in p.stdout

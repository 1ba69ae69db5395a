"""``sessions``, ``recent``, ``read`` and ``latest`` answered without typer: the same output, errors
and status as typer's.

The console script answers the plain forms of these commands through :func:`graph.cli.quick.run`
(``sessions`` is the graph's own description; the others come from the ``sessiongraph.quick`` entry
points); every other form goes to
typer. Each command line here runs both ways in the same process and must print the same bytes on
stdout and stderr and end with the same status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from graph import SessionStore
from graph.cli import commands, quick
from graph.models import TextBlock, ToolCallBlock
from tests.clikit import by_launch, by_typer


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lookups") / "s.db"
    st = SessionStore(path)
    for i in range(3):
        sid = st.create_session(f"session {i}\twith  spaces").id
        for j in range(4 + i * 6):
            st.append(sid, f"turn {j} of {i}", role="user" if j % 2 == 0 else "assistant")
    hostile = st.create_session("title \x1b]0;pwned\x07 [bold]not markup[/]").id
    first = st.append(hostile, "plain \x1b[2m dimmed \x9b and [red]not red[/]", role="user")
    st.append(
        hostile,
        [
            TextBlock(text="calling a tool"),
            ToolCallBlock(id="c1", name="grep", arguments={"pattern": "x" * 90}),
        ],
        role="assistant",
    )
    st.append(hostile, "a fork\nover two lines", role="user", predecessor=first.id)
    head = st.append(hostile, "y" * 2_100, role="assistant")
    st.spawn(hostile, head.id, title="the sub-agent")
    st.create_session("no messages yet")
    st.close()
    return path


def _ids(db: Path) -> dict[str, str]:
    st = SessionStore(db)
    try:
        hostile = next(s.id for s in st.sessions(100) if s.title.startswith("title"))
        long_one = next(s.id for s in st.sessions(100) if s.title.startswith("session 2"))
        empty = next(s.id for s in st.sessions(100) if s.title == "no messages yet")
        node = st.branch(long_one)[3].id
    finally:
        st.close()
    return {"HOSTILE": hostile, "LONG": long_one, "EMPTY": empty, "NODE": node}


def _fill(words: list[str], ids: dict[str, str]) -> list[str]:
    out = []
    for w in words:
        for key, value in ids.items():
            w = w.replace(key + "8", value[-8:]).replace(key + "<", value[:20]).replace(key, value)
        out.append(w)
    return out


ANSWERED = [
    ["sessions"],
    ["sessions", "--full"],
    ["sessions", "--json"],
    ["sessions", "--limit", "2"],
    ["sessions", "--limit=3", "--full", "--json"],
    ["-q", "sessions"],
    ["--quiet", "sessions", "--limit", "1", "--limit", "2"],
    ["recent"],
    ["recent", "--full"],
    ["recent", "--json"],
    ["recent", "--limit", "2"],
    ["recent", "--limit=0"],
    ["recent", "--limit", "99", "--full", "--json"],
    ["-q", "recent", "--limit", "1", "--limit", "3"],
    ["read", "HOSTILE"],
    ["read", "HOSTILE", "--full"],
    ["read", "HOSTILE", "--json"],
    ["read", "--json", "HOSTILE8"],
    ["read", "LONG<", "-n", "3"],
    ["read", "LONG", "--count=40"],
    ["read", "LONG", "--count", "0"],
    ["read", "LONG", "--before", "NODE"],
    ["read", "LONG", "--before=NODE8", "-n", "2", "--full"],
    ["read", "LONG", "--before", "NODE", "--json"],
    ["read", "EMPTY"],
    ["--quiet", "read", "EMPTY", "--json"],
    ["latest", "HOSTILE"],
    ["latest", "HOSTILE", "--json"],
    ["latest", "LONG8"],
    ["latest", "EMPTY"],
    ["latest", "EMPTY", "--json"],
    # Refusals: one error line and status 1, the same from both paths.
    ["read", "nope"],
    ["read", "…"],
    ["latest", "no-such-session"],
    ["read", "LONG", "--before", "no-such-node"],
    ["read", "HOSTILE", "--before", "NODE"],
]


@pytest.mark.parametrize("words", ANSWERED, ids=lambda w: " ".join(w))
@pytest.mark.parametrize("width", ["80", "140"])
def test_the_quick_lookup_prints_what_the_typer_command_prints(
    db: Path,
    words: list[str],
    width: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    args = ["--db", str(db), *_fill(words, _ids(db))]
    want = by_typer(args, capsys)
    try:
        answered = quick.run(args)
    except SystemExit:  # a refusal, answered with its error line
        answered = True
    assert answered is True  # the quick path answers it
    capsys.readouterr()
    got = by_launch(args, capsys, monkeypatch)
    assert got == want
    out, err, code = got
    if "--json" not in words:  # tables and text: every control character made visible
        assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    assert (code, err) == (0, "") or (code == 1 and err.count("\n") == 1 and err[:7] == "error: ")


@pytest.mark.parametrize("form", ["env", "option", "option="])
def test_the_store_is_found_as_the_typer_command_finds_it(
    db: Path, form: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(db.parent))
    named = "~/" + db.name
    if form == "env":
        monkeypatch.setenv("SESSIONGRAPH_DB", named)
        args = ["sessions"]
    else:
        monkeypatch.delenv("SESSIONGRAPH_DB", raising=False)
        args = ["--db", named, "sessions"] if form == "option" else [f"--db={named}", "sessions"]
    want = by_typer(args, capsys)
    assert "session 0" in want[0]
    assert by_launch(args, capsys, monkeypatch) == want


def test_an_empty_store_says_how_to_fill_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "new").mkdir()
    SessionStore(tmp_path / "new" / "s.db").close()  # made, with nothing imported yet
    args = ["--db", str(tmp_path / "new" / "s.db"), "sessions"]
    got = by_launch(args, capsys, monkeypatch)
    assert got == ("no sessions; import some with `sessiongraph import`\n", "", 0)
    assert by_typer(args, capsys) == got


def test_an_ambiguous_prefix_is_the_same_error(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [s.id for s in SessionStore(db).sessions(100)]
    common = os.path.commonprefix(ids)
    assert common, "the fixture's ids share their first characters (UUIDv7 made together)"
    for command in ("read", "latest"):
        args = ["--db", str(db), command, common]
        want = by_typer(args, capsys)
        assert want[2] == 1 and "ambiguous" in want[1]
        assert by_launch(args, capsys, monkeypatch) == want


@pytest.mark.parametrize("make", ["directory", "not-a-database"])
def test_a_bad_store_is_the_same_one_line_error(
    tmp_path: Path,
    make: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "bad"
    if make == "directory":
        target.mkdir()
    else:
        target.write_bytes(b"this is not a database file, not at all" * 50)
    for words in (["sessions"], ["recent"], ["latest", "x"]):
        args = ["--db", str(target), *words]
        want = by_typer(args, capsys)
        got = by_launch(args, capsys, monkeypatch)
        assert got == want
        out, err, code = got
        assert code == 1 and out == "" and err.startswith("error: --db ") and "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--help"],
        ["sessions", "--limit", "0"],
        ["sessions", "--limit", "x"],
        ["sessions", "--limit"],
        ["sessions", "--limit", "--full"],
        ["sessions", "--since", "1d"],
        ["sessions", "--runtime", "pi"],
        ["sessions", "extra"],
        ["sessions", "-q"],
        ["--db", "sessions"],
        ["--db=", "sessions"],
        ["--unknown", "sessions"],
        ["show", "sessions"],
        ["memory", "sessions"],
        ["recent", "--help"],
        ["recent", "extra"],
        ["recent", "--limit"],
        ["recent", "--limit", "x"],
        ["recent", "--limit", "-1"],
        ["recent", "--limit", "--full"],
        ["recent", "--"],
        ["read"],
        ["read", "a", "b"],
        ["read", "a", "--count"],
        ["read", "a", "-n", "-2"],
        ["read", "a", "-n5"],
        ["read", "a", "-n=5"],
        ["read", "a", "--before"],
        ["read", "a", "--before=-x"],
        ["read", "a", "--before="],
        ["read", "-x"],
        ["latest"],
        ["latest", "a", "--full"],
        ["open", "a"],
        ["memory", "status", "extra"],
        ["show", "a"],
        ["recent", "-q"],
        ["--db", "recent"],
        ["--db", "--quiet", "recent"],
        ["--version", "recent"],
        ["--help"],
        [],
    ],
    ids=lambda a: " ".join(a) or "nothing",
)
def test_anything_else_is_left_to_the_full_command_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert quick.run(args) is False
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--limit", "0"],
        ["latest", "a", "--full"],
        ["recent", "--limit", "x"],
        ["read"],
        ["read", "a", "b"],
        ["read", "a", "-n=5"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_mistake_gets_typer_s_message(
    db: Path, args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--db", str(db), *args]
    got = by_launch(args, capsys, monkeypatch)
    assert got == by_typer(args, capsys)
    assert got[2] == 2 and got[1].startswith("error: ") and "Traceback" not in got[1]


def _descriptions() -> dict[str, quick.QuickCommand]:
    found = {ep.name: ep.load() for ep in entry_points(group="sessiongraph.quick")}
    return {"sessions": quick.SESSIONS} | found


def test_the_entry_points_describe_the_lookups_under_their_own_names() -> None:
    found = _descriptions()
    assert {"recent", "read", "latest", "memory"} <= set(found)
    for name, description in found.items():
        assert isinstance(description, quick.QuickCommand)
        assert description.name.partition(" ")[0] == name  # a group's command: its first word
        assert quick.quick_command(name) is description


def _click_command(name: str) -> Any:
    from graph.cli.startup import lazy_command

    commands._register_commands([name])
    group: Any = lazy_command(commands.app)
    return group.commands[name]


@pytest.mark.parametrize("name", ["sessions", "recent", "read", "latest"])
def test_each_description_matches_its_typer_command(name: str) -> None:
    """Option names, the parameter each sets, its default and the number of arguments are typer's."""
    description = _descriptions()[name]
    command = _click_command(name)
    options = {o: p for p in command.params for o in (*p.opts, *p.secondary_opts) if o[0] == "-"}
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    assert len(arguments) == description.arguments
    assert all(a.required for a in arguments)
    for option, parameter in description.flags.items():
        assert options[option].name == parameter and options[option].is_flag
        assert options[option].default is False
    for option, (parameter, default, minimum) in description.numbers.items():
        assert options[option].name == parameter and not options[option].is_flag
        assert options[option].default == default
        info = options[option].type_descriptor.parameter_info
        assert minimum >= (info.min or 0)  # never a value typer refuses
    for option, (parameter, default) in description.texts.items():
        assert options[option].name == parameter and options[option].default == default
    if name != "sessions":  # sessions leaves its filters to typer; the lookups take every option
        named = {*description.flags, *description.numbers, *description.texts}
        assert named == set(options)


def test_the_graph_commands_are_the_graph_cli_own() -> None:
    from graph.cli.importing import register

    register(commands.app)
    # Entry points may have added commands in this process too (``serve`` is the graph's, but comes
    # through one): only those the graph's command line registers itself count.
    graph_own = {
        c.name or (c.callback.__name__ if c.callback else "")
        for c in commands.app.registered_commands
        if c.callback is not None
        and c.callback.__module__ in {"graph.cli.commands", "graph.cli.importing"}
    }
    assert graph_own == quick.GRAPH_COMMANDS


@pytest.mark.parametrize("command", ["sessions", "read"])
def test_a_quick_lookup_loads_no_typer(db: Path, command: str) -> None:
    if command == "sessions":  # the listing draws its own table: not even rich's console
        words, shown = ["sessions"], "session 2"
        avoided = ["typer", "click", "rich.console", "rich.cells", "importlib.metadata"]
    else:
        words = ["read", _ids(db)["LONG"], "-n", "2"]
        avoided = ["typer", "click", "memory.cli.lookup", "memory.workspace", "importlib.metadata"]
        shown = "turn 15 of 2"
    probe = (
        "import sys; sys.argv[1:] = sys.argv[2:]\n"
        "from graph.cli.launch import main\n"
        "main()\n"
        f"print(sorted(m for m in {avoided!r} if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", probe, "-", "--db", str(db), *words],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert p.stdout.splitlines()[-1] == "[]"
    assert shown in p.stdout

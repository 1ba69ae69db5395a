"""``sessiongraph sessions`` answered without typer: the same output, errors and status as the typer command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore
from graph.cli import quick
from tests.clikit import by_launch, by_typer


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    st = SessionStore(path)
    for i in range(4):
        sid = st.create_session(f"session {i}  with\tspaces", metadata={"runtime": "pi"}).id
        for j in range(i):
            st.append(sid, f"turn {j}", role="user" if j % 2 == 0 else "assistant")
    head = st.append(sid, "spawning", role="assistant")
    st.spawn(sid, head.id, title="the sub-agent")
    st.close()
    return path


@pytest.mark.parametrize(
    "words",
    [
        ["sessions"],
        ["sessions", "--full"],
        ["sessions", "--json"],
        ["sessions", "--limit", "2"],
        ["sessions", "--limit=3", "--full", "--json"],
        ["-q", "sessions"],
        ["--quiet", "sessions", "--limit", "1", "--limit", "2"],
    ],
    ids=lambda w: " ".join(w),
)
@pytest.mark.parametrize("width", ["80", "140"])
def test_the_quick_listing_prints_what_the_typer_command_prints(
    db: Path,
    words: list[str],
    width: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    args = ["--db", str(db), *words]
    want = by_typer(args, capsys)
    assert want[2] == 0 and "session 3" in want[0]
    assert quick.run(args) is True  # the quick path answers it
    capsys.readouterr()
    assert by_launch(args, capsys, monkeypatch) == want


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
    args = ["--db", str(tmp_path / "new" / "s.db"), "sessions"]
    got = by_launch(args, capsys, monkeypatch)
    assert got == ("no sessions; import some with `sessiongraph import`\n", "", 0)
    assert by_typer(args, capsys) == got


@pytest.mark.parametrize(
    "make",
    ["directory", "not-a-database"],
)
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
    args = ["--db", str(target), "sessions"]
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
    ],
    ids=lambda a: " ".join(a),
)
def test_anything_else_is_left_to_the_full_command_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert quick.run(args) is False
    assert capsys.readouterr() == ("", "")


def test_a_mistake_gets_typer_s_message(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--db", str(db), "sessions", "--limit", "0"]
    got = by_launch(args, capsys, monkeypatch)
    assert got == by_typer(args, capsys)
    assert got[2] == 2 and "--limit" in got[1]


def test_the_quick_listing_loads_no_typer(db: Path) -> None:
    probe = (
        "import sys; sys.argv[1:] = ['--db', sys.argv[1], 'sessions']\n"
        "from graph.cli.launch import main\n"
        "main()\n"
        "print(sorted(m for m in ('typer', 'click', 'rich.console') if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", probe, str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert p.stdout.splitlines()[-1] == "[]"
    assert "session 3" in p.stdout

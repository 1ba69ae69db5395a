"""Every user mistake ends as one line ``error: WHAT: WHY`` and a non-zero exit, never a traceback.

The first test walks the whole typer application (so a command added later is covered without
editing this file) and runs each command, in a subprocess, with bad arguments; the others pin the
cases users met, one by one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from graph import SessionStore
from graph.cli.commands import _register_commands, app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


@pytest.fixture(autouse=True)
def _in_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run in a scratch directory: whatever one writes relative to it lands there."""
    monkeypatch.chdir(tmp_path)


def run(
    *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    return subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", *args],
        capture_output=True,
        text=True,
        env=base | {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"} | (env or {}),
        input=stdin,
        timeout=120,
    )


def assert_one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode != 0, p.stdout
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr
    assert "internal error" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("error: "), p.stderr
    for needle in needles:
        assert needle in p.stderr, p.stderr


def commands() -> list[tuple[list[str], Any]]:
    """Every leaf command of the application, with its path (``["memory", "edit"]``)."""
    _register_commands([])
    out: list[tuple[list[str], Any]] = []

    def walk(group: Any, path: list[str]) -> None:
        for name, cmd in sorted(group.commands.items()):
            if hasattr(cmd, "commands"):
                walk(cmd, [*path, name])
            else:
                out.append(([*path, name], cmd))

    walk(get_command(app), [])
    return out


SERVERS = {"serve", "mcp"}
"""Commands that run until stopped (their own tests start and stop them)."""


def bad_invocations(path: list[str], cmd: Any, db: Path, ws: Path) -> list[list[str]]:
    """Ways to call one command wrongly: an unknown option; bad values for its arguments."""
    group_opts = ["-w", str(ws)] if path[0] == "memory" else []
    prefix = ["--db", str(db), *path[:1], *group_opts, *path[1:]]
    values = []
    for p in cmd.params:
        if p.param_type_name == "argument":
            values.append(
                str(db.parent / "no-such-file.jsonl") if "path" in p.name else "no-such-id"
            )
    if path == ["memory", "watch"]:
        values.append("--once")  # never wait for the next pass
    cases = [[*prefix, "--no-such-option"], [*prefix, *values]]
    for p in cmd.params:
        if p.param_type_name == "option" and not p.is_flag and p.opts[0].startswith("--"):
            numeric = p.name in {
                "limit",
                "count",
                "page",
                "per_page",
                "grace",
                "idle",
                "poll",
                "port",
                "interval",
            }
            bad = "-5" if numeric else ""
            cases.append([*prefix, *values, p.opts[0], bad])
    if path[0] in SERVERS:
        # Called rightly they serve until stopped: only the mistakes that stop them at once.
        return [c for c in cases if "--no-such-option" in c or "-5" in c]
    # The store and the workspace named by paths that cannot be created.
    cases.append(["--db", "/proc/no/such.db", *path[:1], *group_opts, *path[1:], *values])
    if path[0] == "memory":
        cases.append(["--db", str(db), "memory", "-w", str(db), *path[1:], *values])
    return cases


def test_every_command_with_bad_arguments_fails_without_a_traceback(tmp_path: Path) -> None:
    db, ws = tmp_path / "s.db", tmp_path / "ws"
    assert run("--db", str(db), "import", str(EXAMPLE)).returncode == 0
    found = commands()
    names = {" ".join(p) for p, _ in found}
    assert {"sessions", "show", "rm", "import", "memory edit", "memory status"} <= names
    cases = [c for p, cmd in found for c in bad_invocations(p, cmd, db, ws)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda c: (c, run(*c, stdin="")), cases))
    for case, p in results:
        assert "Traceback" not in p.stderr + p.stdout, (case, p.stderr)
        assert "internal error" not in p.stderr, (case, p.stderr)
        if p.returncode != 0:
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            assert lines and lines[-1].startswith("error: "), (case, p.stderr)


def test_memory_edit_with_an_editor_that_does_not_exist(tmp_path: Path) -> None:
    db, ws = str(tmp_path / "s.db"), str(tmp_path / "ws")
    assert run("--db", db, "import", str(EXAMPLE)).returncode == 0
    assert run("--db", db, "memory", "-w", ws, "write").returncode == 0
    p = run("--db", db, "memory", "-w", ws, "edit", env={"EDITOR": "no-such-editor-xyz"})
    assert_one_line_error(p, "no-such-editor-xyz", "cannot run")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--db", "/proc/no/such.db", "import", "{file}"], "--db /proc/no/such.db: cannot create"),
        (["--db", "/proc/no/such.db", "sessions"], "--db /proc/no/such.db: no store there yet"),
        (["memory", "-w", "{file}", "status"], "is a file"),
        (["memory", "-w", "{file}", "list"], "is a file"),
        (["memory", "-w", "/proc/no/ws", "status"], "cannot create the workspace folder"),
        (["memory", "-w", "/proc/no/ws", "list"], "cannot create the workspace folder"),
        (["memory", "-w", "{ws}", "export", "-o", "{file}"], "is a file"),
        (["memory", "-w", "{ws}", "export", "-o", "/proc/no/out"], "cannot create the folder"),
    ],
    ids=[
        "db-folder",
        "db-missing",
        "ws-file-status",
        "ws-file-list",
        "ws-folder-status",
        "ws-folder-list",
        "export-file",
        "export-folder",
    ],
)
def test_the_seven_reported_tracebacks_are_one_line_errors(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    subst = {"{file}": str(file), "{ws}": str(tmp_path / "ws")}
    args = [subst.get(a, a) for a in args]
    if args[0] != "--db":
        args = ["--db", str(tmp_path / "s.db"), *args]
    assert_one_line_error(run(*args), needle)


def test_ambiguous_prefix_lists_the_matching_sessions(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    st.create_session("one", id="0aaa-first")
    st.create_session("two", id="0bbb-second")
    st.close()
    p = run("--db", str(db), "show", "0")
    assert_one_line_error(p, "ambiguous", "0aaa-first", "0bbb-second")
    assert run("--db", str(db), "show", "0a").returncode == 0
    assert run("--db", str(db), "show", "…second").returncode == 0


def test_usage_mistakes_are_one_line_with_status_2(tmp_path: Path) -> None:
    p = run("--db", str(tmp_path / "s.db"), "show")
    assert p.returncode == 2
    assert_one_line_error(p, "Missing argument")
    p = run("--db", str(tmp_path / "s.db"), "no-such-command")
    assert p.returncode == 2 and "No such command" in p.stderr


def test_silent_no_ops_are_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert run("--db", db, "import", str(EXAMPLE)).returncode == 0
    assert_one_line_error(run("--db", db, "mark", "7d3c"), "no nodes given")
    assert_one_line_error(
        run("--db", db, "mark", "7d3c", "--pending", "--provider", ""), "--provider"
    )
    assert_one_line_error(run("--db", db, "pending", "7d3c", "--value", " "), "--value")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(run("--db", db, "import", str(empty)), "no transcripts there")
    assert_one_line_error(
        run("--db", db, "import", str(tmp_path / "nope")), "no such file or folder"
    )


def test_rm_removes_a_session_and_its_spawned_sessions(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert run("--db", db, "import", str(EXAMPLE)).returncode == 0
    assert_one_line_error(run("--db", db, "rm", "7d3c"), "--yes")  # no terminal to confirm on
    assert len(SessionStore(db).sessions()) == 2
    p = run("--db", db, "rm", "7d3c", "--yes")
    assert p.returncode == 0, p.stderr
    assert "removed 2 session(s), 20 node(s)" in p.stdout
    assert SessionStore(db).sessions() == []
    assert_one_line_error(run("--db", db, "rm", "7d3c", "--yes"), "unknown session")
    assert run("--db", db, "import", str(EXAMPLE)).returncode == 0  # importable again


def test_version_quiet_and_tilde(tmp_path: Path) -> None:
    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("sessiongraph ")
    home = tmp_path / "home"
    home.mkdir()
    fixture = str(ROOT / "tests/fixtures/claude-code/rewind-damaged.jsonl")
    p = run("import", fixture, env={"SESSIONGRAPH_DB": "~/stores/s.db", "HOME": str(home)})
    assert p.returncode == 0, p.stderr
    assert (home / "stores" / "s.db").exists() and not (tmp_path / "~").exists()
    p = run("sessions", env={"SESSIONGRAPH_DB": "~/stores/s.db", "HOME": str(home)})
    assert p.returncode == 0 and "…c3d4e5f6" in p.stdout, p.stderr
    db = str(tmp_path / "q.db")
    p = run(
        "--db",
        db,
        "--quiet",
        "import",
        str(ROOT / "tests/fixtures/claude-code/rewind-damaged.jsonl"),
    )
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    p = run("--db", db, "-q", "mark", "…c3d4e5f6", "--pending")
    assert p.returncode == 0 and p.stdout == ""


def _modules_loaded(*args: str, db: Path) -> set[str]:
    code = (
        "import sys; from graph.cli.launch import main\n"
        f"sys.argv = ['sessiongraph', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
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
    return set(p.stderr.split())


def test_quick_commands_do_not_import_what_they_do_not_need(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).create_session("one")
    heavy = {"networkx", "pydantic", "typer", "rich", "sqlite_utils", "msgpack", "memory"}
    loaded = _modules_loaded("--version", db=db)
    assert "graph.cli.launch" in loaded
    assert not {m.split(".")[0] for m in loaded} & heavy
    loaded = _modules_loaded("sessions", db=db)
    assert "graph.store.sqlite" in loaded
    tops = {m.split(".")[0] for m in loaded}
    assert "networkx" not in tops and "memory" not in tops
    assert not any(m.startswith("graph.importers") for m in loaded)

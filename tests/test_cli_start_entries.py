"""What keeps the quick commands from scanning every installed distribution, and what that must not change.

The command line finds this distribution's own commands in its own ``entry_points.txt``
(:mod:`graph.cli.entries`) instead of asking ``importlib.metadata``, which imports its machinery and
reads every installed distribution's metadata; another package's commands are still found, by that
scan. And the plain tables measure printable ASCII without loading rich's width tables.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from graph import SessionStore, plain_table
from graph.cli import entries

GROUPS = ["sessiongraph.cli", "sessiongraph.quick", "sessiongraph.server", "console_scripts"]


@pytest.fixture
def fresh() -> Iterator[None]:
    """Each test reads the metadata afresh (a process reads it once)."""
    entries._own_groups.cache_clear()
    yield
    entries._own_groups.cache_clear()


@pytest.mark.parametrize("group", GROUPS)
def test_the_own_metadata_lists_what_importlib_metadata_lists(group: str, fresh: None) -> None:
    want = {
        ep.name: ep.value
        for ep in entry_points(group=group)
        if ep.dist is not None and ep.dist.name == entries.DISTRIBUTION
    }
    assert entries.own_entry_points(group) == want
    if group != "console_scripts":
        assert want, "the installed distribution declares this group"


def _dist(root: Path, folder: str, text: str) -> Path:
    meta = root / folder
    meta.mkdir(parents=True)
    (meta / "entry_points.txt").write_text(textwrap.dedent(text), encoding="utf-8")
    return meta


def test_the_first_metadata_along_the_path_is_read_as_importlib_reads_it(
    tmp_path: Path, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(
        first,
        "SessionGraph-9.0.dist-info",
        """
        # a comment
        [sessiongraph.quick]
        hello = pkg.mod:HELLO
        # another comment
        hello = pkg.other:SHADOWED
        spaced=pkg.mod:SPACED [extra]

        [other]
        hello = elsewhere:X
        """,
    )
    _dist(second, "sessiongraph-8.0.dist-info", "[sessiongraph.quick]\nold = old:OLD\n")
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(
        sys, "path", [str(tmp_path / "missing"), str(tmp_path / "empty"), str(first), str(second)]
    )
    assert entries.own_entry_points("sessiongraph.quick") == {
        "hello": "pkg.mod:HELLO",
        "spaced": "pkg.mod:SPACED [extra]",
    }
    assert entries.own_entry_points("nothing") == {}
    found = [(e.name, e.value) for e in entry_points(group="sessiongraph.quick")]
    assert found[0] == ("hello", "pkg.mod:HELLO")  # importlib agrees: the first of each name,
    assert ("old", "old:OLD") not in found  # and only the first distribution of a name


def test_no_own_metadata_asks_importlib_metadata(
    tmp_path: Path, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _dist(tmp_path, "other_pkg-1.0.dist-info", "[sessiongraph.quick]\nhello = json:dumps\n")
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other-pkg\nVersion: 1.0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert entries.own_entry_points("sessiongraph.quick") is None
    import json

    assert entries.load_named("sessiongraph.quick", "hello") == [json.dumps]
    assert entries.load_named("sessiongraph.quick", "absent") == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [("os.path", os.path), ("os.path:join", os.path.join), ("os:path.join [x]", os.path.join)],
)
def test_an_entry_point_value_loads_as_importlib_loads_it(value: str, expected: object) -> None:
    assert entries.load(value) is expected


PLUGIN = """
from graph.cli.quick import QuickCommand

HELLO = QuickCommand("hello", "hello_plugin:hello", arguments=1)


def hello(store, name):
    print(f"hello {name}: {len(store.sessions())} session(s)")


def register(app):
    @app.command("greet")
    def greet(name: str) -> None:
        print(f"greetings {name}")

    @app.command("broken")
    def broken() -> None:
        print("typer ran it")
"""


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """A folder holding another installed distribution that adds ``hello`` and ``greet``."""
    (tmp_path / "hello_plugin.py").write_text(PLUGIN, encoding="utf-8")
    meta = _dist(
        tmp_path,
        "hello_plugin-1.0.dist-info",
        """
        [sessiongraph.quick]
        hello = hello_plugin:HELLO
        broken = hello_plugin:NO_SUCH_DESCRIPTION

        [sessiongraph.cli]
        greet = hello_plugin:register
        broken = hello_plugin:register
        """,
    )
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 1.0\n")
    return tmp_path


def _run(plugin: Path | None, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    if plugin is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(plugin), env.get("PYTHONPATH", "")])
    probe = (
        "import sys; sys.argv[1:] = sys.argv[2:]\n"
        "from graph.cli.launch import main\n"
        "main()\n"
        "print(sorted(m for m in ('typer', 'importlib.metadata') if m in sys.modules))"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, "-", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=db.parent,
    )


def test_another_package_s_commands_are_found_by_the_full_scan(
    plugin: Path, tmp_path: Path
) -> None:
    db = tmp_path / "store" / "s.db"
    db.parent.mkdir()
    SessionStore(db).close()
    quick = _run(plugin, db, "hello", "you")
    assert quick.returncode == 0, quick.stderr
    assert quick.stdout.splitlines() == ["hello you: 0 session(s)", "['importlib.metadata']"]
    typed = _run(plugin, db, "greet", "you")
    assert typed.returncode == 0, typed.stderr
    assert typed.stdout.splitlines()[0] == "greetings you"
    broken = _run(plugin, db, "broken")  # a description that does not load: typer runs it
    assert broken.returncode == 0, broken.stderr
    assert broken.stdout.splitlines()[0] == "typer ran it"
    gone = _run(None, db, "hello", "you")  # the package removed: the next start no longer knows it
    assert gone.returncode == 2 and "No such command 'hello'" in gone.stderr


@pytest.mark.parametrize(
    "args", [["sessions"], ["recent"], ["latest", "x"], ["memory", "status", "--json"]]
)
def test_the_distribution_s_own_commands_scan_no_installed_distribution(
    plugin: Path, tmp_path: Path, args: list[str]
) -> None:
    db = tmp_path / "store" / "s.db"
    db.parent.mkdir()
    SessionStore(db).close()
    got = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv[1:] = sys.argv[2:]\n"
            "from graph.cli.launch import main\n"
            "try:\n    main()\nfinally:\n"
            "    print('scanned' if 'importlib.metadata' in sys.modules else 'not scanned')",
            "-",
            "--db",
            str(db),
            *args,
        ],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
        | {"SESSIONGRAPH_MEMORY": str(tmp_path / "memory"), "PYTHONPATH": str(plugin)},
        timeout=120,
        cwd=db.parent,
    )
    assert got.stdout.splitlines()[-1] == "not scanned", got.stderr


@given(st.text(max_size=40) | st.text(alphabet=sorted(plain_table._ONE_CELL) + ["é", "中"]))
def test_a_plain_table_measures_text_as_rich_does(text: str) -> None:
    assert plain_table._cells(text) == cell_len(text)


def test_the_one_cell_characters_are_one_cell_for_rich() -> None:
    assert all(cell_len(ch) == 1 for ch in plain_table._ONE_CELL)


def test_an_ascii_table_loads_no_rich() -> None:
    probe = (
        "import sys\n"
        "from graph.plain_table import Column, render\n"
        "print(render([Column('a'), Column('b', 'wrap')], [['x' * 30, 'some words ' * 9]], 40))\n"
        "print([m for m in sys.modules if m.startswith('rich')])"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert got.stdout.splitlines()[-1] == "[]"

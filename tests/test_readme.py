"""The README's Python examples run, in order, and print what the README says they print."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_examples_print_what_the_readme_shows(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    code = "\n".join(blocks)
    expected = [ln[2:] for ln in code.splitlines() if ln.startswith("# ")]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert out.getvalue().splitlines() == expected
    assert (tmp_path / "demo-lib.db").exists()
    assert (tmp_path / "memory-ws" / "memory.db").exists()
    first = tmp_path / "first-example"
    first.mkdir()
    os.chdir(first)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(blocks[0], "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    _the_show_tree_is_what_show_prints(first / "demo-lib.db")


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|…[0-9a-f]{8,}")


def _the_show_tree_is_what_show_prints(db: Path) -> None:
    """The README's tree after its first example, line for line, each distinct id numbered in turn."""
    from typer.testing import CliRunner

    from graph import SessionStore
    from graph.cli.commands import app

    text = README.read_text()
    start = text.index("show SESSION` then prints")
    shown = re.search(r"```\n(.*?)```", text[start:], re.S)
    assert shown is not None
    (session,) = SessionStore(db).sessions()
    got = CliRunner().invoke(app, ["--db", str(db), "show", session.id], env={"COLUMNS": "200"})
    assert got.exit_code == 0, got.output

    def numbered(tree: str) -> list[str]:
        seen: dict[str, str] = {}
        return [
            _ID.sub(lambda m: seen.setdefault(m.group(), f"<id{len(seen)}>"), ln.rstrip())
            for ln in tree.strip().splitlines()
        ]

    assert numbered(got.output) == numbered(shown.group(1))

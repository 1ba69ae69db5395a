"""The README read as a new user reads it: each Python example copied alone into a script.

``tests/test_readme.py`` runs the examples one after another in one namespace. A reader copies one
block into a file and runs it, so a block must either run alone (and print what the README says it
prints) or say, in the paragraph before it, that it continues the library example.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_CONTINUES = "library example above"


def _blocks() -> list[tuple[str, str]]:
    """Each Python block with the paragraph just before it."""
    text = README.read_text()
    out = []
    for m in _BLOCK.finditer(text):
        before = text[: m.start()].rstrip().rsplit("\n\n", 1)[-1]
        out.append((before, m.group(1)))
    return out


def _first_line(block: str) -> str:
    return block.splitlines()[0]


@pytest.mark.parametrize(("before", "block"), _blocks(), ids=[_first_line(b) for _, b in _blocks()])
def test_a_block_runs_alone_or_says_what_it_continues(
    before: str, block: str, tmp_path: Path
) -> None:
    if _CONTINUES in " ".join(before.split()):
        return  # run by tests/test_readme.py after the blocks before it
    expected = [ln[2:] for ln in block.splitlines() if ln.startswith("# ")]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(cwd)
    assert out.getvalue().splitlines() == expected


def test_the_langgraph_example_is_one_that_runs_alone() -> None:
    (lg,) = [b for before, b in _blocks() if "SessionGraphSaver(" in b]
    before = next(p for p, b in _blocks() if b == lg)
    assert _CONTINUES not in before


def test_the_readme_explains_itself_without_the_shared_folder() -> None:
    text = README.read_text()
    assert "DESIGN.md" not in text
    assert not re.search(r"\bseeds?\b", text, re.I)


def test_each_example_transcript_imports_as_the_readme_says(tmp_path: Path) -> None:
    from graph import SessionStore
    from graph.importers import import_paths

    examples = README.parent / "examples"
    store = SessionStore(tmp_path / "demo.db")
    report = import_paths(store, sorted(examples.glob("*.jsonl")))
    assert [f.error for f in report.files] == [None, None, None]
    formats = {s.metadata.get("runtime") for s in store.sessions()}
    assert formats == {"claude-code", "pi", "codex"}
    stats = [store.stats(s.id) for s in store.sessions() if s.spawned_from is None]
    assert all(st.forks >= 1 for st in stats)  # each shows a branch: a rewind, a rollback, a fork
    assert sum(st.summaries for st in stats) >= 3 and sum(st.rewound for st in stats) >= 3

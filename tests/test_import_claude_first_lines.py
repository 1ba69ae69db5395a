"""A Claude Code file read while its first lines name no session yet (Claude Code writes a
file-history snapshot or a summary first) stores nothing, so the session that arrives next is the
only one: the same store as one import of the finished file."""

from __future__ import annotations

from pathlib import Path

import pytest
from importkit import dump, fresh_dump

from graph.importers import claude_code
from graph.store.in_memory import MemorySessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
HOSTILE = Path(__file__).parent / "fixtures" / "claude-code" / "hostile-controls.jsonl"


@pytest.mark.parametrize("source", [EXAMPLE, HOSTILE], ids=["snapshot first", "summary first"])
def test_lines_naming_no_session_store_nothing_until_the_session_arrives(
    tmp_path: Path, source: Path
) -> None:
    data = source.read_bytes()
    path = tmp_path / "being-written.jsonl"  # not named by its session id
    path.write_bytes(data.splitlines(keepends=True)[0])
    store = MemorySessionStore()
    report = claude_code.import_file(store, path)
    assert store.sessions() == [] and report.nodes_added == 0
    assert report.notes == ["no entry names its session yet: nothing stored"]
    path.write_bytes(data)
    claude_code.import_file(store, path)
    assert dump(store) == fresh_dump(claude_code.import_file, path)

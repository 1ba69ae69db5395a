"""An empty file (or one of blank lines only) imports nothing and is not a failure.

A runtime may leave a session file it created but never wrote to (a crash before the first
message). ``sessiongraph import DIR`` used to report it as ``failed ... not a Claude Code, pi or
Codex transcript`` and exit 1 on every run; it is noted as empty, stores nothing and the run
succeeds. Once the file gets its first entries, the next import reads them as a first import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore
from graph.importers import import_file, import_paths

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


@pytest.mark.parametrize("content", [b"", b"\n\n  \r\n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"])
def test_a_blank_file_imports_nothing_and_does_not_fail(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90.jsonl"
    path.write_bytes(content)
    store = SessionStore(":memory:")
    report = import_file(store, path)
    assert report.error is None and report.nodes_added == 0 and report.session_ids == []
    assert any("empty" in n for n in report.notes)
    assert store.sessions() == []
    shutil.copy(EXAMPLE, path)  # the runtime writes its entries at last
    assert import_file(store, path).nodes_added == 20


def test_a_directory_with_an_empty_file_imports_the_rest_and_succeeds(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "a.jsonl")
    (folder / "b.jsonl").write_bytes(b"")
    report = import_paths(SessionStore(":memory:"), [folder])
    assert not report.failed
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()"]
        + ["--db", str(tmp_path / "s.db"), "import", str(folder)],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": "120", "NO_COLOR": "1"},
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "failed" not in p.stderr

"""A file of another format given to the pi or Codex importer, and two sessions in one file.

The Claude Code importer refuses a file without a single Claude Code entry; pi and Codex refuse
theirs the same way (a typed error naming the file) instead of storing a Claude Code transcript as
a pi session of unknown entries. Two pi session headers, or two Codex ``session_meta`` items of
different ids (a rollout that is not a fork), are two sessions written into one file: the import
is refused naming the line of the second, instead of merging them into one session. A rollout
that repeats its own ``session_meta`` (same id) still imports. Whether the file is read whole or
resumed from an earlier import, the answer is the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from graph.importers import codex, import_file, pi
from graph.importers.report import TranscriptError

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CLAUDE = ROOT / "examples" / "claude-code-session.jsonl"
PI = FIXTURES / "pi" / "v3-digest.jsonl"
PI_OTHER = FIXTURES / "pi" / "v3-compaction-branch.jsonl"
CODEX = FIXTURES / "codex" / "rollout-digest.jsonl"
CODEX_OTHER = FIXTURES / "codex" / "rollout-parent.jsonl"


@pytest.mark.parametrize(
    ("reader", "other"),
    [(pi, CLAUDE), (pi, CODEX), (codex, CLAUDE), (codex, PI)],
    ids=["pi<-claude", "pi<-codex", "codex<-claude", "codex<-pi"],
)
def test_a_file_of_another_format_is_refused(reader: object, other: Path) -> None:
    store = SessionStore(":memory:")
    with pytest.raises(TranscriptError, match=other.name):
        reader.import_file(store, other)  # type: ignore[attr-defined]
    assert store.sessions() == []


@pytest.mark.parametrize(("first", "second"), [(PI, PI_OTHER), (CODEX, CODEX_OTHER)])
def test_two_sessions_in_one_file_are_refused_naming_the_line(
    tmp_path: Path, first: Path, second: Path
) -> None:
    merged = tmp_path / "merged.jsonl"
    merged.write_bytes(first.read_bytes() + second.read_bytes())
    line = len(first.read_bytes().splitlines()) + 1
    store = SessionStore(":memory:")
    with pytest.raises(TranscriptError, match=f"line {line}"):
        import_file(store, merged)
    assert store.sessions() == []


@pytest.mark.parametrize(("first", "second"), [(PI, PI_OTHER), (CODEX, CODEX_OTHER)])
def test_a_second_session_appended_later_is_refused_too(
    tmp_path: Path, first: Path, second: Path
) -> None:
    path = tmp_path / "grown.jsonl"
    shutil.copy(first, path)
    store = SessionStore(":memory:")
    import_file(store, path)
    before = {s.id: store.stats(s.id).nodes for s in store.sessions()}
    with path.open("ab") as f:
        f.write(second.read_bytes())
    with pytest.raises(TranscriptError, match="two sessions"):
        import_file(store, path)
    assert {s.id: store.stats(s.id).nodes for s in store.sessions()} == before


def test_a_rollout_repeating_its_own_session_meta_imports(tmp_path: Path) -> None:
    lines = CODEX.read_bytes().splitlines(keepends=True)
    meta = next(ln for ln in lines if orjson.loads(ln)["type"] == "session_meta")
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"".join(lines) + meta)
    report = import_file(SessionStore(":memory:"), path)
    assert report.error is None and len(report.session_ids) == 1

"""Re-importing a grown pi file resumes from the stored offset: the same graph as reading it all.

Each pi file (the fixtures, the shared corpus when present) is cut at every line boundary; the first
part is imported into two stores, the rest appended, and the grown file imported again, into one
resuming, into the other with resuming switched off (what every re-import did before). The stores
must hold the same sessions and nodes. Then the cases that
must be read whole again: a file rewritten before the offset, truncated, or replaced, and appended
lines the resumed path does not take (a compaction).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import pi
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump, fresh_dump, full_reads

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SESSIONGRAPH_CORPUS", ROOT.parent / "shared" / "corpus"))
FILES = sorted((ROOT / "tests" / "fixtures" / "pi").glob("*.jsonl"))


def _grow_and_compare(path: Path, lines: list[bytes], cut: int, tmp: Path) -> None:
    """Import the first ``cut`` lines into two stores, append the rest, re-import both ways."""
    grown = tmp / f"cut{cut}-{path.name}"
    grown.write_bytes(b"".join(lines[:cut]))
    store, other = MemorySessionStore(), MemorySessionStore()
    pi.import_file(store, grown)
    pi.import_file(other, grown)
    with grown.open("ab") as f:
        f.write(b"".join(lines[cut:]))
    resumed = pi.import_file(store, grown)
    full = pi.import_file(other, grown, resume=False)
    assert dump(store) == dump(other), f"{path.name} cut after line {cut}"
    assert (resumed.nodes_added, resumed.dangling) == (full.nodes_added, full.dangling)


def _pi_files() -> list[Path]:
    corpus = sorted((CORPUS / "pi").glob("*.jsonl")) if CORPUS.is_dir() else []
    return FILES + corpus


@pytest.mark.parametrize("path", _pi_files(), ids=lambda p: p.name)
def test_a_grown_file_imports_to_the_same_graph_as_a_full_read(path: Path, tmp_path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    for cut in range(1, len(lines)):
        _grow_and_compare(path, lines, cut, tmp_path)


def test_the_corpus_is_there_or_the_skip_says_so() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}: only the fixtures were cut")
    assert list((CORPUS / "pi").glob("*.jsonl"))


def _chain(first: int, count: int, parent: str | None) -> list[dict[str, Any]]:
    out = []
    for i in range(first, first + count):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(
            {
                "type": "message",
                "id": f"{i:08x}",
                "parentId": parent,
                "timestamp": f"2025-03-01T00:{i // 60:02d}:{i % 60:02d}Z",
                "message": {"role": role, "content": [{"type": "text", "text": f"turn {i}"}]},
            }
        )
        parent = f"{i:08x}"
    return out


def _write(path: Path, objs: list[dict[str, Any]], mode: str = "wb") -> None:
    with path.open(mode) as f:
        f.write(b"".join(orjson.dumps(o) + b"\n" for o in objs))


HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-03-01T00:00:00Z"}


def test_appended_lines_are_read_from_the_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, [HEADER, *_chain(0, 20, None)])
    store = SessionStore(tmp_path / "g.db")
    pi.import_file(store, path)
    full = full_reads(monkeypatch, pi)
    _write(path, _chain(20, 3, f"{19:08x}"), "ab")
    report = pi.import_file(store, path)
    assert full == []
    assert report.nodes_added == 3
    assert store.session("sess-1").head == f"sess-1/{22:08x}"
    assert pi.import_file(store, path).nodes_added == 0
    assert full == []


@pytest.mark.parametrize("change", ["rewritten", "truncated", "replaced"])
def test_a_file_changed_before_the_offset_is_read_whole(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    objs = [HEADER, *_chain(0, 10, None)]
    _write(path, objs)
    store = SessionStore(tmp_path / "g.db")
    pi.import_file(store, path)
    full = full_reads(monkeypatch, pi)
    if change == "rewritten":  # same length, another text in an early line
        path.write_bytes(path.read_bytes().replace(b"turn 1", b"turn X"))
    elif change == "truncated":
        _write(path, objs[:5])
    else:
        other = tmp_path / "other.jsonl"
        _write(other, [*objs, *_chain(10, 2, f"{9:08x}")])
        other.replace(path)
    report = pi.import_file(store, path)
    assert full == [path]
    assert any(change in note for note in report.notes), report.notes
    if change == "replaced":
        assert report.nodes_added == 2


def test_an_appended_compaction_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, [HEADER, *_chain(0, 10, None)])
    store = MemorySessionStore()
    pi.import_file(store, path)
    full = full_reads(monkeypatch, pi)
    compaction = {
        "type": "compaction",
        "id": "c0000001",
        "parentId": f"{9:08x}",
        "timestamp": "2025-03-01T01:00:00Z",
        "summary": "the story so far",
        "firstKeptEntryId": f"{8:08x}",
    }
    _write(path, [compaction, *_chain(10, 2, "c0000001")], "ab")
    pi.import_file(store, path)
    assert full == [path]
    assert dump(store) == fresh_dump(pi.import_file, path, resume=False)
    assert store.node("sess-1/c0000001").covers


def test_a_torn_last_line_is_imported_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    objs = [HEADER, *_chain(0, 6, None)]
    raw = b"".join(orjson.dumps(o) + b"\n" for o in objs)
    path.write_bytes(raw[:-1])  # the last line has no newline yet
    store = MemorySessionStore()
    assert pi.import_file(store, path).nodes_added == 6
    with path.open("ab") as f:
        f.write(b"\n" + b"".join(orjson.dumps(o) + b"\n" for o in _chain(6, 2, f"{5:08x}")))
    report = pi.import_file(store, path)
    assert report.nodes_added == 2
    assert not report.skipped
    assert dump(store) == fresh_dump(pi.import_file, path, resume=False)


def test_the_title_follows_an_appended_session_name(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, [HEADER, *_chain(0, 4, None)])
    store = MemorySessionStore()
    pi.import_file(store, path)
    assert store.session("sess-1").title == "turn 0"
    info = {"type": "session_info", "id": "i0000001", "parentId": f"{3:08x}", "name": "Named"}
    _write(path, [info, *_chain(4, 1, "i0000001")], "ab")
    pi.import_file(store, path)
    assert store.session("sess-1").title == "Named"
    assert dump(store) == fresh_dump(pi.import_file, path, resume=False)

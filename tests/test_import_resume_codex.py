"""Re-importing a grown Codex rollout resumes from the stored offset: the same graph as reading it all.

Each rollout (the fixtures, the shared corpus when present) is cut at every line boundary; the
first part is imported into two stores, the rest appended, and the grown file imported again,
into one resuming, into the other with resuming switched off. The stores must hold the same
sessions and nodes. Then: appended lines are read from the offset, a file changed before the offset
is read whole (rewritten, truncated, replaced), and so are appended compactions and rollbacks, a
prompt echo that may still pair an appended item, and a torn last line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import codex
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump, fresh_dump, full_reads

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SESSIONGRAPH_CORPUS", ROOT.parent / "shared" / "corpus"))
FILES = sorted((ROOT / "tests" / "fixtures" / "codex").glob("*.jsonl"))
SID = "0199a000-0000-7000-8000-000000000001"


def _files() -> list[Path]:
    corpus = sorted((CORPUS / "codex").glob("*.jsonl")) if CORPUS.is_dir() else []
    return [f for f in FILES + corpus if "fork" not in f.name]


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_a_grown_rollout_imports_to_the_same_graph_as_a_full_read(
    path: Path, tmp_path: Path
) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    for cut in range(1, len(lines)):
        grown = tmp_path / f"cut{cut}-{path.name}"
        grown.write_bytes(b"".join(lines[:cut]))
        store, other = MemorySessionStore(), MemorySessionStore()
        codex.import_file(store, grown)
        codex.import_file(other, grown)
        with grown.open("ab") as f:
            f.write(b"".join(lines[cut:]))
        resumed = codex.import_file(store, grown)
        full = codex.import_file(other, grown, resume=False)
        assert dump(store) == dump(other), f"{path.name} cut after line {cut}"
        assert resumed.nodes_added == full.nodes_added


def test_the_corpus_is_there_or_the_skip_says_so() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}: only the fixtures were cut")
    assert list((CORPUS / "codex").glob("*.jsonl"))


def _stamp(i: int) -> str:
    return f"2025-03-01T00:{i // 60:02d}:{i % 60:02d}Z"


META = {
    "timestamp": _stamp(0),
    "type": "session_meta",
    "payload": {"id": SID, "timestamp": _stamp(0), "cwd": "/work"},
}


def _turn(i: int) -> list[dict[str, Any]]:
    """A prompt, its echo, and the reply."""
    said = f"prompt {i}"
    return [
        {
            "timestamp": _stamp(i),
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": said}],
            },
        },
        {
            "timestamp": _stamp(i),
            "type": "event_msg",
            "payload": {"type": "user_message", "message": said},
        },
        {
            "timestamp": _stamp(i),
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"reply {i}"}],
            },
        },
    ]


def _write(path: Path, objs: list[dict[str, Any]], mode: str = "wb") -> None:
    with path.open(mode) as f:
        f.write(b"".join(orjson.dumps(o) + b"\n" for o in objs))


def _turns(first: int, count: int) -> list[dict[str, Any]]:
    return [item for i in range(first, first + count) for item in _turn(i)]


def test_appended_lines_are_read_from_the_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rollout.jsonl"
    _write(path, [META, *_turns(0, 30)])
    store = SessionStore(tmp_path / "g.db")
    codex.import_file(store, path)
    full = full_reads(monkeypatch, codex)
    _write(path, _turns(30, 2), "ab")
    report = codex.import_file(store, path)
    assert full == []
    assert report.nodes_added == 6
    assert store.session(SID).head == f"{SID}:96"
    assert store.node(f"{SID}:91").role == "user"  # paired with its echo
    assert codex.import_file(store, path).nodes_added == 0
    assert full == []
    other = SessionStore(tmp_path / "h.db")
    codex.import_file(other, path, resume=False)
    assert dump(store) == dump(other)


@pytest.mark.parametrize("change", ["rewritten", "truncated", "replaced"])
def test_a_file_changed_before_the_offset_is_read_whole(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rollout.jsonl"
    objs = [META, *_turns(0, 5)]
    _write(path, objs)
    store = SessionStore(tmp_path / "g.db")
    codex.import_file(store, path)
    full = full_reads(monkeypatch, codex)
    if change == "rewritten":
        path.write_bytes(path.read_bytes().replace(b"reply 1", b"reply X"))
    elif change == "truncated":
        _write(path, objs[:4])
    else:
        other = tmp_path / "other.jsonl"
        _write(other, [*objs, *_turns(5, 1)])
        other.replace(path)
    report = codex.import_file(store, path)
    assert full == [path]
    assert any(change in note for note in report.notes), report.notes


@pytest.mark.parametrize("kind", ["compacted", "rollback"])
def test_an_appended_compaction_or_rollback_is_read_whole(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rollout.jsonl"
    _write(path, [META, *_turns(0, 4)])
    store, other = MemorySessionStore(), MemorySessionStore()
    codex.import_file(store, path)
    codex.import_file(other, path)
    full = full_reads(monkeypatch, codex)
    if kind == "compacted":
        item = {"timestamp": _stamp(9), "type": "compacted", "payload": {"message": "so far"}}
    else:
        item = {
            "timestamp": _stamp(9),
            "type": "event_msg",
            "payload": {"type": "thread_rolled_back", "num_turns": 1},
        }
    _write(path, [item, *_turns(10, 1)], "ab")
    codex.import_file(store, path)
    assert full == [path]
    codex.import_file(other, path, resume=False)
    assert dump(store) == dump(other)


def test_an_echo_that_may_pair_an_appended_item_waits_for_a_full_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rollout.jsonl"
    turn = _turn(1)
    _write(path, [META, *_turns(0, 1), turn[1]])  # the echo is written before its prompt
    store, other = MemorySessionStore(), MemorySessionStore()
    codex.import_file(store, path)
    codex.import_file(other, path)
    full = full_reads(monkeypatch, codex)
    _write(path, [turn[0], turn[2]], "ab")
    codex.import_file(store, path)
    assert full == [path]
    codex.import_file(other, path, resume=False)
    assert dump(store) == dump(other)
    assert store.node(f"{SID}:5").role == "user"


def test_a_torn_last_line_is_imported_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    raw = b"".join(orjson.dumps(o) + b"\n" for o in [META, *_turns(0, 2)])
    path.write_bytes(raw[:-1])
    store = MemorySessionStore()
    assert codex.import_file(store, path).nodes_added == 6
    with path.open("ab") as f:
        f.write(b"\n" + b"".join(orjson.dumps(o) + b"\n" for o in _turns(2, 1)))
    assert codex.import_file(store, path).nodes_added == 3
    assert dump(store) == fresh_dump(codex.import_file, path, resume=False)


@pytest.mark.parametrize("path", [f for f in FILES if "fork" in f.name], ids=lambda p: p.name)
def test_a_fork_rollout_is_read_whole_however_it_was_cut(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fork rollout starts with its own session_meta (forked_from_id) and then copies its
    # parent's meta and items: one imported while Codex still writes it must not be resumed as a
    # session of its own.
    lines = path.read_bytes().splitlines(keepends=True)
    for cut in range(1, len(lines)):
        grown = tmp_path / f"cut{cut}-{path.name}"
        grown.write_bytes(b"".join(lines[:cut]))
        store = MemorySessionStore()
        codex.import_file(store, grown)
        with grown.open("ab") as f:
            f.write(b"".join(lines[cut:]))
        with monkeypatch.context() as m:
            full = full_reads(m, codex)
            codex.import_file(store, grown)
        assert full == [grown], f"{path.name} cut after line {cut}"

"""Streaming Claude Code imports: entries are held slim while the rules run, nodes made from the file.

The first pass keeps of each entry what the linking, fork, head and title rules read; the nodes are
made from the lines read again, a chunk at a time. These tests check that the nodes are the same as
the file's entries, however the lines had to be repaired, and that a file rewritten between the two
passes stores nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import claude_code
from graph.importers.jsonl import LineProblems, LineReader, read_jsonl
from graph.importers.report import TranscriptError
from graph.models import content_text


def _entry(i: int, parent: str | None, text: str, kind: str = "user") -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"role": kind, "id": f"msg_{i}", "content": [{"type": "text", "text": text}]}
    return {
        "type": kind,
        "uuid": f"u{i}",
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": f"2025-03-01T00:00:{i:02d}Z",
        "cwd": "/work",
        "message": message,
    }


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


def _messy(path: Path) -> list[dict[str, Any]]:
    """A file with a joined line, a torn fragment before a record, an escaped surrogate."""
    entries = [
        _entry(
            i,
            f"u{i - 1}" if i else None,
            f"turn {i} " + "x" * i,
            "user" if i % 2 == 0 else "assistant",
        )
        for i in range(8)
    ]
    raw = [
        _line(entries[0]),
        _line(entries[1]) + _line(entries[2]),  # two objects on one line
        b'{"type":"user","uuid":"torn' + _line(entries[3]),  # a torn fragment, then a record
        _line(entries[4]).replace(b"turn 4", b"turn 4 \\ud800"),  # a lone surrogate
        *(_line(e) for e in entries[5:]),
    ]
    path.write_bytes(b"\n".join(raw) + b"\n")
    entries[4]["message"]["content"] = entries[4]["message"]["content"].replace(
        "turn 4", "turn 4 \ufffd"
    )
    return entries


def test_line_reader_reads_back_every_object_as_read_jsonl_read_it(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    _messy(path)
    lines = list(read_jsonl(path, LineProblems()))
    assert len(lines) == 8
    assert [line.part for line in lines[1:3]] == [0, 1]
    with LineReader(path) as reader:
        assert [reader.data(line) for line in lines] == [line.data for line in lines]


def test_nodes_hold_the_full_entries_of_repaired_lines(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    entries = _messy(path)
    store = SessionStore(":memory:")
    report = claude_code.import_file(store, path)
    assert report.nodes_added == 8
    for e in entries:
        node = store.node(e["uuid"])
        content = e["message"]["content"]
        want = content if isinstance(content, str) else content[0]["text"]
        assert content_text(node.content) == want
        assert node.metadata["cwd"] == "/work"
        assert node.predecessor == e["parentUuid"]
    assert store.session("s1").head == "u7"
    assert store.session("s1").metadata["cwd"] == "/work"


def test_a_file_rewritten_between_the_two_passes_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s1.jsonl"
    entries = [_entry(i, f"u{i - 1}" if i else None, f"turn {i}") for i in range(5)]
    path.write_bytes(b"".join(_line(e) + b"\n" for e in entries))
    real = claude_code._plan_main

    def plan_then_rewrite(*args: Any) -> Any:
        plan = real(*args)
        shuffled = [entries[0], entries[2], entries[1], entries[3], entries[4]]
        path.write_bytes(b"".join(_line(e) + b"\n" for e in shuffled))
        return plan

    monkeypatch.setattr(claude_code, "_plan_main", plan_then_rewrite)
    store = SessionStore(":memory:")
    with pytest.raises(TranscriptError, match="changed while it was imported"):
        claude_code.import_file(store, path)
    assert not store.has_session("s1")


def test_the_origin_fields_are_the_newest_even_when_only_some_entries_carry_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s1.jsonl"
    entries = [_entry(i, f"u{i - 1}" if i else None, f"turn {i}") for i in range(4)]
    entries[1]["cwd"] = "/elsewhere"
    entries[2]["cwd"] = "/elsewhere"
    entries[3]["cwd"] = "/work"
    path.write_bytes(b"".join(_line(e) + b"\n" for e in entries))
    store = SessionStore(":memory:")
    claude_code.import_file(store, path)
    assert store.session("s1").metadata["cwd"] == "/work"
    assert store.node("u2").metadata["cwd"] == "/elsewhere"

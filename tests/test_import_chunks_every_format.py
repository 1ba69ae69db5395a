"""Imports hand the store their nodes a chunk at a time (so a file's node models are never all
alive at once): however the chunks fall, the import stores and reports exactly the same."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from importkit import dump

import graph.importers._common as common
import graph.importers.claude_code as claude_code_module
from graph.importers import claude_code, codex, pi
from graph.store.in_memory import MemorySessionStore

FIXTURES = Path(__file__).parent / "fixtures"


def _shuffled_pi(tmp_path: Path, n: int = 40) -> Path:
    """A pi v3 file whose entries are written in shuffled order (parents after children) with a fork."""
    rng = random.Random(7)
    entries: list[dict[str, Any]] = []
    prev = None
    for i in range(n):
        parent = entries[n // 2]["id"] if i == n - 5 else prev  # a fork from the middle
        eid = f"{i:08x}"
        role = "user" if i % 2 == 0 else "assistant"
        msg = {"role": role, "content": [{"type": "text", "text": f"turn {i}"}]}
        stamp = f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        entries.append(
            {"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": msg}
        )
        prev = eid
    entries.append({"type": "message", "id": "dangling", "parentId": "nowhere", "message": {}})
    rng.shuffle(entries)
    head = {
        "type": "session",
        "version": 3,
        "id": "shuffled-pi",
        "timestamp": "2025-01-01T00:00:00Z",
    }
    path = tmp_path / "shuffled.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [head, *entries]))
    return path


def _files(tmp_path: Path) -> list[tuple[Any, Path]]:
    out: list[tuple[Any, Path]] = [(pi, _shuffled_pi(tmp_path))]
    out += [(pi, p) for p in sorted((FIXTURES / "pi").glob("*.jsonl"))]
    out += [(codex, p) for p in sorted((FIXTURES / "codex").glob("*.jsonl"))]
    out += [(claude_code, p) for p in sorted((FIXTURES / "claude-code").glob("*.jsonl"))]
    return out


def _imported(importer: Any, path: Path) -> tuple[Any, ...]:
    store = MemorySessionStore()
    report = importer.import_file(store, path)
    facts = (report.nodes_added, report.skipped, report.dangling, report.notes, report.relinked)
    return dump(store), facts


@pytest.mark.parametrize("chunk", [1, 3], ids=lambda c: f"chunks of {c}")
def test_an_import_stores_and_reports_the_same_whatever_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    files = _files(tmp_path)
    whole = [_imported(importer, path) for importer, path in files]
    monkeypatch.setattr(common, "CHUNK", chunk)
    monkeypatch.setattr(claude_code_module, "_CHUNK", chunk)
    monkeypatch.setattr(claude_code_module, "_CHUNK_BYTES", 1 if chunk == 1 else 10**9)
    for (importer, path), want in zip(files, whole, strict=True):
        assert _imported(importer, path) == want, path.name


def test_a_shuffled_pi_file_is_stored_whole(tmp_path: Path) -> None:
    store = MemorySessionStore()
    report = pi.import_file(store, _shuffled_pi(tmp_path))
    assert report.nodes_added == 41 and report.dangling == [
        ("shuffled-pi/dangling", "shuffled-pi/nowhere")
    ]
    assert len(store.tips("shuffled-pi")) == 3  # the main line, the fork, the dangling root


@pytest.mark.parametrize(
    ("ids", "pred", "want"),
    [
        (["a", "b", "c"], {"a": None, "b": "a", "c": "b"}, [0, 1, 2]),  # file order kept
        (["c", "b", "a"], {"a": None, "b": "a", "c": "b"}, [2, 1, 0]),
        (["b", "x", "a"], {"a": "stored", "b": "a", "x": None}, [2, 0, 1]),
        (["a", "b", "c"], {"a": "c", "b": "a", "c": "b"}, None),  # a cycle: no order
        (["r", "a", "b"], {"r": None, "a": "b", "b": "a"}, None),
    ],
    ids=["in order", "reversed", "a parent outside", "a cycle", "a cycle beside a root"],
)
def test_predecessors_first_orders_parents_first_or_says_there_is_a_cycle(
    ids: list[str], pred: dict[str, str | None], want: list[int] | None
) -> None:
    assert common.predecessors_first(ids, pred) == want

"""Claude Code imports write their nodes chunk by chunk, predecessors first, in one transaction."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import claude_code

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_import.py"


def _lines(n: int) -> list[dict[str, Any]]:
    sys.path.insert(0, str(_BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_import_for_tests", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.claude_code_lines(n))


def _graph(store: SessionStore) -> list[tuple[Any, ...]]:
    out = []
    for s in sorted(store.sessions(), key=lambda s: s.id):
        for n in store.nodes(s.id):
            out.append((s.id, s.head, n.id, n.predecessor, n.kind, n.role, n.content, n.metadata))
    return sorted(out, key=repr)


def _import(tmp_path: Path, name: str, lines: list[dict[str, Any]]) -> SessionStore:
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    store = SessionStore(tmp_path / f"{name}.db")
    report = claude_code.import_file(store, path)
    assert report.nodes_added > 0
    return store


def test_small_chunks_store_what_one_batch_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Children written before their parents in the file still land after them, in any chunk."""
    lines = _lines(60)
    lines[10], lines[11] = lines[11], lines[10]  # a child line before its parent's line
    lines[30], lines[33] = lines[33], lines[30]
    whole = _import(tmp_path, "whole", lines)
    monkeypatch.setattr(claude_code, "_CHUNK", 4)
    chunked = _import(tmp_path, "chunked", lines)
    assert _graph(chunked) == _graph(whole)
    whole.close()
    chunked.close()


def test_chunks_are_cut_predecessors_first() -> None:
    """Every chunk's predecessors are in an earlier chunk, in the chunk, or outside the batch."""
    from datetime import UTC, datetime

    when = datetime(2026, 1, 1, tzinfo=UTC)

    def spec(i: str, p: str | None) -> claude_code._Spec:
        return claude_code._Spec(i, i, p, when, {}, ())

    specs = [spec("c", "b"), spec("d", "c"), spec("a", None), spec("b", "a"), spec("x", "stored")]
    placed: set[str] = set()
    chunks = claude_code._in_chunks(specs)
    assert sorted(s.node_id for c in chunks for s in c) == ["a", "b", "c", "d", "x"]
    for c in chunks:
        for s in c:
            assert s.predecessor in placed or s.predecessor == "stored" or s.predecessor is None
            placed.add(s.node_id)
    cyclic = [spec("a", "b"), spec("b", "a")]
    assert claude_code._in_chunks(cyclic) == [cyclic]  # one chunk: the store names the cycle


def test_a_chunk_ends_once_its_entries_span_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long entries make short chunks: what a chunk holds follows the bytes it read, not a count."""
    lines = _lines(40)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    sizes: list[int] = []
    real = SessionStore.add_nodes

    def counted(self: SessionStore, sid: str, nodes: Any, **kw: Any) -> Any:
        batch = list(nodes)
        sizes.append(len(batch))
        return real(self, sid, batch, **kw)

    monkeypatch.setattr(SessionStore, "add_nodes", counted)
    monkeypatch.setattr(claude_code, "_CHUNK_BYTES", path.stat().st_size // 4)
    store = SessionStore(tmp_path / "s.db")
    report = claude_code.import_file(store, path)
    assert 4 <= len(sizes) <= 6 and sum(sizes) == report.nodes_added  # about a quarter each
    store.close()

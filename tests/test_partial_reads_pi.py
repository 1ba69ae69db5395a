"""A pi file imported while pi still writes its last line, then once that line is complete.

An import may meet a last line torn anywhere inside it. The reader recovers an object from a torn
line when the line's end closes one (a content block, a tool call with its own ``id``), so the
cuts that matter are those right after each ``}``; one more cut per line tears it before its first
``}``. Each cut is imported, then the whole file: the store must hold what a fresh import of the
whole file holds (no node made from the torn line left behind, none changed), whether the second
import resumes or reads the file whole.

One difference is not the torn line's: a damaged file that writes an entry before its parent
(v3-damaged) gives, cut between the two, the entry stored as a root, as the cut at that line
boundary does; there the torn cut must store what the boundary cut stores.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from graph.importers import pi
from graph.store.in_memory import MemorySessionStore
from tests.importkit import cut_then_whole, dump, fresh_dump

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SESSIONGRAPH_CORPUS", ROOT.parent / "shared" / "corpus"))
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "pi").glob("*.jsonl"))
OUT_OF_ORDER = {"v3-damaged.jsonl"}


def _files() -> list[Path]:
    corpus = sorted((CORPUS / "pi").glob("*.jsonl")) if CORPUS.is_dir() else []
    return FIXTURES + corpus


def _cuts(data: bytes) -> list[tuple[int, int]]:
    """``(cut, line start)``: inside each line, after its first byte and after each ``}`` in it."""
    out: list[tuple[int, int]] = []
    start = 0
    for line in data.splitlines(keepends=True):
        inside = {1} | {k + 1 for k, byte in enumerate(line[:-1]) if byte == ord("}")}
        out.extend((start + k, start) for k in sorted(inside) if k < len(line))
        start += len(line)
    return out


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_a_torn_last_line_read_again_complete_leaves_what_a_fresh_read_stores(
    path: Path, tmp_path: Path
) -> None:
    data = path.read_bytes()
    grown = tmp_path / path.name
    grown.write_bytes(data)
    expected = fresh_dump(pi.import_file, grown)
    for cut, start in _cuts(data):
        got = dump(cut_then_whole(pi.import_file, grown, data, cut))
        if path.name in OUT_OF_ORDER and got != expected:
            # Complete objects before the cut decide; the torn line adds nothing to them.
            whole = data[start:cut].rstrip(b"\n")
            boundary = cut if _is_whole(whole) else start
            assert got == dump(cut_then_whole(pi.import_file, grown, data, boundary)), (
                f"{path.name} cut at byte {cut}"
            )
        else:
            assert got == expected, f"{path.name} cut at byte {cut}"


def _is_whole(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def test_a_torn_line_is_reported_as_one_torn_write_and_stores_nothing(tmp_path: Path) -> None:
    data = (ROOT / "tests" / "fixtures" / "pi" / "v3-digest.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    # Torn right after the tool call block, an object with an ``id`` of its own.
    torn = lines[2][: lines[2].index(b'"cart.js"}}') + len(b'"cart.js"}}')]
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(lines[:2]) + torn)
    store = MemorySessionStore()
    report = pi.import_file(store, path)
    (sid,) = report.session_ids
    assert report.skipped == [(3, "torn write (truncated last line)")]
    assert report.repaired == []
    assert store.node_count(sid) == 1


def test_a_file_whose_header_is_torn_stores_nothing(tmp_path: Path) -> None:
    data = FIXTURES[0].read_bytes()
    path = tmp_path / "torn.jsonl"
    path.write_bytes(data[: data.index(b"\n") // 2])
    store = MemorySessionStore()
    report = pi.import_file(store, path)
    assert report.session_ids == []
    assert store.sessions() == []
    assert report.skipped == [(1, "torn write (truncated last line)")]

"""Lines nobody wrote for the importers: a byte order mark, and integers too large for 64 bits.

A UTF-8 byte order mark (Windows editors write one when a transcript is saved) is an encoding mark,
not a torn fragment: the file imports as it does without it, with nothing reported as skipped or
repaired, in every format. A number in an entry too large for 64 bits (orjson reads integers up to
that and larger ones as floats; Python's own reader, used for lines orjson refuses, keeps them
exact) no longer fails the whole file when the entry is stored: it is kept as a float, or as its
digits when even a float overflows.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from graph.importers import detect_format, import_file
from graph.importers.pi import header

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = [
    ROOT / "examples" / "claude-code-session.jsonl",
    FIXTURES / "pi" / "v3-compaction-branch.jsonl",
    FIXTURES / "codex" / "rollout-digest.jsonl",
]
BOM = b"\xef\xbb\xbf"


def _graph(store: SessionStore) -> list[tuple[str, list[tuple[str, str | None, str]]]]:
    return [
        (s.id, [(n.id, n.predecessor, n.text) for n in store.nodes(s.id)]) for s in store.sessions()
    ]


@pytest.mark.parametrize("source", EXAMPLES, ids=lambda p: p.parent.name)
def test_a_byte_order_mark_changes_nothing(tmp_path: Path, source: Path) -> None:
    marked = tmp_path / source.name
    marked.write_bytes(BOM + source.read_bytes())
    assert detect_format(marked) == detect_format(source)
    plain, bommed = SessionStore(":memory:"), SessionStore(":memory:")
    want = import_file(plain, source)
    got = import_file(bommed, marked)
    assert (got.skipped, got.repaired) == ([], []) == (want.skipped, want.repaired)
    assert got.nodes_added == want.nodes_added
    assert _graph(bommed) == _graph(plain)


def test_a_pi_header_behind_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    source = FIXTURES / "pi" / "v3-compaction-branch.jsonl"
    marked = tmp_path / source.name
    marked.write_bytes(BOM + source.read_bytes())
    assert header(source) is not None
    assert header(marked) == header(source)


@pytest.mark.parametrize(("digits", "kept"), [(400, float("inf")), (30, 1e30)])
def test_an_integer_beyond_64_bits_is_kept_and_the_file_imports(
    tmp_path: Path, digits: int, kept: float
) -> None:
    lines = EXAMPLES[0].read_bytes().splitlines(keepends=True)
    entry = orjson.loads(lines[1])
    entry["tokens"] = "HUGE"
    big = orjson.dumps(entry).replace(b'"HUGE"', b"1" + b"0" * digits)
    path = tmp_path / "big.jsonl"
    path.write_bytes(lines[0] + big + b"\n" + b"".join(lines[2:]))
    store = SessionStore(":memory:")
    report = import_file(store, path)
    assert report.error is None and report.skipped == []
    node = store.node(entry["uuid"])
    value = node.metadata["tokens"]
    if kept == float("inf"):
        assert value == "1" + "0" * digits  # a float would overflow: the digits are kept
    else:
        assert value == pytest.approx(kept)

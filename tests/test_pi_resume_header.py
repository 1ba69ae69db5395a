"""A pi file that is one unterminated line (header and entry side by side) resumes to no new node,
also after blank or damaged lines (no record before the resume point: its header is still the header)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from graph.importers import pi
from graph.store.in_memory import MemorySessionStore

_HEAD = {"type": "session", "version": 3, "id": "one-line", "timestamp": "2025-01-01T00:00:00Z"}
_ENTRY = {
    "type": "message",
    "id": "00000001",
    "parentId": None,
    "timestamp": "2025-01-01T00:00:01Z",
    "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
}


def test_a_header_read_again_from_the_start_is_not_stored_as_an_entry(tmp_path: Path) -> None:
    f = tmp_path / "one-line.jsonl"
    f.write_bytes(orjson.dumps(_HEAD) + orjson.dumps(_ENTRY))  # no newline: still being written
    store = MemorySessionStore()
    first = pi.import_file(store, f)
    assert first.nodes_added == 1
    again = pi.import_file(store, f)
    assert again.nodes_added == 0
    assert [n.id for n in store.nodes("one-line")] == ["one-line/00000001"]
    with f.open("ab") as out:  # the line is finished and another entry follows
        out.write(
            b"\n" + orjson.dumps({**_ENTRY, "id": "00000002", "parentId": "00000001"}) + b"\n"
        )
    assert pi.import_file(store, f).nodes_added == 1
    fresh = MemorySessionStore()
    pi.import_file(fresh, f)
    assert [n.id for n in store.nodes("one-line")] == [n.id for n in fresh.nodes("one-line")]


@pytest.mark.parametrize("before", [b"\n", b"  \n\n", b"[1]\n", b"not json\n"], ids=repr)
def test_a_header_after_lines_without_a_record_is_not_stored_as_an_entry(
    tmp_path: Path, before: bytes
) -> None:
    f = tmp_path / "late-header.jsonl"
    f.write_bytes(before + orjson.dumps(_HEAD) + orjson.dumps(_ENTRY))  # still being written
    store = MemorySessionStore()
    assert pi.import_file(store, f).nodes_added == 1
    assert pi.import_file(store, f).nodes_added == 0  # resumed after those lines: no header node
    assert [n.id for n in store.nodes("one-line")] == ["one-line/00000001"]

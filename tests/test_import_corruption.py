"""Random corruption of a real transcript (joined lines, byte flips, truncation) never loses an entry silently.

Every entry of the original file is stored, or its line is reported (skipped, or an entry not stored),
or the damage changed the entry itself (its uuid is no longer intact on its line).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from graph import MemorySessionStore
from graph.importers import claude_code
from graph.importers.report import TranscriptError

SOURCE = Path(__file__).parent / "fixtures" / "real" / "claude-code" / "spotter-tool-heavy.jsonl"
LINES = SOURCE.read_bytes().rstrip(b"\n").split(b"\n")
UUIDS = [orjson.loads(raw).get("uuid") for raw in LINES]


@given(
    joins=st.sets(st.integers(0, len(LINES) - 2), max_size=4),
    flips=st.lists(
        st.tuples(st.integers(0, len(LINES) - 1), st.integers(0, 10**6), st.integers(1, 255)),
        max_size=6,
    ),
    cut=st.one_of(st.none(), st.integers(1, sum(map(len, LINES)))),
)
def test_corrupted_real_file_reports_every_entry_it_does_not_store(
    joins: set[int], flips: list[tuple[int, int, int]], cut: int | None
) -> None:
    lines = [bytearray(raw) for raw in LINES]
    for i, pos, xor in flips:
        lines[i][pos % len(lines[i])] ^= xor
    out: list[bytes] = []
    where: list[int] = []  # original line index -> 1-based line number in the damaged file
    for i, raw in enumerate(lines):
        if i - 1 in joins and out:
            out[-1] += bytes(raw)
        else:
            out.append(bytes(raw))
        where.append(len(out))
    data = b"\n".join(out) + b"\n"
    if cut is not None:
        data = data[:cut]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / SOURCE.name
        path.write_bytes(data)
        store = MemorySessionStore()
        try:
            fr = claude_code.import_file(store, path)
        except TranscriptError:
            assert store.sessions() == []
            return
    stored: set[str] = set()
    for s in store.sessions():
        stored.update(n.split("@", 1)[0] for n in store.index(s.id).pred)
    kept = data.split(b"\n")
    reported = {line for line, _ in fr.skipped} | {line for line, _, _ in fr.dropped}
    for i, uid in enumerate(UUIDS):
        if not isinstance(uid, str):
            continue
        number = where[i]
        own = b'"uuid":"' + uid.encode() + b'"'  # its own id, not a child's parentUuid naming it
        if number > len(kept) or own not in kept[number - 1]:
            continue  # cut off, or the damage rewrote the entry's own id
        assert uid in stored or number in reported, (uid, number, fr.skipped, fr.dropped)

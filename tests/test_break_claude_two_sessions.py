"""Two Claude Code conversations written into one file are refused, never merged into one session.

Each file is its own session, so a file holding a second conversation (a root entry, no parent
and no compaction link, of another ``sessionId``: two transcripts concatenated) would become one
session of two unrelated roots. It is refused naming the line of the second root. Entries that
change ``sessionId`` along one chain (older builds replayed a session into a new file and went on
under a new id) are one conversation and still import as one session.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from graph.importers import import_file
from graph.importers.report import TranscriptError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
SESSION = b"7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
OTHER = b"11111111-4f1e-4b8a-9c2d-1e5f6a7b8c90"


def _other_conversation() -> bytes:
    """The example as another session: its session id and every uuid changed."""
    text = EXAMPLE.read_bytes().replace(SESSION, OTHER)
    return re.sub(rb'"([0-9a-f]{8})-([0-9a-f]{4})-', rb'"aaaaaaaa-\2-', text)


def test_a_second_conversation_in_the_file_is_refused(tmp_path: Path) -> None:
    merged = tmp_path / f"{SESSION.decode()}.jsonl"
    first = EXAMPLE.read_bytes()
    merged.write_bytes(first + _other_conversation())
    root = next(
        i
        for i, ln in enumerate(_other_conversation().splitlines(), 1)
        if orjson.loads(ln).get("parentUuid", "x") is None
    )
    store = SessionStore(":memory:")
    with pytest.raises(TranscriptError, match=f"line {len(first.splitlines()) + root}"):
        import_file(store, merged)
    assert store.sessions() == []


def test_a_second_conversation_appended_later_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION.decode()}.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    store = SessionStore(":memory:")
    import_file(store, path)
    before = {s.id: store.stats(s.id).nodes for s in store.sessions()}
    with path.open("ab") as f:
        f.write(_other_conversation())
    with pytest.raises(TranscriptError, match="two sessions"):
        import_file(store, path)
    assert {s.id: store.stats(s.id).nodes for s in store.sessions()} == before


def test_a_chain_that_changes_session_id_is_one_session(tmp_path: Path) -> None:
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    path = tmp_path / "replayed.jsonl"
    path.write_bytes(
        b"".join(lines[:half]) + b"".join(ln.replace(SESSION, OTHER) for ln in lines[half:])
    )
    store = SessionStore(":memory:")
    report = import_file(store, path)
    assert report.error is None
    assert report.session_ids[0] == SESSION.decode()
    assert store.stats(SESSION.decode()).nodes == 18

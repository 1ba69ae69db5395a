"""Claude Code files whose ids collide with another session's: only an unbroken copy is left out.

Sanitized transcripts replace ids by placeholders shared across sessions (``u1``, ``a1``...), and a
compaction boundary's text is the same in every session ("Conversation compacted"). A boundary
that matches another session's node after entries that differ is this session's own boundary: it
is kept apart with them (``<uuid>@<session>``), so the session keeps its compaction summary and
what it covers, instead of losing the boundary to the other session as a "copy".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from graph.importers import claude_code
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []


def _entry(sid: str, uuid: str, parent: str | None, role: str, text: str, **extra: Any) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "sessionId": sid,
        "uuid": uuid,
        "timestamp": "2026-01-15T09:00:00.000Z",
        "message": {"role": role, "content": text},
        **extra,
    }


def _compacted(sid: str, words: str) -> bytes:
    """A session of two turns, a compaction boundary, its summary and one turn after it."""
    lines = [
        _entry(sid, "u1", None, "user", f"{words}: first question"),
        _entry(sid, "a1", "u1", "assistant", f"{words}: first answer"),
        {
            "parentUuid": None,
            "logicalParentUuid": "a1",
            "isSidechain": False,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "sessionId": sid,
            "uuid": "cb",
            "timestamp": "2026-01-15T09:00:00.000Z",
            "compactMetadata": {"trigger": "manual", "preTokens": 100},
        },
        _entry(
            sid,
            "cs",
            "cb",
            "user",
            f"{words}: This session is being continued",
            isCompactSummary=True,
        ),
        _entry(sid, "u2", "cs", "user", f"{words}: next question"),
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def test_a_matching_boundary_after_differing_entries_stays_in_its_session(tmp_path: Path) -> None:
    one, two = tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"
    one.write_bytes(_compacted("s1", "[redacted] one"))
    two.write_bytes(_compacted("s2", "[redacted] two"))
    store = MemorySessionStore()
    claude_code.import_file(store, one)
    report = claude_code.import_file(store, two)
    assert report.dropped == []
    nodes = {n.id: n for n in store.nodes("s2")}
    assert set(nodes) == {"u1@s2", "a1@s2", "cb@s2", "cs@s2", "u2@s2"}
    assert nodes["cb@s2"].predecessor == "a1@s2"
    assert nodes["cs@s2"].predecessor == "cb@s2"
    assert nodes["cs@s2"].covers == ("u1@s2", "a1@s2")
    assert [n for n, _, _ in report.relinked] == [1, 2, 3, 4, 5]
    # s1 is as a store holding it alone holds it
    alone = MemorySessionStore()
    claude_code.import_file(alone, one)
    assert dump(store)["s1"] == dump(alone)["s1"]


def test_an_unbroken_copy_is_still_stored_once_in_its_source(tmp_path: Path) -> None:
    one, fork = tmp_path / "s1.jsonl", tmp_path / "s3.jsonl"
    one.write_bytes(_compacted("s1", "same"))
    copy = _compacted("s1", "same").replace(b'"sessionId":"s1"', b'"sessionId":"s3"')
    fork.write_bytes(
        copy + orjson.dumps(_entry("s3", "u3", "u2", "user", "the fork's own")) + b"\n"
    )
    store = MemorySessionStore()
    claude_code.import_file(store, one)
    report = claude_code.import_file(store, fork)
    assert [n for n, _, _ in report.dropped] == [1, 2, 3, 4, 5]
    assert report.relinked == []
    assert [n.id for n in store.nodes("s3")] == ["u3"]

"""Two transcripts that carry one session id (a sanitizer's placeholder, ``[redacted]``).

pi's header ``id`` and Codex's ``session_meta.id`` name the session. Two files of different
conversations with one placeholder id made the second file's import store nothing: its entries
have the same ids (pi's ``<session>/<entry id>``, Codex's ``<thread>:<position>``) and were taken for
the stored ones, silently. The second file is now refused, naming it and the first line that
differs, and nothing of it is stored. The same file read from another path (moved, archived, or
named differently) still imports as a re-import.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.importers import codex, pi
from graph.importers.report import FileReport, TranscriptError
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
PI = ROOT / "tests" / "fixtures" / "pi" / "v3-digest.jsonl"
CODEX = ROOT / "tests" / "fixtures" / "codex" / "rollout-parent.jsonl"

Importer = Callable[[BaseStore, Path], FileReport]


def _placeholder(obj: dict[str, Any]) -> None:
    if obj.get("type") == "session":
        obj["id"] = "[redacted]"
    if obj.get("type") == "session_meta":
        obj["payload"]["id"] = "[redacted]"


def _reworded(obj: dict[str, Any]) -> None:
    text = orjson.dumps(obj).replace(b'"text":"', b'"text":"another conversation: ')
    obj.clear()
    obj.update(orjson.loads(text))


def _write(path: Path, source: Path, *changes: Callable[[dict[str, Any]], None]) -> Path:
    objs = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
    for obj in objs:
        for change in changes:
            change(obj)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    return path


CASES = [
    pytest.param(pi.import_file, PI, id="pi"),
    pytest.param(codex.import_file, CODEX, id="codex"),
]


@pytest.mark.parametrize("importer, source", CASES)
def test_a_second_conversation_with_the_same_placeholder_id_is_refused(
    tmp_path: Path, importer: Importer, source: Path
) -> None:
    first = _write(tmp_path / "a.jsonl", source, _placeholder)
    second = _write(tmp_path / "b.jsonl", source, _placeholder, _reworded)
    store = MemorySessionStore()
    importer(store, first)
    before = dump(store)
    with pytest.raises(TranscriptError) as e:
        importer(store, second)
    assert str(second) in str(e.value) and "line " in str(e.value) and str(first) in str(e.value)
    assert dump(store) == before


@pytest.mark.parametrize("importer, source", CASES)
def test_the_same_file_from_another_path_is_a_re_import(
    tmp_path: Path, importer: Importer, source: Path
) -> None:
    first = _write(tmp_path / "a.jsonl", source, _placeholder)
    moved = tmp_path / "archived" / "a.jsonl"
    moved.parent.mkdir()
    shutil.copy(first, moved)
    store = MemorySessionStore()
    importer(store, first)
    before = dump(store)
    assert importer(store, moved).nodes_added == 0
    assert dump(store) == before


def _claude(path: Path, prefix: str, words: str) -> Path:
    lines = []
    for i in range(3):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(
            {
                "parentUuid": f"{prefix}{i - 1}" if i else None,
                "isSidechain": False,
                "type": role,
                "sessionId": "[redacted]",
                "uuid": f"{prefix}{i}",
                "timestamp": f"2026-01-15T09:00:0{i}.000Z",
                "message": {"role": role, "content": f"{words} {i}"},
            }
        )
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_a_second_claude_conversation_under_the_same_placeholder_id_is_refused(
    tmp_path: Path,
) -> None:
    from graph.importers import claude_code

    first = _claude(tmp_path / "a.jsonl", "a", "one")
    second = _claude(tmp_path / "b.jsonl", "b", "two")
    store = MemorySessionStore()
    claude_code.import_file(store, first)
    before = dump(store)
    with pytest.raises(TranscriptError) as e:
        claude_code.import_file(store, second)
    assert str(second) in str(e.value) and str(first) in str(e.value)
    assert dump(store) == before


def test_a_claude_file_continuing_the_stored_conversation_from_another_file_joins_it(
    tmp_path: Path,
) -> None:
    from graph.importers import claude_code

    first = _claude(tmp_path / "a.jsonl", "a", "one")
    later = tmp_path / "resumed.jsonl"  # an older build's --resume: a new file, the same session
    more = orjson.loads(first.read_bytes().splitlines()[-1])
    more.update(uuid="a3", parentUuid="a2", type="user", message={"role": "user", "content": "on"})
    later.write_bytes(orjson.dumps(more) + b"\n")
    store = MemorySessionStore()
    claude_code.import_file(store, first)
    assert claude_code.import_file(store, later).nodes_added == 1
    assert store.session("[redacted]").head == "a3"

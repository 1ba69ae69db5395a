"""A Codex rollout whose ``forked_from_id`` names its own thread is no fork of anything.

A sanitizer or a buggy build can write the thread's own id there; the rollout then repeats its own
``session_meta`` (as a resumed rollout does). Read as a fork, the second import took the stored
nodes for the copied prefix of a parent and moved the head: a re-import changed the store.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from graph.importers import codex
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
PARENT = ROOT / "tests" / "fixtures" / "codex" / "rollout-parent.jsonl"


def _self_fork(tmp_path: Path) -> tuple[Path, str]:
    lines = PARENT.read_bytes().splitlines(keepends=True)
    meta = orjson.loads(lines[0])
    thread = meta["payload"]["id"]
    meta["payload"]["forked_from_id"] = thread
    first = orjson.dumps(meta) + b"\n"
    path = tmp_path / "rollout-self.jsonl"
    path.write_bytes(first + first + b"".join(lines[1:]))
    return path, thread


def test_a_rollout_forked_from_itself_imports_once_and_again_the_same(tmp_path: Path) -> None:
    path, thread = _self_fork(tmp_path)
    store = MemorySessionStore()
    first = codex.import_file(store, path)
    once = dump(store)
    again = codex.import_file(store, path, resume=False)
    assert dump(store) == once
    assert again.nodes_added == 0
    assert first.session_ids == [thread]
    assert store.session(thread).head == f"{thread}:{len(path.read_bytes().splitlines()) - 1}"
    assert any("names the rollout itself" in n for n in first.notes)


def test_it_stores_what_the_same_rollout_without_the_field_stores(tmp_path: Path) -> None:
    path, thread = _self_fork(tmp_path)
    plain = tmp_path / "plain" / path.name
    plain.parent.mkdir()
    plain.write_bytes(path.read_bytes().replace(f',"forked_from_id":"{thread}"'.encode(), b""))
    a, b = MemorySessionStore(), MemorySessionStore()
    codex.import_file(a, path)
    codex.import_file(b, plain)
    got, want = dump(a), dump(b)
    assert got[thread][1] == want[thread][1]  # the head
    assert got[thread][5].keys() == want[thread][5].keys()  # the nodes

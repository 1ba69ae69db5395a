"""A Codex rollout imported while Codex still writes it, then once it is complete.

Codex writes a prompt's ``response_item``, then its echo (``event_msg`` ``user_message``); a user
item read before its echo would be stored as injected context (role ``system``) and stay so. Every
cut of every rollout (at each line boundary and inside each line, after each ``}``) is imported,
then the whole file: the store must hold what a fresh import of the whole file holds. The real
rollouts are cut after each user item and each echo.


Forks: a fork rollout starts with its own ``session_meta`` (``forked_from_id``), then copies its parent's
``session_meta`` and items, then goes on with its own turns. Read before the copy's end can be
told, it is kept as a session of its own; the read of the finished file places it as a branch of
the parent's session. Every cut of the fork fixture (at each line boundary and inside each line,
the last line torn) is imported, then the whole file: the store must hold what a fresh import of
the whole file holds, with no error and no session left over, whether the parent rollout was
imported first or not.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest

from graph.importers import codex
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore
from tests.importkit import cut_then_whole, dump, fresh_dump

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SESSIONGRAPH_CORPUS", ROOT.parent / "shared" / "corpus"))
FIXTURES = ROOT / "tests" / "fixtures" / "codex"
REAL = sorted((ROOT / "tests" / "fixtures" / "real" / "codex").glob("*.jsonl.gz"))
FORK = FIXTURES / "rollout-fork.jsonl"
PARENT = FIXTURES / "rollout-parent.jsonl"
FORK_ID = "019c18dc-0b80-7123-8012-3456789abcde"


def _cuts(data: bytes) -> list[int]:
    """Byte offsets to cut at: every line end, and inside every line its first byte, its middle
    and each ``}`` (where a torn line's end closes an object the reader could recover)."""
    out: set[int] = set()
    start = 0
    for line in data.splitlines(keepends=True):
        end = start + len(line)
        out |= {start + 1, start + len(line) // 2, end}
        out |= {start + k + 1 for k, byte in enumerate(line) if byte == ord("}")}
        start = end
    return sorted(c for c in out if 0 < c < len(data))


def _store(with_parent: bool) -> BaseStore:
    store = MemorySessionStore()
    if with_parent:
        codex.import_file(store, PARENT)
    return store


@pytest.mark.parametrize("with_parent", [False, True], ids=["fork-alone", "parent-first"])
def test_a_fork_read_while_written_ends_as_a_fresh_read_of_the_whole_file(
    with_parent: bool, tmp_path: Path
) -> None:
    data = FORK.read_bytes()
    for cut in _cuts(data):
        path = tmp_path / f"cut{cut}-{FORK.name}"
        path.write_bytes(data[:cut])
        store = _store(with_parent)
        codex.import_file(store, path)
        path.write_bytes(data)
        report = codex.import_file(store, path)
        fresh = _store(with_parent)
        codex.import_file(fresh, path)
        assert report.error is None
        assert dump(store) == dump(fresh), f"cut at byte {cut}"


def test_the_read_that_places_the_fork_says_it_replaced_the_interim_session(
    tmp_path: Path,
) -> None:
    lines = FORK.read_bytes().splitlines(keepends=True)
    path = tmp_path / FORK.name
    path.write_bytes(b"".join(lines[:3]))  # the fork's meta, the parent's meta, one copied item
    store = MemorySessionStore()
    assert codex.import_file(store, path).session_ids == [FORK_ID]
    path.write_bytes(b"".join(lines))
    report = codex.import_file(store, path)
    assert not store.has_session(FORK_ID)
    assert any(f"replaced session {FORK_ID}" in note for note in report.notes)


def test_a_session_of_the_fork_id_from_elsewhere_is_not_removed(tmp_path: Path) -> None:
    store = MemorySessionStore()
    store.create_session("mine", id=FORK_ID, metadata={"runtime": "other"})
    report = codex.import_file(store, FORK)
    assert report.error is None
    assert store.session(FORK_ID).title == "mine"


def _rollouts() -> list[Path]:
    corpus = sorted((CORPUS / "codex").glob("*.jsonl")) if CORPUS.is_dir() else []
    return sorted(FIXTURES.glob("*.jsonl")) + corpus


@pytest.mark.parametrize("path", _rollouts(), ids=lambda p: p.name)
def test_a_rollout_read_while_written_ends_as_a_fresh_read_of_the_whole_file(
    path: Path, tmp_path: Path
) -> None:
    data = path.read_bytes()
    grown = tmp_path / path.name
    grown.write_bytes(data)
    expected = fresh_dump(codex.import_file, grown)
    for cut in _cuts(data):
        assert dump(cut_then_whole(codex.import_file, grown, data, cut)) == expected, (
            f"cut at byte {cut}"
        )


def _after_prompts_and_echoes(data: bytes, most: int = 6) -> list[int]:
    """Line boundaries right after a user item or an echo: the first ones, and ``most`` in all."""
    out, at = [], 0
    for line in data.splitlines(keepends=True):
        at += len(line)
        obj = orjson.loads(line)
        p = obj.get("payload") or {}
        user = obj.get("type") == "response_item" and p.get("role") == "user"
        echo = obj.get("type") == "event_msg" and p.get("type") == "user_message"
        if (user or echo) and at < len(data):
            out.append(at)
    step = max(1, len(out) // most)
    return sorted(set(out[:3] + out[3::step][: most - 3]))


@pytest.mark.parametrize("gz", REAL, ids=lambda p: p.name)
def test_a_real_rollout_cut_between_a_prompt_and_its_echo_ends_as_a_fresh_read(
    gz: Path, tmp_path: Path
) -> None:
    data = gzip.decompress(gz.read_bytes())
    path = tmp_path / gz.name.removesuffix(".gz")
    path.write_bytes(data)
    expected = fresh_dump(codex.import_file, path)
    for cut in _after_prompts_and_echoes(data):
        assert dump(cut_then_whole(codex.import_file, path, data, cut)) == expected, (
            f"{gz.name} cut at byte {cut}"
        )


def test_a_prompt_read_before_its_echo_waits_for_it(tmp_path: Path) -> None:
    lines = PARENT.read_bytes().splitlines(keepends=True)
    prompt = next(
        k for k, raw in enumerate(lines) if b"Delete the biggest one" in raw and b'"user"' in raw
    )
    path = tmp_path / PARENT.name
    path.write_bytes(b"".join(lines[: prompt + 1]))  # the prompt, not yet its echo
    store = MemorySessionStore()
    report = codex.import_file(store, path)
    (sid,) = report.session_ids
    assert f"{sid}:{prompt}" not in {n.id for n in store.nodes(sid)}
    assert any(note.startswith(f"line {prompt + 1} on: a prompt") for note in report.notes)
    path.write_bytes(b"".join(lines))
    codex.import_file(store, path)
    assert store.node(f"{sid}:{prompt}").role == "user"

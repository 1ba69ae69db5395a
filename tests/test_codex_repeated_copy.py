"""A Codex rollout concatenated with itself (``cat a.jsonl a.jsonl``) imports once.

A rollout has no parent pointers, so before, the second copy's items followed the first in file
order: every turn twice in one session. The repeat is recognised by its lines' bytes (a run from
a later ``session_meta`` on that repeats the file's first lines), left out and reported with its
line numbers; the session is the one the single file makes, with the same node ids.
"""

from __future__ import annotations

from pathlib import Path

from graph.importers import import_file
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []

ROLLOUT = Path(__file__).parent / "fixtures" / "codex" / "rollout-parent.jsonl"


def _doubled(tmp_path: Path, times: int = 2, extra: bytes = b"") -> Path:
    path = tmp_path / "rollout-2026-02-01T10-00-00-019c18a5-1d00-7123-8012-3456789abcde.jsonl"
    path.write_bytes(ROLLOUT.read_bytes() * times + extra)
    return path


def _single(tmp_path: Path) -> MemorySessionStore:
    once = tmp_path / "once"
    once.mkdir(exist_ok=True)
    store = MemorySessionStore()
    import_file(store, _doubled(once, 1))
    return store


def test_a_rollout_concatenated_with_itself_imports_once_and_reports_the_copy(
    tmp_path: Path,
) -> None:
    lines = len(ROLLOUT.read_bytes().splitlines())
    store = MemorySessionStore()
    report = import_file(store, _doubled(tmp_path))
    assert dump(store) == dump(_single(tmp_path))
    assert [n for n, _ in report.skipped] == list(range(lines + 1, 2 * lines + 1))
    assert all("repeats line" in why for _, why in report.skipped)
    assert report.skipped[0][1].startswith("repeats line 1 ")
    again = import_file(store, _doubled(tmp_path))
    assert again.nodes_added == 0 and dump(store) == dump(_single(tmp_path))


def test_three_copies_import_once(tmp_path: Path) -> None:
    store = MemorySessionStore()
    report = import_file(store, _doubled(tmp_path, 3))
    lines = len(ROLLOUT.read_bytes().splitlines())
    assert len(report.skipped) == 2 * lines
    assert dump(store) == dump(_single(tmp_path))


def test_a_copy_appended_after_an_import_adds_nothing(tmp_path: Path) -> None:
    """The resumed path hands a new ``session_meta`` to a full read, which leaves the copy out."""
    store = MemorySessionStore()
    path = _doubled(tmp_path, 1)
    import_file(store, path)
    before = dump(store)
    path.write_bytes(ROLLOUT.read_bytes() * 2)
    report = import_file(store, path)
    assert report.nodes_added == 0 and len(report.skipped) == len(ROLLOUT.read_bytes().splitlines())
    assert dump(store) == before

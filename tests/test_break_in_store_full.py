"""An import into a SQLite store that runs out of room: the error says so, and nothing is kept.

SQLite rolls a transaction back by itself when the disk is full (``SQLITE_FULL``); the store's own
``ROLLBACK`` then failed with "cannot rollback - no transaction is active", and that error replaced
the one that said what happened. A full disk is simulated with ``PRAGMA max_page_count``, which
makes SQLite answer exactly as it does on a full file system.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.errors import StoreError
from graph.importers import claude_code, import_file, pi
from graph.store.sqlite import SessionStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
BIG = ROOT / "tests" / "fixtures" / "real" / "claude-code" / "spotter-tool-heavy.jsonl"
SMALL = ROOT / "tests" / "fixtures" / "pi" / "v3-digest.jsonl"


def _pages(store: SessionStore) -> int:
    (pages,) = store.conn.execute("PRAGMA page_count").fetchone()
    return int(pages)


def _needed(tmp_path: Path) -> int:
    """The pages the import of ``BIG`` adds to a store holding ``SMALL``."""
    store = SessionStore(tmp_path / "measure.db")
    pi.import_file(store, SMALL)
    before = _pages(store)
    claude_code.import_file(store, BIG)
    return _pages(store) - before


def _nearly_full(path: Path, room: int) -> SessionStore:
    store = SessionStore(path)
    pi.import_file(store, SMALL)
    store.conn.execute(f"PRAGMA max_page_count = {_pages(store) + room}")
    return store


@pytest.mark.parametrize("share", [0.0, 0.5, 0.9])
def test_a_full_disk_is_named_and_the_file_leaves_nothing(tmp_path: Path, share: float) -> None:
    needed = _needed(tmp_path)
    assert needed > 2
    store = _nearly_full(tmp_path / "s.db", int(needed * share))
    before = dump(store)
    with pytest.raises(StoreError, match="full"):
        claude_code.import_file(store, BIG)
    assert not store.conn.in_transaction
    assert dump(store) == before
    # with room again, the file imports as into a store that never ran out
    store.conn.execute("PRAGMA max_page_count = 1073741823")
    import_file(store, BIG)
    fresh = SessionStore(tmp_path / "fresh.db")
    pi.import_file(fresh, SMALL)
    import_file(fresh, BIG)
    assert dump(store) == dump(fresh)


def test_a_full_disk_inside_a_callers_transaction_is_named_too(tmp_path: Path) -> None:
    store = _nearly_full(tmp_path / "s.db", _needed(tmp_path) // 2)
    before = dump(store)
    with pytest.raises(StoreError, match="full"), store.atomic():
        claude_code.import_file(store, BIG)  # its transaction is a savepoint of the caller's
    assert not store.conn.in_transaction
    assert dump(store) == before

"""Helpers for the importer tests: what an import decided, and a file read while it is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graph.importers.report import FileReport
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore

__all__ = ["cut_then_whole", "dump", "fresh_dump", "full_reads"]


def dump(store: BaseStore) -> dict[str, Any]:
    """Everything an import decides: sessions (title, head, metadata, links) and their nodes."""
    out: dict[str, Any] = {}
    for s in store.sessions():
        idx = store.index(s.id)
        nodes = {
            n.id: (n.predecessor, n.kind, n.role, n.content, dict(n.metadata), n.covers)
            for n in store.nodes(s.id)
        }
        rewound = sorted(i for i in idx.pred if idx.is_rewound(i))
        meta = dict(s.metadata)
        meta.pop("path", None)
        out[s.id] = (s.title, s.head, meta, s.spawned_from, s.parent_session, nodes, rewound)
    return out


def fresh_dump(importer: Callable[..., FileReport], path: Path, **options: Any) -> dict[str, Any]:
    """:func:`dump` of a new store after one import of ``path`` (``options`` go to the importer)."""
    store = MemorySessionStore()
    importer(store, path, **options)
    return dump(store)


def cut_then_whole(
    importer: Callable[[BaseStore, Path], FileReport], path: Path, data: bytes, cut: int
) -> BaseStore:
    """A store after importing ``data[:cut]`` at ``path`` (a file being written), then all of it."""
    store = MemorySessionStore()
    path.write_bytes(data[:cut])
    importer(store, path)
    path.write_bytes(data)
    importer(store, path)
    return store


def full_reads(monkeypatch: pytest.MonkeyPatch, importer: ModuleType) -> list[Path]:
    """Record every file ``importer``'s full-import path (its ``_import``) reads.

    The resumed path never gets there, so an empty list after an import says it resumed.
    """
    seen: list[Path] = []
    real = importer._import

    def spy(store: BaseStore, path: Path, *args: Any) -> Any:
        seen.append(path)
        return real(store, path, *args)

    monkeypatch.setattr(importer, "_import", spy)
    return seen

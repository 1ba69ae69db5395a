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

__all__ = ["LINKED_LATER", "cut_then_whole", "dump", "fresh_dump", "full_reads", "relinked"]


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


_PI = "c4f8e2a6-7d1b-4e3c-9a5f-0b2d4e6f8a13"
LINKED_LATER: dict[str, dict[int, set[str]]] = {
    # The kept head of a preserved segment (line 4) is re-linked under the summary by the boundary
    # (line 8) and the summary (line 9): stored before them, it keeps the link it had.
    "claude-code/preserved-segment.jsonl": {
        cut: {"32fe5464-035d-4f64-8a80-f53c6c6b4c72"} for cut in range(4, 9)
    },
    # Damage: line 3's parent is line 4; line 6's parent is line 7, whose parent is line 6 (a cycle
    # one import cuts at line 7).
    "pi/v3-damaged.jsonl": {
        3: {f"{_PI}/10000003"},
        6: {f"{_PI}/10000005", f"{_PI}/10000006"},
    },
}
"""Cuts after which one import of the finished file links some entries otherwise than they were
stored (links are content, fixed once stored: see the importers' docstrings) -> those entries."""


def relinked(got: dict[str, Any], want: dict[str, Any]) -> set[str]:
    """The nodes whose link (and the metadata saying why) differ; everything else must be equal."""
    assert got.keys() == want.keys()
    out: set[str] = set()
    for sid, session in got.items():
        nodes, wanted = session[5], want[sid][5]
        assert (*session[:5], session[6]) == (*want[sid][:5], want[sid][6])
        assert nodes.keys() == wanted.keys()
        for nid, (pred, *rest) in nodes.items():
            if (pred, *rest) != wanted[nid]:
                assert pred != wanted[nid][0], f"{nid}: more than its link differs"
                assert (rest[:3], rest[4]) == (list(wanted[nid][1:4]), wanted[nid][5])
                out.add(nid)
    return out

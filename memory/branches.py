"""Which branch a record came from, which records are alternatives, which are on the head's branch.

A record stands on the turns it cites. Per session it cites, its branch is named by its *tip* (the
deepest cited node: the others are its ancestors or beside it) and its *fork point* (the nearest
ancestor of the tip, or the tip itself, with more than one successor: where the branch left the
others; None when the branch never forked). Both are read from the session store's predecessor links
each time, so they follow a rewind or a new fork without anything to keep in step.

Two records are *alternatives* when they cite one session and every node one cites is on a branch
exclusive of every node the other cites (neither is an ancestor of the other): "use Flask" on one fork
of a node, "use FastAPI" on the other. Search can keep to the head's branch (a record is on it when,
for every session it cites, one of its cited nodes is on that session's head branch; a record citing
no session is on every branch), and the organizer never merges alternatives into one statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graph.store.base import BaseStore
from memory.records import Record
from memory.workspace import MemoryWorkspace

__all__ = ["Branch", "BranchView", "alternatives", "record_branches"]


@dataclass(frozen=True)
class Branch:
    """The branch of one session a record stands on."""

    session_id: str
    tip_id: str
    """The deepest node of the session the record cites."""
    fork_point: str | None
    """The nearest ancestor-or-self of the tip with more than one successor; None if none."""


class BranchView:
    """The branch facts of a workspace's records against a session store, read once.

    Args:
        ws: The workspace.
        store: The session store the cited turns came from. Sessions no longer in it (removed)
            are treated as unknown: their citations constrain nothing.
    """

    def __init__(self, ws: MemoryWorkspace, store: BaseStore) -> None:
        self.store = store
        self.cited: dict[str, dict[str, set[str]]] = {}
        for rid, session_id, node_id in ws.db.execute(
            "SELECT c.record_id, s.session_id, s.node_id FROM citations c "
            "JOIN sources s ON s.id = c.source_id"
        ):
            self.cited.setdefault(rid, {}).setdefault(session_id, set()).add(node_id)
        self._pred: dict[str, dict[str, str | None] | None] = {}
        self._heads: dict[str, set[str]] = {}

    def _preds(self, session_id: str) -> dict[str, str | None] | None:
        if session_id not in self._pred:
            known = self.store.has_session(session_id)
            self._pred[session_id] = dict(self.store.index(session_id).pred) if known else None
        return self._pred[session_id]

    def _ancestry(self, session_id: str, node: str) -> list[str]:
        pred = self._preds(session_id) or {}
        out: list[str] = []
        at: str | None = node
        while at is not None and at in pred:
            out.append(at)
            at = pred[at]
        return out

    def head_branch(self, session_id: str) -> set[str]:
        """The node ids of the session's head branch (empty for an unknown or empty session)."""
        if session_id not in self._heads:
            known = self.store.has_session(session_id)
            head = self.store.session(session_id).head if known else None
            self._heads[session_id] = set(self._ancestry(session_id, head)) if head else set()
        return self._heads[session_id]

    def branches(self, record_id: str) -> list[Branch]:
        """The record's branch in each session it cites that the store still holds, by session id."""
        out = []
        for session_id, nodes in sorted(self.cited.get(record_id, {}).items()):
            pred = self._preds(session_id)
            if pred is None:
                continue
            known = [n for n in nodes if n in pred]
            if not known:
                continue
            tip = max(known, key=lambda n: (len(self._ancestry(session_id, n)), n))
            successors: dict[str, int] = {}
            for p in pred.values():
                if p is not None:
                    successors[p] = successors.get(p, 0) + 1
            fork = next(
                (n for n in self._ancestry(session_id, tip) if successors.get(n, 0) > 1), None
            )
            out.append(Branch(session_id, tip, fork))
        return out

    def on_head_branch(self, record_id: str) -> bool:
        """Whether the record keeps to the head's branch in every session it cites."""
        for session_id, nodes in self.cited.get(record_id, {}).items():
            if self._preds(session_id) is None:
                continue
            if not nodes & self.head_branch(session_id):
                return False
        return True

    def exclusive(self, a: str, b: str) -> bool:
        """Whether records ``a`` and ``b`` are alternatives (see the module doc)."""
        shared = self.cited.get(a, {}).keys() & self.cited.get(b, {}).keys()
        for session_id in shared:
            if self._preds(session_id) is None:
                continue
            lines_a = {n: set(self._ancestry(session_id, n)) for n in self.cited[a][session_id]}
            lines_b = {n: set(self._ancestry(session_id, n)) for n in self.cited[b][session_id]}
            if all(
                x not in line_y and y not in line_x
                for x, line_x in lines_a.items()
                for y, line_y in lines_b.items()
            ):
                return True
        return False


def record_branches(ws: MemoryWorkspace, store: BaseStore, record: Record) -> list[Branch]:
    """The branches ``record`` stands on (see :class:`BranchView`)."""
    return BranchView(ws, store).branches(record.id)


def alternatives(ws: MemoryWorkspace, store: BaseStore) -> Callable[[str, str], bool]:
    """Return a predicate telling whether two records (by id) are alternatives.

    For :class:`~memory.organizer.OfflineOrganizer`'s ``apart``: the records' citations are read now.
    """
    return BranchView(ws, store).exclusive

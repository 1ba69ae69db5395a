"""A compact DAG builder for scenario tests: ``build(store, "m1-m2-m3; m2-f1-f2")``.

``build`` and ``chain`` live in :mod:`graph.testing.contract` (the contract suite uses them); ``turns``
is here.

Segments are separated by ``;``; each is a chain of node labels joined by ``-``. A segment whose first
label already exists continues from it (a fork when it already has a child); otherwise its first label
is a new root. Labels are the node ids and the text. Roles alternate by depth (user at the root), and
the head ends on the last label of the last segment unless ``head`` says otherwise.
"""

from __future__ import annotations

from graph.store.base import BaseStore
from graph.testing.contract import build, chain

__all__ = ["build", "chain", "turns"]


def turns(
    store: BaseStore, sid: str, n: int, *, after: str | None = None, tag: str = "m"
) -> list[str]:
    """Append ``n`` alternating user/assistant turns (after ``after``, else at the head); their ids."""
    ids: list[str] = []
    for i in range(n):
        kw = {"predecessor": after} if (i == 0 and after is not None) else {}
        role = "user" if i % 2 == 0 else "assistant"
        ids.append(store.append(sid, f"{tag}{i}", role=role, **kw).id)
    return ids

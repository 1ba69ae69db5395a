"""Read-only networkx projections of a session, built on demand (DESIGN.md 3).

For analysis, validation and drawing; never used on the hot paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from graph.index import KIND_MASK, REWOUND

if TYPE_CHECKING:
    from graph.store import BaseStore

__all__ = ["to_networkx"]

_KINDS = ("message", "summary", "event")
_ROLES = ("user", "assistant", "system", "tool")


def to_networkx(store: BaseStore, session_id: str) -> nx.DiGraph:
    """Return a frozen ``DiGraph`` of the session: an edge predecessor -> node for every node.

    Node attributes: ``kind``, ``role``, ``rewound`` (bool), ``written`` (provider -> value),
    ``covers`` (tuple of ids), ``head`` (bool). Edges carry ``link="predecessor"``; compaction
    summaries add ``summary -> covered`` edges with ``link="covers"``. The graph attribute
    ``session_id`` names the session. The graph is frozen: mutating it raises ``NetworkXError``.

    Raises:
        UnknownSessionError: no such session.
    """
    idx = store.index(session_id)
    g = nx.DiGraph(session_id=session_id)
    written: dict[str, dict[str, str]] = {}
    for provider, pm in idx.marks.items():
        for n, v in pm.items():
            written.setdefault(n, {})[provider] = v
    for n, p in idx.pred.items():
        b = idx.bits[n]
        g.add_node(
            n,
            kind=_KINDS[b & KIND_MASK],
            role=_ROLES[(b >> 2) & 3],
            rewound=bool(b & REWOUND),
            written=written.get(n, {}),
            covers=idx.covers.get(n, ()),
            head=n == idx.head,
        )
        if p is not None:
            g.add_edge(p, n, link="predecessor")
    for s, cv in idx.covers.items():
        for c in cv:
            g.add_edge(s, c, link="covers")
    return nx.freeze(g)

"""Read-only networkx projections of a session, built on demand.

For analysis, validation and drawing; never used on the hot paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from graph.store.base import BaseStore

__all__ = ["to_networkx"]


def to_networkx(store: BaseStore, session_id: str) -> nx.DiGraph:
    """Return a frozen ``DiGraph`` of the session: an edge predecessor -> node for every node.

    Node attributes: ``kind``, ``role``, ``rewound`` (bool), ``written`` (provider -> the values written),
    ``covers`` (tuple of ids), ``head`` (bool). Edges carry ``link="predecessor"``; compaction
    summaries add ``summary -> covered`` edges with ``link="covers"``. The graph attribute
    ``session_id`` names the session. The graph is frozen: mutating it raises ``NetworkXError``.

    Raises:
        UnknownSessionError: no such session.
    """
    idx = store.index(session_id)
    g = nx.DiGraph(session_id=session_id)
    written: dict[str, dict[str, list[str]]] = {}
    for (provider, value), ids in sorted(idx.marks.items()):
        for n in ids:
            written.setdefault(n, {}).setdefault(provider, []).append(value)
    for n, p in idx.pred.items():
        g.add_node(
            n,
            kind=idx.kind_of(n).value,
            role=idx.role_of(n).value,
            rewound=idx.is_rewound(n),
            written={k: tuple(v) for k, v in written.get(n, {}).items()},
            covers=idx.covers.get(n, ()),
            head=n == idx.head,
        )
        if p is not None:
            g.add_edge(p, n, link="predecessor")
    for s, cv in idx.covers.items():
        for c in cv:
            g.add_edge(s, c, link="covers")
    return nx.freeze(g)

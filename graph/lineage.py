"""Which spawned sessions are abandoned work: the node that started them was rewound.

A sub-agent session hangs off a node of its parent session (:attr:`~graph.models.Session.spawned_from`).
When that node, or the node that started any session above it, is stamped rewound (the user went back
to before the sub-agent was started), the sub-agent's turns are work the conversation abandoned: they
are not owed to a consumer that walks every session, though a consumer asked for one by id still reads
it.
"""

from __future__ import annotations

from graph.models import Session
from graph.store.base import BaseStore

__all__ = ["is_abandoned"]


def is_abandoned(store: BaseStore, session: Session) -> bool:
    """Whether ``session`` is a spawned session whose spawning node (or an ancestor's) is rewound.

    The walk goes up the chain of parent sessions, at most once per session (a chain that loops is
    not abandoned by that alone).

    Args:
        store: The store holding the sessions.
        session: The session to look at.

    Returns:
        True when the spawning node of the session, or of a session it descends from, is stamped
        rewound; False for a session that was not spawned, or whose parent session is not stored.
    """
    seen: set[str] = set()
    s = session
    while s.spawned_from and s.parent_session and s.id not in seen:
        seen.add(s.id)
        if not store.has_session(s.parent_session):
            return False
        idx = store.index(s.parent_session)
        if s.spawned_from in idx.pred and idx.is_rewound(s.spawned_from):
            return True
        s = store.session(s.parent_session)
    return False

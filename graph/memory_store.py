"""The in-memory twin of the SQLite store: the same operations over plain dicts.

It passes the same contract suite as :class:`graph.sqlite_store.SessionStore` and suits tests and
short-lived embedding. A transaction snapshots the tables and restores them on an exception, so every
write is all-or-nothing here too. Nothing is shared between processes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from graph.errors import DuplicateSessionError, UnknownSessionError
from graph.ids import NodeId, SessionId
from graph.index import SessionIndex, kind_of, role_of
from graph.models import SearchHit, Session, from_micros, to_micros
from graph.search import (
    RANKED_CANDIDATES,
    Query,
    bm25,
    doc_freqs,
    make_snippet,
    matches,
    split_marked,
    tokens,
)
from graph.store import KEEP_ALL, BaseStore, NodeRow, SessionFilter

__all__ = ["MemorySessionStore"]


class MemorySessionStore(BaseStore):
    """A session store held in this process's memory."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._nodes: dict[str, NodeRow] = {}
        self._order: dict[str, list[str]] = {}
        self._marks: dict[str, dict[str, dict[str, str]]] = {}
        self._rewound: dict[str, set[str]] = {}
        self._snapshots: list[tuple[Any, ...]] = []

    def _tables(self) -> tuple[Any, ...]:
        return (self._sessions, self._nodes, self._order, self._marks, self._rewound)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Snapshot the tables; restore them if the block raises (nests)."""
        self._snapshots.append(copy.deepcopy(self._tables()))
        try:
            yield
        except BaseException:
            (self._sessions, self._nodes, self._order, self._marks, self._rewound) = (
                self._snapshots.pop()
            )
            self._forget()
            raise
        self._snapshots.pop()

    def close(self) -> None:
        """Drop everything."""
        self.__init__()  # type: ignore[misc]

    def _db_changed(self) -> bool:
        return False

    def _db_catch_up(self, index: SessionIndex) -> None:
        sid = index.session_id
        if sid not in self._sessions:
            raise UnknownSessionError(sid)
        if index.pred:
            return  # every write of this process already updated the cached index
        for nid in self._order[sid]:
            row = self._nodes[nid]
            index.add(nid, row.predecessor, row.bits)
            if row.covers:
                index.covers[nid] = row.covers
        for provider, pm in self._marks[sid].items():
            index.marks[provider] = dict(pm)
        index.stamp_rewound(self._rewound[sid])
        index.head = self._sessions[sid]["head"]
        index.rev = self._sessions[sid]["rev"]

    def _session(self, s: dict[str, Any]) -> Session:
        return Session.model_construct(
            id=s["id"],
            title=s["title"],
            created_at=from_micros(s["created_at"]),
            updated_at=from_micros(s["updated_at"]),
            head=s["head"],
            metadata=copy.deepcopy(s["metadata"]),
            spawned_from=s["spawned_from"],
            parent_session=s["parent_session"],
        )

    def _db_session(self, session_id: str) -> Session:
        if session_id not in self._sessions:
            raise UnknownSessionError(session_id)
        return self._session(self._sessions[session_id])

    def _db_sessions(
        self, limit: int | None, parent: str | None, keep: SessionFilter = KEEP_ALL
    ) -> list[Session]:
        rows = [
            s
            for s in self._sessions.values()
            if (parent is None or s["parent_session"] == parent)
            and self._keeps(keep, s)
            and (keep.since is None or s["updated_at"] >= keep.since)
        ]
        rows.sort(key=lambda s: (s["updated_at"], s["id"]), reverse=True)
        return [self._session(s) for s in rows[:limit]]

    def _keeps(self, keep: SessionFilter, s: dict[str, Any]) -> bool:
        runtime, project = self._origin(s["metadata"], s["parent_session"])
        return (keep.runtime is None or runtime == keep.runtime) and keep.keeps_project(project)

    def _db_search(
        self,
        query: Query,
        sessions: Sequence[str] | None,
        keep: SessionFilter,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        indexed = [(seq, r, tokens(r.text)) for seq, r in enumerate(self._nodes.values()) if r.text]
        if not indexed:
            return []
        freqs = doc_freqs(query, (t for _, _, t in indexed))
        avg = sum(len(t) for _, _, t in indexed) / len(indexed)
        wanted = None if sessions is None else set(sessions)
        found = []
        for seq, r, toks in indexed:
            if wanted is not None and r.session_id not in wanted:
                continue
            if keep.since is not None and r.created_at < keep.since:
                continue
            if not self._keeps(keep, self._sessions[r.session_id]) or not matches(query, toks):
                continue
            found.append((seq, r, toks))
        found = found[-RANKED_CANDIDATES:]  # the newest matches, as the SQLite store ranks
        ranked = [(bm25(query, toks, freqs, len(indexed), avg), seq, r) for seq, r, toks in found]
        ranked.sort(key=lambda f: (f[0], f[1]))
        hits = []
        for rank, _, r in ranked[offset : offset + limit]:
            snippet, spans = split_marked(make_snippet(query, r.text))
            hits.append(
                SearchHit.model_construct(
                    session_id=SessionId(r.session_id),
                    node_id=NodeId(r.id),
                    created_at=from_micros(r.created_at),
                    kind=kind_of(r.bits),
                    role=role_of(r.bits),
                    snippet=snippet,
                    spans=spans,
                    rank=rank,
                    rewound=r.id in self._rewound[r.session_id],
                )
            )
        return hits

    def _db_insert_session(self, session: Session) -> None:

        if session.id in self._sessions:
            raise DuplicateSessionError(session.id)
        self._sessions[session.id] = {
            "id": session.id,
            "title": session.title,
            "created_at": to_micros(session.created_at),
            "updated_at": to_micros(session.updated_at),
            "head": None,
            "rev": 0,
            "metadata": copy.deepcopy(dict(session.metadata)),
            "spawned_from": session.spawned_from,
            "parent_session": session.parent_session,
        }
        self._order[session.id] = []
        self._marks[session.id] = {}
        self._rewound[session.id] = set()

    def _db_set_session_info(
        self, session_id: str, title: str | None, metadata: dict[str, Any] | None
    ) -> None:
        s = self._sessions[session_id]
        if title is not None:
            s["title"] = title
        if metadata is not None:
            s["metadata"] = copy.deepcopy(metadata)

    def _db_update_session(self, session_id: str, head: str | None, updated_at: int | None) -> int:
        s = self._sessions[session_id]
        s["head"] = head
        if updated_at is not None:
            s["updated_at"] = max(s["updated_at"], updated_at)
        s["rev"] += 1
        return int(s["rev"])

    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        for r in rows:
            self._nodes[r.id] = r
            self._order[r.session_id].append(r.id)

    def _db_rows(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        return {i: self._nodes[i] for i in ids if i in self._nodes}

    def _db_insert_marks(
        self, session_id: str, provider: str, value: str, ids: Sequence[str]
    ) -> int:
        pm = self._marks[session_id].setdefault(provider, {})
        for n in ids:
            pm[n] = value
        self._sessions[session_id]["rev"] += 1
        return int(self._sessions[session_id]["rev"])

    def _db_insert_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        self._rewound[session_id].update(ids)

"""The in-memory twin of the SQLite store: the same operations over plain dicts.

It passes the same contract suite as :class:`graph.store.sqlite.SessionStore` and suits tests and
short-lived embedding. Each write primitive records how to undo itself; a transaction (or a nested
savepoint) that raises replays its undo records newest first, so every write is all-or-nothing here too,
at a cost proportional to what the transaction wrote (no copy of the tables). Nothing is shared between
processes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from graph.errors import DuplicateSessionError, UnknownSessionError
from graph.index import SessionIndex
from graph.models import SearchHit, Session, from_micros, to_micros
from graph.search import (
    RANKED_CANDIDATES,
    Query,
    bm25,
    doc_freqs,
    matches,
    tokens,
)
from graph.store.base import KEEP_ALL, BaseStore, NodeRow, SessionFilter, search_hit

__all__ = ["MemorySessionStore"]


class MemorySessionStore(BaseStore):
    """A session store held in this process's memory."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._nodes: dict[str, NodeRow] = {}
        self._order: dict[str, list[str]] = {}
        self._marks: dict[str, dict[tuple[str, str], set[str]]] = {}
        self._rewound: dict[str, set[str]] = {}
        self._import_states: dict[str, bytes] = {}
        self._undo: list[Callable[[], None]] = []
        self._depth = 0

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Open a transaction, or a savepoint inside one: on an exception, undo what it wrote."""
        start = len(self._undo)
        self._depth += 1
        try:
            yield
        except BaseException:
            while len(self._undo) > start:
                self._undo.pop()()
            self._forget()
            raise
        finally:
            self._depth -= 1
        if self._depth == 0:
            self._undo.clear()

    def _log(self, undo: Callable[[], None]) -> None:
        if self._depth:
            self._undo.append(undo)

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
        for key, pm in self._marks[sid].items():
            index.marks[key] = set(pm)
        index.stamp_rewound(self._rewound[sid])
        index.head = self._sessions[sid]["head"]
        index.rev = self._sessions[sid]["rev"]

    def _db_has_session(self, session_id: str) -> bool:
        return session_id in self._sessions

    def _db_locate(self, ids: Sequence[str]) -> dict[str, str]:
        return {i: self._nodes[i].session_id for i in ids if i in self._nodes}

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
        return [
            search_hit(
                query,
                (
                    r.id,
                    r.session_id,
                    r.created_at,
                    r.bits,
                    r.content,
                    rank,
                    r.id in self._rewound[r.session_id],
                ),
            )
            for rank, _, r in ranked[offset : offset + limit]
        ]

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
        sid = session.id

        def undo() -> None:
            for table in (self._sessions, self._order, self._marks, self._rewound):
                del table[sid]

        self._log(undo)

    def _db_set_session_info(
        self, session_id: str, title: str | None, metadata: dict[str, Any] | None
    ) -> None:
        s = self._sessions[session_id]
        old = dict(s)
        self._log(lambda: s.update(old))
        if title is not None:
            s["title"] = title
        if metadata is not None:
            s["metadata"] = copy.deepcopy(metadata)

    def _db_set_spawn(self, session_id: str, spawned_from: str | None, parent_session: str) -> None:
        s = self._sessions[session_id]
        old = dict(s)
        self._log(lambda: s.update(old))
        s["spawned_from"] = spawned_from
        s["parent_session"] = parent_session

    def _db_update_session(self, session_id: str, head: str | None, updated_at: int | None) -> int:
        s = self._sessions[session_id]
        old = dict(s)
        self._log(lambda: s.update(old))
        s["head"] = head
        if updated_at is not None:
            s["updated_at"] = max(s["updated_at"], updated_at)
        s["rev"] += 1
        return int(s["rev"])

    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        order = self._order[rows[0].session_id] if rows else []
        mark = len(order)
        ids = [r.id for r in rows]

        def undo() -> None:
            del order[mark:]
            for i in ids:
                self._nodes.pop(i, None)

        self._log(undo)
        for r in rows:
            self._nodes[r.id] = r
            self._order[r.session_id].append(r.id)

    def _db_rows(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        return {i: self._nodes[i] for i in ids if i in self._nodes}

    def _db_insert_marks(
        self, session_id: str, provider: str, value: str, ids: Sequence[str]
    ) -> int:
        marks = self._marks[session_id]
        key = (provider, value)
        pm = marks.setdefault(key, set())
        new = [n for n in ids if n not in pm]
        s = self._sessions[session_id]
        rev = s["rev"]

        def undo() -> None:
            pm.difference_update(new)
            if not pm:
                marks.pop(key, None)
            s["rev"] = rev

        self._log(undo)
        pm.update(new)
        s["rev"] += 1
        return int(s["rev"])

    def _db_insert_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        done = self._rewound[session_id]
        new = [n for n in ids if n not in done]
        self._log(lambda: done.difference_update(new))
        done.update(new)

    def _db_delete_rewound(self, session_id: str, ids: Sequence[str]) -> None:
        done = self._rewound[session_id]
        gone = [n for n in ids if n in done]
        self._log(lambda: done.update(gone))
        done.difference_update(gone)

    def _db_set_flags(self, session_id: str, rows: Sequence[NodeRow]) -> None:
        before = [self._nodes[r.id] for r in rows]

        def undo() -> None:
            for r in before:
                self._nodes[r.id] = r

        self._log(undo)
        for r in rows:
            self._nodes[r.id] = r

    def _db_import_state(self, key: str) -> dict[str, Any] | None:
        raw = self._import_states.get(key)
        return None if raw is None else dict(orjson.loads(raw))

    def _db_set_import_state(self, key: str, state: dict[str, Any]) -> None:
        before = self._import_states.get(key)

        def undo() -> None:
            if before is None:
                self._import_states.pop(key, None)
            else:
                self._import_states[key] = before

        self._log(undo)
        self._import_states[key] = orjson.dumps(state)

    def _db_delete_sessions(self, session_ids: Sequence[str]) -> None:
        for sid in session_ids:
            order = self._order.pop(sid)
            nodes = {nid: self._nodes.pop(nid) for nid in order}
            saved = (self._sessions.pop(sid), self._marks.pop(sid), self._rewound.pop(sid))

            def undo(
                sid: str = sid,
                order: list[str] = order,
                nodes: dict[str, NodeRow] = nodes,
                saved: tuple[Any, Any, Any] = saved,
            ) -> None:
                self._order[sid] = order
                self._nodes.update(nodes)
                self._sessions[sid], self._marks[sid], self._rewound[sid] = saved

            self._log(undo)

"""Recall: lexical search over the records, one query for every caller.

A query is read one way everywhere (the agent's ``search``, ``sessiongraph memory search``, the MCP
tool, the web page): it is cut to ``caps.MAX_QUERY_CHARS`` characters and split into words (at most
32, duplicates dropped); each word is a plain term bound as a parameter, never query syntax, so quotes,
``*``, ``:``, ``(``, ``NEAR``, ``AND`` or ``-`` typed by a user are text and never raise. Terms are
OR-ed and ranked, best first, ties by record id; a query with no word matches nothing.

Words match by their English stem on both backends (``retry`` finds ``retries`` and ``retrying``):
FTS5's Porter stemmer in SQLite, the ``english`` text search configuration in PostgreSQL (which also
ignores stop words such as ``the``). The ranking is the backend's: FTS5's bm25 in SQLite, ``ts_rank``
over a ``tsvector`` (queried with ``websearch_to_tsquery``) in PostgreSQL; either way a lower score is
a better match. The index is
ensured when the workspace opens and asserted by every search: its absence raises
:class:`~memory.errors.SearchIndexMissingError`, never an empty result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from memory import caps
from memory.database import WorkspaceDatabase
from memory.records import Source
from memory.transactions import State

__all__ = ["MAX_TERMS", "SearchHit", "hits", "matches", "query_terms"]

MAX_TERMS = 32
"""Words of a query that count (the rest are ignored)."""


@dataclass(frozen=True)
class SearchHit:
    """One record found by a search."""

    record_id: str
    topic: str
    headings: tuple[str, ...]
    content: str
    score: float
    """The backend's rank: lower is a better match (results come best first)."""
    sources: tuple[tuple[str, str, str], ...]
    """The cited sources as ``(source_id, session_id, node_id)``."""


def query_terms(query: str) -> list[str]:
    """The words of ``query`` that are searched for: at most :data:`MAX_TERMS`, in order, unique."""
    return list(dict.fromkeys(re.findall(r"\w+", query[: caps.MAX_QUERY_CHARS])))[:MAX_TERMS]


def matches(
    db: WorkspaceDatabase,
    query: str,
    *,
    limit: int | None = None,
    offset: int = 0,
    keep: Callable[[str], bool] | None = None,
) -> tuple[int, list[tuple[str, float]]]:
    """The total and one page of the records matching ``query``: ``(total, [(record_id, score)])``.

    Args:
        db: The workspace's database.
        query: What the person or agent typed.
        limit: Results in the page (None: all).
        offset: Results skipped before the page.
        keep: Only the records (by id) it accepts count, in the total too.

    Raises:
        SearchIndexMissingError: the full-text index is gone.
    """
    terms = query_terms(query)
    if not terms:
        return 0, []
    if keep is None:
        ranked = db.match(terms, limit, offset)
        total = db.count_matches(terms) if limit is not None else len(ranked)
        return total, ranked
    kept = [(rid, score) for rid, score in db.match(terms) if keep(rid)]
    end = None if limit is None else offset + limit
    return len(kept), kept[offset:end]


def hits(
    state: State,
    sources: Callable[[Collection[str]], list[Source]],
    ranked: list[tuple[str, float]],
) -> list[SearchHit]:
    """The hits of ``ranked`` records with their cited sources' origins (records gone are dropped).

    Args:
        state: The records.
        sources: Reads archived sources by id (:meth:`memory.workspace.MemoryWorkspace.sources`).
        ranked: ``(record_id, score)`` best first, as :func:`matches` returns them.
    """
    found = [(state.records[rid], score) for rid, score in ranked if rid in state.records]
    srcs = {s.id: s for s in sources({c.source for r, _ in found for c in r.citations})}
    return [
        SearchHit(
            rec.id,
            rec.topic,
            rec.headings,
            rec.content,
            float(score),
            tuple(
                (c.source, srcs[c.source].session_id, srcs[c.source].node_id)
                for c in rec.citations
                if c.source in srcs
            ),
        )
        for rec, score in found
    ]

"""``recent`` and ``open`` count messages and find live tips by the store's queries, building no index,
and get the answers the index gives (forks, rewinds, events after a message, artifact forks, summaries)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builder import build
from typer.testing import CliRunner

from graph import Kind, MemorySessionStore, Role, SessionStore, UnknownSessionError
from graph.store.base import BaseStore
from graph.store.sqlite import SessionStore as SqliteStore
from graph.testing.contract import StoreFactory
from memory.lookup import open_session, recent_sessions


def _build_shapes(store: BaseStore) -> list[str]:
    """Sessions whose tips and message counts take the corner cases of both definitions."""
    forked = build(store, "a-b-c-d; b-x-y", session="forked")
    rewound = build(store, "r1-r2-r3-r4", session="rewound")
    store.rewind(rewound, "r2")
    store.append(rewound, "after the rewind", role=Role.USER)
    events = build(store, "e1-e2", session="events")
    store.append(events, "progress", kind=Kind.EVENT, role=Role.SYSTEM)
    artifact = build(store, "p1-p2", session="artifact")
    store.append(
        artifact, "side", role=Role.ASSISTANT, predecessor="p1", metadata={"artifact": True}
    )
    store.set_head(artifact, "p2")
    summarized = build(store, "s1-s2-s3-s4", session="summarized")
    store.compact(summarized, ["s1", "s2"], "the start", layout="inline", id="sum")
    sibling = build(store, "t1-t2-t3", session="sibling")
    store.compact(sibling, ["t2", "t3"], "the middle", layout="sibling", id="sib")
    empty = store.create_session("empty").id
    return [forked, rewound, events, artifact, summarized, sibling, empty]


def _shapes(db: Path) -> list[str]:
    store = SessionStore(db)
    ids = _build_shapes(store)
    store.close()
    return ids


def test_counts_and_tips_without_the_index_equal_the_index(store_factory: StoreFactory) -> None:
    ids = _build_shapes(store_factory())
    fresh = store_factory()
    shared = isinstance(fresh, MemorySessionStore)  # one store: its indexes are already built
    by_query = {sid: (fresh.message_count(sid), fresh.tips(sid)) for sid in ids}
    assert shared or not fresh._cache, "a count or a tip query built an index"
    indexed = store_factory()
    for sid in ids:
        indexed.index(sid)
        assert by_query[sid] == (len(indexed.message_ids(sid)), indexed.tips(sid)), sid
    assert by_query["forked"] == (4, ["y", "d"])
    assert by_query[ids[-1]] == (0, [])  # the empty session
    with pytest.raises(UnknownSessionError):
        fresh.tips("nope")
    with pytest.raises(UnknownSessionError):
        fresh.message_count("nope")


@pytest.mark.parametrize("command", ["recent", "open"])
def test_recent_and_open_build_no_session_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    from graph.cli.commands import _register_commands, app

    _register_commands([command])
    db = tmp_path / "s.db"
    ids = _shapes(db)
    indexed = SessionStore(db)
    for sid in ids:
        indexed.index(sid)
    expected = {s.id: [s.messages, list(s.live_tips)] for s in recent_sessions(indexed)}
    assert open_session(indexed, "forked").live_tips == ("y", "d")
    indexed.close()

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a session's index was built")

    monkeypatch.setattr(SqliteStore, "_index", refuse)
    monkeypatch.setattr(SqliteStore, "index", refuse)
    args = ["recent", "--json"] if command == "recent" else ["open", "forked", "--json"]
    r = CliRunner().invoke(app, ["--db", str(db), *args])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    rows = got if command == "recent" else [got]
    assert {s["id"]: [s["messages"], s["live_tips"]] for s in rows} == (
        expected if command == "recent" else {"forked": expected["forked"]}
    )

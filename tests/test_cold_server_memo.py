"""The server's kept answers: the same as a fresh server's after every kind of change, and kept.

A long-running server keeps each session's counts, live tips and branch messages until the store says
the session changed (its cached index's identity, revision and size). These tests compare what it
answers with what a server that keeps nothing answers, after appends at the head, forks, head moves,
rewinds, a rebuilt index and another process's writes, and check that an unchanged session is not
recomputed however often it is asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from graph import SessionStore
from graph.server.app import Memo
from memory.lookup import branch_messages
from tests.builder import build, turns
from tests.serverkit import client, make_app

ROUTES = (
    "/api/sessions",
    "/api/sessions/s",
    "/api/lookup/sessions",
    "/api/lookup/sessions/s",
    "/api/lookup/sessions/s/transcript?count=30",
    "/api/lookup/sessions/s/transcript?count=3",
    "/api/lookup/sessions/s/latest",
)


def _answers(c: TestClient) -> dict[str, Any]:
    out = {}
    for route in ROUTES:
        got = c.get(route)
        assert got.status_code == 200, (route, got.text)
        out[route] = got.json()
    return out


def _fresh(path: Path, workspace: Path) -> dict[str, Any]:
    """What a server started now on the file answers (a new store: nothing kept, nothing cached)."""
    store = SessionStore(path)
    try:
        with client(make_app(store, workspace)) as c:
            return _answers(c)
    finally:
        store.close()


@pytest.fixture
def served(tmp_path: Path) -> tuple[SessionStore, TestClient, Path, Path]:
    path = tmp_path / "s.db"
    store = SessionStore(path)
    build(store, "m1-m2-m3-m4-m5-m6; m3-f1-f2")
    store.set_head("s", "m6")
    c = client(make_app(store, tmp_path / "ws"))
    return store, c, path, tmp_path / "ws"


def _check(served: tuple[SessionStore, TestClient, Path, Path]) -> None:
    store, c, path, ws = served
    assert _answers(c) == _fresh(path, ws)


def test_kept_answers_match_a_fresh_server_after_every_change(
    served: tuple[SessionStore, TestClient, Path, Path],
) -> None:
    store = served[0]
    _check(served)
    turns(store, "s", 3)  # growth at the head
    _check(served)
    store.set_head("s", "f2")  # onto the side branch: the kept messages are not a prefix
    _check(served)
    turns(store, "s", 2, tag="g")
    _check(served)
    store.rewind("s", "f1")  # stamps f2 and after it: a count of rewound nodes changes
    _check(served)
    turns(store, "s", 2, tag="r")
    _check(served)
    store.set_head("s", "m6")
    _check(served)
    store.rebuild_index("s")
    _check(served)
    store.mark("s", ["m1", "m2"], "memory", "ws")  # a marker write bumps the revision only
    _check(served)


def test_another_process_writing_is_seen(
    served: tuple[SessionStore, TestClient, Path, Path],
) -> None:
    _, c, path, ws = served
    before = _answers(c)
    other = SessionStore(path)
    try:
        turns(other, "s", 2, tag="o")
        build(other, "x1-x2", session="t")
    finally:
        other.close()
    after = _answers(c)
    assert after != before
    assert after == _fresh(path, ws)
    lookup = c.get("/api/lookup/sessions/s").json()
    assert lookup["messages"] == 8


def test_an_unchanged_session_is_not_recomputed(
    served: tuple[SessionStore, TestClient, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, c, _, _ = served
    _answers(c)
    calls: list[str] = []
    for name in ("stats", "tips", "message_count"):
        real = getattr(store, name)
        monkeypatch.setattr(
            store,
            name,
            lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1],
        )
    for _ in range(3):
        _answers(c)
    assert calls == []
    turns(store, "s", 1)
    _answers(c)
    assert "stats" in calls  # the changed session is counted again


def test_memo_messages_extends_at_the_head_and_walks_again_otherwise(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    build(store, "m1-m2-m3-m4; m2-f1")
    store.set_head("s", "m4")
    memo = Memo()
    assert list(memo.messages(store, "s")) == branch_messages(store, "s")
    kept = memo.messages(store, "s")
    assert memo.messages(store, "s") is kept  # nothing changed: the same answer
    turns(store, "s", 3)
    assert list(memo.messages(store, "s")) == branch_messages(store, "s")
    store.set_head("s", "f1")
    assert list(memo.messages(store, "s")) == branch_messages(store, "s") == ["m1", "m2", "f1"]
    store.set_head("s", "m4")
    assert memo.messages(store, "s")[-1] == "m4"
    store.rewind("s", "m2")  # unseen: the memo still holds m4's branch when the head returns
    store.set_head("s", "m4")  # back onto rewound nodes: left out, as the branch leaves them out
    assert list(memo.messages(store, "s")) == branch_messages(store, "s") == ["m1", "m2"]
    store.close()


def test_memo_keys_name_the_cached_index_not_the_view(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    build(store, "m1-m2")
    first = Memo.index_key(store, "s")
    views = [store.index("s") for _ in range(3)]  # views kept alive: their ids differ
    assert Memo.index_key(store, "s") == first
    assert len({id(v) for v in views}) == 3
    store.rebuild_index("s")
    assert Memo.index_key(store, "s") != first
    store.close()

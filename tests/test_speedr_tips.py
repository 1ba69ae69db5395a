"""The live tips kept in the index equal a full scan after any appends, rewinds and refreshes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from graph import Kind, MemorySessionStore, SessionStore
from graph.index import _scan_live_tips
from graph.store.base import BaseStore


def _scanned(store: BaseStore, sid: str) -> list[str]:
    idx = store._index(sid)
    return _scan_live_tips(idx.pred, idx.bits)


def _random_history(store: BaseStore, other: BaseStore | None, seed: int) -> str:
    rnd = random.Random(seed)
    sid = store.create_session("t", id="t").id
    ids: list[str] = []
    for step in range(160):
        writer = other if other is not None and rnd.random() < 0.3 else store
        op = rnd.random()
        nid = f"n{step}"
        if op < 0.55 or not ids:
            pred = rnd.choice([*ids[-6:], None]) if ids and rnd.random() < 0.3 else None
            kind = Kind.EVENT if rnd.random() < 0.2 else Kind.MESSAGE
            meta = {"artifact": True} if rnd.random() < 0.1 else {}
            kw = {"predecessor": pred} if pred is not None or not ids else {}
            role = rnd.choice(["user", "assistant"])
            writer.append(sid, f"text {step}", role=role, kind=kind, id=nid, metadata=meta, **kw)
            ids.append(nid)
        elif op < 0.7:
            head = writer.session(sid).head
            branch = writer.branch_ids(sid, head) if head else []
            if len(branch) > 2:
                writer.rewind(sid, rnd.choice(branch[:-1]))
        elif op < 0.8:
            writer.stamp_rewound(sid, rnd.sample(ids, min(2, len(ids))))
        elif op < 0.9:
            writer.set_head(sid, rnd.choice(ids))
        else:
            writer.add_nodes(
                sid,
                [
                    writer.node(ids[-1]).model_copy(
                        update={
                            "id": f"{nid}b{i}",
                            "predecessor": ids[-1] if i == 0 else f"{nid}b{i - 1}",
                        }
                    )
                    for i in range(3)
                ],
            )
            ids += [f"{nid}b{i}" for i in range(3)]
        if rnd.random() < 0.5:
            assert store.tips(sid) == _scanned(store, sid), step
    return sid


@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"seed{s}")
def test_tips_kept_in_the_index_equal_a_scan_in_memory(seed: int) -> None:
    store = MemorySessionStore()
    sid = _random_history(store, None, seed)
    assert store.tips(sid) == _scanned(store, sid)


@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"seed{s}")
def test_tips_kept_in_the_index_equal_a_scan_with_another_writer(tmp_path: Path, seed: int) -> None:
    db = tmp_path / "s.db"
    store, other = SessionStore(db), SessionStore(db)
    sid = _random_history(store, other, seed)
    assert store.tips(sid) == _scanned(store, sid)
    assert store.tips(sid) == SessionStore(db).tips(sid)  # a fresh store scans


def test_an_append_after_the_tips_were_listed_updates_them_without_a_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = SessionStore(":memory:")
    sid = store.create_session("t", id="t").id
    a = store.append(sid, "a", role="user", id="a")
    store.append(sid, "b", role="assistant", id="b")
    store.append(sid, "f", role="assistant", id="f", predecessor=a.id)
    assert store.tips(sid) == ["f", "b"]
    import graph.index

    def no_scan(*args: object) -> list[str]:
        raise AssertionError("scanned again")

    monkeypatch.setattr(graph.index, "_scan_live_tips", no_scan)
    store.append(sid, "e", role="system", kind="event", id="e")
    store.append(sid, "g", role="user", id="g")
    assert store.tips(sid) == ["g", "b"]
    assert store.stats(sid).live_tips == 2

"""A fresh store answers pending by walking its rows from the head, with the answer the index gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from builder import build, chain

from graph import Eligible, Kind, Role, SessionStore, UnknownNodeError, UnknownSessionError
from graph.index import MEMORY_ELIGIBLE, NodeInfo
from graph.store.base import BaseStore

WITH_SUMMARIES = Eligible(kinds=frozenset({Kind.MESSAGE, Kind.SUMMARY}))
ANY_ROLE = Eligible(roles=frozenset(Role), require_text=False, exclude_scheduled=False)


def _scenario(db: Path, seed: int) -> tuple[str, list[str]]:
    """:func:`scenario` in a SQLite file, closed afterwards."""
    st = SessionStore(db)
    got = scenario(st, seed)
    st.close()
    return got


def scenario(st: BaseStore, seed: int) -> tuple[str, list[str]]:
    """A session with forks, a rewind, both compaction layouts and markers of two values.

    Returns:
        ``(session id, every node id in index order)``.
    """
    rnd = random.Random(seed)
    sid = build(st, f"{chain('m', 1, 12)}; m4-f1-f2-f3; m8-g1-g2")
    st.set_head(sid, "m12")
    st.rewind(sid, "m10")
    st.append(sid, "after the rewind", role="user", id="r1")
    st.append(sid, "and on", role="assistant", id="r2")
    st.compact(sid, ["m1", "m2", "m3"], "summary of m1..m3", id="s1")  # inline, at the head
    st.append(sid, "later", role="user", id="r3")
    st.compact(sid, ["f2", "f3"], "summary of f2..f3", layout="sibling", id="s2")
    st.append(sid, "on the sibling", role="assistant", id="s2a")
    st.append(sid, "no text", role="user", id="e1", predecessor="r3", metadata={"scheduled": True})
    st.set_head(sid, "e1")
    order = list(st.index(sid).pred)
    for value in ("w1", "w2"):
        prefix = order[: rnd.randrange(len(order))]
        for head in [*st.tips(sid), "s2a"]:
            todo = [n for n in st.pending_ids(sid, "memory", value, head=head) if n in prefix]
            if todo:
                st.mark(sid, todo, "memory", value)
    return sid, order


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
@pytest.mark.parametrize(
    "eligible",
    [MEMORY_ELIGIBLE, WITH_SUMMARIES, ANY_ROLE],
    ids=["memory", "with-summaries", "any-role"],
)
def test_cold_pending_equals_the_indexed_walk_from_every_node(
    tmp_path: Path, seed: int, eligible: Eligible
) -> None:
    db = tmp_path / "s.db"
    sid, order = _scenario(db, seed)
    warm = SessionStore(db)
    warm.index(sid)
    for head in [None, *order]:
        for value in ("w1", "w2", "never"):
            cold = SessionStore(db)
            want = warm.pending_ids(sid, "memory", value, head=head, eligible=eligible)
            assert cold.pending_ids(sid, "memory", value, head=head, eligible=eligible) == want
            assert sid not in cold._cache  # answered without building the index
            got = SessionStore(db).pending(sid, "memory", value, head=head, eligible=eligible)
            assert got == warm.pending(sid, "memory", value, head=head, eligible=eligible)
            cold.close()


def test_cold_pending_reads_only_the_walked_rows(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 400))
    st.mark(sid, [f"m{i}" for i in range(1, 391)], "memory", "w")
    st.close()
    seen: list[str] = []
    cold = SessionStore(db, tracer=lambda sql, params: seen.append(sql))
    seen.clear()
    got = cold.pending(sid, "memory", "w")
    assert [n.id for n in got] == [f"m{i}" for i in range(391, 401)]
    assert all(n.written == {} for n in got)
    assert not [s for s in seen if "ORDER BY seq" in s]  # no index build
    assert cold.pending_ids(sid, "memory", "w") == [n.id for n in got]


def test_the_second_read_of_a_session_builds_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 40))
    st.mark(sid, [f"m{i}" for i in range(1, 31)], "memory", "w")
    st.close()
    cold = SessionStore(db)
    first = cold.pending_ids(sid, "memory", "w")
    assert sid not in cold._cache  # the first read walks the rows
    assert cold.pending_ids(sid, "memory", "w") == first
    assert sid in cold._cache  # the second builds the index: later reads are in memory


def test_a_predicate_that_is_not_an_eligible_builds_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 6))
    st.close()

    def users(info: NodeInfo) -> bool:
        return info.role is Role.USER

    cold = SessionStore(db)
    assert cold.pending_ids(sid, "memory", "w", eligible=users) == ["m1", "m3", "m5"]
    assert sid in cold._cache


def test_cold_pending_raises_for_unknown_sessions_and_heads(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 3))
    st.create_session("empty", id="empty")
    st.close()
    with pytest.raises(UnknownSessionError):
        SessionStore(db).pending("nope", "memory", "w")
    with pytest.raises(UnknownNodeError):
        SessionStore(db).pending_ids(sid, "memory", "w", head="nope")
    with pytest.raises(UnknownNodeError):
        SessionStore(db).pending(sid, "memory", "w", head="m1@elsewhere")
    assert SessionStore(db).pending("empty", "memory", "w") == []

"""The warm ``pending_ids`` path: one freshness check, and the one-mask walk equal to the full walk."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from builder import build, chain

from graph import Eligible, Kind, Role, SessionStore, walks
from graph.index import MEMORY_ELIGIBLE, NodeInfo

WITH_SUMMARIES = Eligible(kinds=frozenset({Kind.MESSAGE, Kind.SUMMARY}))
ANY_ROLE = Eligible(roles=frozenset(Role), require_text=False, exclude_scheduled=False)


def _not_tool(info: NodeInfo) -> bool:
    return info.role is not Role.TOOL


def _scenario(st: SessionStore, seed: int, summaries: bool) -> str:
    """Forks, a rewind, a scheduled turn, a tool turn, markers of two values; summaries if asked."""
    rnd = random.Random(seed)
    sid = build(st, f"{chain('m', 1, 12)}; m4-f1-f2-f3; m8-g1-g2")
    st.set_head(sid, "m12")
    st.rewind(sid, "m10")
    st.append(sid, "after the rewind", role="user", id="r1")
    st.append(sid, "a tool's answer", role="tool", id="t1")
    if summaries:
        st.compact(sid, ["m1", "m2", "m3"], "summary of m1..m3", id="s1")
        st.compact(sid, ["f2", "f3"], "summary of f2..f3", layout="sibling", id="s2")
    st.append(sid, "", role="user", id="e1", predecessor="r1", metadata={"scheduled": True})
    order = list(st.index(sid).pred)
    for value in ("w1", "w2"):
        prefix = order[: rnd.randrange(len(order))]
        for head in st.tips(sid):
            todo = [n for n in st.pending_ids(sid, "memory", value, head=head) if n in prefix]
            if todo:
                st.mark(sid, todo, "memory", value)
    return sid


@pytest.mark.parametrize("summaries", [False, True], ids=["plain", "summaries"])
@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_the_hot_walk_returns_what_the_full_walk_returns(
    tmp_path: Path, seed: int, summaries: bool
) -> None:
    st = SessionStore(tmp_path / "s.db")
    sid = _scenario(st, seed, summaries)
    raw, view = st._index(sid), st.index(sid)
    assert bool(raw.covers) is summaries
    for eligible in (MEMORY_ELIGIBLE, WITH_SUMMARIES, ANY_ROLE, _not_tool):
        for head in [None, *raw.pred]:
            for value in ("w1", "w2", "never"):
                start = raw.head if head is None else head
                want = walks.walk_pending(raw, start, "memory", value, eligible).ids
                assert walks.pending_ids(raw, start, "memory", value, eligible) == want
                assert walks.pending_ids(view, start, "memory", value, eligible) == want
                got = st.pending_ids(sid, "memory", value, head=head, eligible=eligible)
                assert got == want
    st.close()


def test_a_cached_index_is_checked_once_and_still_sees_other_writers(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    st, other = SessionStore(db), SessionStore(db)
    sid = build(st, chain("m", 1, 6))
    assert st.pending_ids(sid, "memory", "w") == [f"m{i}" for i in range(1, 7)]
    reads: list[int] = []
    check = st._db_changed

    def counted() -> bool:
        reads.append(1)
        return check()

    st._db_changed = counted  # type: ignore[method-assign]
    assert st.pending_ids(sid, "memory", "w")[0] == "m1"
    assert len(reads) == 1
    other.mark(sid, ["m1", "m2", "m3"], "memory", "w")
    assert st.pending_ids(sid, "memory", "w") == ["m4", "m5", "m6"]
    other.append(sid, "m7", role="user", id="m7")
    assert st.pending_ids(sid, "memory", "w") == ["m4", "m5", "m6", "m7"]
    assert st.pending_ids(sid, "memory", "w", head="m5") == ["m4", "m5"]
    st.close()
    other.close()

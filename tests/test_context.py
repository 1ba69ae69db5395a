"""The model-visible context: each covered span replaced by its latest summary, standing where it was.

The order is the one the runtimes send to the model: pi emits the compaction summary, then the kept
entries (written before the compaction entry), then what follows; Claude Code starts after its
boundary with the summary; Codex replaces the history with the compaction's replacement.
"""

from __future__ import annotations

from graph.models import Node
from graph.store.base import BaseStore
from tests.builder import build, chain


def texts(nodes: list[Node]) -> list[str]:
    return [n.content if isinstance(n.content, str) else n.id for n in nodes]


def test_summary_stands_before_the_turns_it_kept(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 20))
    s = store.compact(sid, [f"m{i}" for i in range(1, 19)], "s", layout="inline", role="user")
    assert s.predecessor == "m20"
    store.append(sid, "m21", role="user", id="m21")
    store.append(sid, "m22", role="user", id="m22")
    assert texts(store.context(sid)) == ["s", "m19", "m20", "m21", "m22"]
    assert texts(store.context(sid, "m20")) == [f"m{i}" for i in range(1, 21)]


def test_a_span_stopping_short_of_the_head_in_the_sibling_layout(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 4))
    s = store.compact(sid, ["m1", "m2"], "s", layout="sibling")
    assert s.predecessor is None
    store.append(sid, "after", role="user", id="x1")
    assert texts(store.context(sid)) == ["s", "after"]
    # The old line is untouched: its context is still the whole of it.
    assert texts(store.context(sid, "m4")) == ["m1", "m2", "m3", "m4"]


def test_sibling_summary_in_the_middle_keeps_its_place(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 5))
    s = store.compact(sid, ["m3", "m4"], "s", layout="sibling")
    assert s.predecessor == "m2"
    store.append(sid, "after", role="user", id="x1")
    assert texts(store.context(sid)) == ["m1", "m2", "s", "after"]


def test_a_later_compaction_stands_for_the_earlier_one_and_its_span(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 6))
    store.compact(sid, ["m1", "m2", "m3"], "s1", layout="inline", id="s1")
    store.append(sid, "m7", role="user", id="m7")
    store.append(sid, "m8", role="user", id="m8")
    # pi's second compaction: everything before its first kept entry m7, the first summary included.
    store.compact(sid, ["m1", "m2", "m3", "m4", "m5", "m6", "s1"], "s2", layout="inline", id="s2")
    store.append(sid, "m9", role="user", id="m9")
    assert texts(store.context(sid)) == ["s2", "m7", "m8", "m9"]


def test_a_summary_covering_an_earlier_summary_hides_that_summary_s_span(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 3))
    store.compact(sid, ["m1", "m2"], "s1", layout="inline", id="s1")  # follows m3
    store.append(sid, "m4", role="user", id="m4")
    store.compact(sid, ["s1", "m4"], "s2", layout="inline", id="s2")
    # s1 stood before m3 (which it kept); s2 takes s1's place, and m1, m2 are gone through s1.
    assert texts(store.context(sid)) == ["s2", "m3"]


def test_an_older_summary_whose_span_a_later_one_covers_is_left_out(store: BaseStore) -> None:
    sid = build(store, chain("m", 1, 4))
    store.compact(sid, ["m1", "m2"], "s1", layout="inline", id="s1")
    store.set_head(sid, "m4")
    store.compact(sid, ["m1", "m2", "m3"], "s2", layout="inline", id="s2")
    store.append(sid, "m5", role="user", id="m5", predecessor="s2")
    # s1 hangs off m4 beside s2; on s2's branch only s2 stands for m1..m3.
    assert texts(store.context(sid)) == ["s2", "m4", "m5"]

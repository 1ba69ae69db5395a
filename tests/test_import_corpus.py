"""Every real transcript of the shared corpus imports, with the counts and head read off the files.

The expected numbers were derived by reading each file (uuid/parentUuid, id/parentId, file order),
applying the modelling rules of :mod:`graph.importers`: a compaction boundary hangs off its logical
parent (so a compacted Claude Code file has one root), an inline sidechain is a spawned session, a
Claude Code rewind stamps the abandoned branch, pi forks stay live, Codex items chain in file order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import MemorySessionStore
from graph.importers import detect_format, import_paths

CASES = {
    # file: (format, session, nodes, roots, forks, rewound, summaries, spawned, head)
    "claude-code/agentlogs-compact.jsonl": (
        "claude-code",
        "0e26ec2f-937e-482c-b889-bc126f996913",
        11, 1, 0, 0, 1, 0,
        "6b911413-edc7-479e-83d0-acbaddbc8ba7",
    ),
    "claude-code/agentlogs-subagent-inline.jsonl": (
        "claude-code",
        "609efeca-2f51-4118-b077-e91c9fe63f73",
        7, 1, 0, 0, 0, 1,
        "e4a406ad-cf91-43f6-8ba2-52242b2013e7",
    ),
    "claude-code/spotter-subagent-session.jsonl": (
        "claude-code",
        "491e126e-1e71-469c-ade2-fcc8af567c74",
        93, 1, 0, 0, 0, 0,  # linear in the runtime: its 10 fork points are all artifact forks
        "2d63528d-8c70-4878-9dff-9c008a1f85fd",  # its last message; hook entries after it are events
    ),
    "claude-code/ccl-dag-compact-after-rewind.jsonl": (
        "claude-code", "s1", 12, 1, 1, 2, 1, 0, "p1a",
    ),
    "pi/agentlogs-pi-branched.jsonl": (
        "pi",
        "a9642bdf-2c10-4503-abb2-081990e56318",
        15, 1, 1, 0, 0, 0,
        "a9642bdf-2c10-4503-abb2-081990e56318/2bcf0b7d",
    ),
    "codex/agentlogs-codex-crud.jsonl": (
        "codex",
        "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b",
        37, 1, 0, 0, 0, 0,
        "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b:37",
    ),
}  # fmt: skip


def test_the_corpus_holds_exactly_the_files_expected(corpus: Path) -> None:
    found = {str(p.relative_to(corpus)) for p in corpus.rglob("*.jsonl")}
    assert found == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES), ids=lambda n: n.split("/")[-1])
def test_corpus_file_imports_with_exact_counts_and_head(corpus: Path, name: str) -> None:
    fmt, sid, nodes, roots, forks, rewound, summaries, spawned, head = CASES[name]
    path = corpus / name
    assert detect_format(path) == fmt
    store = MemorySessionStore()
    report = import_paths(store, [path])
    (fr,) = report.files
    assert fr.error is None and fr.skipped == [] and fr.dangling == []
    assert fr.session_ids[0] == sid
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.rewound, st.summaries, st.spawned) == (
        nodes, roots, forks, rewound, summaries, spawned,
    )  # fmt: skip
    assert store.session(sid).head == head
    if fmt == "claude-code" and not rewound:
        assert store.tips(sid) == [head]  # no user branch: one live tip, the head
    assert fr.nodes_added == sum(report.stats[s].nodes for s in fr.session_ids)
    again = import_paths(store, [path])
    assert again.nodes_added == 0 and store.stats(sid) == st


def test_compacted_claude_code_summary_covers_the_branch_before_the_boundary(corpus: Path) -> None:
    store = MemorySessionStore()
    import_paths(store, [corpus / "claude-code/agentlogs-compact.jsonl"])
    summary = store.node("cff5fe4f-d7c3-4631-8580-3176d62c0e62")
    boundary = store.node("a623034a-2670-4ca8-83f6-b21d2b5eb3c0")
    assert boundary.predecessor == "844dd3c8-1580-48b3-89e1-e6fe7e674ff8"
    assert boundary.metadata["parentUuid"] is None
    assert summary.kind == "summary" and summary.predecessor == boundary.id
    assert [c[:8] for c in summary.covers] == [
        "801d461f", "8bab5784", "e3380389", "3648cc91", "14c028b4", "844dd3c8",
    ]  # fmt: skip
    pending = store.pending("0e26ec2f-937e-482c-b889-bc126f996913", "memory", "w")
    assert summary.id not in {n.id for n in pending}


def test_rewind_after_compaction_stamps_the_first_attempt(corpus: Path) -> None:
    store = MemorySessionStore()
    import_paths(store, [corpus / "claude-code/ccl-dag-compact-after-rewind.jsonl"])
    assert [n.id for n in store.nodes("s1", ["b1u", "b1a", "b2u"]) if n.rewound] == ["b1u", "b1a"]
    assert store.node("cs").covers == ("u1", "a1", "b2u", "b2a", "b2u2", "b2a2")
    assert [n.id for n in store.pending("s1", "memory", "w")] == [
        "u1", "a1", "b2u", "b2a", "b2u2", "b2a2", "p1u", "p1a",
    ]  # fmt: skip


def test_inline_sidechain_is_spawned_from_the_task_call(corpus: Path) -> None:
    store = MemorySessionStore()
    import_paths(store, [corpus / "claude-code/agentlogs-subagent-inline.jsonl"])
    (child,) = store.spawns("609efeca-2f51-4118-b077-e91c9fe63f73")
    assert child.spawned_from == "577cbc05-76bb-42f3-9cbc-e284c73ee1bf"
    assert [n.id[:8] for n in store.branch(child.id)] == ["cd49a45d", "f716e66b"]


def test_pi_fork_keeps_both_branches_live(corpus: Path) -> None:
    store = MemorySessionStore()
    import_paths(store, [corpus / "pi/agentlogs-pi-branched.jsonl"])
    sid = "a9642bdf-2c10-4503-abb2-081990e56318"
    fork = list(store.index(sid).children[f"{sid}/5b978642"])
    assert fork == [f"{sid}/e8682aa0", f"{sid}/b90647f9"]
    assert set(store.tips(sid)) == {f"{sid}/760dc598", f"{sid}/2bcf0b7d"}
    assert store.session(sid).metadata["header"]["version"] == 3


def test_the_whole_corpus_imports_in_one_call(corpus: Path) -> None:
    store = MemorySessionStore()
    report = import_paths(store, [corpus])
    assert len(report.files) == len(CASES) and not report.failed
    assert report.nodes_added == 11 + 9 + 93 + 12 + 15 + 37

"""The importers on hand-written transcripts: what the corpus lacks (rewinds, damaged lines, pi v1 and
v3 summaries, a Codex fork with a copied prefix, sub-agent files), re-imports, growth and failures."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import orjson
import pytest

from graph import MemorySessionStore
from graph.importers import (
    TranscriptError,
    claude_code,
    codex,
    detect_format,
    import_paths,
    pi,
    transcript_files,
)
from graph.index import ARTIFACT
from graph.store.base import BaseStore

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


def cc(tag: str, name: str) -> str:
    """The uuid a hand-written fixture gives the entry ``name`` (uuid5-derived, version-4 shaped)."""
    h = uuid.uuid5(uuid.NAMESPACE_URL, f"sessiongraph/{tag}/{name}").hex
    return str(uuid.UUID(h[:12] + "4" + h[13:16] + "8" + h[17:]))


def ids(nodes: list) -> list[str]:
    return [n.id for n in nodes]


# ------------------------------------------------------------------------------ Claude Code


def test_damaged_claude_code_file_is_repaired_and_reported(store: BaseStore) -> None:
    fr = claude_code.import_file(store, FIX / "claude-code/rewind-damaged.jsonl")
    assert fr.skipped == [(12, "torn write (truncated last line)")]
    assert fr.repaired == [
        (9, "2 JSON values on one line, split"),
        (10, "invalid UTF-8 replaced with U+FFFD"),
    ]
    sid = "3e8f1a20-6b7c-4d5e-8f90-a1b2c3d4e5f6"
    J = {k: cc("damaged", k) for k in "u1 a1 u2 a2 u3 a3 p1 r1 a4 u4 a5".split()}
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.rewound, st.summaries) == (11, 1, 1, 2, 0)
    assert store.index(sid).bits[J["p1"]] & ARTIFACT  # the progress entry beside r1: not a branch
    assert store.session(sid).head == J["a5"]
    assert store.node(J["u4"]).text == "Danke sch\ufffdn"
    assert store.node(J["r1"]).role == "tool" and store.node(J["a4"]).predecessor == J["r1"]
    assert {n for n in J.values() if store.node(n).rewound} == {J["u2"], J["a2"]}
    assert ids(store.pending(sid, "memory", "w")) == [J[k] for k in "u1 a1 u3 a4 u4 a5".split()]
    assert store.session(sid).title == "Lisbon trip planning"  # its summary line names a5


def test_quick_start_example_has_fork_rewind_compaction_and_sub_agent(store: BaseStore) -> None:
    fr = claude_code.import_file(store, EXAMPLE)
    assert fr.skipped == [] and fr.dangling == [] and fr.nodes_added == 20
    sid = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
    names = "u1 a1 a2 pg1 r1 a3 u2 a4 u3 a5 s1 s2 r2 a6 u4 a7 cb cs u5 a8".split()
    E = {k: cc("example", k) for k in names}
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.rewound, st.summaries, st.spawned) == (
        18,
        1,
        1,
        2,
        1,
        1,
    )  # fmt: skip (the progress entry pg1 beside r1 is an artifact fork, the rewind a user branch)
    assert store.session(sid).head == E["a8"]
    (child,) = store.spawns(sid)
    assert child.spawned_from == E["a5"] and ids(store.branch(child.id)) == [E["s1"], E["s2"]]
    assert store.node(E["cs"]).covers == tuple(
        E[k] for k in "u1 a1 a2 r1 a3 u3 a5 r2 a6 u4 a7".split()
    )
    assert ids(store.pending(sid, "memory", "w")) == [
        E[k] for k in "u1 a1 a3 u3 a6 u4 a7 u5 a8".split()
    ]
    entries = store.session(sid).metadata["entries"]
    assert [e["type"] for e in entries] == ["file-history-snapshot"] and entries[0]["line"] == 1


def test_reimport_changes_nothing(store: BaseStore) -> None:
    claude_code.import_file(store, EXAMPLE)
    sid = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
    before = (store.session(sid), store.stats(sid), ids(store.branch(sid)))
    fr = claude_code.import_file(store, EXAMPLE)
    assert fr.nodes_added == 0
    assert (store.session(sid), store.stats(sid), ids(store.branch(sid))) == before


def test_grown_file_imports_only_the_new_entries(store: BaseStore, tmp_path: Path) -> None:
    lines = (FIX / "claude-code/rewind-damaged.jsonl").read_bytes().split(b"\n")
    path = tmp_path / "grow.jsonl"
    path.write_bytes(b"\n".join(lines[:-1]) + b"\n")  # without the torn line
    assert claude_code.import_file(store, path).nodes_added == 11
    sid = "3e8f1a20-6b7c-4d5e-8f90-a1b2c3d4e5f6"
    u5 = orjson.loads(lines[-2])  # a5's line, reused as a template
    u5 |= {"type": "user", "uuid": cc("damaged", "u5"), "parentUuid": cc("damaged", "a5")}
    u5["message"] = {"role": "user", "content": "And restaurants near the river?"}
    u5["timestamp"] = "2025-09-10T10:30:00.000Z"
    with path.open("ab") as f:
        f.write(orjson.dumps(u5) + b"\n")
    fr = claude_code.import_file(store, path)
    assert fr.nodes_added == 1 and fr.skipped == []
    assert store.session(sid).head == cc("damaged", "u5")
    assert store.stats(sid).rewound == 2


def test_a_failing_file_leaves_nothing_and_others_still_import(tmp_path: Path) -> None:
    store = MemorySessionStore()
    bad = tmp_path / "broken.sgbundle"
    bad.write_bytes(b"SGBUNDLE not msgpack at all")
    report = import_paths(store, [bad, EXAMPLE])
    failed = {str(f.path): f.error for f in report.files if f.error}
    assert list(failed) == [str(bad)]
    assert {s.id for s in store.sessions()} == {
        "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90",
        f"7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90/sidechain-{cc('example', 's1')}",
    }


def test_a_parent_cycle_is_cut_and_reported(store: BaseStore, tmp_path: Path) -> None:
    path = tmp_path / "cycle.jsonl"
    rows = [
        {"type": "user", "uuid": "x1", "parentUuid": "x2", "sessionId": "cyc", "message": {"role": "user", "content": "a"}},
        {"type": "user", "uuid": "x2", "parentUuid": "x1", "sessionId": "cyc", "message": {"role": "user", "content": "b"}},
    ]  # fmt: skip
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    fr = claude_code.import_file(store, path)
    assert fr.error is None and fr.nodes_added == 2
    assert [(line, node) for line, node, _ in fr.relinked] == [(2, "x2")]
    assert "x1 (line 1), x2 (line 2)" in fr.relinked[0][2]
    assert (
        store.node("x2").predecessor is None and store.node("x2").metadata["cycle_parent"] == "x1"
    )
    assert store.node("x1").predecessor == "x2" and store.session("cyc").head == "x2"


def test_dangling_parent_becomes_a_root_and_is_reported(store: BaseStore, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [
        {"type": "user", "uuid": "d1", "parentUuid": "elsewhere", "sessionId": "dg", "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "d2", "parentUuid": "d1", "sessionId": "dg", "timestamp": "2025-01-01T00:00:01Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}},
    ]  # fmt: skip
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    fr = claude_code.import_file(store, path)
    assert fr.dangling == [("d1", "elsewhere")]
    node = store.node("d1")
    assert node.predecessor is None and node.metadata["dangling_parent"] == "elsewhere"


def test_agent_files_become_spawned_sessions_of_the_task_call(
    store: BaseStore, tmp_path: Path
) -> None:
    sid = "9f9f9f9f-0000-4000-8000-000000000001"
    main = tmp_path / f"{sid}.jsonl"
    common = {"sessionId": sid, "isSidechain": False, "timestamp": "2026-01-01T00:00:00Z"}
    rows = [
        {**common, "type": "user", "uuid": "m1", "parentUuid": None, "message": {"role": "user", "content": "review the diff"}},
        {**common, "type": "assistant", "uuid": "m2", "parentUuid": "m1", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "Task", "input": {"prompt": "Review it"}}]}},
        {**common, "type": "user", "uuid": "m3", "parentUuid": "m2", "toolUseResult": {"agentId": "a1b2c3d", "status": "completed"}, "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "LGTM"}]}},
    ]  # fmt: skip
    main.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    sub = tmp_path / sid / "subagents"
    sub.mkdir(parents=True)
    agent = {**common, "isSidechain": True, "agentId": "a1b2c3d"}
    arows = [
        {**agent, "type": "user", "uuid": "g1", "parentUuid": None, "message": {"role": "user", "content": "Review it"}},
        {**agent, "type": "assistant", "uuid": "g2", "parentUuid": "g1", "message": {"role": "assistant", "content": [{"type": "text", "text": "LGTM"}]}},
    ]  # fmt: skip
    (sub / "agent-a1b2c3d.jsonl").write_bytes(b"\n".join(orjson.dumps(r) for r in arows) + b"\n")
    assert transcript_files([tmp_path]) == [main]
    report = import_paths(store, [tmp_path])
    (fr,) = report.files
    assert fr.session_ids == [sid, f"{sid}/agent-a1b2c3d"]
    (child,) = store.spawns(sid)
    assert child.spawned_from == "m2" and store.session(child.id).head == "g2"
    assert store.stats(sid).spawned == 1


# ------------------------------------------------------------------------------ pi


def test_pi_v3_compaction_and_branch_summary(store: BaseStore) -> None:
    fr = pi.import_file(store, FIX / "pi/v3-compaction-branch.jsonl")
    sid = "5f0c2a9e-2b1d-4c1e-9a43-0b6f6d3c2a10"
    assert fr.session_ids == [sid] and fr.nodes_added == 11

    def n(short: str) -> str:
        return f"{sid}/{short}"

    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.rewound, st.summaries, st.live_tips) == (
        11, 1, 1, 0, 2, 2,
    )  # fmt: skip
    assert store.session(sid).head == n("0e1f2a3b")
    compaction = store.node(n("0c1d2e3f"))
    assert compaction.covers == (n("9a1b2c3d"), n("4e5f6a7b"), n("8c9d0e1f"))
    branch = store.node(n("2c3d4e5f"))
    assert branch.kind == "summary" and branch.covers == (n("4a5b6c7d"), n("8e9f0a1b"))
    assert store.index(sid).bits[branch.id] & 0b1000000  # the sibling layout
    assert ids(store.pending(sid, "memory", "w")) == [
        n(x)
        for x in "4e5f6a7b 8c9d0e1f 2a3b4c5d 6e7f8a9b 4a5b6c7d 8e9f0a1b 6a7b8c9d 0e1f2a3b".split()
    ]
    # pi's context: the compaction summary, the kept entries, the branch summary, the new branch.
    assert ids(store.context(sid)) == [
        n(x) for x in "0c1d2e3f 2a3b4c5d 6e7f8a9b 2c3d4e5f 6a7b8c9d 0e1f2a3b".split()
    ]
    assert store.node(n("8c9d0e1f")).metadata["thinking"] == ["Split lex from parse."]


def test_pi_v1_file_gets_stable_line_ids(store: BaseStore) -> None:
    fr = pi.import_file(store, FIX / "pi/v1-no-ids.jsonl")
    sid = "0b7d4c2e-9f1a-4e3b-8c5d-6a7b8c9d0e1f"
    assert fr.repaired == [(4, "2 JSON values on one line, split")]
    expected = [f"{sid}/{x}" for x in ("L2", "L3", "L4", "L4.1", "L5", "L6")]
    assert list(store.index(sid).pred) == expected
    assert [store.node(i).predecessor for i in expected] == [None, *expected[:-1]]
    assert store.node(f"{sid}/L5").covers == (f"{sid}/L2", f"{sid}/L3")
    assert store.session(sid).head == f"{sid}/L6"
    assert pi.import_file(store, FIX / "pi/v1-no-ids.jsonl").nodes_added == 0


def test_pi_fork_file_joins_its_source_session(store: BaseStore, tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    shutil.copy(FIX / "pi/v3-compaction-branch.jsonl", source)
    lines = source.read_bytes().splitlines()
    sid = "5f0c2a9e-2b1d-4c1e-9a43-0b6f6d3c2a10"
    header = {"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
              "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/user/parser",
              "parentSession": str(source)}  # fmt: skip
    new = {"type": "message", "id": "77aa88bb", "parentId": "6e7f8a9b",
           "timestamp": "2026-03-01T10:01:00.000Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "Benchmark it"}]}}  # fmt: skip
    fork = tmp_path / "fork.jsonl"
    fork.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:6], orjson.dumps(new)]) + b"\n")
    fr = pi.import_file(store, fork)  # imports the source first
    assert fr.session_ids == [sid] and fr.nodes_added == 1
    assert {s.id for s in store.sessions()} == {sid}
    assert store.node(f"{sid}/77aa88bb").predecessor == f"{sid}/6e7f8a9b"
    assert store.session(sid).head == f"{sid}/0e1f2a3b"
    assert store.node(f"{sid}/77aa88bb").metadata["transcript_session"] == header["id"]


# ------------------------------------------------------------------------------ Codex

P = "019c18a5-1d00-7123-8012-3456789abcde"


@pytest.mark.parametrize("order", ["parent-first", "fork-first"])
def test_codex_fork_with_copied_prefix_is_a_fork_of_the_parent(
    store: BaseStore, order: str
) -> None:
    files = [FIX / "codex/rollout-parent.jsonl", FIX / "codex/rollout-fork.jsonl"]
    for f in files if order == "parent-first" else files[::-1]:
        fr = codex.import_file(store, f)
        assert fr.session_ids == [P]
    assert [s.id for s in store.sessions()] == [P]
    st = store.stats(P)
    assert (st.nodes, st.roots, st.forks, st.live_tips) == (14, 1, 1, 2)
    assert store.session(P).head == f"{P}:10"
    child = "019c18dc-0b80-7123-8012-3456789abcde"
    assert list(store.index(P).children[f"{P}:6"]) == (
        [f"{P}:7", f"{child}:8"] if order == "parent-first" else [f"{child}:8", f"{P}:7"]
    )
    assert store.node(f"{child}:8").metadata["transcript_session"] == child
    tips = dict(store.pending_by_tip(P, "memory", "w"))
    assert ids(tips[f"{child}:11"])[-2:] == [f"{child}:8", f"{child}:11"]
    assert store.session(P).metadata["forks"][child]["cut"] == f"{P}:6"


def test_codex_roles_and_tool_calls(store: BaseStore) -> None:
    codex.import_file(store, FIX / "codex/rollout-parent.jsonl")
    call, result = store.nodes(P, [f"{P}:4", f"{P}:5"])
    assert call.role == "assistant" and call.content[0].arguments == {
        "command": ["ls", "-l", "public"]
    }
    assert result.role == "tool" and result.content[0].call_id == "call_ls1"
    assert [n.role for n in store.pending(P, "memory", "w")] == ["user", "assistant"] * 2


# ------------------------------------------------------------------------------ detection


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (EXAMPLE, "claude-code"),
        (FIX / "claude-code/rewind-damaged.jsonl", "claude-code"),
        (FIX / "pi/v1-no-ids.jsonl", "pi"),
        (FIX / "pi/v3-compaction-branch.jsonl", "pi"),
        (FIX / "codex/rollout-fork.jsonl", "codex"),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_detect_format(path: Path, fmt: str) -> None:
    assert detect_format(path) == fmt


def test_unknown_file_is_a_transcript_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(TranscriptError) as e:
        detect_format(path)
    assert e.value.path == path
    report = import_paths(MemorySessionStore(), [path])
    assert report.files[0].error is not None and report.files[0].format == "unknown"

"""Claude Code import classes seen on real files: one hand-written fixture each, the exact graph asserted.

Each fixture under ``tests/fixtures/claude-code`` is in the real 2.1.x format (entry uuids are derived from
labels with :func:`cc`); each test states the graph the runtime itself shows: nodes and predecessors,
head, forks, tips, covers, context and pending.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest

from graph import MemorySessionStore
from graph.importers import claude_code, detect_format, import_paths
from graph.importers.report import TranscriptError
from graph.index import ARTIFACT
from graph.lineage import is_abandoned
from graph.store.base import BaseStore

FIX = Path(__file__).parent / "fixtures" / "claude-code"


def cc(tag: str, name: str) -> str:
    """The uuid a fixture gives the entry ``name`` (uuid5-derived, version-4 shaped)."""
    h = uuid.uuid5(uuid.NAMESPACE_URL, f"sessiongraph/{tag}/{name}").hex
    return str(uuid.UUID(h[:12] + "4" + h[13:16] + "8" + h[17:]))


class Labels:
    """Maps fixture labels to uuids and back, for one fixture tag."""

    def __init__(self, tag: str, names: str) -> None:
        self.id = {n: cc(tag, n) for n in names.split()}
        self.name = {v: k for k, v in self.id.items()}

    def __call__(self, names: str) -> list[str]:
        return [self.id[n] for n in names.split()]

    def of(self, ids: list[str]) -> str:
        return " ".join(self.name.get(i, i) for i in ids)


def graph_of(store: BaseStore, sid: str, L: Labels) -> dict[str, str | None]:
    """label -> predecessor label of every node of the session."""
    return {
        L.name.get(n, n): (L.name.get(p, p) if p else None)
        for n, p in store.index(sid).pred.items()
    }


def artifacts(store: BaseStore, sid: str, L: Labels) -> str:
    idx = store.index(sid)
    return L.of([n for n in idx.pred if idx.bits[n] & ARTIFACT])


def test_preserved_segment_compaction_imports_without_a_cycle(store: BaseStore) -> None:
    # The boundary's logicalParentUuid (a3) sits below the summary once the kept tail u2..a3 is
    # re-linked under it: followed naively that is a cycle, and the import looped forever.
    sid = "5b1c0d2e-7a3f-4e8b-9c1d-2f3a4b5c6d7e"
    L = Labels("preserved", "u1 a1 u2 a2 u3 a3 cb cs u4 a4")
    fr = claude_code.import_file(store, FIX / "preserved-segment.jsonl")
    assert fr.error is None and fr.nodes_added == 10 and fr.skipped == []
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "cb": "a1", "cs": "cb",
        "u2": "cs", "a2": "u2", "u3": "a2", "a3": "u3", "u4": "a3", "a4": "u4",
    }  # fmt: skip
    assert [(line, L.name[n]) for line, n, _ in fr.relinked] == [(4, "u2"), (8, "cb")]
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.summaries, st.live_tips) == (10, 1, 0, 1, 1)
    assert store.session(sid).head == L.id["a4"] and store.tips(sid) == L("a4")
    assert store.node(L.id["cs"]).covers == tuple(L("u1 a1"))  # the replaced span only
    assert L.of([n.id for n in store.context(sid)]) == "cb cs u2 a2 u3 a3 u4 a4"
    assert L.of([n.id for n in store.pending(sid, "memory", "w")]) == "u1 a1 u2 a2 u3 a3 u4 a4"
    assert store.node(L.id["u2"]).metadata["recorded_parent"] == L.id["a1"]


def test_preserved_segment_already_relinked_in_the_file(store: BaseStore, tmp_path: Path) -> None:
    # The same compaction with the kept head written under the summary: a3 -> ... -> u2 -> cs -> cb
    # -> a3 is a cycle in the file itself.
    L = Labels("preserved", "u1 a1 u2 a2 u3 a3 cb cs u4 a4")
    rows = [orjson.loads(x) for x in (FIX / "preserved-segment.jsonl").read_bytes().splitlines()]
    for r in rows:
        if r.get("uuid") == L.id["u2"]:
            r["parentUuid"] = L.id["cs"]
    path = tmp_path / "relinked.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    fr = claude_code.import_file(store, path)
    sid = "5b1c0d2e-7a3f-4e8b-9c1d-2f3a4b5c6d7e"
    assert fr.error is None and fr.nodes_added == 10
    assert graph_of(store, sid, L)["cb"] == "a1" and graph_of(store, sid, L)["u2"] == "cs"
    assert store.node(L.id["cs"]).covers == tuple(L("u1 a1"))
    assert store.tips(sid) == L("a4")


def test_boundary_naming_itself_or_nothing_is_reported_and_linked(store: BaseStore) -> None:
    sid = "6c2d1e3f-8b4a-4f9c-8d2e-3a4b5c6d7e8f"
    L = Labels("selfref", "u1 a1 cb cs u2 a2 cb2 cs2 u3 a3")
    fr = claude_code.import_file(store, FIX / "boundary-self-parent.jsonl")
    assert [(line, L.name[n]) for line, n, _ in fr.relinked] == [(3, "cb"), (7, "cb2")]
    assert "cycle of one" in fr.relinked[0][2] and "names no entry" in fr.relinked[1][2]
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "cb": "a1", "cs": "cb", "u2": "cs", "a2": "u2",
        "cb2": "a2", "cs2": "cb2", "u3": "cs2", "a3": "u3",
    }  # fmt: skip
    assert store.node(L.id["cb"]).metadata["logical_parent"] == L.id["cb"]
    assert store.node(L.id["cs2"]).covers == tuple(L("u1 a1 cb cs u2 a2"))
    assert store.tips(sid) == L("a3") and store.stats(sid).roots == 1
    assert L.of([n.id for n in store.context(sid)]) == "cb2 cs2 u3 a3"


def test_a_long_cycle_and_many_self_parents_import_in_one_pass(tmp_path: Path) -> None:
    # 20,000 entries in one cycle plus 5,000 self parents: quadratic work here would not finish.
    n = 20_000
    rows = [
        {"parentUuid": f"c{(i - 1) % n}", "type": "user", "sessionId": "big", "uuid": f"c{i}",
         "message": {"role": "user", "content": f"m{i}"}}
        for i in range(n)
    ] + [
        {"parentUuid": f"s{i}", "type": "assistant", "sessionId": "big", "uuid": f"s{i}",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]}}
        for i in range(5_000)
    ]  # fmt: skip
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    store = MemorySessionStore()
    fr = claude_code.import_file(store, path)
    assert fr.nodes_added == n + 5_000 and len(fr.relinked) == 1 + 5_000
    assert store.stats("big").roots == 1 + 5_000
    branch = store.branch("big", f"c{n - 2}")  # cut at c19999, written last: now the root
    assert len(branch) == n and branch[0].id == f"c{n - 1}" and branch[0].predecessor is None


def test_self_parent_and_three_cycle_are_cut_and_the_rest_imports(
    store: BaseStore, tmp_path: Path
) -> None:
    def row(u: str, p: str | None, text: str) -> dict[str, object]:
        return {"parentUuid": p, "type": "user", "sessionId": "cy", "uuid": u,
                "message": {"role": "user", "content": text}}  # fmt: skip

    rows = [row("s", "s", "self"), row("c1", "c3", "a"), row("c2", "c1", "b"), row("c3", "c2", "c")]
    rows.append(row("ok", None, "fine"))
    path = tmp_path / "cy.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    fr = claude_code.import_file(store, path)
    assert fr.nodes_added == 5 and [(line, n) for line, n, _ in fr.relinked] == [
        (1, "s"),
        (4, "c3"),
    ]
    assert "c1 (line 2), c2 (line 3), c3 (line 4)" in fr.relinked[1][2]
    assert {n: store.node(n).predecessor for n in ("s", "c1", "c2", "c3")} == {
        "s": None, "c1": "c3", "c2": "c1", "c3": None,
    }  # fmt: skip
    assert store.node("c3").metadata["cycle_parent"] == "c2"


def test_branch_copy_stays_its_own_session_linked_to_its_source(store: BaseStore) -> None:
    source, copy = "7d3e2f4a-9c5b-4a0d-8e3f-4b5c6d7e8f9a", "8e4f3a5b-0d6c-4b1e-9f4a-5c6d7e8f9a0b"
    L = Labels("branch", "u1 a1 u2 p1 a2 u3 a3")
    # Given copy first: the run still imports the source first (the copy's entries say forkedFrom).
    report = import_paths(store, [FIX / "branch-copy.jsonl", FIX / "branch-source.jsonl"])
    assert [f.path.name for f in report.files] == ["branch-source.jsonl", "branch-copy.jsonl"]
    assert store.session(source).head == L.id["a2"]
    assert graph_of(store, source, L) == {
        "u1": None,
        "a1": "u1",
        "u2": "a1",
        "p1": "u2",
        "a2": "p1",
    }
    kept_apart = f"{L.id['a2']}@{copy}"
    assert graph_of(store, copy, L) == {kept_apart: None, "u3": kept_apart, "a3": "u3"}
    fr = report.files[1]
    assert [(line, L.name[n]) for line, n, _ in fr.dropped] == [(1, "u1"), (2, "a1"), (3, "u2")]
    assert [(line, L.name[n]) for line, n, _ in fr.relinked] == [(4, "a2")]
    assert store.node(kept_apart).metadata["forked_from"] == {"session": source, "node": L.id["u2"]}
    assert store.session(copy).metadata["forked_from"] == {"session": source, "node": L.id["a2"]}
    assert store.session(copy).head == L.id["a3"] and store.tips(copy) == L("a3")
    assert [n.id for n in store.pending(copy, "memory", "w")] == [kept_apart, *L("u3 a3")]
    head_before = store.session(source)
    again = import_paths(store, [FIX / "branch-copy.jsonl"])
    assert again.failed == [] and again.nodes_added == 0
    assert store.session(source) == head_before and store.stats(copy).nodes == 3


def test_head_is_the_last_message_not_a_later_hook_entry(store: BaseStore) -> None:
    sid = "9f5a4b6c-1e7d-4c2f-8a5b-6d7e8f9a0b1c"
    L = Labels("progress", "u1 a1 p1 r1 a2 p2 p3 s1 s2")
    claude_code.import_file(store, FIX / "progress-after-head.jsonl")
    assert store.session(sid).head == L.id["a2"]
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "p1": "a1", "r1": "a1", "a2": "r1",
        "p2": "a2", "p3": "p2", "s1": "p3", "s2": "s1",
    }  # fmt: skip
    assert artifacts(store, sid, L) == "p1"
    st = store.stats(sid)
    assert (st.forks, st.live_tips) == (0, 1) and store.tips(sid) == L("a2")
    assert L.of([n.id for n in store.pending(sid, "memory", "w")]) == "u1 a1 a2"


def test_torn_fragment_fused_with_a_record_keeps_the_record_and_its_child(
    store: BaseStore,
) -> None:
    sid = "0a6b5c7d-2f8e-4d3a-9b6c-7e8f9a0b1c2d"
    L = Labels("torn", "u1 a1 u2 a2 u3 a3")
    fr = claude_code.import_file(store, FIX / "torn-fused.jsonl")
    assert [line for line, _ in fr.skipped] == [3] and "torn fragment" in fr.skipped[0][1]
    assert fr.repaired == [(3, "1 complete value(s) recovered")] and fr.dangling == []
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "u2": "a1", "a2": "u2", "u3": "a2", "a3": "u3",
    }  # fmt: skip
    assert store.session(sid).head == L.id["a3"] and store.stats(sid).roots == 1


def test_logical_parent_naming_nothing_and_tool_result_off_the_branch_are_reported(
    store: BaseStore,
) -> None:
    sid = "1b7c6d8e-3a9f-4e4b-8c7d-8f9a0b1c2d3e"
    L = Labels("drops", "u1 a1 p1 r1 a2 cb cs u2 a3")
    fr = claude_code.import_file(store, FIX / "silent-drops.jsonl")
    assert [(line, L.name[n]) for line, n, _ in fr.relinked] == [(6, "cb")]
    assert cc("drops", "gone") in fr.relinked[0][2]
    assert any(f"{L.id['r1']} (line 4)" in note for note in fr.notes)
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "p1": "a1", "r1": "a1", "a2": "p1",
        "cb": "a2", "cs": "cb", "u2": "cs", "a3": "u2",
    }  # fmt: skip
    assert artifacts(store, sid, L) == "r1"
    assert store.node(L.id["cs"]).covers == tuple(L("u1 a1 p1 a2"))
    assert store.tips(sid) == L("a3") and store.stats(sid).forks == 0
    assert L.of([n.id for n in store.pending(sid, "memory", "w")]) == "u1 a2 u2 a3"


def test_artifact_forks_are_not_branches_but_a_rewind_is(store: BaseStore) -> None:
    sid = "2c8d7e9f-4b0a-4f5c-9d8e-9a0b1c2d3e4f"
    L = Labels("artifacts", "u1 a1 a2 a3 h1 r1 h2 r2 a4 u2 a5 u3 a6")
    claude_code.import_file(store, FIX / "artifact-forks.jsonl")
    assert graph_of(store, sid, L) == {
        "u1": None, "a1": "u1", "a2": "a1", "a3": "a2", "h1": "a2", "r1": "a2",
        "h2": "a3", "r2": "a3", "a4": "r2", "u2": "a4", "a5": "u2", "u3": "a4", "a6": "u3",
    }  # fmt: skip
    assert artifacts(store, sid, L) == "h1 r1 h2"  # stored, but not branches
    st = store.stats(sid)
    assert (st.nodes, st.forks, st.rewound, st.live_tips) == (13, 1, 2, 1)
    assert store.tips(sid) == L("a6") and store.session(sid).head == L.id["a6"]
    tips = list(store.pending_by_tip(sid, "memory", "w"))
    assert [(t, L.of([n.id for n in ns])) for t, ns in tips] == [(L.id["a6"], "u1 a1 a4 u3 a6")]


def test_show_folds_artifact_forks_so_a_linear_conversation_reads_linear(
    store: BaseStore,
) -> None:
    from rich.console import Console

    from graph.cli.commands import render_tree

    sid = "9f5a4b6c-1e7d-4c2f-8a5b-6d7e8f9a0b1c"
    claude_code.import_file(store, FIX / "progress-after-head.jsonl")
    console = Console(width=200, record=True)
    console.print(render_tree(store, store.session(sid)), crop=False)
    text = console.export_text()
    assert "fork" not in text.replace("0 forks", "")
    assert "0 forks" in text and "1 live tips" in text


def test_abandoned_sub_agent_is_not_owed_and_compaction_agent_links_to_the_boundary(
    store: BaseStore,
) -> None:
    sid = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"
    L = Labels("agents", "u0 a0 u1 a1 ap1 r1 a2 v1 b1 hk cb cs v2 b2")
    import_paths(store, [FIX / "agents"])
    assert {s.id for s in store.sessions()} == {
        sid,
        f"{sid}/agent-a11",
        f"{sid}/agent-acompact-7f3e",
    }
    assert L.of([n for n in store.index(sid).pred if store.node(n).rewound]) == "u1 a1 ap1 r1 a2"
    task = store.session(f"{sid}/agent-a11")
    assert task.spawned_from == L.id["a1"] and is_abandoned(store, task)
    compact = store.session(f"{sid}/agent-acompact-7f3e")
    assert compact.spawned_from == L.id["b1"] and not is_abandoned(store, compact)
    assert not is_abandoned(store, store.session(sid))
    assert store.node(L.id["cs"]).covers == tuple(L("u0 a0 v1 b1"))
    assert store.tips(sid) == L("b2")


def test_memory_write_without_a_session_skips_abandoned_sub_agents(tmp_path: Path) -> None:
    from graph.store.sqlite import SessionStore
    from memory.workspace import MemoryWorkspace

    db, ws = tmp_path / "s.db", tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}

    def cli(*args: str) -> None:
        cmd = [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db),
            *args,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    cli("import", str(FIX / "agents"))
    cli("memory", "--workspace", str(ws), "write")
    with MemoryWorkspace(ws) as w:
        wid = w.id
    store = SessionStore(db)
    try:
        sid = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"
        assert store.pending_ids(sid, "memory", wid) == []
        assert store.pending_ids(f"{sid}/agent-acompact-7f3e", "memory", wid) == []
        assert len(store.pending_ids(f"{sid}/agent-a11", "memory", wid)) == 2  # asked by id only
    finally:
        store.close()


# ------------------------------------------------------------------------------ hostile lines


def test_deep_nesting_anywhere_is_a_skipped_line(store: BaseStore, tmp_path: Path) -> None:
    ok = {"parentUuid": None, "type": "user", "sessionId": "deep", "uuid": "ok",
          "message": {"role": "user", "content": "hi"}}  # fmt: skip
    deep = 100_000
    lines = [
        orjson.dumps(ok),
        b"[" * deep + b"]" * deep,  # a line
        b'{"uuid":"x","type":"user","data":' + b'{"a":' * deep + b"1" + b"}" * deep + b"}",
        b'{"uuid":"y","type":"user","data":' + b"[" * 300 + b"]" * 300 + b"}",  # inside an entry
        b'{"uuid":"z","data":' + b"[" * deep,  # an unclosed last line
    ]
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(lines))
    fr = claude_code.import_file(store, path)
    assert [line for line, _ in fr.skipped] == [2, 3, 4, 5]
    assert all("nested deeper" in why for _, why in fr.skipped[:3])
    assert [n for n in store.index("deep").pred] == ["ok"]


def test_lone_surrogate_is_replaced_with_its_line_number(store: BaseStore, tmp_path: Path) -> None:
    path = tmp_path / "sur.jsonl"
    ok = '{"parentUuid":null,"type":"user","sessionId":"sur","uuid":"u1","message":{"role":"user","content":"fine"}}'
    bad = '{"parentUuid":"u1","type":"user","sessionId":"sur","uuid":"u2","message":{"role":"user","content":"bad \\ud800 here"}}'
    path.write_text(ok + "\n" + bad + "\n")
    fr = claude_code.import_file(store, path)
    assert fr.error is None and fr.repaired == [(2, "lone surrogate replaced with U+FFFD")]
    assert store.node("u2").text == "bad \ufffd here"


def test_stray_claude_line_before_a_pi_or_codex_header_does_not_decide(tmp_path: Path) -> None:
    pi = tmp_path / "pi.jsonl"
    pi.write_text('{"type":"user"}\n{"type":"session","version":3,"id":"p1","cwd":"/x"}\n')
    codex = tmp_path / "codex.jsonl"
    codex.write_text('{"type":"user"}\n{"type":"session_meta","payload":{"id":"c1"}}\n')
    assert detect_format(pi) == "pi" and detect_format(codex) == "codex"


def test_a_non_empty_file_with_no_claude_code_entry_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "nothing.jsonl"
    path.write_text('{"type":"user"}\n{"type":"assistant"}\nnot json\n')
    with pytest.raises(TranscriptError, match="no Claude Code entry"):
        claude_code.import_file(MemorySessionStore(), path)


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    store = MemorySessionStore()
    bad = tmp_path / "a-bad.jsonl"
    bad.write_text('{"type":"user"}\n')
    report = import_paths(store, [bad, FIX / "torn-fused.jsonl"])
    assert [f.error is not None for f in report.files] == [True, False]
    assert report.files[1].nodes_added == 6


@pytest.mark.parametrize(
    "name", ["preserved-segment.jsonl", "artifact-forks.jsonl", "branch-source.jsonl"]
)
def test_fixture_lines_are_the_real_shape(name: str) -> None:
    # The fixtures keep Claude Code's key order (parentUuid first) and per-line fields.
    for raw in (FIX / name).read_text().splitlines():
        entry = json.loads(raw)
        if "uuid" in entry:
            assert next(iter(entry)) == "parentUuid"
            assert {"sessionId", "version", "timestamp", "isSidechain"} <= set(entry)


def test_idle_watcher_skips_abandoned_sub_agents(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from graph.store.sqlite import SessionStore
    from memory import IdleWatcher, MemoryWorkspace

    store = SessionStore(tmp_path / "s.db")
    import_paths(store, [FIX / "agents"])
    written: list[str] = []

    class Recorder:
        def write(self, session_id: str, force: bool = False) -> None:
            written.append(session_id)

    with MemoryWorkspace(tmp_path / "ws") as ws:
        late = datetime(2030, 1, 1, tzinfo=UTC)
        IdleWatcher(store, Recorder(), ws, idle=0, clock=lambda: late).poll_once()
    sid = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"
    assert sorted(written) == [sid, f"{sid}/agent-acompact-7f3e"]
    store.close()


def test_a_sub_agent_file_s_damage_is_told_with_its_file_name(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "agents"
    shutil.copytree(FIX / "agents", root)
    sid = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"
    agent = root / sid / "subagents" / "agent-a11.jsonl"
    with agent.open("ab") as f:
        f.write(b'{"parentUuid":"x","uuid":"torn-')
    store = MemorySessionStore()
    (fr,) = import_paths(store, [root]).files
    assert fr.skipped == []  # the session file's own lines are all fine
    assert "agent-a11.jsonl line 3: skipped: torn write (truncated last line)" in fr.notes
    assert store.stats(f"{sid}/agent-a11").nodes == 2

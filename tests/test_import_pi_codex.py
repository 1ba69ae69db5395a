"""pi and Codex importers on hand-written files in their real formats: the exact graph of each.

Each fixture holds one class of what went wrong on real files: pi compactions that keep a tail written
before the compaction entry (the context must start with the summary), a v1 compaction that keeps
nothing, a first kept entry that resolves to nothing, damaged parent links; Codex compactions whose
replacement history is the new context, injected context told from prompts by structure, rollbacks.
For every one the test states the nodes, predecessors, head, forks, tips, covers, context and pending.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson

from graph.importers import codex, pi
from graph.store.base import BaseStore

FIX = Path(__file__).resolve().parent / "fixtures"


def shape(store: BaseStore, sid: str, short: Any = None) -> dict[str, Any]:
    """The session's graph with ids shortened by ``short``: what the tests compare."""
    s = short or (lambda i: i.rsplit("/", 1)[-1])
    idx = store.index(sid)
    nodes = list(idx.pred)  # insertion order is the store's (parents first), so compare as a set
    return {
        "nodes": sorted(s(n) for n in nodes),
        "pred": {s(n): (s(p) if p else None) for n, p in idx.pred.items()},
        "head": s(store.session(sid).head),
        "forks": sorted(s(n) for n, k in idx.children.items() if len(k) > 1),
        "tips": sorted(s(t) for t in store.tips(sid)),
        "covers": {s(n): [s(c) for c in cv] for n, cv in idx.covers.items()},
        "context": [s(n.id) for n in store.context(sid)],
        "pending": [s(n.id) for n in store.pending(sid, "memory", "w")],
    }


def chained(*ids: str) -> dict[str, str | None]:
    return {n: (ids[i - 1] if i else None) for i, n in enumerate(ids)}


# ------------------------------------------------------------------------------------ pi


def test_pi_two_compactions_each_keeping_a_tail(store: BaseStore) -> None:
    fr = pi.import_file(store, FIX / "pi/v3-two-compactions.jsonl")
    sid = "3d8f1a27-6b4c-4e9a-9f21-7c5e0b2d4a61"
    assert fr.session_ids == [sid] and fr.notes == [] and fr.skipped == []
    order = ("b1c2d3e4 c1d2e3f4 d1e2f3a4 e1f2a3b4 f1a2b3c4 a2b3c4d5 b2c3d4e5 c2d3e4f5 d2e3f4a5 "
             "e2f3a4b5 f2a3b4c5 a3b4c5d6 b3c4d5e6").split()  # fmt: skip
    assert (
        shape(store, sid)
        == {
            "nodes": sorted(order),
            "pred": chained(*order),
            "head": "b3c4d5e6",
            "forks": [],
            "tips": ["b3c4d5e6"],
            "covers": {
                "a2b3c4d5": order[:3],  # up to the first kept entry e1f2a3b4
                # What pi summarised: from the first compaction's kept tail on, that compaction
                # included (it stands for its own span).
                "f2a3b4c5": order[3:8],
            },
            # pi's order: the latest summary, the entries it kept, then what followed it.
            "context": ["f2a3b4c5", "d2e3f4a5", "e2f3a4b5", "a3b4c5d6", "b3c4d5e6"],
            "pending": [n for n in order if n not in ("b1c2d3e4", "a2b3c4d5", "f2a3b4c5")],
        }
    )
    # At the first compaction's tail, its own order.
    ctx = [n.id.rsplit("/", 1)[-1] for n in store.context(sid, f"{sid}/c2d3e4f5")]
    assert ctx == ["a2b3c4d5", "e1f2a3b4", "f1a2b3c4", "b2c3d4e5", "c2d3e4f5"]


def test_pi_v1_compaction_that_keeps_nothing(store: BaseStore) -> None:
    fr = pi.import_file(store, FIX / "pi/v1-keep-nothing.jsonl")
    sid = "9e4b7c21-0d3a-4f6e-8b15-2a7c9d0e3f48"
    assert fr.notes == []
    order = [f"L{i}" for i in range(2, 9)]
    assert shape(store, sid) == {
        "nodes": sorted(order),
        "pred": chained(*order),
        "head": "L8",
        "forks": [],
        "tips": ["L8"],
        "covers": {"L6": ["L2", "L3", "L4", "L5"]},  # index 5: the header and four entries
        "context": ["L6", "L7", "L8"],
        "pending": ["L2", "L3", "L4", "L5", "L7", "L8"],
    }


def test_pi_v1_index_at_the_compaction_itself_keeps_nothing_but_before_keeps(
    store: BaseStore, tmp_path: Path
) -> None:
    rows = (FIX / "pi/v1-keep-nothing.jsonl").read_bytes().splitlines()
    comp = orjson.loads(rows[5])
    for index, covered in ((4, ["L2", "L3", "L4"]), (99, ["L2", "L3", "L4", "L5"])):
        f = tmp_path / f"i{index}.jsonl"
        head = orjson.loads(rows[0]) | {"id": f"s{index}"}
        body = [*rows[1:5], orjson.dumps(comp | {"firstKeptEntryIndex": index}), *rows[6:]]
        f.write_bytes(b"\n".join([orjson.dumps(head), *body]) + b"\n")
        pi.import_file(store, f)
        assert shape(store, f"s{index}")["covers"] == {"L6": covered}


def test_pi_unresolved_first_kept_entry_is_reported_and_the_summary_replaces_all(
    store: BaseStore,
) -> None:
    fr = pi.import_file(store, FIX / "pi/v2-unresolved-kept.jsonl")
    sid = "5a1c3e7f-2b9d-4c8a-a6f0-1e3d5b7c9f02"
    assert fr.notes == [
        f"line 7: compaction {sid}/5a6b7c81: its first kept entry {sid}/99887766 is not on its "
        "branch; the summary covers the whole branch before it"
    ]
    order = "0a1b2c3d 1a2b3c4d 2a3b4c5e 3a4b5c6f 4a5b6c70 5a6b7c81 6a7b8c92".split()
    assert store.session(sid).title == "rate limits"
    assert shape(store, sid) == {
        "nodes": sorted(order),
        "pred": chained(*order),
        "head": "6a7b8c92",
        "forks": [],
        "tips": ["6a7b8c92"],
        "covers": {"5a6b7c81": order[:5]},
        "context": ["5a6b7c81", "6a7b8c92"],  # never the whole old history
        "pending": ["1a2b3c4d", "4a5b6c70", "6a7b8c92"],  # a bare tool call has no text
    }


def test_pi_compaction_naming_itself_as_first_kept_keeps_nothing(
    store: BaseStore, tmp_path: Path
) -> None:
    # pi's own v1 -> v2 migration writes the compaction's id when the index was the entry count.
    rows = [
        orjson.loads(r) for r in (FIX / "pi/v2-unresolved-kept.jsonl").read_bytes().splitlines()
    ]
    rows[6]["firstKeptEntryId"] = rows[6]["id"]
    f = tmp_path / "self.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    fr = pi.import_file(store, f)
    sid = "5a1c3e7f-2b9d-4c8a-a6f0-1e3d5b7c9f02"
    assert fr.notes == []  # not damage: pi's way of saying "keep nothing"
    got = shape(store, sid)
    assert got["covers"] == {
        "5a6b7c81": ["0a1b2c3d", "1a2b3c4d", "2a3b4c5e", "3a4b5c6f", "4a5b6c70"]
    }
    assert got["context"] == ["5a6b7c81", "6a7b8c92"]


def test_pi_damaged_links_are_reported_and_the_rest_imports(store: BaseStore) -> None:
    fr = pi.import_file(store, FIX / "pi/v3-damaged.jsonl")
    sid = "c4f8e2a6-7d1b-4e3c-9a5f-0b2d4e6f8a13"
    assert [n for n, _ in fr.skipped] == [8, 13]
    assert "duplicate entry id '10000003' (first on line 3)" in fr.skipped[0][1]
    assert fr.notes == [
        f"line 5: entry 10000004: its parent {sid}/10000004 would close a cycle; "
        "the entry is kept as a root",
        f"line 7: entry 10000006: its parent {sid}/10000005 would close a cycle; "
        "the entry is kept as a root",
        f"line 11: compaction {sid}/10000009: its first kept entry {sid}/10000003 is not on its "
        "branch; the summary covers the whole branch before it",
    ]
    assert shape(store, sid, lambda i: i[-2:]) == {
        "nodes": ["01", "02", "03", "04", "05", "06", "07", "08", "09", "0a"],
        "pred": {
            "01": None,
            "03": "02",
            "02": "01",
            "04": None,
            "05": "06",
            "06": None,
            "07": "02",
            "08": "07",
            "09": "08",
            "0a": "09",
        },  # fmt: skip
        "head": "0a",
        "forks": ["02"],
        "tips": ["03", "04", "05", "0a"],
        "covers": {"09": ["01", "02", "07", "08"]},
        "context": ["09", "0a"],
        "pending": ["01", "02", "07", "08", "0a"],
    }
    assert store.node(f"{sid}/10000004").metadata["cycle_parent"] == f"{sid}/10000004"
    assert pi.import_file(store, FIX / "pi/v3-damaged.jsonl").nodes_added == 0


def test_pi_fork_file_of_a_compacted_session(store: BaseStore, tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    shutil.copy(FIX / "pi/v3-two-compactions.jsonl", source)
    lines = source.read_bytes().splitlines()
    sid = "3d8f1a27-6b4c-4e9a-9f21-7c5e0b2d4a61"
    header = {"type": "session", "version": 3, "id": "0e9d8c7b-6a5f-4e3d-8c1b-0a9f8e7d6c5b",
              "timestamp": "2026-04-02T15:00:00.000Z", "cwd": "/home/user/shop",
              "parentSession": str(source)}  # fmt: skip
    new = {"type": "message", "id": "f9e8d7c6", "parentId": "c2d3e4f5",
           "timestamp": "2026-04-02T15:01:00.000Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "Use a modal"}]}}  # fmt: skip
    fork = tmp_path / "fork.jsonl"
    # /fork copies the path root..c2d3e4f5 (the first compaction on it) with the same ids.
    fork.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:9], orjson.dumps(new)]) + b"\n")
    fr = pi.import_file(store, fork)
    assert fr.session_ids == [sid] and fr.nodes_added == 1 and fr.notes[0].startswith("imported")
    got = shape(store, sid)
    assert got["forks"] == ["c2d3e4f5"] and got["head"] == "b3c4d5e6"
    assert got["tips"] == ["b3c4d5e6", "f9e8d7c6"]
    ctx = [n.id.rsplit("/", 1)[-1] for n in store.context(sid, f"{sid}/f9e8d7c6")]
    assert ctx == ["a2b3c4d5", "e1f2a3b4", "f1a2b3c4", "b2c3d4e5", "c2d3e4f5", "f9e8d7c6"]


def test_pi_fork_file_naming_itself_ends(store: BaseStore, tmp_path: Path) -> None:
    f = tmp_path / "self.jsonl"
    header = {"type": "session", "version": 3, "id": "s-self", "parentSession": str(f)}
    row = {"type": "message", "id": "aa000001", "parentId": None,
           "message": {"role": "user", "content": "hi"}}  # fmt: skip
    f.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(row) + b"\n")
    fr = pi.import_file(store, f)
    assert fr.session_ids == ["s-self"] and fr.nodes_added == 1
    assert any("is this file" in n for n in fr.notes)


# ------------------------------------------------------------------------------------ Codex


def codex_short(sid: str) -> Any:
    return lambda i: int(i.rsplit(":", 1)[-1]) if i.startswith(sid) else i


def test_codex_replacement_history_is_the_context_and_injected_text_is_not_a_prompt(
    store: BaseStore,
) -> None:
    fr = codex.import_file(store, FIX / "codex/rollout-compacted-localized.jsonl")
    sid = "019cd6a1-7e00-7a11-9c42-5b3e8d0f1a27"
    assert fr.session_ids == [sid] and fr.notes == []
    order = list(range(1, 21))
    assert shape(store, sid, codex_short(sid)) == {
        "nodes": order,
        "pred": chained(*order),
        "head": 20,
        "forks": [],
        "tips": [20],
        "covers": {14: order[:13]},
        "context": [14, 15, 16, 17, 18, 19, 20],
        # The localized AGENTS.md (2) and the sanitized environment context (3) have no echo.
        "pending": [4, 9, 10, 13, 17, 20],
    }
    assert [store.node(f"{sid}:{k}").role for k in (1, 2, 3, 4)] == [
        "system", "system", "system", "user",
    ]  # fmt: skip
    summary = store.node(f"{sid}:14")
    texts = [b.text for b in summary.content if hasattr(b, "text")]  # type: ignore[union-attr]
    assert texts[2:4] == ["Ajoute un endpoint /health", "Ajoute un test"]
    assert texts[4].endswith(
        'The app now has a /health endpoint returning {"ok": true}; tests pass.'
    )
    assert len(summary.metadata["payload"]["replacement_history"]) == 5
    assert store.session(sid).title == "Ajoute un endpoint /health"


def test_codex_rollout_without_echoes_falls_back_to_prefixes(
    store: BaseStore, tmp_path: Path
) -> None:
    rows = [
        orjson.loads(r)
        for r in (FIX / "codex/rollout-compacted-localized.jsonl").read_bytes().splitlines()
    ]
    kept = [r for r in rows if r["payload"].get("type") != "user_message"]
    f = tmp_path / "old.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    codex.import_file(store, f)
    sid = "019cd6a1-7e00-7a11-9c42-5b3e8d0f1a27"
    roles = [n.role for n in store.branch(sid)[:4]]
    # Without echoes only the prefixes tell: the developer message is known, the rest is not.
    assert roles == ["system", "user", "user", "user"]


def test_codex_thread_rolled_back_is_a_rewind(store: BaseStore) -> None:
    fr = codex.import_file(store, FIX / "codex/rollout-rollback.jsonl")
    sid = "019cd7b2-1c00-7b22-8d53-6c4f9e1a2b38"
    assert fr.notes == []
    assert shape(store, sid, codex_short(sid)) == {
        "nodes": list(range(1, 12)),
        "pred": {1: None, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 4, 9: 8, 10: 9, 11: 10},
        "head": 11,
        "forks": [4],
        "tips": [11],
        "covers": {},
        "context": [1, 2, 3, 4, 8, 9, 10, 11],
        "pending": [2, 4, 9, 11],
    }
    assert [k for k in range(1, 12) if store.node(f"{sid}:{k}").metadata.get("rewound")] == [
        5,
        6,
        7,
    ]
    assert store.stats(sid).rewound == 3
    assert codex.import_file(store, FIX / "codex/rollout-rollback.jsonl").nodes_added == 0
    assert store.stats(sid).rewound == 3 and store.session(sid).head == f"{sid}:11"


def test_codex_rollback_past_every_turn_is_reported(store: BaseStore, tmp_path: Path) -> None:
    rows = (FIX / "codex/rollout-rollback.jsonl").read_bytes().splitlines()
    bad = orjson.loads(rows[8])
    bad["payload"]["num_turns"] = 5
    f = tmp_path / "r.jsonl"
    f.write_bytes(b"\n".join([*rows[:8], orjson.dumps(bad), *rows[9:]]) + b"\n")
    fr = codex.import_file(store, f)
    assert len(fr.notes) == 1 and "not applied" in fr.notes[0]
    assert store.stats("019cd7b2-1c00-7b22-8d53-6c4f9e1a2b38").rewound == 0


def test_codex_second_compaction_stands_for_the_first(store: BaseStore, tmp_path: Path) -> None:
    sid = "019cd8c3-0000-7c33-9e64-7d5f0a2b3c49"
    say = lambda role, text: {"type": "response_item", "payload": {  # noqa: E731
        "type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}}  # fmt: skip
    echo = lambda text: {"type": "event_msg", "payload": {"type": "user_message", "message": text}}  # noqa: E731
    history = lambda *texts: {"type": "compacted", "payload": {  # noqa: E731
        "message": "", "replacement_history": [say("user", t)["payload"] for t in texts]}}  # fmt: skip
    rows = [
        {"type": "session_meta", "payload": {"id": sid}},
        say("user", "one"), echo("one"), say("assistant", "1"),
        history("one", "summary A"),
        say("user", "two"), echo("two"), say("assistant", "2"),
        history("one", "two", "summary B"),
        say("user", "three"), echo("three"), say("assistant", "3"),
    ]  # fmt: skip
    f = tmp_path / "rollout.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    codex.import_file(store, f)
    got = shape(store, sid, codex_short(sid))
    assert got["covers"] == {4: [1, 2, 3], 8: [4, 5, 6, 7]}
    assert got["context"] == [8, 9, 10, 11]
    assert got["pending"] == [1, 3, 5, 7, 9, 11]
    assert [b.text for b in store.node(f"{sid}:8").content] == ["one", "two", "summary B"]  # type: ignore[union-attr]


def test_pi_fork_of_a_fork_joins_the_first_source(store: BaseStore, tmp_path: Path) -> None:
    a, b, c = (tmp_path / f"{x}.jsonl" for x in "abc")
    shutil.copy(FIX / "pi/v3-two-compactions.jsonl", a)
    lines = a.read_bytes().splitlines()
    sid = "3d8f1a27-6b4c-4e9a-9f21-7c5e0b2d4a61"

    def fork(
        path: Path, fid: str, parent: Path, body: list[bytes], new_id: str, after: str
    ) -> None:
        header = {"type": "session", "version": 3, "id": fid, "parentSession": str(parent)}
        new = {"type": "message", "id": new_id, "parentId": after,
               "message": {"role": "user", "content": [{"type": "text", "text": new_id}]}}  # fmt: skip
        path.write_bytes(b"\n".join([orjson.dumps(header), *body, orjson.dumps(new)]) + b"\n")

    fork(b, "b0000000-0000-4000-8000-000000000000", a, lines[1:4], "bbbbbbbb", "d1e2f3a4")
    b_lines = b.read_bytes().splitlines()
    fork(c, "c0000000-0000-4000-8000-000000000000", b, b_lines[1:], "cccccccc", "bbbbbbbb")
    fr = pi.import_file(store, c)  # imports b, which imports a
    assert fr.session_ids == [sid] and fr.nodes_added == 1
    assert [s.id for s in store.sessions()] == [sid]
    got = shape(store, sid)
    assert got["pred"]["bbbbbbbb"] == "d1e2f3a4" and got["pred"]["cccccccc"] == "bbbbbbbb"
    assert got["head"] == "b3c4d5e6"  # the source's head is left alone
    assert pi.import_file(store, c).nodes_added == 0


def test_pi_files_naming_each_other_as_source_end(store: BaseStore, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    row = {"type": "message", "id": "aa000001", "parentId": None,
           "message": {"role": "user", "content": "hi"}}  # fmt: skip
    for path, sid, other in ((a, "sa", b), (b, "sb", a)):
        header = {"type": "session", "version": 3, "id": sid, "parentSession": str(other)}
        path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(row) + b"\n")
    fr = pi.import_file(store, a)  # a imports b first; b's source a is under way: b stays apart
    assert fr.session_ids == ["sb"] and any("forks from it" in n for n in fr.notes)
    assert [s.id for s in store.sessions()] == ["sb"]
    assert pi.import_file(store, b).nodes_added == 0 and pi.import_file(store, a).nodes_added == 0

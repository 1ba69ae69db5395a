"""Fuzzing the pi and Codex importers with generated files: every import ends, reports its damage,
and stores a valid graph or nothing at all.

The files are built from the formats' own records with the links scrambled: random parents, self
parents, cycles, forward references, repeated ids, compactions and branch summaries pointing
anywhere (or nowhere), rollbacks of any size, ``forked_from_id`` with or without a copied prefix,
torn lines, two records fused on one line, blank and non-object lines. Examples follow the hypothesis
profile (``ci``: a few seconds; ``HYPOTHESIS_PROFILE=deep`` for a long run by hand). Every walk in
the importers is bounded by the nodes (a visited set or the previous compaction's span), which keeps
an import linear in its input; ``benchmarks/`` times the imports, here we check what they produce.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from graph import MemorySessionStore
from graph.errors import GraphError
from graph.importers import codex, pi
from graph.importers.jsonl import LineProblems, ReadPosition, read_jsonl
from graph.importers.report import FileReport
from graph.store.base import BaseStore

POOL = [f"{i:08x}" for i in range(1, 9)]
"""pi entry ids the generator draws from, so repeats and references to other entries are common."""

ref = st.one_of(
    st.none(),
    st.sampled_from(POOL),
    st.just("deadbeef"),  # names nothing
    st.integers(-1, 3),
    st.just("root"),
)


@st.composite
def pi_entry(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["user", "assistant", "toolResult", "compaction", "branch_summary", "model_change",
             "custom_message", "label", "session_info", "bashExecution", "hookMessage", "odd"]
        )
    )  # fmt: skip
    e: dict[str, Any] = {"timestamp": draw(st.sampled_from(["2026-01-01T00:00:00Z", 5, None]))}
    if draw(st.booleans()):
        e["id"] = draw(st.sampled_from(POOL))
    if draw(st.booleans()):
        e["parentId"] = draw(ref)
    if kind in ("user", "assistant", "toolResult", "bashExecution", "hookMessage"):
        text = draw(st.text(max_size=8))
        e |= {
            "type": "message",
            "message": {"role": kind, "content": [{"type": "text", "text": text}]},
        }
    elif kind == "compaction":
        e |= {"type": "compaction", "summary": "s"}
        if draw(st.booleans()):
            e["firstKeptEntryId"] = draw(ref)
        if draw(st.booleans()):
            e["firstKeptEntryIndex"] = draw(st.integers(-2, 40))
    elif kind == "branch_summary":
        e |= {"type": "branch_summary", "summary": "b", "fromId": draw(ref)}
    else:
        e["type"] = kind
    return e


@st.composite
def damaged_lines(draw: st.DrawFn, records: list[dict[str, Any]]) -> bytes:
    """The records as JSON Lines, with some lines torn, fused, doubled or replaced by junk."""
    out: list[bytes] = []
    for r in records:
        line = orjson.dumps(r)
        how = draw(st.sampled_from(["ok"] * 6 + ["torn", "fused", "junk", "blank", "bare"]))
        if how == "torn":
            line = line[: draw(st.integers(1, max(1, len(line) - 1)))]
        elif how == "fused" and out:
            out[-1] = out[-1] + line
            continue
        elif how == "junk":
            line = b"\xff\xfe{" + line
        elif how == "blank":
            out.append(b"")
        elif how == "bare":
            line = b"[1, 2]"
        out.append(line)
    return b"\n".join(out) + draw(st.sampled_from([b"\n", b""]))


@st.composite
def pi_file(draw: st.DrawFn, sid: str = "fuzz-pi", parents: tuple[str, ...] = ()) -> bytes:
    header: dict[str, Any] = {"type": "session", "id": sid, "timestamp": "2026-01-01T00:00:00Z"}
    version = draw(st.sampled_from([None, 1, 2, 3]))
    if version is not None:
        header["version"] = version
    if parents or draw(st.integers(0, 5)) == 0:
        where = ["", "/nonexistent/x.jsonl", "\x00", *parents]
        header["parentSession"] = draw(st.sampled_from(where))
    entries = draw(st.lists(pi_entry(), max_size=24))
    head = [header] if draw(st.integers(0, 7)) else []
    return draw(damaged_lines(head + entries))


@st.composite
def codex_item(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["user", "assistant", "developer", "echo", "call", "output", "compacted", "rollback",
             "turn", "settings", "meta", "odd"]
        )
    )  # fmt: skip
    text = draw(
        st.sampled_from(
            ["hi", "", "<environment_context>x", "# AGENTS.md instructions", "[REDACTED]"]
        )
    )
    p: dict[str, Any]
    if kind in ("user", "assistant", "developer"):
        p = {"type": "message", "role": kind, "content": [{"type": "input_text", "text": text}]}
        return {"type": "response_item", "payload": p}
    if kind == "echo":
        return {"type": "event_msg", "payload": {"type": "user_message", "message": text}}
    if kind == "call":
        return {
            "type": "response_item",
            "payload": {"type": "function_call", "name": "sh", "arguments": "{", "call_id": "c"},
        }
    if kind == "output":
        return {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c", "output": {"x": 1}},
        }
    if kind == "compacted":
        kept = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "k"}]}
        items = st.sampled_from([kept, {"type": "compaction"}, 3, {}])
        history = draw(st.one_of(st.none(), st.just("not a list"), st.lists(items, max_size=3)))
        return {"type": "compacted", "payload": {"message": text, "replacement_history": history}}
    if kind == "rollback":
        n = draw(st.one_of(st.integers(-1, 4), st.just("2"), st.none()))
        return {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": n}}
    if kind == "turn":
        tid = draw(
            st.sampled_from(
                [
                    "019c0000-0000-7000-8000-000000000000",
                    "019f0000-0000-7000-8000-000000000000",
                    "x",
                ]
            )
        )
        return {"type": "turn_context", "payload": {"turn_id": tid}}
    if kind == "settings":
        return {"type": "event_msg", "payload": {"type": "thread_settings_applied"}}
    if kind == "meta":
        return {
            "type": "session_meta",
            "payload": {"id": draw(st.sampled_from(["fuzz-parent", "fuzz-cx"]))},
        }
    return {
        "type": draw(st.sampled_from(["odd", ""])),
        "payload": draw(st.sampled_from([{}, None, 1])),
    }


@st.composite
def codex_file(draw: st.DrawFn) -> bytes:
    meta: dict[str, Any] = {"id": "fuzz-cx", "timestamp": "2026-01-02T00:00:00Z"}
    head = [{"type": "session_meta", "payload": meta}]
    if draw(st.booleans()):
        meta["forked_from_id"] = "fuzz-parent"
        if draw(st.booleans()):
            head.append({"type": "session_meta", "payload": {"id": "fuzz-parent"}})
    items = draw(st.lists(codex_item(), max_size=24))
    return draw(damaged_lines((head if draw(st.integers(0, 7)) else []) + items))


def check_import(
    store: BaseStore, data: bytes, importer: Callable[[BaseStore, Path], FileReport]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "fuzz.jsonl"
        f.write_bytes(data)
        problems, position = LineProblems(), ReadPosition()
        read = list(read_jsonl(f, problems, position))
        damaged = {n for n, _ in problems.skipped} | {n for n, _ in problems.repaired}
        # A last line with no newline that lost a part is still being written: none of it is stored.
        last = read[-1].number if read else 0
        if last > position.line and any(n == last for n, _ in problems.skipped):
            read = [r for r in read if r.number != last]
        try:
            fr = importer(store, f)
        except GraphError:
            assert store.sessions() == [], "a refused file left something behind"
            return
        reported = {n for n, _ in fr.skipped} | {n for n, _ in fr.repaired}
        assert damaged <= reported, "a damaged line went unreported"
        total = 0
        for sid in fr.session_ids:
            idx = store.index(sid)
            for n in idx.pred:  # every branch reaches a root within the session's size
                steps, m = 0, n
                while m is not None:
                    m = idx.pred[m]
                    steps += 1
                    assert steps <= len(idx), f"a cycle through {n}"
            total += len(idx)
            store.context(sid)
            store.tips(sid)
            store.pending_by_tip(sid, "memory", "w")
        assert fr.nodes_added == total <= len(read)  # one node per record at most
        if importer is pi.import_file:  # every entry is a node, but a repeated id
            header = 1 if read and read[0].data.get("type") == "session" else 0
            repeats = sum(1 for _, why in fr.skipped if why.startswith("duplicate entry id"))
            assert total == len(read) - header - repeats
        assert importer(store, f).nodes_added == 0  # idempotent


@given(data=pi_file())
@example(  # a blank line, then the header and an entry on one unterminated line
    data=b'\n{"type":"session","id":"fuzz-pi","timestamp":"2026-01-01T00:00:00Z"}'
    b'{"timestamp":"2026-01-01T00:00:00Z","id":"00000001","type":"model_change"}'
)
def test_fuzzed_pi_files_import_or_store_nothing(data: bytes) -> None:
    check_import(MemorySessionStore(), data, pi.import_file)


@given(source=pi_file("fuzz-src", ("@FORK@",)), fork=pi_file("fuzz-fork", ("@SRC@", "@SELF@")))
def test_fuzzed_pi_fork_files_end_and_keep_every_session_valid(source: bytes, fork: bytes) -> None:
    """A ``/fork`` file and its source, naming each other or themselves in ``parentSession``."""
    store = MemorySessionStore()
    with tempfile.TemporaryDirectory() as d:
        src, frk = Path(d) / "src.jsonl", Path(d) / "fork.jsonl"
        names = {b"@SRC@": str(src).encode(), b"@FORK@": str(frk).encode()}
        names[b"@SELF@"] = names[b"@FORK@"]
        for path, data in ((src, source), (frk, fork)):
            for k, v in names.items():
                data = data.replace(k, v)
            path.write_bytes(data)
        for path in (frk, src):
            before = {x.id: len(store.index(x.id)) for x in store.sessions()}
            try:
                pi.import_file(store, path)
            except GraphError:  # (a file of no pi entry, say): the refused file stored nothing
                after = {x.id: len(store.index(x.id)) for x in store.sessions()}
                assert after == before, "a refused file left something behind"
                return
        for s in store.sessions():
            idx = store.index(s.id)
            for n in idx.pred:
                steps, m = 0, n
                while m is not None:
                    m, steps = idx.pred[m], steps + 1
                    assert steps <= len(idx), f"a cycle through {n}"
            store.context(s.id)
        assert pi.import_file(store, frk).nodes_added == 0
        assert pi.import_file(store, src).nodes_added == 0


@given(data=codex_file())
def test_fuzzed_codex_rollouts_import_or_store_nothing(data: bytes) -> None:
    check_import(MemorySessionStore(), data, codex.import_file)


FIX = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(
    ("importer", "fixture", "refused"),
    [
        (pi.import_file, "pi/v3-two-compactions.jsonl", "add_nodes"),
        (codex.import_file, "codex/rollout-compacted-localized.jsonl", "add_nodes"),
        (codex.import_file, "codex/rollout-rollback.jsonl", "stamp_rewound"),  # after the nodes
    ],
    ids=["pi", "codex-compacted", "codex-rollback-stamps"],
)
def test_a_refused_write_leaves_nothing_behind(
    store: BaseStore,
    importer: Callable[[BaseStore, Path], FileReport],
    fixture: str,
    refused: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise GraphError("refused")

    monkeypatch.setattr(store, refused, refuse)
    with pytest.raises(GraphError):
        importer(store, FIX / fixture)
    assert store.sessions() == []  # the session created before the nodes went with them

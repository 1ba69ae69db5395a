"""Fuzz the Claude Code importer and the shared line reader over generated, damaged transcripts.

Transcripts are drawn with random parents (cycles, self parents, forward references, dangling ids),
duplicate uuids, compaction boundaries whose ``logicalParentUuid`` and ``preservedSegment`` name anything,
sidechain entries, and damaged lines (torn, fused, a fragment fused with a record, deep nesting, lone
surrogates). Whatever is drawn, the import ends, every walk of the result ends, and every entry written
is either stored or named in the report with its line. Runs with the ``ci`` profile in the suite and
deeper with ``HYPOTHESIS_PROFILE=deep``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from graph import MemorySessionStore
from graph.importers import claude_code
from graph.importers.jsonl import LineProblems, read_jsonl
from graph.importers.report import TranscriptError

SID = "fuzz-session"
POOL = [f"e{i}" for i in range(12)]


@st.composite
def entries(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A list of Claude Code entries over a small uuid pool (so ids repeat and links collide)."""
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 18))):
        uid = draw(st.sampled_from(POOL))
        parent = draw(st.one_of(st.none(), st.sampled_from([*POOL, uid, "missing"])))
        kind = draw(st.sampled_from(["user", "assistant", "progress", "boundary", "summary"]))
        e: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": draw(st.booleans()) and i % 4 == 3,
        }
        e |= {"sessionId": SID, "timestamp": f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}Z"}
        if kind == "user":
            e |= {"type": "user", "message": {"role": "user", "content": f"prompt {i}"}}
        elif kind == "assistant":
            e |= {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": f"reply {i}"}]}}  # fmt: skip
        elif kind == "progress":
            e |= {"type": "progress", "data": {"type": "hook_progress", "hookName": "Stop"}}
        elif kind == "boundary":
            e |= {"type": "system", "subtype": "compact_boundary", "parentUuid": None}
            e["logicalParentUuid"] = draw(st.sampled_from([*POOL, uid, "missing"]))
            if draw(st.booleans()):
                seg = {k: draw(st.sampled_from([*POOL, "missing"])) for k in ("headUuid", "anchorUuid", "tailUuid")}  # fmt: skip
                e["compactMetadata"] = {"trigger": "auto", "preservedSegment": seg}
        else:
            e |= {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "summary"}}  # fmt: skip
        e["uuid"] = uid
        out.append(e)
    return out


DAMAGE = ["none", "none", "none", "torn", "fused", "fragment", "deep", "surrogate", "bytes"]


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, str, str]]]:
    """File bytes and, per entry written, (line, uuid, damage) (damage "torn": no record expected)."""
    rows = draw(entries())
    lines: list[bytes] = []
    written: list[tuple[int, str, str]] = []
    i = 0
    while i < len(rows):
        e = rows[i]
        raw = json.dumps(e).encode()
        damage = draw(st.sampled_from(DAMAGE))
        number = len(lines) + 1
        if damage == "torn":
            lines.append(raw[: draw(st.integers(1, len(raw) - 1))])
            written.append((number, e["uuid"], "torn"))
        elif damage == "fused" and i + 1 < len(rows):
            lines.append(raw + json.dumps(rows[i + 1]).encode())
            written += [(number, e["uuid"], "none"), (number, rows[i + 1]["uuid"], "none")]
            i += 1
        elif damage == "fragment" and i + 1 < len(rows):
            lines.append(raw[: len(raw) // 2] + json.dumps(rows[i + 1]).encode())
            written += [(number, e["uuid"], "torn"), (number, rows[i + 1]["uuid"], "none")]
            i += 1
        elif damage == "deep":
            depth = draw(st.sampled_from([250, 5000]))
            lines.append(raw[:-1] + b',"deep":' + b"[" * depth + b"]" * depth + b"}")
            written.append((number, e["uuid"], "torn"))
        elif damage == "surrogate":
            lines.append(raw[:-1] + b',"s":"\\udc80"}')
            written.append((number, e["uuid"], "none"))
        elif damage == "bytes":
            lines.append(raw[:-1] + b',"b":"\xff\xfe"}')
            written.append((number, e["uuid"], "none"))
        else:
            lines.append(raw)
            written.append((number, e["uuid"], "none"))
        i += 1
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""])), written


def _walk_everything(store: MemorySessionStore) -> None:
    for s in store.sessions():
        store.stats(s.id)
        for tip in [*store.tips(s.id), s.head]:
            store.branch(s.id, tip)
            store.context(s.id, tip)
            store.pending(s.id, "memory", "w", head=tip)
        list(store.pending_by_tip(s.id, "memory", "w"))


@given(transcripts(), st.lists(st.tuples(st.sampled_from(POOL), st.booleans()), max_size=6))
def test_every_damaged_transcript_imports_and_reports_what_it_does_not_store(
    drawn: tuple[bytes, list[tuple[int, str, str]]], agent: list[tuple[str, bool]]
) -> None:
    data, written = drawn
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{SID}.jsonl"
        path.write_bytes(data)
        # A sub-agent file over the same uuid pool (a forked agent repeats its trunk's entries).
        folder = Path(d) / SID / "subagents"
        folder.mkdir(parents=True)
        rows = [
            {"parentUuid": agent[i - 1][0] if i and chain else None, "isSidechain": True,
             "agentId": "f1", "sessionId": SID, "type": "user", "uuid": uid,
             "message": {"role": "user", "content": f"agent {i}"}}
            for i, (uid, chain) in enumerate(agent)
        ]  # fmt: skip
        (folder / "agent-f1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        store = MemorySessionStore()
        try:
            fr = claude_code.import_file(store, path)
        except TranscriptError:
            assert store.sessions() == []  # refused as a whole: nothing half-written
            assert all(damage == "torn" for _, _, damage in written)
            return
        _walk_everything(store)
        stored: set[str] = set()
        for s in store.sessions():
            stored.update(n.split("@", 1)[0] for n in store.index(s.id).pred)
        skipped = {line for line, _ in fr.skipped}
        dropped = {(line, uid) for line, uid, _ in fr.dropped}
        for line, uid, damage in written:
            if damage == "torn":
                assert line in skipped, (line, uid, fr.skipped)
            else:
                assert uid in stored or (line, uid) in dropped, (line, uid, fr)
        told = " ".join(fr.notes)
        for i, (uid, _) in enumerate(agent):
            assert uid in stored or f"agent-f1.jsonl line {i + 1}" in told, (uid, fr)
        again = claude_code.import_file(store, path)  # raises if the store refuses anything
        assert again.error is None and again.nodes_added == 0  # idempotent, damage and all


@given(st.binary(max_size=400), st.integers(0, 3))
def test_the_line_reader_ends_and_accounts_for_every_line(junk: bytes, copies: int) -> None:
    good = b'{"uuid":"g","type":"user"}'
    data = b"\n".join([good, junk] * (copies + 1))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "junk.jsonl"
        path.write_bytes(data)
        problems = LineProblems()
        lines = list(read_jsonl(path, problems))
    numbers = {line.number for line in lines} | {n for n, _ in problems.skipped}
    non_blank = {i for i, raw in enumerate(data.split(b"\n"), 1) if raw.strip()}
    assert non_blank <= numbers  # every line is read or reported
    assert sum(1 for line in lines if line.data == {"uuid": "g", "type": "user"}) >= copies + 1
    for line in lines:
        json.dumps(line.data, ensure_ascii=False).encode(
            "utf-8"
        )  # storable: no lone surrogate survives

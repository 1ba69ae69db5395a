"""A large Claude Code file's entries, held column by column, read as the entries they came from.

The slim read (what a session file's import keeps of each entry while the rules run) stores the
uuid, parent, line, offset and time of each entry apart from its *shape*, one dict shared by every
entry of the same shape. These tests check that the rules read from it exactly what the whole
entries hold, and that a plan worked out from the slim read equals the one from the whole read.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.importers import claude_code
from graph.importers._common import parse_time
from graph.importers.jsonl import LineProblems
from graph.importers.report import FileReport
from graph.models import to_micros
from graph.store.sqlite import SessionStore

_STAMPS: list[Any] = [
    "2025-03-01T10:00:00.250Z",  # what Claude Code writes
    "2025-03-01T10:00:00.250000Z",
    "2025-03-01T10:00:01Z",
    "2025-03-01T12:00:02.5+02:00",
    "2025-03-01T10:00:03.000",  # no zone: UTC
    1740823204000,  # Unix milliseconds
    None,
    "yesterday",
    "2025-W10-1T00:00:00.000Z",  # an ISO week date, the same length as the usual form
    "2025-13-01T00:00:00.000Z",  # the usual form, but no such month
    "0001-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z",
]


def _entries(seed: int, n: int = 120) -> list[dict[str, Any]]:
    """``n`` entries of one session: forks, tool calls, progress, odd times, missing fields."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    ids: list[str] = []
    for i in range(n):
        u = f"{seed:04d}{i:04d}-0000-4000-8000-000000000000"
        e: dict[str, Any] = {"uuid": u, "sessionId": "s-slim", "cwd": f"/w/{i // 50}"}
        if ids:
            e["parentUuid"] = ids[-1] if rng.random() < 0.8 else rng.choice(ids)
        elif rng.random() < 0.5:
            e["parentUuid"] = None
        if rng.random() < 0.9:
            e["timestamp"] = rng.choice(_STAMPS)
        kind = rng.choice(["user", "assistant", "assistant", "progress", "system"])
        e["type"] = kind
        if kind == "user":
            content: Any = rng.choice(
                [
                    "a prompt",
                    "   ",
                    [{"type": "text", "text": "typed"}],
                    [{"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "out"}],
                ]
            )
            e["message"] = {"role": "user", "content": content}
            if rng.random() < 0.1:
                e["isMeta"] = True
            if rng.random() < 0.1:
                e["toolUseResult"] = {"agentId": f"a{i}"}
        elif kind == "assistant":
            blocks: list[Any] = [{"type": "text", "text": "reply"}]
            for k in range(rng.randint(0, 3)):
                name = rng.choice(["Read", "Bash", "Task", "Agent"])
                call: dict[str, Any] = {"type": "tool_use", "id": f"t{i}-{k}", "name": name}
                call["input"] = {"prompt": f"do {i}"} if name in ("Task", "Agent") else {}
                blocks.append(call)
            if rng.random() < 0.2:
                blocks.append({"type": "tool_use", "name": "NoId"})
            e["message"] = {"role": "assistant", "id": f"m{i}", "content": blocks}
        elif kind == "progress":
            e["data"] = {"type": "agent_progress", "agentId": f"a{i % 3}"}
            e["toolUseID"] = f"p{i}"
            e["parentToolUseID"] = f"t{i - 1}-0"
        else:
            e["subtype"] = "informational"
            e["content"] = "note"
        out.append(e)
        ids.append(u)
    return out


def _write(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "s-slim.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return path


def _read(path: Path, slim: bool) -> claude_code._Transcript:
    return claude_code._read(path, LineProblems(), FileReport(path, "claude-code"), slim=slim)


@pytest.mark.parametrize("seed", range(12))
def test_the_columns_answer_what_the_whole_entries_hold(tmp_path: Path, seed: int) -> None:
    path = _write(tmp_path, _entries(seed))
    whole, slim = _read(path, slim=False), _read(path, slim=True)
    assert isinstance(slim.entries, claude_code._SlimEntries)
    assert list(slim.entries) == list(whole.entries)
    for u in whole.entries:
        data = whole.entries[u].data
        for key in ("uuid", "parentUuid", "timestamp", "type", "isMeta", "subtype"):
            assert slim.entries.field(u, key) == data.get(key), (u, key)
        assert slim.entries.where(u) == whole.entries.where(u)
        assert slim.entries.number(u) == whole.entries[u].number
        assert slim.entries.stamp_text(u) == str(data.get("timestamp", ""))
        moment = parse_time(data.get("timestamp"), claude_code._UNREADABLE)
        expected = claude_code._NO_TIME if moment is claude_code._UNREADABLE else to_micros(moment)
        assert slim.entries.micros(u) == expected == whole.entries.micros(u)
        assert list(slim.entries.call_ids(u)) == list(whole.entries.call_ids(u))
        assert claude_code._is_prompt(slim.entries.shape(u)) == claude_code._is_prompt(data)
        line = slim.entries[u]  # the slim entry as one Line, with its tool call ids back
        assert line.data.get("timestamp", "absent") == data.get("timestamp", "absent")
        assert claude_code._call_ids(line.data) == claude_code._call_ids(data)


def test_entries_of_one_shape_share_it_and_calls_stay_out_of_it(tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = []
    for i in range(400):  # a prompt, a reply calling a tool, its result, a hook's progress entry
        e: dict[str, Any] = {"uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None}
        e |= {"sessionId": "s", "timestamp": f"2025-03-01T10:00:{i % 60:02d}.000Z"}
        if i % 4 == 0:
            e |= {"type": "user", "message": {"role": "user", "content": f"prompt {i}"}}
        elif i % 4 == 1:
            call = {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"p": i}}
            e |= {"type": "assistant", "message": {"content": [{"type": "text"}, call]}}
        elif i % 4 == 2:
            result = {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "out"}
            e |= {"type": "user", "message": {"role": "user", "content": [result]}}
        else:
            e |= {"type": "progress", "data": {"type": "hook_progress", "hookName": "lint"}}
        entries.append(e)
    path = _write(tmp_path, entries)
    slim = _read(path, slim=True).entries
    assert isinstance(slim, claude_code._SlimEntries)
    assert len({id(slim.shape(u)) for u in slim}) <= 5  # the first entry's shape names the session
    for u in slim:
        message = slim.shape(u).get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        for b in blocks if isinstance(blocks, list) else []:
            assert "id" not in b
    assert [slim.call_ids(f"u{i}") for i in range(1, 9, 4)] == [("t1",), ("t5",)]


def _plan(store: SessionStore, t: claude_code._Transcript) -> tuple[Any, ...]:
    report = FileReport(t.path, "claude-code")
    plan = claude_code._plan_main(store, t, report)
    specs = [tuple(s) for chunk in plan.nodes.chunks() for s in chunk]
    return (
        plan.sid,
        plan.main,
        plan.side,
        plan.pred,
        plan.head,
        plan.artifacts,
        specs,
        plan.title,
        plan.meta,
        plan.created_at,
        report.relinked,
        report.dangling,
        report.dropped,
        report.notes,
        claude_code._rewinds(t, plan.main, plan.pred, plan.head),
        claude_code._tool_calls(t, plan.main),
        claude_code._boundaries(t, plan.main, plan.pred),
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_plan_from_the_slim_read_equals_the_one_from_the_whole_read(
    tmp_path: Path, seed: int
) -> None:
    entries = _entries(seed)
    rng = random.Random(seed)
    for e in rng.sample(entries, 3):  # lines written before their parents' lines
        entries.remove(e)
        entries.insert(rng.randrange(len(entries)), e)
    path = _write(tmp_path, entries)
    store = SessionStore(tmp_path / "s.db")
    try:
        assert _plan(store, _read(path, slim=True)) == _plan(store, _read(path, slim=False))
    finally:
        store.close()

"""A model writer's hostile answers are rejections (with the one repair), never an internal failure.

What a model answers is untrusted text: JSON nested deeper than Python's parser recurses, an answer
that is not text at all (a client returning None or bytes), and JSON escapes that decode to lone
surrogates (which no database can store as UTF-8) each came back as ``INTERNAL`` with a Python
exception's message, without the repair attempt. They are ``MALFORMED`` rejections naming what is
wrong, the writer gets its repair, and nothing is archived past the batch, installed or marked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from graph import SessionStore
from memory import FailureReason, MemoryWorkspace, ModelWriter, Rejection, WritePipeline
from memory.changes import parse_changes
from memory.errors import RejectedError


def _session(tmp: Path) -> tuple[SessionStore, str]:
    store = SessionStore(tmp / "g.db")
    s = store.create_session("hostile writer")
    store.append(s.id, "How should the retries back off?", role="user")
    store.append(s.id, "Exponentially, with jitter.", role="assistant")
    return store, s.id


def _sources(prompt: str) -> list[str]:
    return [
        json.loads(line)["source"] for line in prompt.splitlines() if line.startswith('{"source"')
    ]


def _good(prompt: str) -> str:
    return json.dumps(
        {
            "changes": [
                {
                    "op": "create_record",
                    "content": "Retries back off exponentially, with jitter.",
                    "sources": [{"source": s, "label": "retries"} for s in _sources(prompt)],
                    "destination": {"topic_path": "projects/retries"},
                }
            ]
        }
    )


def _record_with(text: str) -> Callable[[str], str]:
    def answer(prompt: str) -> str:
        data = json.loads(_good(prompt))
        data["changes"][0]["content"] = text
        return json.dumps(data)  # ensure_ascii: a lone surrogate is written as its \\u escape

    return answer


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("first", "says"),
    [
        (lambda p: DEEP, "nested"),
        (lambda p: '{"changes": ' + DEEP + "}", "nested"),
        (lambda p: None, "not text"),
        (lambda p: b'{"changes": []}', "not text"),
        (_record_with("Retries \ud800 back off."), "surrogate"),
    ],
    ids=["deep-list", "deep-changes", "none", "bytes", "lone-surrogate"],
)
def test_a_hostile_answer_is_rejected_and_repaired(
    tmp_path: Path, first: Callable[[str], object], says: str
) -> None:
    store, sid = _session(tmp_path)
    ws = MemoryWorkspace(tmp_path / "ws")
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return first(prompt) if len(prompts) == 1 else _good(prompt)  # type: ignore[return-value]

    assert WritePipeline(ws, store, ModelWriter(complete)).write(sid, force=True) is None
    assert len(prompts) == 2, "the hostile answer got the repair attempt"
    assert "REJECTED with MALFORMED" in prompts[1] and says in prompts[1]
    assert [r.content for r in ws.records()] == ["Retries back off exponentially, with jitter."]
    assert store.pending(sid, "memory", ws.id) == []


@pytest.mark.parametrize(
    "answer",
    [lambda p: DEEP, lambda p: None, _record_with("\udfff")],
    ids=["deep", "none", "lone-surrogate"],
)
def test_twice_hostile_is_commit_rejected_and_changes_nothing(
    tmp_path: Path, answer: Callable[[str], object]
) -> None:
    store, sid = _session(tmp_path)
    ws = MemoryWorkspace(tmp_path / "ws")
    failure = WritePipeline(ws, store, ModelWriter(answer)).write(sid, force=True)  # type: ignore[arg-type]
    assert failure is not None and failure.reason is FailureReason.COMMIT_REJECTED
    assert not failure.retryable
    assert ws.records() == [] and ws.revision == 0
    assert len(store.pending(sid, "memory", ws.id)) == 2


def test_parse_changes_names_the_depth_and_the_type() -> None:
    with pytest.raises(RejectedError) as deep:
        parse_changes(DEEP)
    assert deep.value.reason is Rejection.MALFORMED and "nested" in deep.value.detail
    with pytest.raises(RejectedError) as none:
        parse_changes(None)  # type: ignore[arg-type]
    assert none.value.reason is Rejection.MALFORMED and "NoneType" in none.value.detail


@pytest.mark.parametrize(
    "field", ["content", "tags", "headings", "source"], ids=lambda f: f"surrogate-in-{f}"
)
def test_a_lone_surrogate_from_a_tool_call_is_a_tool_error(tmp_path: Path, field: str) -> None:
    """The MCP client's JSON may carry a ``\\ud800`` escape: refused by field, nothing archived."""
    from mcp.server.mcpserver.exceptions import ToolError

    from memory.mcp_server import MemoryTools

    store, sid = _session(tmp_path)
    ws = MemoryWorkspace(tmp_path / "ws")
    tools = MemoryTools(store, ws)
    bad = "a\ud800b"
    args: dict[str, object] = {"content": "Retries back off exponentially."}
    if field == "content":
        args["content"] = bad
    elif field == "tags":
        args["tags"] = [bad]
    elif field == "headings":
        args["headings"] = [bad]
    with pytest.raises(ToolError, match="lone surrogate"):
        if field == "source":
            from memory.changes import CreateRecord, Destination, SourceRef

            change = CreateRecord(
                content="Retries back off exponentially.",
                sources=(SourceRef(source=bad, label="x"),),
                destination=Destination(topic_path="notes"),
            )
            tools.call(tools.memory_update)([change])
        else:
            tools.call(tools.memory_save)(**args)
    assert ws.records() == [] and ws.sources() == [] and ws.revision == 0

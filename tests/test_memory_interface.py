"""The nine-method interface driven by the runtime harness; recall wrapped once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graph import MemorySessionStore
from graph.models import Node
from memory import (
    ChangeSet,
    CreateRecord,
    Destination,
    LocalMemory,
    MemoryProvider,
    MemoryWorkspace,
    SourceRef,
    run_session,
    wrap_context,
)

NINE = {
    "name",
    "is_available",
    "initialize",
    "system_prompt",
    "search",
    "write",
    "reorganize",
    "extract_before_discard",
    "shutdown",
}


class Recording:
    """Wraps a provider and records which of the nine methods the harness calls."""

    def __init__(self, inner: LocalMemory) -> None:
        self.inner = inner
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        self.calls.append("name")
        return self.inner.name

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self.inner, attr)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(attr)
            return method(*args, **kwargs)

        return call


class Unavailable:
    name = "remote"

    def is_available(self) -> bool:
        return False


def test_harness_calls_all_nine_and_wraps_recall_once(tmp_path: Path) -> None:
    store = MemorySessionStore()
    ws = MemoryWorkspace(tmp_path / "ws")
    # Seed the core topic and a searchable record from an earlier session.
    old = store.create_session("earlier")
    u = store.append(old.id, "Always answer in British English.", role="user")
    [src] = ws.archive([u])
    ws.apply(
        ChangeSet(
            changes=(
                CreateRecord(
                    content="The user wants British English spelling.",
                    sources=(SourceRef(source=src.id, label="spelling"),),
                    destination=Destination(topic_path="core"),
                ),
            )
        )
    )
    local = LocalMemory(ws, store, budget=20)
    rec = Recording(local)
    assert isinstance(local, MemoryProvider)
    prompts: list[str] = []

    def reply(context: str, text: str) -> str:
        prompts.append(context)
        return f"Noted about {text.split()[0].lower()}; the colour scheme stays."

    run = run_session(
        [Unavailable(), rec],  # type: ignore[list-item]
        store,
        ["Which spelling do we use?", "What colour is the logo?", "And the font?"],
        reply,
        compact_after=2,
    )
    assert NINE <= set(rec.calls), NINE - set(rec.calls)
    assert run.provider == "local"
    assert run.system_prompt.count("<memory-context>") == 1
    assert "British English" in run.system_prompt
    assert run.recalls[0].count("<memory-context>") == 1 and "British" in run.recalls[0]
    assert all(p.count("<memory-context>") <= 2 for p in prompts)  # core + recall, each once
    assert run.failures == []
    # Compaction asked memory first; what it kept came from records citing the dropped turns.
    assert run.kept and all(isinstance(k, str) for k in run.kept)
    # Every eligible turn was written by the end; the summary was not.
    assert local.pipeline.owed(run.session_id) == []
    archived = {s.node_id for s in ws.sources()}
    summaries = [n.id for n in store.branch(run.session_id) if n.kind == "summary"]
    assert summaries and not archived & set(summaries)
    ws.close()


def test_wrap_context_is_idempotent() -> None:
    once = wrap_context("fact")
    assert wrap_context(once) == once and once.count("<memory-context>") == 1


def test_extract_before_discard_returns_memory_of_those_turns(tmp_path: Path) -> None:
    store = MemorySessionStore()
    ws = MemoryWorkspace(tmp_path / "ws")
    local = LocalMemory(ws, store)
    s = store.create_session()
    nodes: Sequence[Node] = [
        store.append(s.id, "Our API rate limit is 100 requests per minute.", role="user"),
        store.append(s.id, "I'll throttle the client to stay under it.", role="assistant"),
    ]
    assert local.extract_before_discard(nodes) == []
    assert local.write(s.id, force=True) is None
    kept = local.extract_before_discard(nodes)
    assert len(kept) == 1 and "rate limit" in kept[0]
    ws.close()

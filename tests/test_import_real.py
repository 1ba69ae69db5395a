"""Real Claude Code transcripts (tests/fixtures/real/claude-code, see its SOURCES.md) import as the runtime shows them.

The expected counts come from :func:`read_independently`, a small reader written with the stdlib ``json``
module and none of the importer's code: sessions, nodes, summaries, roots, user branches, the head (the
last message of the main conversation) and the sub-agent sessions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from graph import MemorySessionStore
from graph.importers import import_paths

REAL = Path(__file__).parent / "fixtures" / "real" / "claude-code"
FILES = sorted(p.name for p in REAL.glob("*.jsonl"))


@dataclass
class Expected:
    """What a transcript holds, read without the importer."""

    session: str
    nodes: int
    summaries: int
    roots: int
    user_branches: int
    head: str
    agents: dict[str, int] = field(default_factory=dict)  # agent id -> its entries with a uuid


def _entries(path: Path) -> list[dict[str, object]]:
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    seen: set[object] = set()
    out = []
    for r in rows:
        if isinstance(r.get("uuid"), str) and r["uuid"] not in seen:
            seen.add(r["uuid"])
            out.append(r)
    return out


def read_independently(path: Path) -> Expected:
    """Count a session file's entries the way its runtime reads them (see the module docstring)."""
    main = [r for r in _entries(path) if not r.get("isSidechain")]
    ids = {r["uuid"] for r in main}
    roots = 0
    prompts: dict[object, set[object]] = {}
    for r in main:
        parent = r.get("parentUuid") or r.get("logicalParentUuid")
        if parent not in ids:
            roots += 1
        content = (
            r.get("message", {}).get("content") if isinstance(r.get("message"), dict) else None
        )
        typed = isinstance(content, str) or (
            isinstance(content, list) and not any(b.get("type") == "tool_result" for b in content)
        )
        if (
            r.get("type") == "user"
            and typed
            and not r.get("isMeta")
            and not r.get("isCompactSummary")
        ):
            prompts.setdefault(parent, set()).add(r.get("timestamp"))
    head = [r["uuid"] for r in main if r.get("type") in ("user", "assistant")][-1]
    agents = {
        a.stem.removeprefix("agent-"): len(_entries(a))
        for a in sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    }
    return Expected(
        session=str(main[0]["sessionId"]),
        nodes=len(main),
        summaries=sum(1 for r in main if r.get("isCompactSummary")),
        roots=roots,
        user_branches=sum(1 for stamps in prompts.values() if len(stamps) > 1),
        head=str(head),
        agents=agents,
    )


def test_at_least_five_real_files_with_their_sources() -> None:
    assert len(FILES) >= 5
    sources = (REAL / "SOURCES.md").read_text()
    assert all(f"`{name}`" in sources for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_real_file_imports_as_its_runtime_shows_it(name: str) -> None:
    path = REAL / name
    want = read_independently(path)
    store = MemorySessionStore()
    report = import_paths(store, [path])
    (fr,) = report.files
    assert fr.error is None and fr.skipped == [] and fr.dangling == [] and fr.relinked == []
    sid = want.session
    st = store.stats(sid)
    assert (st.nodes, st.summaries, st.roots, st.forks) == (
        want.nodes, want.summaries, want.roots, want.user_branches,
    )  # fmt: skip
    assert store.session(sid).head == want.head
    if not want.user_branches:
        assert store.tips(sid) == [want.head]  # linear in the runtime: one live tip
        assert [t for t, _ in store.pending_by_tip(sid, "memory", "w")] == [want.head]
    assert st.spawned == len(want.agents)
    for agent, count in want.agents.items():
        child = store.session(f"{sid}/agent-{agent}")
        assert store.stats(child.id).nodes == count
        assert child.spawned_from is not None and child.parent_session == sid
        assert len(store.tips(child.id)) == 1
    again = import_paths(store, [path])
    assert again.failed == [] and again.nodes_added == 0


def test_compaction_agent_links_to_the_boundary_logical_parent() -> None:
    path = REAL / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    boundaries = [r for r in _entries(path) if r.get("subtype") == "compact_boundary"]
    store = MemorySessionStore()
    import_paths(store, [path])
    sid = "258c7280-ae70-4798-800f-63464d01a85d"
    agent = store.session(f"{sid}/agent-acompact-fffbd0")
    assert [agent.spawned_from] == [b["logicalParentUuid"] for b in boundaries]
    (summary,) = [n for n in store.branch(sid) if n.covers]
    assert summary.covers[-1] == boundaries[0]["logicalParentUuid"]

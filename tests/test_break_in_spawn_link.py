"""A sub-agent's transcript imported before its trunk session is linked once the trunk is stored.

``agent-*.jsonl`` given on its own, with its trunk not stored yet, becomes a session of its own
(``<trunk>/agent-<id>``) with no spawn link. Importing the trunk afterwards re-read the agent file
into that session but left it unlinked: ``spawns`` of the trunk did not list it and its
``spawned_from`` stayed empty, unlike a store that imported the trunk first. The store's
:meth:`~graph.store.base.BaseStore.link_spawn` sets the link on such a session, as a metadata-only
write, on every backend.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graph.errors import UnknownNodeError, UnknownSessionError
from graph.importers import claude_code
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tests" / "fixtures" / "claude-code" / "agents"
TRUNK = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return Path(shutil.copytree(AGENTS, tmp_path / "agents"))


def _links(store: BaseStore) -> dict[str, tuple[str | None, str | None]]:
    return {s.id: (s.spawned_from, s.parent_session) for s in store.sessions()}


@pytest.mark.parametrize("agent", ["agent-a11.jsonl", "agent-acompact-7f3e.jsonl"])
def test_an_agent_file_imported_first_is_linked_when_its_trunk_comes(
    tree: Path, agent: str
) -> None:
    first = MemorySessionStore()
    claude_code.import_file(first, tree / f"{TRUNK}.jsonl")
    later = MemorySessionStore()
    alone = claude_code.import_file(later, tree / TRUNK / "subagents" / agent)
    sid = alone.session_ids[0]
    assert later.session(sid).spawned_from is None
    claude_code.import_file(later, tree / f"{TRUNK}.jsonl")
    assert _links(later) == _links(first)
    assert {s.id for s in later.spawns(TRUNK)} == {s.id for s in first.spawns(TRUNK)}
    # The agent root's dangling_parent note became parent_in_session: the same graph either way.
    assert dump(later) == dump(first)
    again = dump(later)
    claude_code.import_file(later, tree / f"{TRUNK}.jsonl")
    assert dump(later) == again


def test_link_spawn_sets_the_link_once_and_keeps_updated_at(store: BaseStore) -> None:
    trunk = store.create_session("trunk")
    node = store.append(trunk.id, "start the agent", role="assistant")
    child = store.create_session("agent")
    store.append(child.id, "the agent's prompt", role="user")
    before = store.session(child.id)
    linked = store.link_spawn(child.id, node.id, trunk.id)
    assert (linked.spawned_from, linked.parent_session) == (node.id, trunk.id)
    assert linked.updated_at == before.updated_at and linked.head == before.head
    assert [s.id for s in store.spawns(trunk.id)] == [child.id]
    other = store.append(trunk.id, "another", role="assistant")
    assert store.link_spawn(child.id, other.id, trunk.id).spawned_from == node.id  # kept


def test_link_spawn_refuses_a_node_of_another_session(store: BaseStore) -> None:
    trunk = store.create_session("trunk")
    child = store.create_session("agent")
    own = store.append(child.id, "the agent's prompt", role="user")
    with pytest.raises(UnknownNodeError):
        store.link_spawn(child.id, own.id, trunk.id)
    with pytest.raises(UnknownSessionError):
        store.link_spawn(child.id, None, "no-such-session")
    assert store.session(child.id).parent_session is None

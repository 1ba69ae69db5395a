"""Export bundles tampered with, imported back: refused naming the file, and nothing stored.

A spawned session's link (``spawned_from``, ``parent_session``) is checked like a predecessor: it
must name a node of its parent session (stored, or in the bundle). Before, a bundle could store a
sub-agent session spawned from a node that exists nowhere, or from a node of its own. A version
field that no release wrote (0, negative, a boolean, a string) is refused too, instead of being
read as the current version.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgpack
import pytest

from graph.bundle import BundleError, export_session, import_bundle
from graph.importers import claude_code
from graph.store.in_memory import MemorySessionStore
from tests.importkit import dump

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tests" / "fixtures" / "claude-code" / "agents"
TRUNK = "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A session with two spawned sessions, exported and decoded."""
    store = MemorySessionStore()
    claude_code.import_file(store, AGENTS / f"{TRUNK}.jsonl")
    path = tmp_path_factory.mktemp("bundle") / "s.sgbundle"
    export_session(store, TRUNK, path)
    data: dict[str, Any] = msgpack.unpackb(path.read_bytes(), raw=False)
    assert [s["id"] for s in data["sessions"]][0] == TRUNK and len(data["sessions"]) == 3
    return data


def _refused(tmp_path: Path, data: dict[str, Any], says: str) -> None:
    path = tmp_path / "tampered.sgbundle"
    path.write_bytes(msgpack.packb(data, use_bin_type=True))
    store = MemorySessionStore()
    with pytest.raises(BundleError) as e:
        import_bundle(store, path)
    assert str(path) in str(e.value) and says in str(e.value)
    assert store.sessions() == []


def _spawned(data: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in data["sessions"] if s["id"].endswith("agent-a11"))


def test_a_spawn_link_to_no_node_is_refused(exported: dict[str, Any], tmp_path: Path) -> None:
    data = copy.deepcopy(exported)
    _spawned(data)["spawned_from"] = "no-such-node"
    _refused(tmp_path, data, "spawned from node 'no-such-node'")


def test_a_spawn_link_to_a_node_of_its_own_is_refused(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    data = copy.deepcopy(exported)
    child = _spawned(data)
    child["spawned_from"] = child["nodes"][0]["id"]
    _refused(tmp_path, data, "is no node of its parent session")


def test_a_spawn_link_to_a_session_that_exists_nowhere_is_refused(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    data = copy.deepcopy(exported)
    _spawned(data)["parent_session"] = "no-such-session"
    _refused(tmp_path, data, "no-such-session")


def test_spawned_sessions_before_their_parent_import_the_same(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "reversed.sgbundle"
    data = copy.deepcopy(exported)
    data["sessions"].reverse()
    for s in data["sessions"]:
        s["nodes"].reverse()
    path.write_bytes(msgpack.packb(data, use_bin_type=True))
    plain = tmp_path / "plain.sgbundle"
    plain.write_bytes(msgpack.packb(exported, use_bin_type=True))
    a, b = MemorySessionStore(), MemorySessionStore()
    import_bundle(a, path)
    import_bundle(b, plain)
    assert dump(a) == dump(b)


@pytest.mark.parametrize("version", [0, -1, True, "2", 2.0], ids=repr)
def test_a_version_no_release_wrote_is_refused(
    exported: dict[str, Any], tmp_path: Path, version: Any
) -> None:
    data = copy.deepcopy(exported)
    data["version"] = version
    _refused(tmp_path, data, "bundle version")


def test_a_spawned_session_exported_alone_still_imports_alone(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "alone.sgbundle"
    data = copy.deepcopy(exported)
    data["sessions"] = [_spawned(data)]
    path.write_bytes(msgpack.packb(data, use_bin_type=True))
    store = MemorySessionStore()
    import_bundle(store, path)
    assert store.session(data["sessions"][0]["id"]).parent_session == TRUNK

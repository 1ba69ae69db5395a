"""Session bundles: export then import reproduces the graph, heads, markers and rewound stamps."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings

from graph import MemorySessionStore, SessionStore
from graph.bundle import BUNDLE_VERSION, BundleError, export_session, import_bundle, read_bundle
from graph.importers import claude_code, detect_format, import_paths
from graph.store.base import BaseStore
from graph.testing import History, Op, operations

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
SID = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"


def snapshot(store: BaseStore, session_id: str) -> dict:
    """Everything a bundle must carry for one session and those spawned from it."""
    out = {}
    todo = [session_id]
    while todo:
        sid = todo.pop()
        s = store.session(sid)
        idx = store.index(sid)
        out[sid] = {
            "session": s.model_dump(),
            "stats": store.stats(sid),
            "order": list(idx.pred),
            "nodes": [n.model_dump() for n in store.nodes(sid)],
            "marks": {key: sorted(ids) for key, ids in idx.marks.items()},
            "tips": store.tips(sid),
            "gaps": store.verify_markers(sid),
        }
        todo.extend(c.id for c in store.spawns(sid))
    return out


def test_example_round_trips_through_a_bundle(tmp_path: Path) -> None:
    source = MemorySessionStore()
    claude_code.import_file(source, EXAMPLE)
    source.mark(SID, source.pending_ids(SID, "memory", "ws")[:3], "memory", "ws")
    path = tmp_path / "s.sgbundle"
    export_session(source, SID, path)
    assert detect_format(path) == "bundle"
    target = SessionStore(tmp_path / "t.db")
    got = import_bundle(target, path)
    assert got.session_ids[0] == SID and len(got.session_ids) == 2
    assert got.nodes_added == 20 and got.markers == 3 and got.rewound == 2
    assert snapshot(target, SID) == snapshot(source, SID)
    again = import_bundle(target, path)
    assert (again.nodes_added, again.markers, again.rewound) == (0, 0, 0)
    assert snapshot(target, SID) == snapshot(source, SID)


def test_bundle_imports_through_import_paths(tmp_path: Path) -> None:
    source = MemorySessionStore()
    claude_code.import_file(source, EXAMPLE)
    path = tmp_path / "s.sgbundle"
    export_session(source, SID, path, spawned=False)
    target = MemorySessionStore()
    report = import_paths(target, [path])
    assert report.files[0].format == "bundle" and report.files[0].session_ids == [SID]
    assert target.stats(SID).nodes == 18 and target.spawns(SID) == []


def test_not_a_bundle_and_newer_versions_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sgbundle"
    junk.write_bytes(b"\x00\x01 not msgpack")
    with pytest.raises(BundleError):
        read_bundle(junk)
    newer = tmp_path / "newer.sgbundle"
    data = {"format": "sessiongraph-bundle", "version": BUNDLE_VERSION + 1, "sessions": []}
    newer.write_bytes(msgpack.packb(data))
    with pytest.raises(BundleError, match="newer"):
        read_bundle(newer)
    ext = tmp_path / "ext.sgbundle"
    ext.write_bytes(
        msgpack.packb(
            {"format": "sessiongraph-bundle", "version": 1, "sessions": [msgpack.ExtType(1, b"x")]}
        )
    )
    with pytest.raises(BundleError):
        read_bundle(ext)


def test_a_bundle_clashing_with_stored_ids_changes_nothing(tmp_path: Path) -> None:
    source = MemorySessionStore()
    claude_code.import_file(source, EXAMPLE)
    path = tmp_path / "s.sgbundle"
    export_session(source, SID, path)
    target = MemorySessionStore()
    other = target.create_session("other")
    target.append(
        other.id, "x", role="user", id="6752a423-2d6a-4a48-861d-ac9c21470675"
    )  # the example's first uuid
    with pytest.raises(Exception) as e:
        import_bundle(target, path)
    assert "DuplicateNode" in type(e.value).__name__
    assert [s.id for s in target.sessions()] == [other.id]


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=operations(max_size=25))
def test_export_then_import_reproduces_generated_histories(ops: list[Op], tmp_path: Path) -> None:
    history = History(MemorySessionStore)
    for op in ops:
        op.apply(history)
    store, sid = history.store, history.sessions[0]
    path = tmp_path / "h.sgbundle"
    export_session(store, sid, path)
    target = MemorySessionStore()
    import_bundle(target, path)
    assert snapshot(target, sid) == snapshot(store, sid)


def test_two_values_of_one_provider_travel_and_a_version_1_bundle_still_reads(
    tmp_path: Path,
) -> None:
    source = MemorySessionStore()
    claude_code.import_file(source, EXAMPLE)
    owed = source.pending_ids(SID, "memory", "ws-a")
    source.mark(SID, owed[:3], "memory", "ws-a")
    source.mark(SID, owed[:1], "memory", "ws-b")
    path = tmp_path / "s.sgbundle"
    export_session(source, SID, path)
    target = MemorySessionStore()
    assert import_bundle(target, path).markers == 4
    assert snapshot(target, SID) == snapshot(source, SID)
    assert target.node(owed[0]).written == {"memory": ("ws-a", "ws-b")}
    data = read_bundle(path)  # the same bundle as version 1 wrote it: one value per provider
    data["version"] = 1
    for rec in data["sessions"]:
        rec["markers"] = {p: {n: vs[0] for n, vs in pm.items()} for p, pm in rec["markers"].items()}
    old = tmp_path / "v1.sgbundle"
    old.write_bytes(msgpack.packb(data, use_bin_type=True))
    again = MemorySessionStore()
    import_bundle(again, old)
    assert again.pending_ids(SID, "memory", "ws-a") == source.pending_ids(SID, "memory", "ws-a")
    assert again.node(owed[0]).written == {"memory": ("ws-a",)}

"""Hostile and wrong bundles: each is a clean refusal naming the file, and nothing is stored.

A bundle is checked like any other write: wrong shapes (markers as a list, a node that is not a map),
values outside plain JSON-safe data (a msgpack Timestamp, any extension type, bytes), and a marker gap
are refused; a large bundle of empty sessions imports in time linear in its size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

from graph import MarkerGapError, MemorySessionStore, SessionStore
from graph.bundle import BundleError, export_session, import_bundle, read_bundle
from graph.store.base import BaseStore


def _node(nid: str, pred: str | None, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "predecessor": pred,
        "kind": "message",
        "role": role,
        "content": f"text of {nid}",
        "created_at": 1_700_000_000_000_000,
        "metadata": {},
        "covers": [],
    } | extra


def _session(sid: str = "s1", **extra: Any) -> dict[str, Any]:
    nodes = [_node("a", None), _node("b", "a", "assistant"), _node("c", "b")]
    return {
        "id": sid,
        "title": "t",
        "created_at": 1_700_000_000_000_000,
        "updated_at": 1_700_000_000_000_000,
        "head": "c",
        "metadata": {},
        "spawned_from": None,
        "parent_session": None,
        "nodes": nodes,
        "markers": {},
        "rewound": [],
    } | extra


def _bundle(path: Path, *sessions: dict[str, Any], **kw: Any) -> Path:
    data = {
        "format": "sessiongraph-bundle",
        "version": 1,
        "exported_at": 0,
        "sessions": list(sessions),
    }
    path.write_bytes(msgpack.packb(data, use_bin_type=True, **kw))
    return path


@pytest.mark.parametrize(
    ("session", "says"),
    [
        (_session(markers=[["memory", "a", "ws"]]), "sessions[0].markers is a list"),
        (_session(markers={"memory": ["a"]}), "sessions[0].markers.memory is not a map"),
        (_session(markers={"memory": {"a": 7}}), "sessions[0].markers.memory is not a map"),
        (_session(nodes={"a": 1}), "sessions[0].nodes is a dict"),
        (_session(nodes=["a"]), "sessions[0].nodes[0] is a str, not a map"),
        (_session(rewound={"a": True}), "sessions[0].rewound is a dict"),
        (_session(rewound=[1]), "sessions[0].rewound holds a value"),
        (_session(id=5), "sessions[0].id is a int"),
        (_session(head=["c"]), "sessions[0].head is a list"),
        (_session(created_at="yesterday"), "sessions[0].created_at is a str"),
        (_session(nodes=[_node("a", None, created_at=True)]), "created_at is a bool"),
        (_session(nodes=[_node("a", None, covers="b")]), "covers is a str"),
        ({k: v for k, v in _session().items() if k != "id"}, "sessions[0] has no 'id'"),
        ("a session", "sessions[0] is a str, not a map"),
    ],
    ids=[
        "markers-list",
        "marker-map-list",
        "marker-value-int",
        "nodes-map",
        "node-str",
        "rewound-map",
        "rewound-int",
        "id-int",
        "head-list",
        "created-str",
        "node-time-bool",
        "covers-str",
        "no-id",
        "session-str",
    ],
)
def test_wrong_shapes_are_refused_naming_the_file(tmp_path: Path, session: Any, says: str) -> None:
    path = _bundle(tmp_path / "bad.sgbundle", session)
    store = MemorySessionStore()
    with pytest.raises(BundleError) as e:
        import_bundle(store, path)
    assert str(path) in str(e.value) and says in str(e.value)
    assert store.sessions() == []


def test_a_msgpack_timestamp_is_refused(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    meta = {"when": msgpack.Timestamp.from_datetime(datetime(2025, 1, 1, tzinfo=UTC))}
    path = _bundle(tmp_path / "ts.sgbundle", _session(metadata=meta))
    with pytest.raises(BundleError, match=r"sessions\[0\]\.metadata\.when is Timestamp"):
        read_bundle(path)
    path = _bundle(tmp_path / "dt.sgbundle", _session(), datetime=True)  # packs nothing odd
    assert read_bundle(path)["sessions"][0]["id"] == "s1"


@pytest.mark.parametrize("code", [1, 42, 127])
def test_any_extension_type_is_refused(tmp_path: Path, code: int) -> None:
    node = _node("a", None, metadata={"x": msgpack.ExtType(code, b"\x00")})
    path = _bundle(tmp_path / "ext.sgbundle", _session(nodes=[node], head="a"))
    with pytest.raises(BundleError, match="extension type"):
        import_bundle(MemorySessionStore(), path)


@pytest.mark.parametrize(
    "session",
    [
        _session(metadata={"blob": b"\x00\xff"}),
        _session(nodes=[_node("a", None, metadata={"raw": [b"x"]})], head="a"),
        _session(nodes=[_node("a", None, content=[{"type": "text", "text": b"x"}])], head="a"),
    ],
    ids=["session-metadata", "node-metadata", "content-block"],
)
def test_bytes_are_refused(tmp_path: Path, session: dict[str, Any]) -> None:
    path = _bundle(tmp_path / "bytes.sgbundle", session)
    store = MemorySessionStore()
    with pytest.raises(BundleError, match="is bytes, not plain JSON-safe data"):
        import_bundle(store, path)
    assert store.sessions() == []


def test_export_refuses_bytes_it_could_not_read_back(tmp_path: Path) -> None:
    store = MemorySessionStore()
    s = store.create_session("t", metadata={"blob": b"\x01"})
    with pytest.raises(BundleError, match="cannot export"):
        export_session(store, s.id, tmp_path / "out.sgbundle")
    assert not (tmp_path / "out.sgbundle").exists()


def test_a_marker_gap_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    # "c" marked, "a" and "b" (eligible, above it) not: pending would skip a and b.
    gap = _session(markers={"memory": {"c": "ws"}})
    path = _bundle(tmp_path / "gap.sgbundle", gap)
    store = MemorySessionStore()
    with pytest.raises(MarkerGapError):
        import_bundle(store, path)
    assert store.sessions() == []
    ok = _bundle(tmp_path / "ok.sgbundle", _session(markers={"memory": {"a": "ws", "b": "ws"}}))
    import_bundle(store, ok)
    assert [n.id for n in store.pending("s1", "memory", "ws")] == ["c"]


def test_a_bundle_is_all_or_nothing_across_sessions(tmp_path: Path) -> None:
    good = _session("s1")
    bad = _session("s2", nodes=[_node("x", None), _node("y", "nowhere")], head="y")
    path = _bundle(tmp_path / "two.sgbundle", good, bad)
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises(Exception, match="nowhere"):
        import_bundle(store, path)
    assert store.sessions() == []


def test_deeply_nested_metadata_is_walked_without_recursion(tmp_path: Path) -> None:
    deep: Any = b"leaf"
    for _ in range(400):  # msgpack's own nesting limit is far below Python's recursion limit
        deep = [deep]
    path = _bundle(tmp_path / "deep.sgbundle", _session(metadata={"d": deep}))
    with pytest.raises(BundleError, match="is bytes"):
        read_bundle(path)


def _empty_sessions(path: Path, n: int) -> Path:
    return _bundle(
        path,
        *(
            {
                "id": f"e{i:06d}",
                "title": "",
                "created_at": 0,
                "head": None,
                "nodes": [],
                "markers": {},
                "rewound": [],
            }
            for i in range(n)
        ),
    )


def _statements(store: SessionStore, path: Path) -> int:
    count = 0

    def tick(_: str) -> None:
        nonlocal count
        count += 1

    store.conn.set_trace_callback(tick)
    import_bundle(store, path)
    store.conn.set_trace_callback(None)
    return count


def test_empty_sessions_import_with_constant_work_per_session(tmp_path: Path) -> None:
    small = _statements(SessionStore(tmp_path / "a.db"), _empty_sessions(tmp_path / "a.sg", 300))
    big = _statements(SessionStore(tmp_path / "b.db"), _empty_sessions(tmp_path / "b.sg", 3000))
    assert big <= 10 * small * 1.05, (small, big)
    store = MemorySessionStore()
    report = import_bundle(store, _empty_sessions(tmp_path / "c.sg", 3000))
    assert len(report.session_ids) == 3000 and len(store.sessions()) == 3000


def test_import_summary_of_many_sessions_is_bounded(tmp_path: Path) -> None:
    path = _empty_sessions(tmp_path / "many.sgbundle", 500)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")} | {
        "COLUMNS": "120"
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "s.db"),
            "import",
            str(path),
            "--verbose",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "… 300 more" in done.stdout  # the table of --verbose stops at 200 rows
    assert len(done.stdout.splitlines()) < 220


def test_export_of_many_spawned_sessions_reads_back(tmp_path: Path) -> None:
    store: BaseStore = MemorySessionStore()
    root = store.create_session("root")
    n = store.append(root.id, "start the sub-agents", role="user")
    for _ in range(50):
        store.spawn(root.id, n.id, title="sub")
    path = tmp_path / "tree.sgbundle"
    export_session(store, root.id, path)
    target = MemorySessionStore()
    assert len(import_bundle(target, path).session_ids) == 51

"""The picture of a session's DAG (graph.drawing) and `sessiongraph show --format svg|dot`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graph import MemorySessionStore, SessionStore
from graph.cli.commands import app
from graph.drawing import layout, picture, to_dot, to_svg
from graph.importers import import_file
from tests.serverkit import EXAMPLE, SESSION


@pytest.fixture
def example(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    return store


def test_the_example_shows_its_fork_rewind_summary_spawn_and_head(example: SessionStore) -> None:
    pic = picture(example, example.session(SESSION))
    by_lane = {r.lane for r in pic.rows}
    assert by_lane == {0, 1}  # the head's branch left, the rewound branch beside it
    rewound = [r for r in pic.rows if r.rewound]
    assert len(rewound) == 2 and {r.lane for r in rewound} == {1}
    (summary,) = [r for r in pic.rows if r.kind == "summary"]
    assert summary.covers == 11 and summary.cover_span == (0, 10)
    (head,) = [r for r in pic.rows if r.head]
    assert head.lane == 0 and head.node_id == example.session(SESSION).head
    assert [len(r.spawned) for r in pic.rows if r.spawned] == [1]
    assert pic.folded == 1  # the progress entry beside a tool call
    # every drawn node is a node of the session, once
    assert len({r.node_id for r in pic.rows}) == len(pic.rows) == 18 - pic.folded


def test_lanes_never_share_a_row_span() -> None:
    store = MemorySessionStore()
    s = store.create_session("forks")
    a = store.append(s.id, "a", role="user")
    b = store.append(s.id, "b", role="assistant")
    for i in range(3):  # three user branches from a, each two turns long
        x = store.fork(s.id, a.id, f"alt {i}", role="assistant")
        store.fork(s.id, x.id, f"alt {i} more", role="user")
    store.set_head(s.id, b.id)
    pic = layout(store, s)
    assert pic.rows[0].lane == 0 and pic.rows[1].node_id == b.id and pic.rows[1].lane == 0
    spans: dict[int, list[tuple[int, int]]] = {}
    for i, r in enumerate(pic.rows):
        if r.parent_row is not None and pic.rows[r.parent_row].lane != r.lane:
            end = max(
                j
                for j, q in enumerate(pic.rows)
                if q.lane == r.lane
                and j >= i
                and all(pic.rows[k].lane == r.lane for k in range(i, j + 1))
            )
            spans.setdefault(r.lane, []).append((r.parent_row, end))
    for intervals in spans.values():
        intervals.sort()
        for (_, e1), (s2, _) in zip(intervals, intervals[1:], strict=False):
            assert e1 < s2


def test_markers_and_pending_per_provider(example: SessionStore) -> None:
    s = example.session(SESSION)
    owed = example.pending_ids(s.id, "memory", "ws")
    example.mark(s.id, owed[:3], "memory", "ws")
    pic = picture(example, s)
    assert pic.providers == (("memory", "ws"),)
    assert pic.marked["memory=ws"] == 3 and pic.pending["memory=ws"] == len(owed) - 3
    assert sum(bool(r.marked) for r in pic.rows) == 3


def test_svg_escapes_transcript_text_and_uses_no_inline_style() -> None:
    store = MemorySessionStore()
    s = store.create_session("<b>")
    store.append(s.id, '<script>alert("x")</script> & more', role="user")
    svg = to_svg(layout(store, s), standalone=False)
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&amp; more" in svg
    assert " style=" not in svg and "<style" not in svg


def test_dot_output_is_valid_for_graphviz(example: SessionStore) -> None:
    dot = to_dot(picture(example, example.session(SESSION)))
    assert dot.count(" -> ") >= 17 and "shape=note" in dot and "color=grey" in dot
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed (apt-get install graphviz)")
    out = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, check=True)
    assert out.stdout.lstrip().startswith("<?xml")


def test_show_format_svg_and_dot(example: SessionStore, tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.db")
    svg = runner.invoke(app, ["--db", db, "show", SESSION[:8], "--format", "svg"])
    assert svg.exit_code == 0, svg.output
    assert svg.output.startswith("<?xml") and "<style>" in svg.output
    assert len(re.findall(r'class="node ', svg.output)) == 17
    dot = runner.invoke(app, ["--db", db, "show", SESSION[:8], "--format", "dot"])
    assert dot.exit_code == 0 and dot.output.startswith("digraph")
    bad = runner.invoke(app, ["--db", db, "show", SESSION[:8], "--format", "png"])
    assert bad.exit_code == 2

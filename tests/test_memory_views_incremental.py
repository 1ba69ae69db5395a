"""Incremental views: a write renders the topics it changed, and the views equal a full rendering.

A topic file carried over from the previous rendering keeps its inode (it is hard-linked, not
written again); ``render_topic`` is counted to show what was rendered.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph import MemorySessionStore
from memory import MemoryWorkspace
from memory import views as views_module
from memory.changes import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MoveRecords,
    SourceRef,
    UpdateRecord,
)
from memory.errors import WorkspaceStoreError
from memory.records import CORE_TOPIC
from memory.views import forget_rendering, render_workspace_views

TOPICS = [f"projects/p{n:02d}" for n in range(6)] + [CORE_TOPIC]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[MemoryWorkspace]:
    """A workspace with three records in each of seven topics (one is the core topic)."""
    w = MemoryWorkspace(tmp_path / "ws")
    store = MemorySessionStore()
    sid = store.create_session("s").id
    store.append(sid, "We keep notes per project.", role="user")
    (source,) = w.archive(store.pending(sid, "memory", w.id))
    SOURCE[w.path] = source.id
    _apply(w, [_create(w, t, f"{t} fact {k}") for t in TOPICS for k in range(3)])
    w.render_views()
    yield w
    w.close()


SOURCE: dict[Path, str] = {}


def _create(ws: MemoryWorkspace, topic: str, text: str) -> CreateRecord:
    return CreateRecord(
        content=text,
        sources=(SourceRef(source=SOURCE[ws.path], label="note", snippet="notes"),),
        destination=Destination(topic_path=topic),
    )


def _apply(ws: MemoryWorkspace, changes: list[object]) -> None:
    """Install ``changes`` without rendering (as the write pipeline does between its batches)."""
    base = ws.baseline()
    plan = ws.plan(ChangeSet(changes=tuple(changes)), batch=None, baseline=base)  # type: ignore[arg-type]
    ws.install(plan, base)


def _inodes(ws: MemoryWorkspace) -> dict[str, int]:
    root = ws.views_path
    return {str(p.relative_to(root)): p.stat().st_ino for p in root.rglob("*") if p.is_file()}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The topics ``render_topic`` is called for, in order."""
    calls: list[str] = []
    real = views_module.render_topic

    def counting(topic: str, records: object) -> str:
        calls.append(topic)
        return real(topic, records)  # type: ignore[arg-type]

    monkeypatch.setattr(views_module, "render_topic", counting)
    return calls


def _full_rendering(ws: MemoryWorkspace, tmp_path: Path) -> dict[str, bytes]:
    """What a full render of the workspace's records writes (into a directory of its own)."""
    other = tmp_path / "full"
    other.mkdir(exist_ok=True)
    forget_rendering(other)
    render_workspace_views(other, ws.id, ws.revision, ws.state(), ws.core_budget, ws.count_tokens)
    return _files(other / "views")


def test_a_write_to_one_topic_rewrites_only_that_file(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path
) -> None:
    ws.render_views()
    before = _inodes(ws)
    rendered.clear()

    _apply(ws, [_create(ws, "projects/p03", "p03 gets a new fact")])
    changed = ws.render_views()

    assert rendered == ["projects/p03"]
    assert changed == ["topics/projects/p03.md"]
    after = _inodes(ws)
    assert after.keys() == before.keys()
    rewritten = {rel for rel in after if after[rel] != before[rel]}
    assert rewritten == {"topics/projects/p03.md", "views.json"}
    assert "p03 gets a new fact" in (ws.views_path / "topics/projects/p03.md").read_text()
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)


def test_the_core_block_is_rendered_when_the_core_topic_changes(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path
) -> None:
    ws.render_views()
    before = _inodes(ws)
    rendered.clear()

    _apply(ws, [_create(ws, CORE_TOPIC, "Answer in British English.")])
    changed = ws.render_views()

    assert rendered == [CORE_TOPIC]
    assert changed == ["core.md", "topics/core.md"]
    assert "British English" in (ws.views_path / "core.md").read_text()
    assert _inodes(ws)["topics/projects/p00.md"] == before["topics/projects/p00.md"]
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)


def test_moves_deletes_and_updates_render_both_ends(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path
) -> None:
    ws.render_views()
    by_topic = {t: [r.id for r in ws.records(t)] for t in TOPICS}
    rendered.clear()

    _apply(
        ws,
        [
            MoveRecords(
                memory_ids=(by_topic["projects/p01"][0],),
                destination=Destination(topic_path="projects/p02"),
            ),
            DeleteRecord(memory_id=by_topic["projects/p04"][1]),
        ],
    )
    assert sorted(ws.render_views()) == [
        "topics/projects/p01.md",
        "topics/projects/p02.md",
        "topics/projects/p04.md",
    ]
    assert sorted(rendered) == ["projects/p01", "projects/p02", "projects/p04"]
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)

    rendered.clear()
    rec = ws.record(by_topic["projects/p05"][2])
    _apply(ws, [UpdateRecord(memory_id=rec.id, content="p05 changed", sources=_refs(rec))])
    # Emptying a topic removes its file.
    _apply(ws, [DeleteRecord(memory_id=rid) for rid in by_topic["projects/p00"]])
    changed = ws.render_views()
    assert changed == ["topics/projects/p00.md", "topics/projects/p05.md"]
    assert rendered == ["projects/p05"]
    assert not (ws.views_path / "topics/projects/p00.md").exists()
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)


def _refs(rec: object) -> tuple[SourceRef, ...]:
    return tuple(
        SourceRef(source=c.source, label=c.label, snippet=c.snippet)
        for c in rec.citations  # type: ignore[attr-defined]
    )


def test_a_file_changed_by_hand_is_rendered_again(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path
) -> None:
    ws.render_views()
    edited = ws.views_path / "topics/projects/p02.md"
    edited.write_text("# projects/p02\n\nscribbled over\n")
    (ws.views_path / "topics/projects/p05.md").unlink()
    rendered.clear()

    _apply(ws, [_create(ws, "projects/p03", "another fact")])
    ws.render_views()

    assert sorted(rendered) == ["projects/p02", "projects/p03", "projects/p05"]
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)


def test_everything_is_rendered_when_another_process_rendered(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path
) -> None:
    ws.render_views()
    forget_rendering(ws.path)  # as in a process that has not rendered this workspace
    rendered.clear()

    _apply(ws, [_create(ws, "projects/p03", "from elsewhere")])
    ws.render_views()

    assert sorted(rendered) == sorted(TOPICS)
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)


def test_a_render_that_fails_leaves_the_previous_views_and_the_next_renders_everything(
    ws: MemoryWorkspace, rendered: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.render_views()
    before = _files(ws.views_path)
    _apply(ws, [_create(ws, "projects/p01", "half written")])

    def broken(*args: object, **kwargs: object) -> str:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(views_module, "render_views_dir", broken)
        with pytest.raises(WorkspaceStoreError, match="No space left"):
            ws.render_views()
    assert _files(ws.views_path) == before  # the previous complete views
    rendered.clear()

    ws.render_views()

    assert sorted(rendered) == sorted(TOPICS)
    assert _files(ws.views_path) == _full_rendering(ws, tmp_path)
    assert len(os.listdir(ws.path / ".views")) == 1


def test_reopening_a_workspace_whose_views_are_behind_renders_them(
    ws: MemoryWorkspace, tmp_path: Path
) -> None:
    ws.render_views()
    _apply(ws, [_create(ws, "projects/p01", "installed, then a crash before the render")])
    path = ws.path
    ws.close()
    again = MemoryWorkspace(path)
    try:
        assert (
            "installed, then a crash" in (again.views_path / "topics/projects/p01.md").read_text()
        )
        assert _files(again.views_path) == _full_rendering(again, tmp_path)
    finally:
        again.close()

"""Symlinks and odd files in a workspace or an export folder: never followed out, clean errors.

* ``memory export -o DIR`` never writes through a symlink in DIR;
* a ``.views`` symlink never makes a render delete (or write) outside the workspace;
* a directory where ``views`` or ``write.lock`` should be is a clean error, not a traceback;
* views left incomplete (a folder missing while ``views.json`` names the current revision) are
  rendered again when the workspace is opened, and a render never runs beside another.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore
from memory import MemoryWorkspace, WritePipeline
from memory.errors import WorkspaceStoreError
from memory.reading import export_markdown


def _written(tmp_path: Path) -> MemoryWorkspace:
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session("views")
    store.append(s.id, "Where do release notes live?", role="user")
    store.append(s.id, "In docs/releases, one file per version.", role="assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(ws, store).write(s.id, force=True) is None
    store.close()
    return ws


def test_export_replaces_a_symlinked_file_and_leaves_its_target(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    out = tmp_path / "export"
    out.mkdir()
    (out / "core.md").symlink_to(outside)
    files = export_markdown(ws, out)
    assert outside.read_text() == "keep me"
    assert not (out / "core.md").is_symlink()
    assert (out / "core.md").read_text().startswith("# Core memory")
    assert out / "core.md" in files


def test_export_refuses_a_symlinked_folder(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "export"
    out.mkdir()
    (out / "topics").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValueError, match="is a symlink"):
        export_markdown(ws, out)
    assert list(elsewhere.iterdir()) == []


def test_cli_export_through_a_symlink_is_one_error_line(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    ws.close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "export"
    out.mkdir()
    (out / "topics").symlink_to(elsewhere, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "s.db"),
            "memory",
            "--workspace",
            str(tmp_path / "ws"),
            "export",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_views_stage_symlink_never_deletes_outside(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    victim = tmp_path / "victim"
    (victim / "precious").mkdir(parents=True)
    (victim / "precious" / "file.txt").write_text("x")
    shutil.rmtree(ws.path / ".views")
    (ws.path / ".views").symlink_to(victim, target_is_directory=True)
    ws.render_views()
    assert (victim / "precious" / "file.txt").read_text() == "x"
    assert not (ws.path / ".views").is_symlink()
    assert (ws.views_path / "core.md").is_file()
    # A link planted inside .views is unlinked, never followed.
    (ws.path / ".views" / "planted").symlink_to(victim, target_is_directory=True)
    ws.render_views()
    assert (victim / "precious" / "file.txt").read_text() == "x"
    assert not (ws.path / ".views" / "planted").exists()


def test_a_directory_where_views_should_be_is_a_clean_error(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    (ws.path / "views").unlink()
    (ws.path / "views").mkdir()
    (ws.path / "views" / "mine.txt").write_text("a human's file")
    with pytest.raises(WorkspaceStoreError, match="is a directory"):
        ws.render_views()
    assert (ws.path / "views" / "mine.txt").read_text() == "a human's file"


def test_a_directory_where_the_lock_should_be_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "ws" / "write.lock").mkdir(parents=True)
    with pytest.raises(WorkspaceStoreError, match="write lock must be a file"):
        MemoryWorkspace(tmp_path / "ws")


def test_incomplete_views_are_rendered_again_at_open(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    ws.close()
    views = tmp_path / "ws" / "views"
    shutil.rmtree(views / "topics")  # views.json still names the current revision
    ws = MemoryWorkspace(tmp_path / "ws")
    assert list((views / "topics").rglob("*.md"))
    assert (views / "core.md").is_file()


def test_an_opener_does_not_render_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    ws = _written(tmp_path)
    ws.close()
    views = tmp_path / "ws" / "views"
    before = os.readlink(views)
    shutil.rmtree(views / "topics")
    holder = MemoryWorkspace(tmp_path / "ws")  # renders (the lock is free), then holds the lock
    with holder.write_lock():
        shutil.rmtree(views / "topics")
        opener = MemoryWorkspace(tmp_path / "ws")  # the lock is busy: leaves the views alone
        assert not (views / "topics").exists()
        opener.close()
    assert os.readlink(views) != before
    holder.close()
    reopened = MemoryWorkspace(tmp_path / "ws")
    assert list((views / "topics").rglob("*.md"))
    reopened.close()

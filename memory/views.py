r"""The Markdown views of a workspace: ``topics/**/*.md`` and ``core.md``.

The views are rendered from the database after every install and are never the source of truth. A
human's edit to a topic file comes back as a ``rewrite_topic`` change (:mod:`memory.changes`) through
the same validated transaction as a writer's; the format below is exact so that a parser can recover
every record, its place, its tags, time and citations from the file.

Layout of the views directory (``<workspace>/views``, a symlink swapped atomically to a freshly rendered
directory under ``<workspace>/.views/``)::

    views/views.json             {"workspace_id", "revision", "core_left_out": [record ids]}
    views/core.md                the core block (see below)
    views/topics/<topic>.md      one file per topic with at least one record; <topic> is the topic
                                 path, so ``sessions/abc`` is ``topics/sessions/abc.md``

The topic files' grammar, their renderer and their parser are in :mod:`memory.topic_files`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.records import CORE_TOPIC, Record
from memory.topic_files import render_core, render_topic
from memory.transactions import State

__all__ = [
    "ViewsRender",
    "forget_rendering",
    "render_views_dir",
    "render_workspace_views",
]


def render_views_dir(
    root: Path,
    files: Mapping[str, str],
    linked: Mapping[str, Path] | None = None,
) -> str:
    """Atomically make ``root/views`` show exactly ``files`` (relative path -> text) and ``linked``.

    The files are written to a new directory under ``root/.views/``, each file of ``linked``
    (relative path -> a file of the current rendering, unchanged) is hard-linked into it (copied
    where the file system has no hard links), then the ``views`` symlink is replaced by one
    pointing at it (``os.replace`` of a symlink is atomic on POSIX), and the old directory is
    removed. Returns the new directory's name. A crash at any moment leaves ``views`` showing either the old or the new
    rendering, never a mix; stray directories are removed by the next render. Nothing is written or
    removed through a symlink: a ``.views`` that is a symlink is replaced by a real directory (the
    link is removed, never its target), and links inside it are unlinked, not followed. The caller
    holds the workspace's write lock, so two renders never clean up each other's directories.

    Raises:
        NotADirectoryError: ``root/views`` is a real directory (not the symlink kept there).
        OSError: the files cannot be written.
    """
    stage_root = root / ".views"
    link = root / "views"
    if link.is_dir() and not link.is_symlink():
        raise NotADirectoryError(
            f"{link} is a directory; the workspace keeps a symlink there (to .views/<render>): "
            "move the directory away"
        )
    if stage_root.is_symlink() or (stage_root.exists() and not stage_root.is_dir()):
        # Never render into (or clean up) a place outside the workspace: drop the link itself.
        stage_root.unlink()
    stage_root.mkdir(exist_ok=True)
    name = f"r{os.getpid()}-{os.urandom(4).hex()}"
    stage = stage_root / name
    stage.mkdir()
    for rel, text in files.items():
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    for rel, src in (linked or {}).items():
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, target, follow_symlinks=False)
        except OSError:
            shutil.copyfile(src, target, follow_symlinks=False)
    tmp_link = root / f".views-{name}.lnk"
    os.symlink(os.path.join(".views", name), tmp_link)
    os.replace(tmp_link, link)
    for old in stage_root.iterdir():
        if old.name == name:
            continue
        if old.is_symlink() or not old.is_dir():
            old.unlink(missing_ok=True)
        else:
            shutil.rmtree(old, ignore_errors=True)
    return name


@dataclass(frozen=True)
class ViewsRender:
    """What one :func:`render_workspace_views` call did."""

    changed: tuple[str, ...]
    """Relative paths whose bytes changed (added, changed or removed), sorted; never ``views.json``."""
    rendered: tuple[str, ...]
    """Relative paths rendered afresh, sorted (``views.json`` always is)."""
    kept: int
    """Files carried over unchanged from the previous rendering (hard links, not rewritten)."""


@dataclass(frozen=True)
class _Rendering:
    """What this process last rendered into one workspace's views."""

    name: str
    """The directory under ``.views/``."""
    workspace_id: str
    topics: dict[str, tuple[Record, ...]]
    """Each topic's records as rendered, in position order."""
    core: tuple[tuple[Record, ...], int, Callable[[str], int], tuple[str, ...]]
    """The core records, budget and token counter ``core.md`` was rendered with, and who was left out."""
    files: dict[str, tuple[int, int, int]]
    """Per file: ``(inode, size, mtime_ns)`` right after the render."""


_LAST: dict[str, _Rendering] = {}


def forget_rendering(root: Path) -> None:
    """Forget what was rendered into ``root/views``: its next render renders every file."""
    _LAST.pop(os.path.realpath(root), None)


def _same(old: Sequence[Record] | None, new: Sequence[Record]) -> bool:
    return (
        old is not None
        and len(old) == len(new)
        and all(a is b or a == b for a, b in zip(old, new, strict=True))
    )


def _untouched(path: Path, expected: tuple[int, int, int] | None) -> bool:
    """Whether ``path`` is still the regular file rendered there (same inode, size, mtime)."""
    if expected is None:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (st.st_ino, st.st_size, st.st_mtime_ns) == expected


def _current(root: Path, memo: _Rendering | None, workspace_id: str) -> Path | None:
    """The directory ``views`` points at, when it is the one ``memo`` describes."""
    if memo is None or memo.workspace_id != workspace_id:
        return None
    try:
        target = os.readlink(root / "views")
    except OSError:
        return None
    return root / ".views" / memo.name if target == os.path.join(".views", memo.name) else None


def render_workspace_views(
    root: Path,
    workspace_id: str,
    revision: int,
    state: State,
    core_budget: int,
    count_tokens: Callable[[str], int],
) -> ViewsRender:
    """Render a workspace's views (``topics/**/*.md``, ``core.md``, ``views.json``) and swap them in.

    Only what changed is rendered: this process remembers, per workspace directory, the records each
    file was rendered from and the file's inode, size and mtime. A topic whose records are the same
    (identical or equal, in the same order) as when its file was rendered, and whose file is still
    that file, is hard-linked into the new rendering instead of being rendered and written again;
    so is ``core.md`` while the core topic, the budget and the counter are unchanged. A write that
    touches one topic renders that topic, ``views.json`` (and ``core.md`` when the core topic
    changed), whatever the size of the memory. Everything is rendered when there is nothing to
    compare with: the first render of a process, after a failed render, when ``views`` points
    elsewhere (another process rendered), or for another workspace id (a reset). A file changed or
    removed by hand since it was rendered is rendered again.

    The swap is :func:`render_views_dir`'s: the new rendering is complete before ``views`` points at
    it, so a crash leaves the previous complete views. The caller holds the workspace's write lock.

    Args:
        root: The workspace directory (``views`` and ``.views/`` are inside it).
        workspace_id: Written into ``views.json``.
        revision: The workspace revision the state is at, written into ``views.json``.
        state: Every record of the workspace.
        core_budget: Tokens ``core.md`` may hold.
        count_tokens: The workspace's token counter.

    Returns:
        What changed and what was rendered.

    Raises:
        NotADirectoryError: ``root/views`` is a real directory.
        OSError: the files cannot be written.
    """
    key = os.path.realpath(root)
    memo = _LAST.pop(key, None)  # put back only once the new rendering is in place
    current = _current(root, memo, workspace_id)
    files: dict[str, str] = {}
    linked: dict[str, Path] = {}
    topics: dict[str, tuple[Record, ...]] = {}
    for topic in sorted(state.order):
        records = tuple(state.topic_records(topic))
        topics[topic] = records
        rel = f"topics/{topic}.md"
        if (
            current is not None
            and memo is not None
            and _same(memo.topics.get(topic), records)
            and _untouched(current / rel, memo.files.get(rel))
        ):
            linked[rel] = current / rel
        else:
            files[rel] = render_topic(topic, records)
    core_records = topics.get(CORE_TOPIC, ())
    if (
        current is not None
        and memo is not None
        and _same(memo.core[0], core_records)
        and memo.core[1:3] == (core_budget, count_tokens)
        and _untouched(current / "core.md", memo.files.get("core.md"))
    ):
        linked["core.md"] = current / "core.md"
        left_out = memo.core[3]
    else:
        core = render_core(core_records, core_budget, count_tokens)
        files["core.md"] = core.text
        left_out = core.left_out
    meta = {"workspace_id": workspace_id, "revision": revision, "core_left_out": list(left_out)}
    files["views.json"] = json.dumps(meta, indent=1) + "\n"
    changed = _changed(root, current, memo, files, topics)
    name = render_views_dir(root, files, linked)
    stage = root / ".views" / name
    stats: dict[str, tuple[int, int, int]] = {}
    for rel in (*files, *linked):
        st = os.lstat(stage / rel)
        stats[rel] = (st.st_ino, st.st_size, st.st_mtime_ns)
    _LAST[key] = _Rendering(
        name,
        workspace_id,
        topics,
        (core_records, core_budget, count_tokens, tuple(left_out)),
        stats,
    )
    return ViewsRender(changed, tuple(sorted(files)), len(linked))


def _changed(
    root: Path,
    current: Path | None,
    memo: _Rendering | None,
    files: Mapping[str, str],
    topics: Mapping[str, object],
) -> tuple[str, ...]:
    """The paths whose bytes the new rendering changes: rendered ones that differ, removed ones."""
    old = current if current is not None else root / "views"
    if current is not None and memo is not None:
        before = set(memo.files)
    elif old.is_dir():
        before = {str(p.relative_to(old)) for p in old.rglob("*") if p.is_file()}
    else:
        before = set()
    now = {f"topics/{t}.md" for t in topics} | {"core.md"}
    out = {rel for rel in before - now if rel != "views.json"}
    for rel, text in files.items():
        if rel == "views.json":
            continue
        try:
            same = rel in before and (old / rel).read_text("utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            out.add(rel)
    return tuple(sorted(out))

"""Re-importing a grown transcript resumes from the stored offset: the same graph as reading it all.

Each Claude Code file (the repository's fixtures and examples, the shared corpus when present) is cut
at many line boundaries; the first part is imported, the rest appended, and the grown file imported
again, once resuming and once with resuming switched off (the full re-import). The stores must hold
the same sessions, nodes, heads and rewound stamps. Then the cases that must fall back to a full
import (truncated, rewritten, replaced, a deleted session), a torn last line, a rollback and a kill
mid-import, and the schema step that adds the state table.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import claude_code, import_paths
from graph.importers import resume as resume_mod
from graph.importers.resume import FileState, state_key
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore
from graph.store.sqlite import MIGRATIONS, SCHEMA_VERSION
from tests.importkit import LINKED_LATER, dump, fresh_dump, relinked

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SESSIONGRAPH_CORPUS", ROOT.parent / "shared" / "corpus"))


def _claude_files() -> list[Path]:
    found = [p for p in sorted((ROOT / "tests" / "fixtures").rglob("*.jsonl"))]
    found = [p for p in found if "claude-code" in p.parts and not claude_code.is_agent_file(p)]
    found.append(ROOT / "examples" / "claude-code-session.jsonl")
    return found


def _full_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = claude_code.import_file
    monkeypatch.setattr(claude_code, "import_file", lambda s, p: real(s, p, resume=False))


def _cuts(lines: list[bytes], most: int = 24) -> list[int]:
    n = len(lines)
    step = max(1, n // most)
    return sorted({*range(1, n, step), n - 1})


def _copy_with_agents(src: Path, directory: Path) -> Path:
    dst = directory / src.name
    shutil.copyfile(src, dst)
    sub = src.parent / src.stem
    if sub.is_dir():
        shutil.copytree(sub, directory / src.stem)
    return dst


def _grow_and_compare(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Import ``src`` cut at byte ``cut``, then grown to its whole: resumed, and read whole.

    Returns the two stores' dumps and the notes of the second imports.
    """
    data = src.read_bytes()
    results = []
    notes: list[str] = []
    for mode in ("resume", "full"):
        directory = tmp_path / f"{mode}-{cut}"
        directory.mkdir()
        path = _copy_with_agents(src, directory)
        path.write_bytes(data[:cut])
        store = MemorySessionStore()
        with monkeypatch.context() as m:
            if mode == "full":
                _full_only(m)
            import_paths(store, [path])
            with path.open("ab") as f:
                f.write(data[cut:])
            report = import_paths(store, [path])
        assert not [f.error for f in report.files if f.error]
        notes += [n for f in report.files for n in f.notes]
        results.append(dump(store))
    return results[0], results[1], notes


@pytest.mark.parametrize("src", _claude_files(), ids=lambda p: p.name)
def test_a_resumed_import_stores_what_a_full_reimport_stores(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = src.read_bytes().splitlines(keepends=True)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = fresh_dump(claude_code.import_file, _copy_with_agents(src, fresh_dir))
    # Whole agent files beside a session file cut before the entries they follow are no file a
    # runtime writes: with them, only the full re-import is the reference.
    alone = not (src.parent / src.stem).is_dir()
    inherent = LINKED_LATER.get(f"claude-code/{src.name}", {})
    for cut in _cuts(lines):
        at = len(b"".join(lines[:cut]))
        resumed, full, _ = _grow_and_compare(src, tmp_path, monkeypatch, at)
        assert resumed == full, f"cut after line {cut}"
        if alone and (resumed != fresh or cut in inherent):
            assert relinked(resumed, fresh) == inherent.get(cut, set()), f"cut after line {cut}"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus (../shared/corpus) is absent")
@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (CORPUS / "claude-code").glob("*.jsonl")) if CORPUS.is_dir() else [],
)
def test_corpus_files_resume_as_a_full_reimport(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = CORPUS / "claude-code" / name
    lines = src.read_bytes().splitlines(keepends=True)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = fresh_dump(claude_code.import_file, _copy_with_agents(src, fresh_dir))
    alone = not (src.parent / src.stem).is_dir()  # see the test above
    for cut in _cuts(lines, 12):
        at = len(b"".join(lines[:cut]))
        resumed, full, _ = _grow_and_compare(src, tmp_path, monkeypatch, at)
        assert resumed == full, f"cut after line {cut}"
        assert resumed == fresh or not alone, f"cut after line {cut}: not one import's graph"


# ------------------------------------------------------------------------------------- generated

_SID = "5e551011-0000-4000-8000-000000000000"


def _entry(i: int, parent: str | None, kind: str = "user", text: str = "") -> dict[str, Any]:
    content: Any = text or f"turn {i}"
    if kind == "assistant":
        content = [{"type": "text", "text": text or f"answer {i}"}]
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": f"00000000-0000-4000-8000-{i:012d}",
        "timestamp": f"2025-09-10T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
        "sessionId": _SID,
        "cwd": "/w",
    }


def _chain(start: int, n: int, parent: str | None) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + n):
        out.append(_entry(i, parent, "user" if i % 2 == 0 else "assistant"))
        parent = out[-1]["uuid"]
    return out


def _write(path: Path, entries: list[dict[str, Any]], mode: str = "wb") -> None:
    with path.open(mode) as f:
        f.write(b"".join(orjson.dumps(e) + b"\n" for e in entries))


def _imported_in_full(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the full imports (``_plan_main`` calls) from now on."""
    calls: list[int] = []
    real = claude_code._plan_main

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(claude_code, "_plan_main", spy)
    return calls


@pytest.fixture
def sqlite(tmp_path: Path) -> BaseStore:
    store = SessionStore(tmp_path / "s.db")
    yield store
    store.close()


def test_a_grown_file_resumes_and_reads_only_the_new_lines(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    first = _chain(0, 40, None)
    _write(path, first)
    claude_code.import_file(sqlite, path)
    saved = FileState.from_json(sqlite.import_state(state_key(path)))
    assert saved is not None and (saved.offset, saved.line) == (path.stat().st_size, 40)
    full = _imported_in_full(monkeypatch)
    _write(path, _chain(40, 10, first[-1]["uuid"]), "ab")
    report = claude_code.import_file(sqlite, path)
    assert (full, report.nodes_added, report.notes) == ([], 10, [])
    assert sqlite.session(_SID).head == _entry(49, None)["uuid"]
    assert len(sqlite.branch(_SID)) == 50
    again = claude_code.import_file(sqlite, path)
    assert (full, again.nodes_added) == ([], 0)


def test_every_store_resumes(
    store: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    first = _chain(0, 8, None)
    _write(path, first)
    claude_code.import_file(store, path)
    full = _imported_in_full(monkeypatch)
    _write(path, _chain(8, 3, first[-1]["uuid"]), "ab")
    assert claude_code.import_file(store, path).nodes_added == 3
    assert full == [] and len(store.branch(_SID)) == 11


def test_a_rewind_to_a_recent_entry_is_stamped_when_resumed(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    first = _chain(0, 10, None)
    _write(path, first)
    claude_code.import_file(sqlite, path)
    full = _imported_in_full(monkeypatch)
    # the user rewinds to entry 7 and types another prompt
    again = _entry(100, first[7]["uuid"], "user", "try another way")
    _write(path, [again, _entry(101, again["uuid"], "assistant")], "ab")
    claude_code.import_file(sqlite, path)
    assert full == []
    idx = sqlite.index(_SID)
    assert idx.is_rewound(first[8]["uuid"]) and idx.is_rewound(first[9]["uuid"])
    assert sqlite.session(_SID).head == _entry(101, None)["uuid"]


def test_a_fork_older_than_the_window_is_imported_in_full(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    first = _chain(0, claude_code._FRONTIER + 20, None)
    _write(path, first)
    claude_code.import_file(sqlite, path)
    full = _imported_in_full(monkeypatch)
    again = _entry(1000, first[3]["uuid"], "user", "back to the start")
    _write(path, [again], "ab")
    claude_code.import_file(sqlite, path)
    assert full == [1]
    assert sqlite.index(_SID).is_rewound(first[4]["uuid"])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("truncate", "truncated"),
        ("rewrite", "rewritten"),
        ("replace", "replaced"),
    ],
)
def test_a_changed_prefix_falls_back_to_a_full_import(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, why: str
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    entries = _chain(0, 30, None)
    _write(path, entries)
    claude_code.import_file(sqlite, path)
    full = _imported_in_full(monkeypatch)
    if change == "truncate":
        _write(path, entries[:20])
    elif change == "rewrite":  # same length, one early character changed
        raw = bytearray(path.read_bytes())
        at = raw.index(b"turn 0")
        raw[at : at + 6] = b"TURN 0"
        path.write_bytes(bytes(raw))
    else:
        other = tmp_path / "other.jsonl"
        shutil.copyfile(path, other)
        _write(other, _chain(30, 4, entries[-1]["uuid"]), "ab")
        os.replace(other, path)
    report = claude_code.import_file(sqlite, path)
    assert full == [1]
    assert any(n.startswith("imported in full: the file was " + why) for n in report.notes)
    if change == "replace":
        assert report.nodes_added == 4
    if change == "rewrite":
        assert report.error is None and sqlite.node_count(_SID) == 30  # stored content kept


def test_a_deleted_session_is_imported_again_in_full(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    _write(path, _chain(0, 12, None))
    claude_code.import_file(sqlite, path)
    sqlite.delete_session(_SID)
    report = claude_code.import_file(sqlite, path)
    assert report.nodes_added == 12 and sqlite.node_count(_SID) == 12


def test_a_torn_last_line_is_read_again_once_complete(sqlite: BaseStore, tmp_path: Path) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    entries = _chain(0, 6, None)
    whole = orjson.dumps(entries[5]) + b"\n"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries[:5]) + whole[:40])
    report = claude_code.import_file(sqlite, path)
    assert report.nodes_added == 5 and [n for n, _ in report.skipped] == [6]
    with path.open("ab") as f:
        f.write(whole[40:])
    report = claude_code.import_file(sqlite, path)
    assert report.nodes_added == 1 and report.skipped == []
    assert sqlite.session(_SID).head == entries[5]["uuid"]


def test_the_state_is_written_with_the_nodes_or_not_at_all(
    sqlite: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    entries = _chain(0, 20, None)
    _write(path, entries[:10])
    claude_code.import_file(sqlite, path)
    before = sqlite.import_state(state_key(path))
    _write(path, entries[10:], "ab")

    def fail(*args: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(claude_code, "save_state", fail)
    report = import_paths(sqlite, [path]).files[0]
    assert report.error is not None and "disk gone" in report.error
    assert sqlite.import_state(state_key(path)) == before and sqlite.node_count(_SID) == 10
    monkeypatch.undo()
    assert claude_code.import_file(sqlite, path).nodes_added == 10


def test_every_store_keeps_states_and_rolls_them_back(store: BaseStore) -> None:
    store.set_import_state("/a", {"x": 1})
    with pytest.raises(RuntimeError), store.atomic():
        store.set_import_state("/a", {"x": 2})
        store.set_import_state("/b", {"x": 3})
        raise RuntimeError
    assert (store.import_state("/a"), store.import_state("/b")) == ({"x": 1}, None)


# ------------------------------------------------------------------------------------- crash, schema

_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from graph import SessionStore
    from graph.importers import claude_code
    store = SessionStore(sys.argv[1])
    print("ready", flush=True)
    claude_code.import_file(store, Path(sys.argv[2]))
    print("done", flush=True)
    """
)


def test_a_kill_mid_import_then_a_rerun_stores_the_file_once(tmp_path: Path) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    entries = _chain(0, 6000, None)
    _write(path, entries)
    db = tmp_path / "k.db"
    SessionStore(db).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(db), str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # into the import (reading, linking or writing), not a timed assertion
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = SessionStore(db)
    try:
        stored = store.node_count(_SID) if store.has_session(_SID) else 0
        assert stored in (0, 6000)  # all of the file or none of it
        assert (store.import_state(state_key(path)) is None) == (stored == 0)
        claude_code.import_file(store, path)
        assert store.node_count(_SID) == 6000
        assert [n.id for n in store.branch(_SID)] == [e["uuid"] for e in entries]
        saved = FileState.from_json(store.import_state(state_key(path)))
        assert saved is not None and saved.offset == path.stat().st_size
    finally:
        store.close()


def test_a_version_3_file_gains_the_import_state_table(tmp_path: Path) -> None:
    db = tmp_path / "v3.db"
    import sqlite_utils

    conn = sqlite3.connect(db)
    old = sqlite_utils.Database(conn)
    for step in MIGRATIONS[:3]:
        step(old)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '3')")
    conn.commit()
    conn.close()
    store = SessionStore(db)
    try:
        assert store.schema_version == SCHEMA_VERSION >= 4
        path = tmp_path / f"{_SID}.jsonl"
        _write(path, _chain(0, 5, None))
        claude_code.import_file(store, path)
        assert FileState.from_json(store.import_state(state_key(path))) is not None
    finally:
        store.close()


def test_a_state_of_another_version_is_ignored(sqlite: BaseStore, tmp_path: Path) -> None:
    path = tmp_path / f"{_SID}.jsonl"
    _write(path, _chain(0, 5, None))
    sqlite.set_import_state(state_key(path), {"version": 999, "offset": 10**9})
    assert resume_mod.resume_point(sqlite, path, "claude-code") == (None, "")
    assert claude_code.import_file(sqlite, path).nodes_added == 5


# ------------------------------------------------------------------------------------- the write lock


def test_the_write_lock_is_free_while_a_file_is_worked_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "lock.db"
    path = tmp_path / f"{_SID}.jsonl"
    _write(path, _chain(0, 50, None))
    store = SessionStore(db)
    other = SessionStore(db, timeout=0.05)
    real = claude_code._plan_main
    wrote: list[str] = []

    def plan_while_another_writes(*args: Any) -> Any:
        planned = real(*args)
        wrote.append(other.create_session("written meanwhile").id)  # StoreBusyError if locked
        return planned

    monkeypatch.setattr(claude_code, "_plan_main", plan_while_another_writes)
    try:
        report = claude_code.import_file(store, path)
        assert report.nodes_added == 50 and len(wrote) == 1
        assert store.has_session(wrote[0])
    finally:
        other.close()
        store.close()


def test_a_plan_made_stale_by_another_import_is_worked_out_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "race.db"
    path = tmp_path / f"{_SID}.jsonl"
    entries = _chain(0, 30, None)
    _write(path, entries)
    store = SessionStore(db)
    other = SessionStore(db)
    real = claude_code._plan_main
    plans: list[int] = []

    def plan_then_lose_the_race(*args: Any) -> Any:
        planned = real(*args)
        plans.append(len(planned.nodes))
        if len(plans) == 1:  # another importer stores the same file first
            with monkeypatch.context() as m:
                m.setattr(claude_code, "_plan_main", real)
                assert claude_code.import_file(other, path, resume=False).nodes_added == 30
        return planned

    monkeypatch.setattr(claude_code, "_plan_main", plan_then_lose_the_race)
    try:
        report = claude_code.import_file(store, path, resume=False)
        assert plans == [30, 0] and report.nodes_added == 0 and report.error is None
        assert [n.id for n in store.branch(_SID)] == [e["uuid"] for e in entries]
    finally:
        other.close()
        store.close()


@pytest.mark.parametrize("src", _claude_files(), ids=lambda p: p.name)
def test_a_torn_line_completed_later_resumes_as_a_full_reimport(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file is cut inside a line (before its last brace and newline), as a runtime still
    # writing it leaves it; the first import may keep a record recovered from the torn line in the
    # session's metadata, which the resumed import of the completed line must not keep.
    data = src.read_bytes()
    ends = [i for i, c in enumerate(data) if c == ord("\n")]
    for end in ends[:: max(1, len(ends) // 12)]:
        cut = end - 1
        resumed, full, _ = _grow_and_compare(src, tmp_path, monkeypatch, cut)
        assert resumed == full, f"{src.name} cut at byte {cut}"

"""What the resume check sees of a file changed in place, and what it cannot.

The identity check hashes the first KiB and the KiB before the offset. A same-length edit between
those two windows is seen when the file did not grow (its modification time moved although
nothing was appended, which an append-only writer never does), and read from the offset when the
file also grew: no metadata tells that apart from an append, and hashing every byte before the
offset would cost a resume time proportional to the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from graph.importers import claude_code, codex, pi
from graph.importers.resume import FileState, resume_point, state_key
from graph.store.in_memory import MemorySessionStore

SID = "0199a000-0000-7000-8000-0000000000aa"


def _pi(n: int, first: int = 0) -> list[bytes]:
    header = {"type": "session", "version": 3, "id": SID, "timestamp": "2026-01-01T00:00:00Z"}
    out = [] if first else [header]
    for i in range(first, first + n):
        out.append(
            {
                "type": "message",
                "id": f"{i:08x}",
                "parentId": f"{i - 1:08x}" if i else None,
                "timestamp": "2026-01-01T00:00:01Z",
                "message": {"role": "user", "content": [{"type": "text", "text": f"turn {i:03d}"}]},
            }
        )
    return [orjson.dumps(o) + b"\n" for o in out]


def _edit_middle(path: Path) -> None:
    """Change one character of a line far from both hashed KiB, keeping the length."""
    raw = bytearray(path.read_bytes())
    at = raw.index(b"turn 020")
    assert 1024 < at < len(raw) - 2048
    raw[at : at + 8] = b"TURN 020"
    with path.open("r+b") as f:  # in place: the same inode
        f.write(bytes(raw))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # coarse clocks


def test_an_edit_in_the_middle_of_a_file_that_did_not_grow_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_pi(40)))
    store = MemorySessionStore()
    pi.import_file(store, path)
    _edit_middle(path)
    saved, why = resume_point(store, path, pi.FORMAT)
    assert saved is None
    assert why == "rewritten (written since it was read, without growing)"
    report = pi.import_file(store, path)
    assert f"imported in full: the file was {why}" in report.notes


def test_a_file_left_alone_still_resumes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_pi(40)))
    store = MemorySessionStore()
    pi.import_file(store, path)
    saved, why = resume_point(store, path, pi.FORMAT)
    assert saved is not None and saved.mtime_ns == path.stat().st_mtime_ns and why == ""


def test_an_edit_in_the_middle_of_a_file_that_grew_is_the_documented_blind_spot(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_pi(40)))
    store = MemorySessionStore()
    pi.import_file(store, path)
    _edit_middle(path)
    with path.open("ab") as f:
        f.write(b"".join(_pi(1, first=40)))
    saved, why = resume_point(store, path, pi.FORMAT)
    assert saved is not None and why == ""  # read from the offset: resume=False reads it whole


def test_a_torn_tail_keeps_no_modification_time(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = _pi(5)
    path.write_bytes(b"".join(lines) + lines[1][:20])
    store = MemorySessionStore()
    pi.import_file(store, path)
    saved = FileState.from_json(store.import_state(state_key(path)))
    assert saved is not None and saved.mtime_ns is None


def test_a_state_recorded_before_modification_times_were_kept_still_resumes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_pi(5)))
    store = MemorySessionStore()
    pi.import_file(store, path)
    raw = dict(store.import_state(state_key(path)) or {})
    del raw["mtime_ns"]
    store.set_import_state(state_key(path), raw)
    saved, why = resume_point(store, path, pi.FORMAT)
    assert saved is not None and saved.mtime_ns is None and why == ""


@pytest.mark.parametrize("module", [claude_code, codex], ids=["claude-code", "codex"])
def test_every_resuming_format_keeps_the_modification_time(module: object, tmp_path: Path) -> None:
    fixture = {
        claude_code: "tests/fixtures/claude-code/artifact-forks.jsonl",
        codex: "tests/fixtures/codex/rollout-digest.jsonl",
    }[module]
    path = tmp_path / "t.jsonl"
    path.write_bytes((Path(__file__).resolve().parents[1] / fixture).read_bytes())
    store = MemorySessionStore()
    module.import_file(store, path)  # type: ignore[attr-defined]
    saved = FileState.from_json(store.import_state(state_key(path)))
    assert saved is not None and saved.mtime_ns == path.stat().st_mtime_ns

"""Transcripts with a field removed from every line (sanitized exports, hand-made test files).

Each importer either imports such a file or refuses it with a ``TranscriptError`` naming it: no
``KeyError`` or other failure from inside the rules. A Codex rollout whose ``session_meta`` lost
its payload (so its id) is named after its file, as a rollout without any ``session_meta`` is.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from graph import SessionStore
from graph.importers import import_file
from graph.importers.report import TranscriptError

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FILES = {
    "claude-code": ROOT / "examples" / "claude-code-session.jsonl",
    "pi": FIXTURES / "pi" / "v3-compaction-branch.jsonl",
    "codex": FIXTURES / "codex" / "rollout-digest.jsonl",
    "codex-fork": FIXTURES / "codex" / "rollout-fork.jsonl",
}
FIELDS = [
    "type",
    "id",
    "uuid",
    "parentUuid",
    "parentId",
    "sessionId",
    "timestamp",
    "message",
    "payload",
]


def _without(source: Path, field: str, target: Path) -> Path:
    lines = [orjson.loads(ln) for ln in source.read_bytes().splitlines() if ln.strip()]
    target.write_bytes(
        b"".join(orjson.dumps({k: v for k, v in o.items() if k != field}) + b"\n" for o in lines)
    )
    return target


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", list(FILES))
def test_a_field_missing_everywhere_imports_or_is_refused(
    tmp_path: Path, name: str, field: str
) -> None:
    fmt = name.split("-fork")[0]
    path = _without(FILES[name], field, tmp_path / f"sanitized-{name}.jsonl")
    store = SessionStore(":memory:")
    try:
        report = import_file(store, path, fmt)
    except TranscriptError as e:
        assert str(path) in str(e)
        return
    assert report.error is None
    for sid in report.session_ids:
        assert store.has_session(sid)


def test_a_session_meta_without_payload_is_named_after_the_file(tmp_path: Path) -> None:
    path = _without(FILES["codex"], "payload", tmp_path / "rollout-x.jsonl")
    store = SessionStore(":memory:")
    report = import_file(store, path, "codex")  # (detection needs a payload)
    assert report.session_ids == ["rollout-x"]
    assert any("named after its file" in n for n in report.notes)

"""No credential is kept: not in records, snippets, views, nor the source archive (46 realistic forms).

Each form of ``tests/secret_forms.py`` (``.env`` lines, shell commands, config files, headers, keys
of every provider the scanner knows) goes through the writer as a turn, and through an edit of a
topic file; afterwards the credential's value is nowhere in the workspace's bytes. The archive keeps
the turn with ``[redacted <kind>]`` in its place, the SHA-256 of the original text, and what was
redacted where. Ordinary random-looking text (uuids, git hashes, digests, a base64 image) is left as
it is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from graph import SessionStore
from memory import MemoryWorkspace, WritePipeline
from memory.editing import EditError, apply_edits, stage_topics
from memory.secrets import KINDS, scan
from tests.secret_forms import FORMS, ORDINARY


def _stored_bytes(ws: MemoryWorkspace) -> bytes:
    out = ws.db_path.read_bytes()
    for p in sorted(ws.path.rglob("*")):
        if p.is_file() and p != ws.db_path:
            out += p.read_bytes()
    return out


def _leaks(blob: bytes, forms: dict[str, tuple[str, str]]) -> list[str]:
    return [name for name, (_, value) in forms.items() if value.encode() in blob]


def test_forms_are_many_and_each_is_found() -> None:
    assert len(FORMS) >= 38
    for name, (text, value) in FORMS.items():
        assert value in text, name
        assert scan(text), name


@pytest.mark.parametrize("name", sorted(ORDINARY), ids=str)
def test_ordinary_text_is_not_a_credential(name: str) -> None:
    assert scan(ORDINARY[name]) == []


def _write_all(tmp_path: Path) -> tuple[MemoryWorkspace, SessionStore, str]:
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session("creds")
    for name, (text, _) in FORMS.items():
        store.append(s.id, f"Here is the {name} config:\n{text}", role="user")
        store.append(s.id, f"Noted the {name} settings; rotate it:\n{text}", role="assistant")
    for name, text in ORDINARY.items():
        store.append(s.id, f"{name}: {text}", role="user")
        store.append(s.id, "ok", role="assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(ws, store).write(s.id, force=True) is None
    return ws, store, s.id


def test_no_credential_reaches_the_archive_records_or_views(tmp_path: Path) -> None:
    ws, store, sid = _write_all(tmp_path)
    assert _leaks(_stored_bytes(ws), FORMS) == []  # 0 of N stored
    by_node = {s.node_id: s for s in ws.sources()}
    for n in store.branch(sid):
        src = by_node[n.id]
        assert src.original_hash == hashlib.sha256(n.text.encode()).hexdigest()
        found = scan(n.text)
        assert [k for k, _, _ in src.redactions] == [f.kind for f in found]
        assert all(k in KINDS for k, _, _ in src.redactions)
        if found:
            assert "[redacted " in src.text and src.content_hash != src.original_hash
        else:
            assert src.text == n.text and src.content_hash == src.original_hash
    # Ordinary text is archived exactly.
    for name, text in ORDINARY.items():
        assert text.encode() in ws.db_path.read_bytes(), name
    # Archiving the same turns again is still a no-op (the id addresses the original turn).
    before = ws.db_path.read_bytes()
    ws.archive(store.branch(sid))
    assert ws.db_path.read_bytes() == before
    ws.close()
    store.close()


@pytest.mark.parametrize("name", sorted(FORMS), ids=str)
def test_an_edit_carrying_a_credential_is_refused(tmp_path: Path, name: str) -> None:
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session("edit")
    store.append(s.id, "Which port does the staging database use?", role="user")
    store.append(s.id, "Port 5433, behind the bastion.", role="assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(ws, store).write(s.id, force=True) is None
    stage = tmp_path / "stage"
    (topic,) = stage_topics(ws, stage)
    lines = topic.read_text("utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if " ^m-" in line)
    text, _ = FORMS[name]
    lines[at:at] = [line for line in text.split("\n") if line.strip()]
    topic.write_text("\n".join(lines), "utf-8")
    before = _stored_bytes(ws)
    with pytest.raises(EditError) as e:
        apply_edits(ws, stage)
    assert "secret" in str(e.value) or "found at line" in str(e.value), str(e.value)
    assert _stored_bytes(ws) == before
    assert _leaks(_stored_bytes(ws), {name: FORMS[name]}) == []
    ws.close()
    store.close()

"""A person's own save (``memory add``): bare snippet citations, cited turns, refusals, the schema
migration that lets a citation have no source, and an edited ``core.md`` refused with its pointer."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role, SessionStore
from memory import (
    ChangeSet,
    CreateRecord,
    Destination,
    MemoryWorkspace,
    RejectedError,
    Rejection,
    SourceRef,
    WorkspaceStoreError,
    add_memory,
)
from memory.adding import SAVED_LABEL, cited_nodes
from memory.editing import EditError, apply_edits, stage_topics
from memory.errors import WorkspaceSchemaError
from memory.reading import record_view
from memory.schema import SCHEMA_VERSION
from memory.tombstones import delete_record, undo_delete
from tests.memory_backends import WorkspaceFactory, snapshot

GH_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def ws(workspace_factory: WorkspaceFactory) -> Iterator[MemoryWorkspace]:
    """The workspace on each backend of its store of record."""
    w = workspace_factory()
    yield w
    w.close()


def _archived(ws: MemoryWorkspace) -> int:
    return int(ws.conn.execute("SELECT count(*) FROM sources").fetchone()[0])


def test_a_save_with_nothing_to_cite_keeps_a_bare_snippet(ws: MemoryWorkspace) -> None:
    rec = add_memory(ws, "I prefer tabs over spaces in Makefiles.", tags=("style",))

    assert rec.topic == "notes" and rec.tags == ("style",)
    (cite,) = rec.citations
    assert cite.source == "" and cite.label == SAVED_LABEL
    assert cite.snippet == "I prefer tabs over spaces in Makefiles."
    assert ws.revision == 1 and _archived(ws) == 0
    assert ws.record(rec.id) == rec  # read back from the database (NULL source is "")
    assert [h.record_id for h in ws.search("Makefiles")] == [rec.id]
    assert ws.search("Makefiles")[0].sources == ()
    view = record_view(ws, rec.id)
    assert view.citations[0].session_id == "" and view.citations[0].snippet == cite.snippet
    text = (ws.views_path / "topics" / "notes.md").read_text("utf-8")
    assert '(source: "I prefer tabs over spaces in Makefiles.")' in text


def test_a_bare_snippet_survives_an_edit_and_a_deletion_undone(
    ws: MemoryWorkspace, tmp_path: Path
) -> None:
    rec = add_memory(ws, "The staging host is called birch.")
    root = tmp_path / "stage"
    (file,) = stage_topics(ws, root)
    file.write_text(file.read_text("utf-8").replace("birch. [^", "cedar. [^"), "utf-8")

    assert apply_edits(ws, root) == (["notes"], [rec.id])
    edited = ws.record(rec.id)
    assert edited.content == "The staging host is called cedar."
    assert edited.citations == rec.citations

    delete_record(ws, rec.id, grace=60)
    assert ws.records() == []
    assert undo_delete(ws, rec.id).citations == rec.citations
    assert ws.record(rec.id).citations == rec.citations


def test_cited_turns_are_archived_and_cited(ws: MemoryWorkspace) -> None:
    store = MemorySessionStore()
    sid = store.create_session("chat").id
    q = store.append(sid, "Which port does the API use?", role=Role.USER)
    a = store.append(sid, "It listens on 8443, behind the proxy.", role=Role.ASSISTANT)

    nodes = cited_nodes(store, [f"{sid[:8]}/{a.id[-8:]}", f"{sid}/{q.id}", f"{sid}/{a.id}"])
    assert [n.id for n in nodes] == [a.id, q.id]  # the repeated one is dropped
    rec = add_memory(ws, "The API port is 8443.", cites=nodes, topic="projects/api")

    assert [(s.node_id, s.speaker) for s in ws.sources()] == [
        (a.id, "assistant"),
        (q.id, "user"),
    ]
    assert [c.source for c in rec.citations] == [s.id for s in ws.sources()]
    assert [c.label for c in rec.citations] == ["assistant", "user"]
    assert rec.citations[0].snippet == "It listens on 8443, behind the proxy."
    assert ws.search("8443")[0].sources[0] == (rec.citations[0].source, sid, a.id)

    again = add_memory(ws, "Port 8443 is behind the proxy.", cites=nodes[:1])
    assert _archived(ws) == 2  # content-addressed: the same turn is the same source
    assert again.citations[0].source == rec.citations[0].source


def test_bad_citation_references_are_named(ws: MemoryWorkspace) -> None:
    store = MemorySessionStore()
    sid = store.create_session("chat").id
    store.append(sid, "hello", role=Role.USER)
    with pytest.raises(ValueError, match="SESSION/NODE"):
        cited_nodes(store, ["no-slash"])
    with pytest.raises(LookupError):
        cited_nodes(store, [f"{sid}/not-a-node"])
    with pytest.raises(LookupError):
        cited_nodes(store, ["zzzz/abc"])


@pytest.mark.parametrize(
    ("content", "topic", "reason"),
    [
        (f"my token is {GH_TOKEN}", "notes", Rejection.SECRET),
        ("x" * 5000, "notes", Rejection.OVER_CAP),
        ("first\n\nsecond", "notes", Rejection.MALFORMED),
        ("fine", "Bad Topic", Rejection.UNKNOWN_POSITION),
        ("   ", "notes", Rejection.MALFORMED),
    ],
)
def test_a_refused_save_changes_nothing_not_even_the_archive(
    ws: MemoryWorkspace, content: str, topic: str, reason: Rejection
) -> None:
    store = MemorySessionStore()
    sid = store.create_session("chat").id
    node = store.append(sid, "something to cite", role=Role.USER)
    db_before = snapshot(ws)

    with pytest.raises(RejectedError) as e:
        add_memory(ws, content, cites=[node], topic=topic)

    assert e.value.reason is reason
    assert GH_TOKEN not in str(e.value)
    assert snapshot(ws) == db_before
    assert ws.revision == 0 and _archived(ws) == 0


def test_only_a_person_may_save_a_bare_snippet(ws: MemoryWorkspace) -> None:
    def create(snippet: str) -> ChangeSet:
        ref = SourceRef(source="", label="note", snippet=snippet)
        dest = Destination(topic_path="notes")
        return ChangeSet(changes=(CreateRecord(content="c", sources=(ref,), destination=dest),))

    store = MemorySessionStore()
    sid = store.create_session("chat").id
    (src,) = ws.archive([store.append(sid, "a turn", role=Role.USER)])
    with pytest.raises(RejectedError) as e:
        ws.plan(create("said so"), batch=[src.id])
    assert e.value.reason is Rejection.SOURCE_NOT_IN_BATCH  # a writer cites its batch's turns
    with pytest.raises(RejectedError) as e:
        ws.plan(create("  "))
    assert e.value.reason is Rejection.MALFORMED and e.value.field == "snippet"
    assert ws.plan(create("said so")).changed


_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,
    node_id TEXT NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL, archived_at INTEGER NOT NULL);
CREATE INDEX sources_by_node ON sources (node_id);
CREATE TRIGGER sources_no_update BEFORE UPDATE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be updated'); END;
CREATE TRIGGER sources_no_delete BEFORE DELETE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be deleted'); END;
CREATE TABLE records (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
    headings TEXT NOT NULL, position INTEGER NOT NULL, content TEXT NOT NULL, tags TEXT NOT NULL,
    time TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX records_by_topic ON records (topic, position);
CREATE TABLE citations (record_id TEXT NOT NULL REFERENCES records (id), ordinal INTEGER NOT NULL,
    source_id TEXT NOT NULL REFERENCES sources (id), label TEXT NOT NULL, snippet TEXT NOT NULL,
    PRIMARY KEY (record_id, ordinal));
CREATE INDEX citations_by_source ON citations (source_id);
CREATE TABLE links (from_record TEXT NOT NULL REFERENCES records (id),
    to_record TEXT NOT NULL REFERENCES records (id), PRIMARY KEY (from_record, to_record));
CREATE TABLE installs (revision INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
    first_node TEXT NOT NULL, node_ids TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX installs_by_first ON installs (session_id, first_node);
CREATE TABLE watch (session_id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, status TEXT NOT NULL,
    reason TEXT NOT NULL, at INTEGER NOT NULL);
"""
"""The schema as version 1 wrote it (before redaction columns, bare citations and history)."""


def _v1_workspace(path: Path) -> None:
    """A workspace as schema version 1 wrote it: one record citing one archived source."""
    path.mkdir()
    con = sqlite3.connect(path / "memory.db")
    con.executescript(_V1_SCHEMA)
    con.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("workspace_id", "ws-old"), ("revision", "1"), ("schema_version", "1")],
    )
    con.execute(
        "INSERT INTO sources (id, session_id, node_id, speaker, text, content_hash, created_at, "
        "archived_at) VALUES ('s-1', 'sess', 'node', 'user', 't', 'h', '2025-01-01', 0)"
    )
    con.execute(
        "INSERT INTO records (id, topic, headings, position, content, tags, time, created_at, "
        "updated_at) VALUES ('m-1', 'notes', '[]', 0, 'old fact', '[]', NULL, 1, 1)"
    )
    con.execute("INSERT INTO citations VALUES ('m-1', 0, 's-1', 'said', 'old')")
    con.commit()
    con.close()


def test_a_version_1_workspace_is_migrated_in_place(tmp_path: Path) -> None:
    _v1_workspace(tmp_path / "ws")

    with MemoryWorkspace(tmp_path / "ws") as ws:
        assert ws._meta("schema_version") == str(SCHEMA_VERSION) == "5"
        for table in ("tombstones", "erasures", "watch_heads", "organizer_runs", "revisions"):
            assert ws.db.has_table(table), table  # every table of the schema, none made lazily
        assert {r[1] for r in ws.conn.execute("PRAGMA table_info(sources)")} >= {
            "original_hash",
            "redactions",
        }
        assert ws.id == "ws-old" and ws.revision == 1
        (old,) = ws.records()
        assert old.content == "old fact" and [c.source for c in old.citations] == ["s-1"]
        rec = add_memory(ws, "a new fact")
        assert ws.record(rec.id).citations[0].source == ""
        assert ws.search("fact")  # the index covers both
        assert ws.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    with MemoryWorkspace(tmp_path / "ws") as ws:  # opening again migrates nothing twice
        assert len(ws.records()) == 2


def test_a_workspace_from_a_newer_library_is_refused(tmp_path: Path) -> None:
    with MemoryWorkspace(tmp_path / "ws") as ws:
        ws.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(WorkspaceSchemaError, match="schema version 99") as e:
        MemoryWorkspace(tmp_path / "ws")
    assert (e.value.found, e.value.supported) == (99, SCHEMA_VERSION)
    assert isinstance(e.value, WorkspaceStoreError)


def test_an_edited_core_md_is_refused_with_the_pointer(ws: MemoryWorkspace, tmp_path: Path) -> None:
    add_memory(ws, "Always answer in British English.", topic="core")
    root = tmp_path / "stage"
    stage_topics(ws, root)
    rendered = (ws.views_path / "core.md").read_text("utf-8")
    (root / "core.md").write_text(rendered, "utf-8")
    assert apply_edits(ws, root) == ([], [])  # an unchanged copy is fine

    (root / "core.md").write_text(rendered + "\nNever use emoji.\n", "utf-8")
    revision = ws.revision
    with pytest.raises(EditError) as e:
        apply_edits(ws, root)
    assert e.value.path.endswith("core.md") and e.value.line == 1
    assert "topics/core.md" in str(e.value)
    assert ws.revision == revision


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "store.db"),
            "memory",
            "--workspace",
            str(tmp_path / "ws"),
            *args,
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path)},
        timeout=120,
    )


def test_memory_add_end_to_end(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store.db")
    sid = store.create_session("chat").id
    node = store.append(sid, "We deploy on Fridays only after the freeze.", role=Role.USER)
    store.close()

    bare = _cli(tmp_path, "add", "Keep commit messages in the present tense.", "--tag", "git")
    assert bare.returncode == 0, bare.stderr
    assert "saved m-" in bare.stdout and "in notes (0 cited turn(s))" in bare.stdout

    cited = _cli(
        tmp_path,
        "add",
        "Deploys happen on Fridays after the freeze.",
        "--cite",
        f"{sid[:10]}/{node.id[-8:]}",
        "--topic",
        "projects/deploy",
        "--heading",
        "Schedule",
        "--json",
    )
    assert cited.returncode == 0, cited.stderr
    out = json.loads(cited.stdout)
    assert out["topic"] == "projects/deploy" and out["headings"] == ["Schedule"]
    assert [(c["session_id"], c["node_id"]) for c in out["citations"]] == [(sid, node.id)]

    found = json.loads(_cli(tmp_path, "search", "Fridays", "--json").stdout)
    assert [h["record_id"] for h in found["hits"]] == [out["id"]]

    for args, needle in (
        (("add", f"token {GH_TOKEN}"), "SECRET"),
        (("add", "x", "--cite", "nonsense"), "SESSION/NODE"),
        (("add", "x", "--topic", "Not/Valid"), "topic path"),
    ):
        bad = _cli(tmp_path, *args)
        assert bad.returncode == 1
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], bad.stderr
        assert GH_TOKEN not in bad.stderr
    status = json.loads(_cli(tmp_path, "status", "--json").stdout)
    assert status["records"] == 2 and status["sources"] == 1

"""Seeing, finding, deleting and taking back records (memory.reading, memory.tombstones), with an injected clock.

Each test runs on both backends of the store of record (``workspace_factory``: SQLite, and PostgreSQL
when ``$SESSIONGRAPH_TEST_POSTGRES`` names a database); "nothing changed" is a digest of every table
and view file (``tests.memory_backends.snapshot``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role
from memory import (
    ChangeSet,
    CreateRecord,
    Destination,
    MemoryWorkspace,
    RejectedError,
    Rejection,
    SourceRef,
    UpdateRecord,
)
from memory.caps import MAX_QUERY_CHARS, MAX_RESULTS_PER_PAGE, CapExceeded
from memory.changes import DeleteRecord
from memory.database import WorkspaceDatabase
from memory.errors import UnknownRecordError
from memory.pipeline import PROVIDER
from memory.reading import export_markdown, record_view, record_views, search_page, workspace_status
from memory.tombstones import (
    GraceExpiredError,
    NothingToUndoError,
    delete_record,
    resolve_record,
    tombstones,
    undo_delete,
)
from tests.memory_backends import WorkspaceFactory, snapshot

T = 1_800_000_000.0
"""The injected clock's 'now', in seconds."""


class Env:
    """A workspace whose records cite turns of one session in a store."""

    def __init__(self, factory: WorkspaceFactory) -> None:
        self.store = MemorySessionStore()
        self.sid = self.store.create_session("chat").id
        self.ws: MemoryWorkspace = factory()

    def add(self, *contents: str, topic: str = "notes") -> list[str]:
        """Create one record per content, each citing its own new turn; return their ids."""
        nodes = [self.store.append(self.sid, c, role=Role.USER) for c in contents]
        sources = self.ws.archive(nodes)
        plan = self.ws.apply(
            ChangeSet(
                changes=tuple(
                    CreateRecord(
                        content=c,
                        sources=(SourceRef(source=s.id, label="said", snippet=c[:40]),),
                        destination=Destination(topic_path=topic),
                    )
                    for c, s in zip(contents, sources, strict=True)
                )
            )
        )
        return list(plan.created)


@pytest.fixture
def env(workspace_factory: WorkspaceFactory) -> Iterator[Env]:
    e = Env(workspace_factory)
    yield e
    e.ws.close()


def clock(at: float):  # noqa: ANN201 - a tiny lambda factory
    return lambda: at


def test_record_views_carry_snippets_and_origins(env: Env) -> None:
    ids = env.add("The zebra parser needs --fast", "Backups run at 02:00")
    views = record_views(env.ws)
    assert [v.record.id for v in views] == ids
    assert [v.position for v in views] == [0, 1]
    cite = views[0].citations[0]
    node = env.store.node(env.ws.sources([cite.source_id])[0].node_id)
    assert (cite.session_id, cite.node_id, cite.speaker) == (env.sid, node.id, "user")
    assert cite.snippet == "The zebra parser needs --fast"
    assert node.text == "The zebra parser needs --fast"
    assert record_view(env.ws, ids[1][-8:]).record.content == "Backups run at 02:00"
    assert views[1].as_json()["citations"][0]["label"] == "said"


def test_resolve_record_by_prefix_or_suffix(env: Env) -> None:
    a, b = env.add("one", "two")
    assert resolve_record(env.ws, a) == a
    assert resolve_record(env.ws, b[-8:]) == b
    assert resolve_record(env.ws, "…" + b[-8:]) == b
    with pytest.raises(UnknownRecordError) as info:
        resolve_record(env.ws, "m-")
    assert set(info.value.matches) == {a, b}
    with pytest.raises(UnknownRecordError):
        resolve_record(env.ws, "nothing-like-it")


def test_delete_is_gone_from_search_at_once_and_keeps_sources(env: Env) -> None:
    a, b = env.add("The zebra parser needs --fast", "zebra crossings are striped")
    sources = len(env.ws.sources())
    stone = delete_record(env.ws, a, clock=clock(T))
    assert [h.record_id for h in env.ws.search("zebra")] == [b]
    assert search_page(env.ws, "zebra").total == 1
    assert [r.id for r in env.ws.records()] == [b]
    assert len(env.ws.sources()) == sources  # the archive keeps the sources
    rows = env.ws.conn.execute("SELECT count(*) FROM citations WHERE record_id = ?", (a,))
    assert rows.fetchone()[0] == 0
    assert a not in (env.ws.views_path / "topics" / "notes.md").read_text()
    assert stone.expires_at - stone.deleted_at == 10_000_000
    assert [t.record.id for t in tombstones(env.ws)] == [a]


def test_undo_inside_grace_restores_id_timestamps_citations_and_place(env: Env) -> None:
    a, b, c = env.add("first note", "second note about okapis", "third note")
    before = env.ws.record(b)
    delete_record(env.ws, b, grace=10, clock=clock(T))
    delete_record(env.ws, c, grace=10, clock=clock(T))
    revision = env.ws.revision

    restored = undo_delete(env.ws, b[-8:], clock=clock(T + 9.999))

    assert restored == before
    assert env.ws.record(b) == before
    assert env.ws.record(b).created_at == before.created_at
    assert env.ws.record(b).updated_at == before.updated_at
    assert [r.id for r in env.ws.records()] == [a, b]
    assert [h.record_id for h in env.ws.search("okapis")] == [b]
    assert env.ws.revision == revision + 1
    assert f"^{b}" in (env.ws.views_path / "topics" / "notes.md").read_text()
    assert [t.record.id for t in tombstones(env.ws)] == [c]
    with pytest.raises(NothingToUndoError):
        undo_delete(env.ws, b, clock=clock(T + 1))
    # The restored record is an ordinary record again: it can be edited and deleted.
    env.ws.apply(ChangeSet(changes=(DeleteRecord(memory_id=b),)))


def test_undo_after_grace_is_refused_and_the_record_gone_for_good(env: Env) -> None:
    (a,) = env.add("an okapi fact")
    delete_record(env.ws, a, grace=10, clock=clock(T))
    with pytest.raises(GraceExpiredError) as info:
        undo_delete(env.ws, a, clock=clock(T + 10))
    assert info.value.record_id == a
    assert tombstones(env.ws) == []
    with pytest.raises(NothingToUndoError):
        undo_delete(env.ws, a, clock=clock(T + 10))
    assert env.ws.records() == []
    assert env.ws.search("okapi") == []


def test_grace_zero_deletes_for_good(env: Env) -> None:
    (a,) = env.add("an okapi fact")
    delete_record(env.ws, a, grace=0, clock=clock(T))
    assert tombstones(env.ws) == []
    with pytest.raises(NothingToUndoError):
        undo_delete(env.ws, a, clock=clock(T))


def test_later_commands_purge_expired_tombstones(env: Env) -> None:
    a, b = env.add("one", "two")
    delete_record(env.ws, a, grace=5, clock=clock(T))
    delete_record(env.ws, b, grace=5, clock=clock(T + 6))
    assert [t.record.id for t in tombstones(env.ws)] == [b]  # a's grace ended; purged by b's delete


def test_delete_of_a_linked_record_is_refused_and_nothing_changes(env: Env) -> None:
    a, b = env.add("the target", "the linker")
    linker = env.ws.record(b)
    env.ws.apply(
        ChangeSet(
            changes=(
                UpdateRecord(
                    memory_id=b,
                    content=f"see [[notes#^{a}]]",
                    sources=tuple(
                        SourceRef(source=c.source, label=c.label, snippet=c.snippet)
                        for c in linker.citations
                    ),
                ),
            )
        )
    )
    db = snapshot(env.ws)
    with pytest.raises(RejectedError) as info:
        delete_record(env.ws, a, clock=clock(T))
    assert info.value.reason is Rejection.DANGLING_LINK
    assert snapshot(env.ws) == db
    assert tombstones(env.ws) == []


def test_undo_refused_when_a_linked_record_is_gone(env: Env) -> None:
    a, b = env.add("the target", "the linker")
    cites = tuple(
        SourceRef(source=c.source, label=c.label, snippet=c.snippet)
        for c in env.ws.record(b).citations
    )
    env.ws.apply(
        ChangeSet(changes=(UpdateRecord(memory_id=b, content=f"see [[#^{a}]]", sources=cites),))
    )
    delete_record(env.ws, b, clock=clock(T))
    delete_record(env.ws, a, grace=0, clock=clock(T))
    db = snapshot(env.ws)
    with pytest.raises(RejectedError) as info:
        undo_delete(env.ws, b, clock=clock(T + 1))
    assert info.value.reason is Rejection.DANGLING_LINK
    assert snapshot(env.ws) == db


def test_apply_within_hook_rolls_back_with_the_install(env: Env) -> None:
    """The workspace change this module relies on: ``within`` runs inside the install transaction."""
    (a,) = env.add("kept")
    db = snapshot(env.ws)

    def boom(c: WorkspaceDatabase, _: object) -> None:
        c.execute("CREATE TABLE scratch (x integer)")
        raise RuntimeError("after the records changed")

    with pytest.raises(RuntimeError):
        env.ws.apply(ChangeSet(changes=(DeleteRecord(memory_id=a),)), within=boom)
    assert snapshot(env.ws) == db and not env.ws.conn.has_table("scratch")
    assert [r.id for r in env.ws.records()] == [a]


def test_search_pages_with_total(env: Env) -> None:
    ids = env.add(*(f"okapi fact number {i}" for i in range(23)), "unrelated")
    pages = [search_page(env.ws, "okapi", p, 10) for p in (1, 2, 3, 4)]
    assert [p.total for p in pages] == [23] * 4
    assert [p.pages for p in pages] == [3] * 4
    assert [len(p.hits) for p in pages] == [10, 10, 3, 0]
    found = [h.record_id for p in pages for h in p.hits]
    assert sorted(found) == sorted(ids[:23])
    assert found[:10] == [h.record_id for h in env.ws.search("okapi", limit=10)]
    assert all(h.sources and h.sources[0][1] == env.sid for h in pages[0].hits)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"zebra', ["zebra"]),
        ('zebra"', ["zebra"]),
        ("zebra AND", ["zebra"]),
        ("NEAR(zebra okapi", ["zebra", "okapi"]),
        ("zeb*", []),
        ("content:zebra", ["zebra"]),
        ("-zebra", ["zebra"]),
        ("(okapi) OR", ["okapi"]),
        ("café", ["cafe"]),
        ("CAFE", ["cafe"]),
        ("面板", ["cjk"]),
        ("Ünïcödé", ["unicode"]),
        ("'; DROP TABLE records; --", ["cjk"]),  # plain words; "records" finds "record" (stems)
        ("", []),
        ("   ", []),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_fts_queries_with_quotes_operators_and_unicode(
    env: Env, query: str, expected: list[str]
) -> None:
    named = dict(
        zip(
            ["zebra", "okapi", "cafe", "cjk", "unicode"],
            env.add(
                "the zebra parser",
                "an okapi in the zoo",
                "meet at the Café Noir",
                "记忆 面板 lists every record",
                "unicode text survives",
            ),
            strict=True,
        )
    )
    page = search_page(env.ws, query)
    assert sorted(h.record_id for h in page.hits) == sorted(named[k] for k in expected)
    assert page.total == len(expected)
    assert len(env.ws.records()) == 5


def test_search_caps(env: Env) -> None:
    with pytest.raises(CapExceeded) as info:
        search_page(env.ws, "x" * (MAX_QUERY_CHARS + 1))
    assert info.value.cap == "MAX_QUERY_CHARS"
    with pytest.raises(CapExceeded) as info:
        search_page(env.ws, "x", per_page=MAX_RESULTS_PER_PAGE + 1)
    assert info.value.cap == "MAX_RESULTS_PER_PAGE"
    assert search_page(env.ws, "x" * MAX_QUERY_CHARS, per_page=MAX_RESULTS_PER_PAGE).total == 0
    with pytest.raises(ValueError):
        search_page(env.ws, "x", page=0)


def test_export_writes_the_views(env: Env, tmp_path: Path) -> None:
    (a,) = env.add("an exported fact", topic="core")
    files = export_markdown(env.ws, tmp_path / "out")
    names = sorted(str(f.relative_to(tmp_path / "out")) for f in files)
    assert names == ["core.md", "topics/core.md", "views.json"]
    assert f"an exported fact [^{a}-1] ^{a}" in (tmp_path / "out/topics/core.md").read_text()
    assert "an exported fact" in (tmp_path / "out/core.md").read_text()


def test_status_counts_pending_and_last_failure(env: Env) -> None:
    env.add("one", "two")
    st = workspace_status(env.ws, env.store)
    assert (st.workspace_id, st.records, st.topics, st.sources, st.tombstones) == (
        env.ws.id,
        2,
        1,
        2,
        0,
    )
    assert st.pending == ((env.sid, "chat", 2),)  # archived but not written through the pipeline
    assert st.last_failure is None
    env.store.mark(
        env.sid, env.store.pending_ids(env.sid, PROVIDER, env.ws.id), PROVIDER, env.ws.id
    )
    env.store.mark(env.sid, env.store.pending_ids(env.sid, "other", "x")[:1], "other", "x")
    env.ws.set_watch_status(env.sid, 1, "failed", "COMMIT_REJECTED")
    st = workspace_status(env.ws, env.store)
    assert st.pending == ()
    assert st.last_failure is not None and st.last_failure[:2] == (env.sid, "COMMIT_REJECTED")
    old = env.ws.id
    env.ws.reset()
    st = workspace_status(env.ws, env.store)
    assert st.workspace_id != old
    assert st.pending == ((env.sid, "chat", 2),)  # pending again for the new workspace id
    assert len(env.store.pending_ids(env.sid, "other", "x")) == 1  # other markers untouched

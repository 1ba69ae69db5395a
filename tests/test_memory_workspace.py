"""The workspace: archive, transactions (create/update/delete/move/rewrite), views, search, index.

Each test runs on both backends of the store of record (``workspace_factory``: SQLite, and PostgreSQL
when ``$SESSIONGRAPH_TEST_POSTGRES`` names a database) unless it says why it is SQLite's alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graph import MemorySessionStore
from memory import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MemoryWorkspace,
    MoveRecords,
    RejectedError,
    Rejection,
    RewriteTopic,
    SearchIndexMissingError,
    Source,
    SourceRef,
    TopicRecord,
    UpdateRecord,
)
from memory.errors import WorkspaceStoreError
from tests.memory_backends import WorkspaceFactory, snapshot


@pytest.fixture
def ws(workspace_factory: WorkspaceFactory) -> Iterator[MemoryWorkspace]:
    w = workspace_factory()
    yield w
    w.close()


@pytest.fixture
def src(ws: MemoryWorkspace) -> list[Source]:
    store = MemorySessionStore()
    s = store.create_session()
    nodes = [
        store.append(s.id, "The nightly build runs at 02:00 UTC.", role="user"),
        store.append(s.id, "I'll schedule the cron job for 02:00 UTC.", role="assistant"),
    ]
    return ws.archive(nodes)


def create(
    content: str, source: Source, topic: str = "ops", headings: tuple[str, ...] = (), **kw: object
) -> CreateRecord:
    return CreateRecord(
        content=content,
        sources=(SourceRef(source=source.id, label="build", snippet=source.text[:20]),),
        destination=Destination(topic_path=topic, headings=headings, **kw),  # type: ignore[arg-type]
    )


def apply(ws: MemoryWorkspace, *changes: object) -> tuple[str, ...]:
    return ws.apply(ChangeSet(changes=changes)).created  # type: ignore[arg-type]


def test_archive_is_content_addressed_and_append_only(
    ws: MemoryWorkspace, src: list[Source]
) -> None:
    before = snapshot(ws)
    file_before = ws.db_path.read_bytes() if ws.store_url is None else b""
    again = ws.archive([])  # nothing new: no write at all
    assert again == [] and snapshot(ws) == before
    if ws.store_url is None:  # not even the file's bytes change
        assert ws.db_path.read_bytes() == file_before
    assert [s.id for s in ws.sources()] == [s.id for s in src]
    for sql in ("UPDATE sources SET text = 'x'", "DELETE FROM sources"):
        with pytest.raises(WorkspaceStoreError, match="append-only"):
            ws.conn.execute(sql)
    assert snapshot(ws) == before


def test_create_update_move_delete_and_views(ws: MemoryWorkspace, src: list[Source]) -> None:
    a, b = apply(
        ws,
        create("Nightly build at 02:00 UTC.", src[0], headings=("CI",)),
        create("Cron job scheduled.", src[1], headings=("CI",)),
    )
    (c,) = apply(
        ws, create("First of all.", src[0], headings=("CI",), position="before", anchor_memory_id=a)
    )
    assert [r.id for r in ws.records("ops")] == [c, a, b]
    ws.apply(
        ChangeSet(
            changes=(
                MoveRecords(
                    memory_ids=(b, c),
                    destination=Destination(topic_path="ops", headings=("CI", "Cron")),
                ),
            )
        )
    )
    assert [(r.id, r.headings) for r in ws.records("ops")] == [
        (a, ("CI",)),
        (b, ("CI", "Cron")),
        (c, ("CI", "Cron")),
    ]
    ws.apply(
        ChangeSet(
            changes=(
                UpdateRecord(
                    memory_id=a,
                    content=f"Build at 02:00, see [[ops#^{b}]].",
                    sources=(SourceRef(source=src[0].id, label="time"),),
                    tags=("ci",),
                    time="2025-01-01",
                ),
            )
        )
    )
    text = (ws.views_path / "topics" / "ops.md").read_text()
    assert text.splitlines()[:4] == [
        "# ops",
        "",
        "## CI",
        '<!-- record {"tags": ["ci"], "time": "2025-01-01"} -->',
    ]
    assert f"^{a}" in text and f'[^{a}-1]: [time](source:{src[0].id} "")' in text
    assert "### Cron" in text
    # Deleting a linked record is a dangling link unless the link goes in the same transaction.
    with pytest.raises(RejectedError) as e:
        ws.apply(ChangeSet(changes=(DeleteRecord(memory_id=b),)))
    assert e.value.reason == Rejection.DANGLING_LINK and e.value.target == b
    ws.apply(
        ChangeSet(
            changes=(
                DeleteRecord(memory_id=b),
                UpdateRecord(
                    memory_id=a,
                    content="Build at 02:00.",
                    sources=(SourceRef(source=src[0].id, label="t"),),
                ),
            )
        )
    )
    ws.apply(ChangeSet(changes=(DeleteRecord(memory_id=a), DeleteRecord(memory_id=c))))
    assert ws.records() == [] and not (ws.views_path / "topics" / "ops.md").exists()


def test_rewrite_topic_keeps_ids_and_refuses_lost_ones(
    ws: MemoryWorkspace, src: list[Source]
) -> None:
    a, b = apply(ws, create("One.", src[0]), create("Two.", src[1]))
    refs = (SourceRef(source=src[0].id, label="k"),)
    with pytest.raises(RejectedError) as e:
        ws.apply(
            ChangeSet(
                changes=(
                    RewriteTopic(
                        topic_path="ops",
                        records=(TopicRecord(memory_id=a, content="One!", sources=refs),),
                    ),
                )
            )
        )
    assert e.value.reason == Rejection.RECORD_LOST and e.value.record_id == b
    p = ws.apply(
        ChangeSet(
            changes=(
                RewriteTopic(
                    topic_path="ops",
                    records=(
                        TopicRecord(
                            memory_id=b,
                            content="Two.",
                            sources=(
                                SourceRef(
                                    source=src[1].id, label="build", snippet=src[1].text[:20]
                                ),
                            ),
                        ),
                        TopicRecord(memory_id=None, content="Three.", sources=refs),
                        TopicRecord(memory_id=a, content="One!", sources=refs),
                    ),
                ),
            )
        )
    )
    assert [r.content for r in ws.records("ops")] == ["Two.", "Three.", "One!"]
    assert ws.records("ops")[0].id == b and ws.records("ops")[2].id == a and len(p.created) == 1


def test_unknown_positions(ws: MemoryWorkspace, src: list[Source]) -> None:
    (a,) = apply(ws, create("One.", src[0], headings=("H",)))
    for dest in (
        {"topic": "Bad Topic"},
        {"topic": "../etc"},
        {"position": "after", "anchor_memory_id": "m-nope"},
        {"headings": ("Other",), "position": "after", "anchor_memory_id": a},
        {"position": "before"},
    ):
        topic = dest.pop("topic", "ops")
        with pytest.raises(RejectedError) as e:
            apply(ws, create("Two.", src[1], topic=topic, **dest))  # type: ignore[arg-type]
        assert e.value.reason == Rejection.UNKNOWN_POSITION


def test_core_md_budget_reports_left_out(
    workspace_factory: WorkspaceFactory, src: list[Source]
) -> None:
    ws = workspace_factory(core_budget=12)
    ws.archive([])
    ids = apply(
        ws, *(create(f"Core fact number {n} is here.", src[0], topic="core") for n in range(4))
    )
    core = (ws.views_path / "core.md").read_text()
    assert "Core fact number 0" in core and "Core fact number 3" not in core
    assert ws.core_left_out() == list(ids[1:]) and f"left out: {ids[1]}" in core
    # The budget never rejects: a further write to core installs.
    apply(ws, create("Yet another core fact.", src[1], topic="core"))
    assert len(ws.records("core")) == 5
    ws.close()


def test_search_ranked_bounded_and_never_raises(ws: MemoryWorkspace, src: list[Source]) -> None:
    apply(
        ws,
        create("Nightly build runs at 02:00 UTC on the CI runner.", src[0]),
        create("The cron job is scheduled; build logs go to S3.", src[1]),
    )
    hits = ws.search("nightly build")
    assert [h.content for h in hits][0].startswith("Nightly build")
    assert hits[0].sources[0][0] == src[0].id
    for q in [
        '"',
        "build*",
        "NEAR(build",
        "a:b",
        "AND OR NOT",
        "(",
        "'; DROP TABLE records; --",
        "^",
        "-",
    ]:
        assert isinstance(ws.search(q), list)
    assert ws.search("") == [] and ws.search("kubernetes") == []
    assert len(ws.search("build", limit=10_000)) == 2
    assert ws.search("x" * 10_000) == []


def test_fts_index_absence_fails_loudly_and_open_restores_it(
    workspace_factory: WorkspaceFactory, ws: MemoryWorkspace, src: list[Source]
) -> None:
    apply(ws, create("Nightly build at 02:00.", src[0]))
    if ws.store_url is None:
        ws.conn.execute("DROP TABLE records_fts")
    else:
        ws.conn.execute("DROP INDEX records_search")
    with pytest.raises(SearchIndexMissingError):
        ws.search("build")
    ws.close()
    again = workspace_factory()  # ensured idempotently at open, rebuilt from the records
    assert len(again.search("build")) == 1
    again.close()
    again = workspace_factory()
    assert len(again.search("build")) == 1

"""The write pipeline: forks, rewinds, compaction, rejections, repair, no progress, batches."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from graph import SessionStore
from graph.store.base import BaseStore
from memory import (
    PROVIDER,
    ChangeSet,
    CreateRecord,
    Destination,
    FailureReason,
    MemoryWorkspace,
    ModelWriter,
    Rejection,
    RewriteTopic,
    SourceRef,
    UpdateRecord,
    WritePipeline,
    WriteRequest,
    split_batches,
)
from memory.writers import DigestWriter
from tests.memory_backends import WorkspaceFactory, snapshot


def forked_rewound_compacted(store: BaseStore) -> dict[str, str]:
    """A session with a fork, a rewind and an inline compaction; returns the node ids by name.

    u1-a1-u2-a2            (the first line, a live tip at a2)
         \\-u3-a3-[u4-a4 rewound]
                 \\-S (summary covering u1..a3) -u5-a5 (head)
    """
    s = store.create_session("scenario")
    ids: dict[str, str] = {"session": s.id}

    def say(name: str, text: str, role: str, pred: str | None = None) -> None:
        kw = {"predecessor": ids[pred]} if pred else {}
        ids[name] = store.append(s.id, text, role=role, **kw).id

    say("u1", "How should we deploy the flask service?", "user")
    say("a1", "Use gunicorn behind nginx with three workers.", "assistant")
    say("u2", "And the database migrations?", "user")
    say("a2", "Run alembic upgrade head before restarting.", "assistant")
    say("u3", "Actually, what about docker instead?", "user", pred="a1")
    say("a3", "A slim python image with gunicorn as the entrypoint works.", "assistant")
    say("u4", "Forget it, try kubernetes.", "user")
    say("a4", "A deployment with two replicas.", "assistant")
    store.rewind(s.id, ids["a3"])
    ids["S"] = store.compact(
        s.id,
        [ids[k] for k in ("u1", "a1", "u3", "a3")],
        "Summary: deploy with docker and gunicorn.",
    ).id
    say("u5", "Which port does the container expose?", "user")
    say("a5", "Port 8000, mapped to 80 by nginx.", "assistant")
    return ids


def cited_nodes(ws: MemoryWorkspace) -> Counter[str]:
    rows = ws.conn.execute(
        "SELECT s.node_id FROM citations c JOIN sources s ON s.id = c.source_id"
    ).fetchall()
    return Counter(r[0] for r in rows)


def workspace_bytes(ws: MemoryWorkspace) -> str:
    """A digest of every table's rows and every file under the views directory (any backend)."""
    return snapshot(ws)


class Scripted:
    """A writer answering from a list of change sets (or exceptions, or callables), one per call."""

    name = "scripted"

    def __init__(self, answers: Sequence[object]) -> None:
        self.answers = list(answers)
        self.requests: list[WriteRequest] = []

    def write(self, request: WriteRequest) -> ChangeSet:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, ChangeSet)
        return answer


@pytest.fixture
def gstore(tmp_path: Path) -> SessionStore:
    s = SessionStore(tmp_path / "graph.db")
    yield s
    s.close()


@pytest.fixture
def ws(workspace_factory: WorkspaceFactory) -> MemoryWorkspace:
    """The workspace on each backend of its store of record."""
    return workspace_factory()


def test_forked_rewound_compacted_session_every_live_tip_cited_once(
    store: BaseStore, ws: MemoryWorkspace
) -> None:
    ids = forked_rewound_compacted(store)
    pipe = WritePipeline(ws, store, budget=25)
    assert pipe.write(ids["session"], force=True) is None
    eligible = {ids[k] for k in ("u1", "a1", "u2", "a2", "u3", "a3", "u5", "a5")}
    cited = cited_nodes(ws)
    assert set(cited) == eligible
    assert set(cited.values()) == {1}
    archived = {s.node_id for s in ws.sources()}
    assert archived == eligible  # no summary, no rewound turn
    assert ids["S"] not in archived and ids["u4"] not in archived and ids["a4"] not in archived
    for tip in store.tips(ids["session"]):
        assert store.pending(ids["session"], PROVIDER, ws.id, head=tip) == []
    assert store.verify_markers(ids["session"]) == []
    assert pipe.batches_written > 1  # the small budget made several batches
    # Nothing is owed any more: a second boundary write changes nothing.
    before = workspace_bytes(ws)
    assert pipe.write(ids["session"], force=True) is None
    assert workspace_bytes(ws) == before


def test_force_false_writes_only_full_batches(store: BaseStore, ws: MemoryWorkspace) -> None:
    s = store.create_session()
    pipe = WritePipeline(ws, store, budget=40)
    store.append(s.id, "short question", role="user")
    store.append(s.id, "short answer", role="assistant")
    assert pipe.write(s.id) is None
    assert ws.revision == 0 and len(pipe.owed(s.id)) == 2
    store.append(
        s.id, "a much longer question that pushes the pending total over budget " * 2, role="user"
    )
    assert pipe.write(s.id) is None
    assert ws.revision >= 1
    assert len(pipe.owed(s.id)) <= 1
    assert pipe.write(s.id, force=True) is None
    assert pipe.owed(s.id) == []


def test_split_batches_greedy_and_oversized_alone(store: BaseStore) -> None:
    s = store.create_session()
    nodes = [store.append(s.id, "x" * n, role="user") for n in (40, 40, 400, 4)]
    got = split_batches(nodes, budget=20)
    assert [[len(n.text) for n in b] for b in got] == [[40, 40], [400], [4]]


# ---------------------------------------------------------------- rejections


def _prepare(store: BaseStore, ws: MemoryWorkspace) -> tuple[str, str, WritePipeline]:
    """One session already written (records exist), a second session pending and pre-archived."""
    first = store.create_session("first")
    store.append(first.id, "Remember that the staging host is stage-2.", role="user")
    store.append(first.id, "Noted: staging runs on stage-2.", role="assistant")
    assert WritePipeline(ws, store).write(first.id, force=True) is None
    second = store.create_session("second")
    store.append(second.id, "We switched the CI to GitHub Actions.", role="user")
    store.append(
        second.id, "Good: the workflow lives in .github/workflows/ci.yml.", role="assistant"
    )
    pipe = WritePipeline(ws, store)
    ws.archive(pipe.owed(second.id))  # the pass's own archive step is then a no-op
    return first.id, second.id, pipe


def _bad_answers(ws: MemoryWorkspace, first: str) -> dict[str, Callable[[WriteRequest], ChangeSet]]:
    old = ws.records()[0]
    old_source = old.citations[0].source

    def create(
        req: WriteRequest, content: str = "CI runs on GitHub Actions.", **kw: object
    ) -> ChangeSet:
        dest = kw.pop("destination", Destination(topic_path="projects/ci"))
        sources = kw.pop("sources", (SourceRef(source=req.sources[0].id, label="ci"),))
        return ChangeSet(
            changes=(CreateRecord(content=content, sources=sources, destination=dest, **kw),)  # type: ignore[arg-type]
        )

    secret = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    return {
        Rejection.RECORD_LOST: lambda r: ChangeSet(
            changes=(RewriteTopic(topic_path=old.topic, records=()),)
        ),
        Rejection.UNKNOWN_RECORD: lambda r: ChangeSet(
            changes=(
                UpdateRecord(
                    memory_id="m-" + "0" * 32,
                    content="x",
                    sources=(SourceRef(source=r.sources[0].id, label="ci"),),
                ),
            )
        ),
        Rejection.UNKNOWN_SOURCE: lambda r: create(
            r, sources=(SourceRef(source="s-" + "f" * 32, label="ci"),)
        ),
        Rejection.SOURCE_NOT_IN_BATCH: lambda r: create(
            r, sources=(SourceRef(source=old_source, label="old"),)
        ),
        Rejection.DANGLING_LINK: lambda r: create(
            r, content="See [[projects/ci#^m-" + "1" * 32 + "]]."
        ),
        Rejection.UNKNOWN_POSITION: lambda r: create(
            r,
            destination=Destination(
                topic_path="projects/ci", position="before", anchor_memory_id=old.id
            ),
        ),
        Rejection.OVER_CAP: lambda r: create(r, content="x" * 2001),
        Rejection.SECRET: lambda r: create(r, content=f"The deploy key is {secret} for now."),
        Rejection.MALFORMED: lambda r: create(r, content="two\n\nparagraphs"),
    }


@pytest.mark.parametrize(
    "reason",
    [
        Rejection.RECORD_LOST,
        Rejection.UNKNOWN_RECORD,
        Rejection.UNKNOWN_SOURCE,
        Rejection.SOURCE_NOT_IN_BATCH,
        Rejection.DANGLING_LINK,
        Rejection.UNKNOWN_POSITION,
        Rejection.OVER_CAP,
        Rejection.SECRET,
        Rejection.MALFORMED,
    ],
    ids=str,
)
def test_each_rejection_leaves_workspace_unchanged_and_marks_nothing(
    gstore: SessionStore, ws: MemoryWorkspace, reason: Rejection
) -> None:
    first, second, _ = _prepare(gstore, ws)
    writer = Scripted([_bad_answers(ws, first)[reason]])
    pipe = WritePipeline(ws, gstore, writer)
    owed = [n.id for n in pipe.owed(second)]
    before = workspace_bytes(ws)
    failure = pipe.write(second, force=True)
    assert failure is not None and failure.reason == FailureReason.COMMIT_REJECTED
    assert failure.retryable is False
    assert reason.value in failure.detail
    assert workspace_bytes(ws) == before
    assert [n.id for n in pipe.owed(second)] == owed
    # The repair request carried the first rejection, with its typed reason.
    assert len(writer.requests) == 2
    assert writer.requests[1].rejection is not None
    assert writer.requests[1].rejection.reason == reason
    if reason == Rejection.SECRET:
        assert "sk-proj-" not in failure.detail
        rej = writer.requests[1].rejection
        assert rej.kind and rej.field == "content" and rej.start is not None and rej.end is not None


def test_model_writer_malformed_answers_get_one_repair(
    gstore: SessionStore, ws: MemoryWorkspace
) -> None:
    _, second, _ = _prepare(gstore, ws)
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "I think you should remember the CI move."  # not JSON

    pipe = WritePipeline(ws, gstore, ModelWriter(complete))
    before = workspace_bytes(ws)
    failure = pipe.write(second, force=True)
    assert failure is not None and failure.reason == FailureReason.COMMIT_REJECTED
    assert len(prompts) == 2 and "REJECTED with MALFORMED" in prompts[1]
    assert workspace_bytes(ws) == before


def test_model_writer_repair_succeeds(gstore: SessionStore, ws: MemoryWorkspace) -> None:
    _, second, _ = _prepare(gstore, ws)
    answers = iter(["not json", None])

    def complete(prompt: str) -> str:
        a = next(answers)
        if a is not None:
            return a
        src = [line for line in prompt.splitlines() if line.startswith('{"source"')][0]
        sid = src.split('"source": "')[1].split('"')[0]
        return (
            '```json\n{"changes": [{"op": "create_record", "content": "CI moved to GitHub Actions.",'
            f' "sources": [{{"source": "{sid}", "label": "CI"}}],'
            ' "destination": {"topic_path": "projects/ci"}}]}\n```'
        )

    pipe = WritePipeline(ws, gstore, ModelWriter(complete))
    assert pipe.write(second, force=True) is None
    assert [r.content for r in ws.records("projects/ci")] == ["CI moved to GitHub Actions."]


def test_model_writer_unreachable_is_retryable(gstore: SessionStore, ws: MemoryWorkspace) -> None:
    _, second, _ = _prepare(gstore, ws)

    def complete(prompt: str) -> str:
        raise ConnectionRefusedError("no model here")

    failure = WritePipeline(ws, gstore, ModelWriter(complete)).write(second, force=True)
    assert failure is not None
    assert (failure.reason, failure.retryable) == (FailureReason.WRITER_UNAVAILABLE, True)


def test_repair_succeeds_once_then_commit_rejected(
    gstore: SessionStore, ws: MemoryWorkspace
) -> None:
    first, second, _ = _prepare(gstore, ws)
    bad = _bad_answers(ws, first)[Rejection.UNKNOWN_SOURCE]
    good = DigestWriter().write
    writer = Scripted([bad, good])
    pipe = WritePipeline(ws, gstore, writer)
    assert pipe.write(second, force=True) is None
    assert pipe.owed(second) == []
    assert writer.requests[1].rejection is not None
    assert writer.requests[1].rejection.reason == Rejection.UNKNOWN_SOURCE

    gstore.append(second, "Also cache the pip downloads in CI.", role="user")
    writer2 = Scripted([bad, bad])
    pipe2 = WritePipeline(ws, gstore, writer2)
    ws.archive(pipe2.owed(second))
    before = workspace_bytes(ws)
    failure = pipe2.write(second, force=True)
    assert failure is not None and failure.reason == FailureReason.COMMIT_REJECTED
    assert workspace_bytes(ws) == before
    assert len(pipe2.owed(second)) == 1


def test_success_that_changes_nothing_marks_nothing(
    gstore: SessionStore, ws: MemoryWorkspace
) -> None:
    _, second, pipe = _prepare(gstore, ws)
    owed = [n.id for n in pipe.owed(second)]
    before = workspace_bytes(ws)
    failure = WritePipeline(ws, gstore, Scripted([ChangeSet()])).write(second, force=True)
    assert failure is not None
    assert (failure.reason, failure.retryable) == (FailureReason.NO_PROGRESS, False)
    assert [n.id for n in pipe.owed(second)] == owed
    assert workspace_bytes(ws) == before


def _tamper(ws: MemoryWorkspace, how: str, source: str) -> None:
    """Edit the archive from another connection, past its append-only guard."""
    forged = (
        "UPDATE sources SET text = 'forged' WHERE id = {p}"
        if how == "update"
        else "DELETE FROM sources WHERE id = {p}"
    )
    if ws.store_url is None:
        raw = sqlite3.connect(ws.db_path, isolation_level=None)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute("UPDATE sources SET text = 'x' WHERE id = ?", (source,))
        raw.execute(f"DROP TRIGGER sources_no_{how}")
        raw.execute(forged.format(p="?"), (source,))
        raw.close()
        return
    import psycopg

    from memory.postgres import split_url

    libpq, schema, _ = split_url(ws.store_url)
    with psycopg.connect(libpq, autocommit=True) as pg:
        pg.execute(f"SET search_path = {schema}")
        with pytest.raises(psycopg.Error, match="append-only"):
            pg.execute("UPDATE sources SET text = 'x' WHERE id = %s", (source,))
        pg.execute("SET memory.erasing = 'on'")
        pg.execute(forged.format(p="%s"), (source,))


@pytest.mark.parametrize("tamper", ["update", "delete"])
def test_archive_tampered_while_writing_is_rejected(
    gstore: SessionStore, ws: MemoryWorkspace, tamper: str
) -> None:
    """A writer that bypasses the archive's triggers: SOURCE_CHANGED / SOURCE_MISSING, nothing installed."""
    _, second, pipe = _prepare(gstore, ws)
    owed = [n.id for n in pipe.owed(second)]
    snapshot: list[str] = []

    def tampering(req: WriteRequest) -> ChangeSet:
        if not snapshot:
            _tamper(ws, tamper, req.sources[0].id)
            snapshot.append(workspace_bytes(ws))
        return DigestWriter().write(req)

    failure = WritePipeline(ws, gstore, Scripted([tampering])).write(second, force=True)
    assert failure is not None and failure.reason == FailureReason.COMMIT_REJECTED
    expected = Rejection.SOURCE_CHANGED if tamper == "update" else Rejection.SOURCE_MISSING
    assert expected.value in failure.detail
    # Nothing was installed on top of the tampering, and nothing was marked.
    assert workspace_bytes(ws) == snapshot[0]
    assert [n.id for n in pipe.owed(second)] == owed


def test_unknown_session_is_not_retryable(store: BaseStore, ws: MemoryWorkspace) -> None:
    failure = WritePipeline(ws, store).write("no-such-session", force=True)
    assert failure is not None
    assert (failure.reason, failure.retryable) == (FailureReason.UNKNOWN_SESSION, False)


def test_reset_reads_every_session_as_unwritten(store: BaseStore, ws: MemoryWorkspace) -> None:
    s = store.create_session()
    store.append(s.id, "Prefer tabs over spaces in Makefiles.", role="user")
    store.append(s.id, "Makefiles require tabs anyway.", role="assistant")
    pipe = WritePipeline(ws, store)
    assert pipe.write(s.id, force=True) is None and pipe.owed(s.id) == []
    old = ws.id
    new = ws.reset()
    assert new != old and ws.id == new
    assert ws.records() == [] and len(pipe.owed(s.id)) == 2
    if ws.store_url is None:
        assert (ws.path / f"memory.{old}.db").exists()
    assert pipe.write(s.id, force=True) is None and pipe.owed(s.id) == []

"""The organizer: the offline pass merges exact duplicates; a scripted model merges, splits and moves
out of core; refused plans change nothing; triggers (batches, tokens, daily 03:00 local) on an injected
clock; the idle watcher's loop runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, time
from pathlib import Path
from typing import Any

import pytest

from graph import MemorySessionStore, Role
from memory import (
    IdleWatcher,
    LocalMemory,
    MemoryWorkspace,
    RejectedError,
    Rejection,
    WritePipeline,
    add_memory,
)
from memory.history import log
from memory.organizer import ModelOrganizer, OfflineOrganizer, OrganizeSchedule, reorganize


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[MemoryWorkspace]:
    w = MemoryWorkspace(tmp_path / "ws")
    yield w
    w.close()


def test_offline_pass_merges_exact_duplicates_and_repoints_links(ws: MemoryWorkspace) -> None:
    store = MemorySessionStore()
    sid = store.create_session("s").id
    node = store.append(sid, "Tabs, please.", role=Role.USER)
    first = add_memory(ws, "Indent with tabs.", topic="core", tags=("style",))
    dup = add_memory(ws, "Indent  with\ttabs.", topic="notes", cites=[node], tags=("editor",))
    linker = add_memory(ws, f"As said in [[notes#^{dup.id}]].", topic="notes")
    other = add_memory(ws, "Unrelated.", topic="misc")

    result = reorganize(ws)

    assert result.deleted == (dup.id,)
    assert set(result.updated) == {first.id, linker.id}
    kept = ws.record(first.id)
    assert [c.source for c in kept.citations] == [
        first.citations[0].source,
        dup.citations[0].source,
    ]
    assert kept.tags == ("style", "editor")
    assert ws.record(linker.id).content == f"As said in [[core#^{first.id}]]."
    assert ws.record(other.id) == other
    assert result.changed_files == ["topics/core.md", "topics/notes.md"]  # not core.md: same text
    assert log(ws.conn)[0].kind == "organize"
    assert reorganize(ws).changed_files == []  # nothing left to merge
    assert OfflineOrganizer().organize(ws.state()).changes == ()


class Scripted:
    """A model that answers with a fixed plan, built from the records it is shown."""

    def __init__(self, plan: Any) -> None:
        self.plan = plan
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return json.dumps({"changes": self.plan})


def _src(rec: Any) -> list[dict[str, str]]:
    return [{"source": c.source, "label": c.label, "snippet": c.snippet} for c in rec.citations]


def test_a_model_plan_merges_splits_and_moves_progress_out_of_core(ws: MemoryWorkspace) -> None:
    rule = add_memory(ws, "Always answer in English.", topic="core")
    progress = add_memory(ws, "Milestone 2 of the parser is done.", topic="core")
    a = add_memory(ws, "The CI runs on push.", topic="ci")
    b = add_memory(ws, "The CI also runs nightly.", topic="ci")
    both = add_memory(ws, "Backups run at 2am. Logs rotate weekly.", topic="ops")
    plan = [
        {"op": "move_records", "memory_ids": [progress.id], "destination": {"topic_path": "projects/parser"}},
        {"op": "update_record", "memory_id": a.id, "content": "The CI runs on push and nightly.",
         "sources": _src(a) + _src(b)},
        {"op": "delete_record", "memory_id": b.id},
        {"op": "update_record", "memory_id": both.id, "content": "Backups run at 2am.", "sources": _src(both)},
        {"op": "create_record", "content": "Logs rotate weekly.", "sources": _src(both),
         "destination": {"topic_path": "ops"}},
    ]  # fmt: skip
    model = Scripted(plan)

    result = reorganize(ws, ModelOrganizer(model))

    assert progress.id in model.prompts[0] and "rules, preferences and identity" in model.prompts[0]
    assert [r.id for r in ws.records("core")] == [rule.id]
    assert ws.record(progress.id).topic == "projects/parser"
    assert [r.content for r in ws.records("ci")] == ["The CI runs on push and nightly."]
    assert [r.content for r in ws.records("ops")] == ["Backups run at 2am.", "Logs rotate weekly."]
    assert result.deleted == (b.id,) and len(result.created) == 1
    assert result.changed_files == [
        "core.md",
        "topics/ci.md",
        "topics/core.md",
        "topics/ops.md",
        "topics/projects/parser.md",
    ]


@pytest.mark.parametrize(
    ("make_plan", "reason"),
    [
        (lambda r: [{"op": "update_record", "memory_id": r.id, "content": "New fact from nowhere.",
                     "sources": [{"source": "s-" + "1" * 32, "label": "x"}]}],
         Rejection.SOURCE_NOT_IN_BATCH),
        (lambda r: [{"op": "rewrite_topic", "topic_path": "notes", "records": []}], Rejection.MALFORMED),
        (lambda r: [{"op": "update_record", "memory_id": r.id, "content": "See [[notes#^m-nope]].",
                     "sources": _src(r)}], Rejection.DANGLING_LINK),
        (lambda r: [{"op": "delete_record", "memory_id": "m-unknown"}], Rejection.UNKNOWN_RECORD),
    ],
)  # fmt: skip
def test_a_refused_plan_changes_nothing(
    ws: MemoryWorkspace, make_plan: Any, reason: Rejection
) -> None:
    rec = add_memory(ws, "Keep me.")
    records, revision = ws.records(), ws.revision
    with pytest.raises(RejectedError) as e:
        reorganize(ws, ModelOrganizer(Scripted(make_plan(rec))))
    assert e.value.reason is reason
    assert ws.records() == records and ws.revision == revision


def _write_sessions(ws: MemoryWorkspace, n: int, words: int = 5) -> None:
    store = MemorySessionStore()
    pipe = WritePipeline(ws, store)
    for i in range(n):
        sid = store.create_session(f"s{i}").id
        store.append(sid, f"Question {i}? " + "word " * words, role=Role.USER)
        store.append(sid, f"Answer {i}.", role=Role.ASSISTANT)
        assert pipe.write(sid, force=True) is None


def _local(*args: int) -> datetime:
    return datetime(*args).astimezone()  # type: ignore[arg-type]


def test_triggers_batches_tokens_and_daily_on_an_injected_clock(ws: MemoryWorkspace) -> None:
    schedule = OrganizeSchedule(batches=5, tokens=40_000, daily_at=time(3, 0))
    day1 = _local(2025, 6, 1, 2, 0)
    assert schedule.due(ws, day1) is None  # nothing held, nothing written
    _write_sessions(ws, 4)
    assert (
        schedule.due(ws, day1) == "daily"
    )  # records and never organized: yesterday's 03:00 passed
    reorganize(ws, now=day1)
    assert schedule.due(ws, day1) is None
    assert schedule.due(ws, _local(2025, 6, 1, 2, 59)) is None
    assert schedule.due(ws, _local(2025, 6, 1, 3, 0)) == "daily"
    reorganize(ws, now=_local(2025, 6, 1, 3, 0))
    assert schedule.due(ws, _local(2025, 6, 1, 23, 0)) is None

    _write_sessions(ws, 4)
    assert schedule.due(ws, _local(2025, 6, 1, 23, 0)) is None  # 4 batches since the last pass
    _write_sessions(ws, 1)
    assert schedule.due(ws, _local(2025, 6, 1, 23, 0)) == "batches"
    reorganize(ws, now=_local(2025, 6, 1, 23, 0))

    _write_sessions(ws, 1, words=40_000)  # one batch of more than 40k tokens
    assert schedule.due(ws, _local(2025, 6, 1, 23, 5)) == "tokens"


def test_the_watcher_loop_runs_the_organizer_when_due(ws: MemoryWorkspace) -> None:
    add_memory(ws, "Same words.")
    add_memory(ws, "Same words.")
    store = MemorySessionStore()
    events: list[tuple[str, dict[str, Any]]] = []
    now = [_local(2025, 6, 1, 4, 0)]
    watcher = IdleWatcher(
        store,
        WritePipeline(ws, store),
        ws,
        clock=lambda: now[0],
        on_event=lambda name, payload: events.append((name, payload)),
        schedule=OrganizeSchedule(),
    )
    done = watcher.organize_if_due()
    assert done is not None and done[0] == "daily"
    assert len(ws.records()) == 1
    assert events == [("memory.organized", {"reason": "daily", "files": ["topics/notes.md"]})]
    assert watcher.organize_if_due() is None  # not again today


def test_local_memory_reorganize_reports_changed_files(ws: MemoryWorkspace) -> None:
    add_memory(ws, "Twice.", topic="core")
    add_memory(ws, "Twice.", topic="core")
    memory = LocalMemory(ws, MemorySessionStore())
    assert memory.reorganize() == ["core.md", "topics/core.md"]
    assert memory.reorganize() == []


def test_memory_organize_end_to_end(tmp_path: Path) -> None:
    import subprocess
    import sys

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from graph.cli.commands import main; main()", "--db"]
            + [str(tmp_path / "s.db"), "memory", "--workspace", str(tmp_path / "ws"), *args],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path)},
            timeout=120,
        )

    assert cli("add", "Ship on Tuesdays.").returncode == 0
    assert cli("add", "Ship on  Tuesdays.").returncode == 0
    done = json.loads(cli("organize", "--json").stdout)
    assert len(done["deleted"]) == 1 and done["changed_files"] == ["topics/notes.md"]
    assert done["revision"] == 3
    assert cli("organize").stdout.strip() == "nothing to organize"

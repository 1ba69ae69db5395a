"""What the importers add around the store: ``update_session`` and the per-file import frame."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from graph import CodecError, UnknownSessionError
from graph.importers._common import file_import
from graph.store.base import BaseStore


def test_update_session_replaces_title_and_metadata_and_leaves_updated_at(store: BaseStore) -> None:
    s = store.create_session("old", metadata={"a": 1})
    node = store.append(s.id, "hello", role="user")
    before = store.session(s.id)
    got = store.update_session(s.id, title="new", metadata={"b": [1, 2]})
    assert (got.title, dict(got.metadata)) == ("new", {"b": [1, 2]})
    again = store.session(s.id)
    assert again.updated_at == before.updated_at
    assert again.head == node.id
    assert store.update_session(s.id, metadata={"c": True}).title == "new"


def test_update_session_rejects_unknown_session_and_foreign_values(store: BaseStore) -> None:
    with pytest.raises(UnknownSessionError):
        store.update_session("nope", title="x")
    s = store.create_session("t", metadata={"a": 1})
    with pytest.raises(CodecError):
        store.update_session(s.id, metadata={"bad": object()})
    assert dict(store.session(s.id).metadata) == {"a": 1}


def test_update_session_inside_a_rolled_back_block_changes_nothing(store: BaseStore) -> None:
    s = store.create_session("t")
    with pytest.raises(RuntimeError), store.atomic():
        store.update_session(s.id, title="changed")
        raise RuntimeError("abort")
    assert store.session(s.id).title == "t"


def test_a_file_import_pauses_the_gc_and_fills_its_report(tmp_path: Path) -> None:

    seen = []
    with file_import(tmp_path / "x.jsonl", "pi") as (report, problems):
        seen.append(gc.isenabled())
        problems.skipped.append((3, "torn"))
    assert seen == [False] and gc.isenabled()
    assert report.skipped == [(3, "torn")] and report.seconds > 0

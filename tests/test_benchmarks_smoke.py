"""The benchmark scripts run in ``--quick`` mode and write their JSON; no timing is asserted.

Also: the store's fast node construction (a read-path speed-up the benchmarks measure) builds nodes
equal in every observable way to pydantic's validated construction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import MemorySessionStore, Node, SessionStore, TextBlock
from graph.store import BaseStore

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("twin", ["sqlite", "memory"])
def test_read_nodes_equal_validated_nodes(twin: str, tmp_path: Path) -> None:
    store: BaseStore = SessionStore(tmp_path / "s.db") if twin == "sqlite" else MemorySessionStore()
    s = store.create_session("t")
    a = store.append(s.id, "hello", role="user", metadata={"k": [1, "x"]})
    b = store.append(s.id, (TextBlock(text="hi"),), role="assistant")
    store.mark(s.id, [a.id], "memory", "ws")
    got = store.branch(s.id)
    for read, written in zip(got, (a, b), strict=True):
        validated = Node.model_validate(read.model_dump())
        assert read == validated
        assert read.model_fields_set == validated.model_fields_set
        assert read.model_dump() == validated.model_dump()
        assert read.model_copy(update={"metadata": {}}).id == written.id
        assert hash(read.id) == hash(written.id)
        assert read.content == written.content
    assert got[0].written == {"memory": "ws"}
    assert (
        got[0].model_dump_json()
        == Node.model_validate_json(got[0].model_dump_json()).model_dump_json()
    )
    store.close()

"""pi and Codex imports work out the import outside the write lock and write under it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph import SessionStore
from graph.importers import codex, pi

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_import.py"


def _generators() -> Any:
    sys.path.insert(0, str(_BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_import_for_lock_tests", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FORMATS = [("pi", pi, "pi_lines"), ("codex", codex, "codex_lines")]


@pytest.mark.parametrize(("name", "module", "make"), FORMATS, ids=[f[0] for f in FORMATS])
def test_the_plan_holds_no_lock_and_a_race_is_planned_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: Any, make: str
) -> None:
    """Rules run with no transaction open; an import that won the race makes the plan re-run."""
    lines = getattr(_generators(), make)(40)
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    db = tmp_path / "store.db"
    store, rival = SessionStore(db), SessionStore(db)
    original: Callable[..., Any] = module._import
    calls: list[bool] = []

    def planning(st: SessionStore, *args: Any) -> Any:
        if st is not store:
            return original(st, *args)
        calls.append(st.conn.in_transaction)
        plan = original(st, *args)
        if len(calls) == 1:  # another process imports the same file after the plan's reads
            assert module.import_file(rival, path).nodes_added > 0
        return plan

    monkeypatch.setattr(module, "_import", planning)
    report = module.import_file(store, path)
    monkeypatch.undo()
    assert calls[0] is False  # the first plan ran outside any transaction
    assert calls[1:] == [True]  # the stale plan was worked out again, under the lock
    assert report.nodes_added == 0 and report.error is None
    assert len(report.session_ids) == 1  # what the first plan reported was taken back
    again = SessionStore(db)
    sid = report.session_ids[0]
    assert again.node_count(sid) == rival.node_count(sid) > 0
    assert module.import_file(again, path).nodes_added == 0
    for s in (store, rival, again):
        s.close()


@pytest.mark.parametrize(("name", "module", "make"), FORMATS, ids=[f[0] for f in FORMATS])
def test_an_unraced_import_plans_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: Any, make: str
) -> None:
    """With no other writer the plan is worked out once, outside the lock, and written as planned."""
    lines = getattr(_generators(), make)(30)
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    store = SessionStore(tmp_path / "store.db")
    original: Callable[..., Any] = module._import
    calls: list[bool] = []

    def planning(st: SessionStore, *args: Any) -> Any:
        calls.append(st.conn.in_transaction)
        return original(st, *args)

    monkeypatch.setattr(module, "_import", planning)
    report = module.import_file(store, path)
    assert calls == [False]
    assert report.nodes_added == store.node_count(report.session_ids[0]) > 0
    store.close()

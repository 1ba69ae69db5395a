"""pi and Codex imports keep only what their rules read of each entry while they read a file.

The entries' contents are read again, by byte offset, a chunk at a time as their nodes are made
(:func:`graph.importers._common.rereading`), so the parsed entries of a file are never all alive at
once; an entry that changed in between fails the import and stores nothing.
"""

from __future__ import annotations

import importlib.util
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

import graph.importers._common as common
import graph.importers.jsonl as jsonl
from graph import SessionStore
from graph.importers import codex, pi
from graph.importers.report import TranscriptError

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_import.py"
_FORMATS = [("pi", pi, "pi_lines"), ("codex", codex, "codex_lines")]


def _lines(make: str, n: int) -> list[dict[str, Any]]:
    sys.path.insert(0, str(_BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_import_for_slim_tests", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(getattr(module, make)(n))


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


class _Parsed(dict[str, Any]):
    """A parsed line the reader handed over (a dict that a weak reference can follow)."""


@pytest.mark.parametrize(("fmt", "importer", "make"), _FORMATS)
def test_the_parsed_entries_are_never_all_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, importer: Any, make: str
) -> None:
    """At each chunk handed to the store, only about a chunk of the file's parsed lines is alive."""
    path = _write(tmp_path / f"{fmt}.jsonl", _lines(make, 80))
    parsed_lines: list[weakref.ref[_Parsed]] = []

    def loads(raw: Any) -> Any:
        obj = orjson.loads(raw)
        if not isinstance(obj, dict):
            return obj
        parsed = _Parsed(obj)
        parsed_lines.append(weakref.ref(parsed))
        return parsed

    monkeypatch.setattr(
        jsonl, "orjson", SimpleNamespace(loads=loads, JSONDecodeError=orjson.JSONDecodeError)
    )
    monkeypatch.setattr(common, "CHUNK", 8)
    seen: list[int] = []
    real = SessionStore.add_nodes

    def counted(self: SessionStore, sid: str, nodes: Any, **kw: Any) -> Any:
        seen.append(sum(r() is not None for r in parsed_lines))
        return real(self, sid, nodes, **kw)

    monkeypatch.setattr(SessionStore, "add_nodes", counted)
    store = SessionStore(tmp_path / "s.db")
    report = importer.import_file(store, path)
    assert report.nodes_added == 79 and len(seen) == 10
    # the header (kept whole: the session's metadata) and the entry being made, never the file
    assert max(seen) <= 2, seen
    store.close()


@pytest.mark.parametrize(("fmt", "importer", "make"), _FORMATS)
def test_an_entry_rewritten_before_its_node_is_made_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, importer: Any, make: str
) -> None:
    """The second read finds another entry at an offset: the import fails, nothing is stored."""
    lines = _lines(make, 30)
    path = _write(tmp_path / f"{fmt}.jsonl", lines)
    real = common.rereading

    def rewritten(at: Path, keep: Any) -> Any:
        # Between the two reads the file is rewritten: the same bytes but one entry swapped for
        # the next (its offset now holds another entry).
        changed = [*lines]
        changed[20], changed[21] = changed[21], changed[20]
        _write(at, changed)
        return real(at, keep)

    monkeypatch.setattr(f"graph.importers.{fmt}.rereading", rewritten)
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises(TranscriptError, match="changed while it was imported"):
        importer.import_file(store, path)
    assert store.sessions() == []
    store.close()


def test_an_echo_pairs_the_user_item_of_its_text_not_the_nearest(tmp_path: Path) -> None:
    """A slim read keeps a digest of each text: the echo still finds the prompt it repeats."""
    meta = {"id": "0199a1b2-0000-7000-8000-000000000001", "timestamp": "2025-03-01T00:00:00Z"}

    def item(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2025-03-01T00:00:01Z", "type": kind, "payload": payload}

    def user(text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }

    prompt = "fix the parser " * 40  # longer than the text a slim item keeps of it
    lines = [
        {"timestamp": meta["timestamp"], "type": "session_meta", "payload": meta},
        item("response_item", user(prompt)),
        item("response_item", user(prompt + "(the context the CLI injected, sanitized)")),
        item("event_msg", {"type": "user_message", "message": prompt}),
        item(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
        ),
    ]
    store = SessionStore(tmp_path / "s.db")
    report = codex.import_file(store, _write(tmp_path / "rollout.jsonl", lines))
    sid = report.session_ids[0]
    roles = {n.id: n.role.value for n in store.nodes(sid)}
    assert (roles[f"{sid}:1"], roles[f"{sid}:2"]) == ("user", "system")
    assert store.session(sid).title.startswith("fix the parser fix the parser")
    store.close()

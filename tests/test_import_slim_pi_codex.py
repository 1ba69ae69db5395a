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


@pytest.mark.parametrize(("fmt", "importer", "make"), _FORMATS)
def test_an_entry_edited_where_the_rules_do_not_look_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, importer: Any, make: str
) -> None:
    """An assistant text edited in place between the reads (what a slim entry keeps unchanged)
    fails the import: the second read checks the line's bytes, not only the fields kept."""
    lines = _lines(make, 30)
    path = _write(tmp_path / f"{fmt}.jsonl", lines)
    at = next(i for i, x in enumerate(lines) if i > 10 and b'"assistant"' in orjson.dumps(x))
    real = common.rereading

    def edited(where: Path, keep: Any) -> Any:
        changed = orjson.loads(orjson.dumps(lines))
        block = (changed[at].get("message") or changed[at]["payload"])["content"][0]
        block["text"] = block["text"].upper()
        _write(where, changed)
        return real(where, keep)

    monkeypatch.setattr(f"graph.importers.{fmt}.rereading", edited)
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises(TranscriptError, match=f"line {at + 1} changed while it was imported"):
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


def _items_of_every_kind() -> list[dict[str, Any]]:
    def item(kind: str, payload: Any) -> dict[str, Any]:
        return {"timestamp": "2025-03-01T00:00:01Z", "type": kind, "payload": payload}

    def message(role: Any, *texts: str, block: str = "input_text") -> dict[str, Any]:
        content = [{"type": block, "text": t} for t in texts]
        return item("response_item", {"type": "message", "role": role, "content": content})

    return [
        message("user", "fix the parser"),
        message("user", "  <environment_context>cwd</environment_context>"),
        message("user", "<user_instructions>", "and more"),
        message("user", block="input_image"),
        message("assistant", "ok", block="output_text"),
        message("developer", "rules"),
        message(None, "no role"),
        item("response_item", {"type": "message", "role": "user", "content": "not a list"}),
        item("response_item", {"type": "function_call", "name": "sh", "arguments": "{}"}),
        item("response_item", {"type": "custom_tool_call", "input": "x"}),
        item("response_item", {"type": "function_call_output", "output": {"a": 1}}),
        item("response_item", {"type": "reasoning", "summary": [{"text": "hm"}]}),
        item("response_item", {"type": "something_new"}),
        item("response_item", "not a payload"),
        item("compacted", {"message": "summary"}),
        item("compacted", {"replacement_history": []}),
        item("event_msg", {"type": "user_message", "message": "fix the parser"}),
        item("event_msg", {"type": "token_count", "info": None}),
        item("turn_context", {"model": "gpt"}),
        {"type": "unknown"},
    ]


def test_the_plan_reads_of_a_slim_item_the_kind_and_role_its_node_gets(corpus: Path) -> None:
    """The plan's kind and role of an item (read slim, no content made) are its node's."""
    items = _items_of_every_kind() + [
        orjson.loads(raw)
        for f in sorted((corpus / "codex").glob("*.jsonl"))
        for raw in f.read_bytes().splitlines()
        if raw.strip()
    ]
    for data in items:
        line = jsonl.Line(1, data)
        slim = jsonl.Line(1, codex._slim(data))
        for prompt in (None, True, False):
            want = codex._item(line, prompt)[:2]
            assert codex._kind_role(line, prompt) == want, (data, prompt)
            assert codex._kind_role(slim, prompt) == want, (data, prompt)
        if codex._is_user_item(line) or codex._is_echo(line):  # what the echo pairing compares
            assert slim.data["said"] == codex._said(line), data

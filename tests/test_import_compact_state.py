"""A Claude Code import keeps little state per entry: the compact rules answer as the plain ones.

The artifact rule sums subtrees up from the leaves instead of keeping every entry's children, the
head's branch is walked for the entries asked about only, and the plan's nodes are kept column by
column and cut into chunks in file order. These tests check each against the straightforward
formulation, on random shapes (forks, entries before their parent's line, parents stored before),
and that the faster model and row making gives what validation and ``model_dump`` give.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graph import SessionStore
from graph.codec import encode, encode_content
from graph.importers import claude_code
from graph.importers.jsonl import Line
from graph.models import Kind, Node, Role, TextBlock, ToolCallBlock, ToolResultBlock
from graph.store.base import node_of_fields

_T = datetime(2026, 1, 1, tzinfo=UTC)


def _reference_artifacts(
    t: Any, uuids: list[str], pred: dict[str, str | None], head: str | None
) -> set[str]:
    """The artifact rule as first written: every entry's children and subtree figures kept."""
    order = claude_code._order(uuids, pred)
    kids: dict[str, list[str]] = {}
    for u in order:
        p = pred[u]
        if p is not None:
            kids.setdefault(p, []).append(u)
    prompt: dict[str, bool] = {}
    newest: dict[str, int] = {}
    for u in reversed(order):
        below = kids.get(u, ())
        prompt[u] = claude_code._is_prompt(t.entries[u].data) or any(prompt[c] for c in below)
        newest[u] = max([t.entries[u].number, *(newest[c] for c in below)])
    on_head: set[str] = set()
    n = head
    while n is not None and n in pred and n not in on_head:
        on_head.add(n)
        n = pred[n]
    out: set[str] = set()
    for p, below in kids.items():
        if len(below) < 2 or p in out:
            continue
        keep = next((c for c in below if c in on_head), None) or max(below, key=newest.__getitem__)
        for c in below:
            if c == keep or prompt[c]:
                continue
            stack = [c]
            while stack:
                m = stack.pop()
                if m not in out:
                    out.add(m)
                    stack.extend(kids.get(m, ()))
    return out


def _shape(seed: int) -> tuple[Any, list[str], dict[str, str | None], str | None]:
    """A random session: forks, prompts and events, some lines before their parent's line."""
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    ids = [f"u{i}" for i in range(n)]
    pred: dict[str, str | None] = {}
    for i, u in enumerate(ids):
        r = rng.random()
        if i == 0 or r < 0.05:
            pred[u] = None
        elif r < 0.1:
            pred[u] = "stored"  # a node stored before, outside this import
        elif r < 0.7:
            pred[u] = ids[i - 1]
        else:
            pred[u] = ids[rng.randrange(i)]
    uuids = list(ids)
    for _ in range(rng.randint(0, 3)):  # a child line written before its parent's line
        a, b = rng.randrange(n), rng.randrange(n)
        uuids[a], uuids[b] = uuids[b], uuids[a]
    entries = {}
    for number, u in enumerate(uuids, 1):
        kind = rng.choice(["user", "user", "assistant", "progress"])
        data: dict[str, Any] = {"type": kind, "uuid": u}
        if kind == "user":
            data["message"] = {"content": rng.choice(["x", [{"type": "tool_result"}]])}
        entries[u] = Line(number, data)
    t = claude_code._Transcript(Path("x.jsonl"), entries)
    messages = [u for u in uuids if entries[u].data["type"] != "progress"]
    head = rng.choice([*messages, None]) if messages else None
    return t, uuids, {u: pred[u] for u in uuids}, head


@pytest.mark.parametrize("seed", range(300))
def test_artifacts_match_the_rule_as_first_written(seed: int) -> None:
    t, uuids, pred, head = _shape(seed)
    assert claude_code._artifacts(t, uuids, pred, head) == _reference_artifacts(
        t, uuids, pred, head
    )


@pytest.mark.parametrize("seed", range(50))
def test_on_branch_is_the_branch_cut_to_what_was_asked(seed: int) -> None:
    _, uuids, pred, head = _shape(seed)
    branch: set[str] = set()
    n = head
    while n is not None and n in pred:
        branch.add(n)
        n = pred[n]
    among = set(random.Random(seed).sample(uuids, k=len(uuids) // 2))
    assert claude_code._on_branch(pred, head, among) == branch & among


def _specs(pairs: list[tuple[str, str | None]], ordered: bool) -> claude_code._Specs:
    specs = claude_code._Specs()
    for i, (u, p) in enumerate(pairs):
        extra = {"artifact": True} if i % 3 == 0 else {}
        specs.append(claude_code._Spec(u, u if i % 4 else f"{u}@s", p, _T, extra, ()))
    specs.ordered = ordered
    return specs


def test_specs_keep_every_field_and_chunk_in_file_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claude_code, "_CHUNK", 3)
    pairs: list[tuple[str, str | None]] = [(f"n{i}", f"n{i - 1}" if i else None) for i in range(8)]
    specs = _specs(pairs, ordered=True)
    chunks = list(specs.chunks())
    assert [len(c) for c in chunks] == [3, 3, 2]
    assert [s for c in chunks for s in c] == list(specs)
    assert list(specs)[0].node_id == "n0@s" and list(specs)[0].extra == {"artifact": True}
    assert list(specs)[1].extra == {} and list(specs)[1].node_id == "n1"


def test_specs_out_of_file_order_are_put_predecessors_first() -> None:
    specs = _specs([("c", "b"), ("a", None), ("b", "a")], ordered=False)
    order = [s.uuid for c in specs.chunks() for s in c]
    assert order == ["a", "b", "c"]


def test_no_specs_still_give_one_chunk_that_moves_the_head() -> None:
    assert list(claude_code._Specs().chunks()) == [[]]


def test_blocks_built_directly_equal_validated_blocks() -> None:
    made = [
        claude_code._block(TextBlock, text="hi"),
        claude_code._block(ToolCallBlock, id="c1", name="Read", arguments={"b": 1, "a": [2]}),
        claude_code._block(ToolResultBlock, call_id="c1", text="out", is_error=True),
    ]
    checked = [
        TextBlock(text="hi"),
        ToolCallBlock(id="c1", name="Read", arguments={"b": 1, "a": [2]}),
        ToolResultBlock(call_id="c1", text="out", is_error=True),
    ]
    assert made == checked
    assert encode_content(tuple(made)) == encode_content(tuple(checked))


def test_block_content_encodes_as_its_model_dump() -> None:
    blocks = (
        TextBlock(text="a"),
        ToolCallBlock(id="c", name="n", arguments={"z": {"y": 1, "x": 2}, "a": None}),
        ToolResultBlock(call_id="c", text="r"),
    )
    dumped = [b.model_dump(mode="python") for b in blocks]
    assert encode_content(blocks) == encode(dumped, canonical=True)


def _fields(**change: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": "n1",
        "session_id": "s1",
        "predecessor": None,
        "kind": Kind.MESSAGE,
        "role": Role.USER,
        "content": "hello",
        "created_at": _T,
        "metadata": {"line": 1},
        "covers": (),
    }
    return values | change


def test_node_of_fields_builds_what_validation_builds() -> None:
    assert node_of_fields(_fields()) == Node(**_fields())
    blocks = (TextBlock(text="a"),)
    assert node_of_fields(_fields(content=blocks)) == Node(**_fields(content=blocks))


def test_node_of_fields_validates_values_of_other_types() -> None:
    node = node_of_fields(
        _fields(created_at="2026-01-01T00:00:00Z", content=[{"type": "text", "text": "a"}])
    )
    assert node.created_at == _T and node.content == (TextBlock(text="a"),)
    with pytest.raises(ValueError):
        node_of_fields(_fields(created_at="not a time"))


def test_rows_leave_out_the_stores_own_metadata_keys(tmp_path: Path) -> None:
    """Markers and rewound stamps live in their own tables, never in a row's metadata."""
    store = SessionStore(tmp_path / "s.db")
    store.create_session("", id="s1")
    meta = {"line": 1, "written": {"p": ("v",)}, "rewound": True}
    store.add_nodes("s1", [Node(**_fields(metadata=meta))])
    (node,) = store.nodes("s1")
    assert node.metadata.get("line") == 1
    assert "written" not in node.metadata or node.metadata["written"] == {}
    assert not node.rewound
    store.close()


def test_empty_content_is_told_without_joining_it(tmp_path: Path) -> None:
    """A node whose blocks hold only blank text counts as empty, as its joined text would."""
    from graph.index import EMPTY

    store = SessionStore(tmp_path / "s.db")
    store.create_session("", id="s1")
    blank = (TextBlock(text="  "), ToolResultBlock(call_id="c", text="\n"))
    store.add_nodes(
        "s1",
        [
            Node(**_fields(id="a", content=blank)),
            Node(**_fields(id="b", predecessor="a", content=(*blank, TextBlock(text="x")))),
        ],
    )
    bits = store.index("s1").bits
    assert bits["a"] & EMPTY and not bits["b"] & EMPTY
    store.close()

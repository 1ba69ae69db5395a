"""Real pi and Codex files from public repositories (tests/fixtures/real/{pi,codex}/, each with a SOURCES.md).

Each file is stored gzipped, byte-exact inside. The expected graph is computed by a small reader
written here, independently of the importers: it follows the formats' own rules (pi's parent links,
v1 file order, pi's context order for the latest compaction on the leaf's path; Codex's file order,
the history after the last ``compacted`` item, a prompt being the user item its ``user_message``
echo follows) and the importer's graph must match it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from graph import MemorySessionStore
from graph.importers import codex, pi
from graph.models import Role

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
PI = sorted((REAL / "pi").glob("*.jsonl.gz"))
CODEX = sorted((REAL / "codex").glob("*.jsonl.gz"))


def unpack(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / src.name.removesuffix(".gz")
    out.write_bytes(gzip.decompress(src.read_bytes()))
    return out


def objects(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def test_the_real_files_are_all_here() -> None:
    assert len(PI) + len(CODEX) >= 5
    for f in PI + CODEX:
        listed = (f.parent / "SOURCES.md").read_text(encoding="utf-8")
        assert f"`{f.name}`" in listed, f"{f.name} is not in {f.parent.name}/SOURCES.md"


# ------------------------------------------------------------------------------------ pi


def pi_expected(path: Path) -> dict[str, Any]:
    """The graph of a pi file, read with pi's rules (not the importer's code)."""
    rows = objects(path)
    header, entries = rows[0], rows[1:]
    v1 = not any("id" in e for e in entries)
    ids = [f"L{i + 2}" if v1 else str(e["id"]) for i, e in enumerate(entries)]
    parent = {
        ids[i]: (ids[i - 1] if i else None) if v1 else e.get("parentId")
        for i, e in enumerate(entries)
    }
    kids: dict[str, int] = {}
    for p in parent.values():
        if p is not None:
            kids[p] = kids.get(p, 0) + 1
    leaf = ids[-1]
    path_ids = []
    n: str | None = leaf
    while n is not None:
        path_ids.append(n)
        n = parent[n]
    path_ids.reverse()
    by_id = dict(zip(ids, entries, strict=True))
    context = path_ids
    compactions = [i for i in path_ids if by_id[i]["type"] == "compaction"]
    if compactions:  # pi: the latest compaction's summary, the kept entries, then what follows
        c = compactions[-1]
        kept = by_id[c].get("firstKeptEntryId")
        if kept is None:  # v1: an index into [header, *entries]
            kept = ids[by_id[c]["firstKeptEntryIndex"] - 1]
        at = path_ids.index(c)
        start = path_ids.index(kept) if kept in path_ids[:at] else at
        context = [c, *path_ids[start:at], *path_ids[at + 1 :]]
    return {
        "session": header["id"],
        "nodes": len(entries),
        "roots": sum(1 for p in parent.values() if p is None),
        "forks": sum(1 for k in kids.values() if k > 1),
        "summaries": sum(1 for e in entries if e["type"] in ("compaction", "branch_summary")),
        "head": leaf,
        "context": context,
    }


@pytest.mark.parametrize("src", PI, ids=[p.name for p in PI])
def test_real_pi_file(src: Path, tmp_path: Path) -> None:
    f = unpack(src, tmp_path)
    want = pi_expected(f)
    store = MemorySessionStore()
    fr = pi.import_file(store, f)
    sid = want["session"]
    assert fr.session_ids == [sid] and fr.skipped == [] and fr.notes == []
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.summaries) == (
        want["nodes"], want["roots"], want["forks"], want["summaries"],
    )  # fmt: skip
    entry = {n.id: n.metadata["entry_id"] for n in store.branch(sid)}
    assert entry[store.session(sid).head] == want["head"]
    assert [n.metadata["entry_id"] for n in store.context(sid)] == want["context"]
    assert pi.import_file(store, f).nodes_added == 0


# ------------------------------------------------------------------------------------ Codex


def codex_expected(path: Path) -> dict[str, Any]:
    """The graph of a Codex rollout, read with Codex's rules (not the importer's code)."""
    rows = objects(path)
    sid = rows[0]["payload"]["id"]
    items = rows[1:]
    node = [f"{sid}:{k}" for k in range(1, len(rows))]
    compacted = [k for k, r in enumerate(items) if r["type"] == "compacted"]
    context = node[compacted[-1] :] if compacted else node
    prompts = {
        node[k - 1]
        for k, r in enumerate(items)
        if k
        and r["type"] == "event_msg"
        and r["payload"].get("type") == "user_message"
        and items[k - 1]["type"] == "response_item"
        and items[k - 1]["payload"].get("role") == "user"
    }
    replacement = [
        r["payload"].get("replacement_history") or [] for r in items if r["type"] == "compacted"
    ]
    return {
        "session": sid,
        "nodes": len(items),
        "summaries": len(compacted),
        "head": node[-1],
        "context": context,
        "prompts": prompts,
        "replacement": [
            sum(len(i.get("content") or []) if i.get("type") == "message" else 1 for i in h)
            for h in replacement
        ],
    }


@pytest.mark.parametrize("src", CODEX, ids=[p.name for p in CODEX])
def test_real_codex_rollout(src: Path, tmp_path: Path) -> None:
    f = unpack(src, tmp_path)
    want = codex_expected(f)
    store = MemorySessionStore()
    fr = codex.import_file(store, f)
    sid = want["session"]
    assert fr.session_ids == [sid] and fr.skipped == [] and fr.notes == []
    st = store.stats(sid)
    assert (st.nodes, st.roots, st.forks, st.summaries) == (want["nodes"], 1, 0, want["summaries"])
    assert store.session(sid).head == want["head"]
    context = store.context(sid)
    assert [n.id for n in context] == want["context"]
    users = {n.id for n in store.branch(sid) if n.role is Role.USER and n.kind == "message"}
    assert users == want["prompts"]  # injected context is never a prompt, sanitized or not
    summaries = [n for n in store.branch(sid) if n.kind == "summary"]
    assert [len(n.content) for n in summaries] == want["replacement"]
    assert codex.import_file(store, f).nodes_added == 0

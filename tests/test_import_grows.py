"""An import of a file read while its runtime appends to it must equal one import of the finished file.

``sessiongraph watch`` and every re-import of a grown transcript read a file that is still being
written: the first import stores what the file held then, the next resumes (or imports in full over
what is stored). Each fixture, and each file of the shared corpus, is cut after every line (the large
real files at a sample of cuts): the part is imported into a new store, then the whole file, and the
store must hold what one import of the whole file into a new store holds (:func:`importkit.dump`:
sessions, heads, nodes with their links and metadata, rewound stamps). The same on the SQLite and
PostgreSQL stores for fixtures whose later lines change stored nodes' artifact flags, and over
generated Claude Code files full of parallel tool calls and progress entries cut anywhere.
"""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import CORPUS, postgres_store
from hypothesis import given
from hypothesis import strategies as st
from importkit import LINKED_LATER, dump, fresh_dump, relinked

from graph import SessionStore
from graph.importers import claude_code, codex, pi
from graph.store.base import BaseStore
from graph.store.in_memory import MemorySessionStore

FIXTURES = Path(__file__).parent / "fixtures"

_ALL_CUTS_UP_TO = 120
"""A file of at most this many lines is cut after every line; a longer one at :data:`_SAMPLED` cuts."""

_SAMPLED = 16


def _files() -> list[Any]:
    out = []
    for fmt, importer in (("claude-code", claude_code), ("pi", pi), ("codex", codex)):
        for base in (FIXTURES / fmt, FIXTURES / "real" / fmt, CORPUS / fmt):
            for path in sorted(base.glob("*.jsonl")) + sorted(base.glob("*.jsonl.gz")):
                out.append(pytest.param(importer, path, id=f"{fmt}/{path.name}"))
    return out


def _cuts(n: int) -> list[int]:
    """Line counts to cut a file of ``n`` lines at: every one, or an even sample with the first lines."""
    if n <= _ALL_CUTS_UP_TO:
        return list(range(1, n))
    step = n / _SAMPLED
    return sorted({*range(1, 9), *(int(i * step) for i in range(1, _SAMPLED))})


def _copy(src: Path, directory: Path) -> tuple[Path, bytes]:
    """``src`` (unzipped) in ``directory``, and its bytes.

    Sub-agent files are left out: whole, beside a session file cut before the entries they follow,
    they would be files no runtime writes.
    """
    data = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    path = directory / src.name.removesuffix(".gz")
    path.write_bytes(data)
    return path, data


def _grown(
    importer: ModuleType, path: Path, data: bytes, cut: int, store: BaseStore
) -> dict[str, Any]:
    """:func:`dump` of ``store`` after importing the first ``cut`` lines of ``data``, then all."""
    lines = data.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:cut]))
    importer.import_file(store, path)
    path.write_bytes(data)
    importer.import_file(store, path)
    return dump(store)


@pytest.mark.parametrize(("importer", "src"), _files())
def test_a_file_imported_while_it_grows_ends_as_one_import_of_it(
    importer: ModuleType, src: Path, tmp_path: Path
) -> None:
    path, data = _copy(src, tmp_path)
    want = fresh_dump(importer.import_file, path)
    inherent = LINKED_LATER.get(f"{src.parent.name}/{src.name}", {})
    bad = []
    for cut in _cuts(len(data.splitlines())):
        got = _grown(importer, path, data, cut, MemorySessionStore())
        if got != want and relinked(got, want) != inherent.get(cut, set()):
            bad.append(cut)
        elif cut in inherent:
            assert relinked(got, want) == inherent[cut], f"cut after line {cut}"
    assert bad == [], f"cut after these lines, the graph differs from one import: {bad}"


def _sqlite(tmp_path: Path) -> Iterator[Callable[[], BaseStore]]:
    opened: list[BaseStore] = []

    def make() -> BaseStore:
        opened.append(SessionStore(tmp_path / f"store-{len(opened)}.db"))
        return opened[-1]

    yield make
    for s in opened:
        s.close()


def _postgres(tmp_path: Path) -> Iterator[Callable[[], BaseStore]]:
    opened: list[Iterator[BaseStore]] = []

    def make() -> BaseStore:
        opened.append(postgres_store())
        return next(opened[-1])

    yield make
    for gen in opened:
        next(gen, None)  # drops the schema


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], BaseStore]]:
    """A maker of new, empty stores of one backend."""
    yield from (_sqlite if request.param == "sqlite" else _postgres)(tmp_path)


@pytest.mark.parametrize(
    "name", ["artifact-forks.jsonl", "silent-drops.jsonl", "progress-after-head.jsonl"]
)
def test_every_backend_ends_as_one_import(
    name: str, stores: Callable[[], BaseStore], tmp_path: Path
) -> None:
    """Later lines move artifact flags of stored nodes; each backend stores the move (and reads it)."""
    path, data = _copy(FIXTURES / "claude-code" / name, tmp_path)
    want = fresh_dump(claude_code.import_file, path)
    for cut in range(1, len(data.splitlines())):
        store = stores()
        assert _grown(claude_code, path, data, cut, store) == want, f"cut after line {cut}"


# ------------------------------------------------------------------------------------- generated

_SID = "6e0e0000-0000-4000-8000-000000000000"


def _uuid(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


@st.composite
def _transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Claude Code session: prompts, replies with one or several tool calls whose results (and
    progress entries) fork at the reply, turns that follow any of them, and rewinds."""
    out: list[dict[str, Any]] = []
    replies: list[str] = []  # uuids of assistant entries
    parents: dict[str, str | None] = {}

    def add(kind: str, parent: str | None, **fields: Any) -> str:
        u = _uuid(len(out))
        i = len(out)
        entry = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": kind,
            "uuid": u,
            "timestamp": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
            "sessionId": _SID,
            **fields,
        }
        out.append(entry)
        parents[u] = parent
        return u

    last = add("user", None, message={"role": "user", "content": "start"})
    for turn in range(draw(st.integers(1, 8))):
        calls = draw(st.integers(0, 3))
        content: list[dict[str, Any]] = [{"type": "text", "text": f"reply {turn}"}]
        content += [
            {"type": "tool_use", "id": f"toolu_{turn}_{c}", "name": "Read", "input": {}}
            for c in range(calls)
        ]
        reply = add("assistant", last, message={"role": "assistant", "content": content})
        replies.append(reply)
        after = [reply]
        for c in range(calls):
            result = [{"type": "tool_result", "tool_use_id": f"toolu_{turn}_{c}", "content": "ok"}]
            after.append(add("user", reply, message={"role": "user", "content": result}))
        for _ in range(draw(st.integers(0, 2))):
            data = {"type": "hook_progress", "hookName": "PostToolUse"}
            after.append(add("progress", draw(st.sampled_from(after)), data=data))
        last = draw(st.sampled_from(after))
        if draw(st.booleans()):  # the next prompt, else a re-prompt after an earlier reply
            last = add("user", last, message={"role": "user", "content": f"prompt {turn}"})
        else:  # a rewind goes back to a reply on the branch shown (never an abandoned one)
            shown = set()
            n: str | None = last
            while n is not None:
                shown.add(n)
                n = parents[n]
            again = draw(st.sampled_from([r for r in replies if r in shown]))
            last = add("user", again, message={"role": "user", "content": f"again {turn}"})
    return out


@given(_transcripts(), st.data())
def test_a_generated_file_cut_anywhere_ends_as_one_import(
    entries: list[dict[str, Any]], data: st.DataObject
) -> None:
    body = b"".join(orjson.dumps(e) + b"\n" for e in entries)
    cut = data.draw(st.integers(1, len(entries)), label="cut")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{_SID}.jsonl"
        path.write_bytes(body)
        want = fresh_dump(claude_code.import_file, path)
        assert _grown(claude_code, path, body, cut, MemorySessionStore()) == want


def _entry(i: int, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "uuid": _uuid(i),
        "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
        "sessionId": _SID,
        "message": {"role": role, "content": text},
    }


@pytest.mark.parametrize("resume", [True, False], ids=["resumed", "full"])
def test_a_branch_stamped_rewound_that_goes_on_later_loses_its_stamps(
    resume: bool, tmp_path: Path
) -> None:
    """A re-prompt after branch one is a rewind (branch one stamped, head on branch two); a
    later prompt following branch one's reply takes the conversation back there: one import of
    the whole file stamps branch two, so the import of the grown file moves the stamps."""
    shape = [(None, "user"), (0, "assistant"), (1, "user"), (2, "assistant")]
    shape += [(1, "user"), (4, "assistant"), (3, "user"), (6, "assistant")]
    entries = [
        _entry(i, None if p is None else _uuid(p), role, f"{role} {i}")
        for i, (p, role) in enumerate(shape)
    ]
    body = b"".join(orjson.dumps(e) + b"\n" for e in entries)
    path = tmp_path / f"{_SID}.jsonl"
    path.write_bytes(body)
    want = fresh_dump(claude_code.import_file, path)
    assert want[_SID][6] == [_uuid(4), _uuid(5)]  # branch two is the abandoned one
    for cut in range(1, len(entries)):
        store = MemorySessionStore()
        path.write_bytes(b"".join(body.splitlines(keepends=True)[:cut]))
        claude_code.import_file(store, path)
        path.write_bytes(body)
        claude_code.import_file(store, path, resume=resume)
        assert dump(store) == want, f"cut after line {cut}"


_AGENTS = FIXTURES / "claude-code" / "agents" / "3d9e8f0a-5c1b-4a6d-8e9f-0b1c2d3e4f5a.jsonl"


def _with_agents(
    directory: Path, agents: list[str], lines: int | None = None
) -> tuple[Path, bytes]:
    """The agents fixture's session file (its first ``lines``) with these of its agent files."""
    sub = directory / _AGENTS.stem / "subagents"
    sub.mkdir(parents=True)
    for name in agents:
        (sub / name).write_bytes((_AGENTS.parent / _AGENTS.stem / "subagents" / name).read_bytes())
    data = b"".join(_AGENTS.read_bytes().splitlines(keepends=True)[:lines])
    path = directory / _AGENTS.name
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("resume", [True, False], ids=["resumed", "full"])
def test_an_agent_file_imported_before_the_line_that_spawned_it_is_linked_when_it_comes(
    resume: bool, tmp_path: Path
) -> None:
    """The session file cut before the Task call (line 4) that started agent a11: the agent's
    session is stored tied to the trunk without its node; the grown file's import gives it."""
    path, data = _with_agents(tmp_path, ["agent-a11.jsonl"], lines=9)
    want = fresh_dump(claude_code.import_file, path)
    assert want[f"{_AGENTS.stem}/agent-a11"][3] is not None
    for cut in range(1, 9):
        store = MemorySessionStore()
        path.write_bytes(b"".join(data.splitlines(keepends=True)[:cut]))
        claude_code.import_file(store, path)
        path.write_bytes(data)
        claude_code.import_file(store, path, resume=resume)
        assert dump(store) == want, f"cut after line {cut}"


def test_a_compaction_agent_is_linked_once_its_boundary_is_written(tmp_path: Path) -> None:
    """Cut before the PreCompact hook (line 10) the compaction agent's node is not stored: it is
    linked when the boundary comes. Cut after the hook, before the boundary (line 11), it is
    linked to the hook its first entry follows, and a link is kept (the known difference)."""
    path, data = _with_agents(tmp_path, ["agent-a11.jsonl", "agent-acompact-7f3e.jsonl"])
    want = fresh_dump(claude_code.import_file, path)
    agent = f"{_AGENTS.stem}/agent-acompact-7f3e"
    lines = data.splitlines(keepends=True)
    for cut in range(1, len(lines)):
        store = MemorySessionStore()
        path.write_bytes(b"".join(lines[:cut]))
        claude_code.import_file(store, path)
        path.write_bytes(data)
        claude_code.import_file(store, path)
        got = dump(store)
        if cut == 10:
            assert got[agent][3] == "f195737e-f2a6-4ad5-8bf2-b6f67e201d78" != want[agent][3]
            got[agent] = want[agent]
        assert got == want, f"cut after line {cut}"


@pytest.mark.parametrize("resume", [True, False], ids=["resumed", "full"])
def test_a_pi_root_whose_parent_written_later_closes_a_cycle_is_noted_as_a_cut(
    resume: bool, tmp_path: Path
) -> None:
    """Cut after line 6 of the damaged pi file, entry 10000005 names a parent not written yet (a
    root, ``dangling_parent``); line 7 (10000006) names 10000005 back: the cycle closes, and the
    root's note becomes ``cycle_parent``, the note one import of the file gives the entry it cuts."""
    path, data = _copy(FIXTURES / "pi" / "v3-damaged.jsonl", tmp_path)
    sid = "c4f8e2a6-7d1b-4e3c-9a5f-0b2d4e6f8a13"
    store = MemorySessionStore()
    path.write_bytes(b"".join(data.splitlines(keepends=True)[:6]))
    pi.import_file(store, path)
    assert store.node(f"{sid}/10000005").metadata["dangling_parent"] == f"{sid}/10000006"
    path.write_bytes(data)
    report = pi.import_file(store, path, resume=resume)
    meta = dict(store.node(f"{sid}/10000005").metadata)
    assert "dangling_parent" not in meta and meta["cycle_parent"] == f"{sid}/10000006"
    assert any("10000005" in note and "close a cycle" in note for note in report.notes)
    assert store.node(f"{sid}/10000005").predecessor is None  # (the link is fixed once stored)

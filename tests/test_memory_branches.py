"""Branch-aware records: each record's tip and fork point, alternatives from exclusive forks kept apart
in search (``--branch head``) and never merged by the organizer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from graph import Role, SessionStore
from memory import MemoryWorkspace, add_memory
from memory.branches import Branch, BranchView, alternatives
from memory.organizer import OfflineOrganizer, reorganize
from memory.reading import search_page


@dataclass
class Forked:
    store: SessionStore
    ws: MemoryWorkspace
    sid: str
    nodes: dict[str, str]


@pytest.fixture
def forked(tmp_path: Path) -> Iterator[Forked]:
    """q1 -> a1, then two forks of a1: Flask (abandoned) and FastAPI (the head's branch)."""
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session("web").id
    n = {}
    n["q1"] = store.append(sid, "Which web framework should the service use?", role=Role.USER).id
    n["a1"] = store.append(sid, "Two candidates: Flask or FastAPI.", role=Role.ASSISTANT).id
    n["qa"] = store.append(sid, "Go with Flask.", role=Role.USER).id
    n["aa"] = store.append(sid, "Flask it is: use Flask.", role=Role.ASSISTANT).id
    n["qb"] = store.fork(sid, n["a1"], "No, go with FastAPI.", role=Role.USER).id
    n["ab"] = store.append(sid, "FastAPI it is: use FastAPI.", role=Role.ASSISTANT).id
    ws = MemoryWorkspace(tmp_path / "ws")
    yield Forked(store, ws, sid, n)
    ws.close()
    store.close()


def _cite(f: Forked, *names: str) -> list:  # type: ignore[type-arg]
    return f.store.nodes(f.sid, [f.nodes[x] for x in names])


def test_tips_fork_points_alternatives_and_the_head_branch(forked: Forked) -> None:
    f = forked
    flask = add_memory(f.ws, "The service uses Flask.", cites=_cite(f, "qa", "aa")).id
    fastapi = add_memory(f.ws, "The service uses FastAPI.", cites=_cite(f, "qb", "ab")).id
    shared = add_memory(f.ws, "The service needs a web framework.", cites=_cite(f, "q1")).id
    bare = add_memory(f.ws, "I prefer a typed framework.").id
    view = BranchView(f.ws, f.store)

    assert view.branches(flask) == [Branch(f.sid, f.nodes["aa"], f.nodes["a1"])]
    assert view.branches(fastapi) == [Branch(f.sid, f.nodes["ab"], f.nodes["a1"])]
    assert view.branches(shared) == [Branch(f.sid, f.nodes["q1"], None)]
    assert view.branches(bare) == []
    assert view.exclusive(flask, fastapi) and view.exclusive(fastapi, flask)
    assert not view.exclusive(flask, shared) and not view.exclusive(flask, bare)
    assert [view.on_head_branch(r) for r in (flask, fastapi, shared, bare)] == [
        False,
        True,
        True,
        True,
    ]

    everything = search_page(f.ws, "service uses Flask FastAPI framework")
    assert {h.record_id for h in everything.hits} == {flask, fastapi, shared, bare}
    head = search_page(f.ws, "service uses Flask FastAPI framework", keep=view.on_head_branch)
    assert head.total == 3 and {h.record_id for h in head.hits} == {fastapi, shared, bare}
    second = search_page(f.ws, "service", per_page=1, page=2, keep=view.on_head_branch)
    assert second.total == 2 and len(second.hits) == 1

    f.store.set_head(f.sid, f.nodes["aa"])  # the head goes back to the Flask fork
    assert BranchView(f.ws, f.store).on_head_branch(flask)
    assert not BranchView(f.ws, f.store).on_head_branch(fastapi)


def test_the_organizer_never_merges_alternatives(forked: Forked) -> None:
    f = forked
    one = add_memory(f.ws, "Run the app with uvicorn.", cites=_cite(f, "aa")).id
    other = add_memory(f.ws, "Run the app with uvicorn.", cites=_cite(f, "ab")).id
    same_branch = add_memory(f.ws, "Run the app with uvicorn.", cites=_cite(f, "qb")).id

    result = reorganize(f.ws, OfflineOrganizer(apart=alternatives(f.ws, f.store)))

    assert result.deleted == (same_branch,)  # merged into the FastAPI one, not the Flask one
    assert {r.id for r in f.ws.records()} == {one, other}
    assert len(f.ws.record(other).citations) == 2
    assert reorganize(f.ws).deleted == (other,)  # without the guard, they would be one


def test_memory_search_branch_head_end_to_end(forked: Forked, tmp_path: Path) -> None:
    f = forked
    add_memory(f.ws, "The service uses Flask.", cites=_cite(f, "aa"))
    fastapi = add_memory(f.ws, "The service uses FastAPI.", cites=_cite(f, "ab")).id
    f.store.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from graph.cli.commands import main; main()", "--db"]
            + [str(tmp_path / "s.db"), "memory", "--workspace", str(tmp_path / "ws"), *args],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path)},
            timeout=120,
        )

    both = json.loads(cli("search", "service", "--json").stdout)
    assert both["total"] == 2
    head = json.loads(cli("search", "service", "--branch", "head", "--json").stdout)
    assert head["total"] == 1 and [h["record_id"] for h in head["hits"]] == [fastapi]
    bad = cli("search", "service", "--branch", "tail")
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: --branch 'tail': the only branch filter is 'head'"

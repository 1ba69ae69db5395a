"""Leaks the store's layering forbids, each its own test, and the packages' public names.

* the index's bit layout is decoded only by ``graph/index.py`` (and the walks over it, which use its
  named constants), everything else asks the index;
* the persistence primitives (``_db_*``) and the store's own mutable index (``_index``) are touched only
  by the store modules;
* nobody asks whether a session exists by catching ``UnknownSessionError`` (``has_session``);
* ``graph/store/base.py`` does not import ``graph/networkx_views.py`` (which names the store only for types);
* the graph CLI registers its own commands directly, not through its entry-point group;
* every public name of ``graph`` and ``memory`` is still exported (names are added, never removed);
* nothing under ``graph/`` or ``memory/`` (nor the README and ``docs/``) points to the specification or
  the source documents, which are not in the repository.
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for pkg in ("graph", "memory") for p in (ROOT / pkg).rglob("*.py"))
STORE_MODULES = {
    "graph/store/base.py",
    "graph/store/sqlite.py",
    "graph/store/in_memory.py",
    "graph/store/postgres.py",
}
BIT_CONSTANTS = {"KIND_MASK", "ROLE_MASK", "EMPTY", "SCHEDULED", "SIBLING", "REWOUND"}
BIT_READERS = {"graph/index.py", "graph/walks.py"}
HAND_DECODING = re.compile(r"(?:&|>>|<<)\s*(?:0b[01]+|\d+)\b")
"""Masking or shifting by a literal: a bit decoding when the line is about bits."""
KIND_CODES = re.compile(r"^\s*_?(?:SUMMARY|MESSAGE|EVENT)\s*(?::[^=]*)?=\s*\d+\s*$")
"""A module's own copy of the kind codes packed into the bits (``_SUMMARY = 1``)."""


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def bit_leaks(name: str, text: str) -> list[str]:
    """Where ``text`` (the module at repository path ``name``) decodes the index's bit layout."""
    if name in BIT_READERS:
        return []
    leaks = [
        f"{name} imports {a.name}"
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.ImportFrom) and n.module == "graph.index"
        for a in n.names
        if a.name in BIT_CONSTANTS
    ]
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#")[0]
        if (HAND_DECODING.search(code) and "bits" in code.lower()) or KIND_CODES.match(code):
            leaks.append(f"{name}:{i}: {line.strip()}")
    return leaks


def reach_in_leaks(name: str, text: str) -> list[str]:
    """Where a module other than a store touches ``_db_*`` primitives or the mutable ``_index``."""
    if name in STORE_MODULES:
        return []
    return [
        f"{name}:{n.lineno}: .{n.attr}"
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Attribute) and (n.attr.startswith("_db_") or n.attr == "_index")
    ]


def _calls(node: ast.AST, names: set[str]) -> bool:
    return any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in names
        for c in ast.walk(node)
    )


def existence_leaks(name: str, text: str) -> list[str]:
    """Where a one-statement ``try`` reads a session only to catch ``UnknownSessionError``."""
    leaks = []
    for n in ast.walk(ast.parse(text)):
        if not isinstance(n, ast.Try) or len(n.body) != 1:
            continue
        if not isinstance(n.body[0], ast.Expr | ast.Assign | ast.Return):
            continue  # a block of work whose failure is translated, not an existence question
        for h in n.handlers:
            caught = ast.unparse(h.type) if h.type is not None else ""
            if "UnknownSessionError" in caught and _calls(n.body[0], {"session", "index"}):
                leaks.append(f"{name}:{n.lineno}")
    return leaks


def memory_import_leaks(name: str, text: str) -> list[str]:
    """Where a module of ``graph`` imports ``memory`` (``memory`` depends on ``graph``, never back)."""
    if not name.startswith("graph/"):
        return []
    found = []
    for n in ast.walk(ast.parse(text)):
        mods = [a.name for a in n.names] if isinstance(n, ast.Import) else []
        if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            mods = [n.module]
        found += [f"{name}:{n.lineno}: {m}" for m in mods if m.split(".")[0] == "memory"]
    return found


DETECTORS = [bit_leaks, reach_in_leaks, existence_leaks, memory_import_leaks]


@pytest.mark.parametrize("detector", DETECTORS, ids=lambda d: d.__name__)
def test_no_module_leaks(detector: object) -> None:
    assert callable(detector)
    leaks = [leak for path in SOURCES for leak in detector(rel(path), path.read_text())]
    assert leaks == []


PLANTED = {
    "bit_leaks": [
        "from graph.index import KIND_MASK\n",
        "def f(bits):\n    return bits & 3 == 1\n",
        "kind = (info.bits >> 2) & 3\n",
        "_SUMMARY = 1\n",
        "MESSAGE: int = 0\n",
    ],
    "reach_in_leaks": [
        "rows = store._db_rows(ids)\n",
        "idx = store._index(sid)\n",
    ],
    "existence_leaks": [
        "try:\n    store.session(sid)\nexcept UnknownSessionError:\n    pass\n",
        "try:\n    idx = store.index(sid)\nexcept (UnknownSessionError, KeyError):\n    idx = None\n",
    ],
    "memory_import_leaks": [
        "import memory\n",
        "from memory.workspace import MemoryWorkspace\n",
        "def f():\n    import memory.views\n",
    ],
}
"""For each detector, leaks of the kind it exists for: each must be caught (a detector that finds
nothing anywhere would pass the scan above)."""


@pytest.mark.parametrize(
    ("detector", "source"),
    [(d, s) for d in DETECTORS for s in PLANTED[d.__name__]],
    ids=lambda v: getattr(v, "__name__", None) or v.splitlines()[0][:40],
)
def test_each_detector_catches_a_planted_leak(detector: object, source: str) -> None:
    assert callable(detector)
    assert detector("graph/planted.py", source) != []


def test_the_detectors_leave_the_owners_and_ordinary_code_alone() -> None:
    assert bit_leaks("graph/index.py", "x = bits & 3\n") == []
    assert reach_in_leaks(sorted(STORE_MODULES)[0], "store._db_rows(ids)\n") == []
    assert memory_import_leaks("memory/x.py", "import memory\n") == []
    ordinary = "n = store.node(sid, nid)\nif store.has_session(sid):\n    pass\nmask = flags & 3\n"
    assert [d("graph/ok.py", ordinary) for d in DETECTORS] == [[], [], [], []]


def _imports(path: Path) -> set[str]:
    out = set()
    for n in ast.walk(tree(path)):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module:
            out.add(n.module)
    return out


def test_the_store_does_not_import_its_views() -> None:
    assert "graph.networkx_views" not in _imports(ROOT / "graph/store/base.py")
    from graph.store.base import BaseStore

    assert not hasattr(
        BaseStore, "to_networkx"
    )  # the free function graph.networkx_views.to_networkx is the API


def test_the_graph_cli_registers_its_own_commands_without_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    import graph.cli.commands

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [])
    try:
        graph.cli.commands.main(["--help"])
    except SystemExit as e:
        assert e.code in (0, None)
    names = {c.name for c in graph.cli.commands.app.registered_commands}
    assert {"import", "export"} <= names
    group = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert "graph.cli.importing:register" not in group["sessiongraph.cli"].values()


PUBLIC = {
    "graph": """BaseStore Block CodecError Content CoverageError CycleError DuplicateNodeError
        DuplicateSessionError Eligibility Eligible ForeignPredecessorError GraphError HEAD
        HeadConflictError ImageBlock IndexView InvalidWriteError Kind MEMORY_ELIGIBLE MarkerGap
        MarkerGapError MemorySessionStore Node NodeId NodeInfo NotFoundError NotOnBranchError Role
        SchemaVersionError SearchHit Session SessionId SessionStats SessionStore StoreBusyError
        StoreError TextBlock ToolCallBlock ToolResultBlock UnknownNodeError UnknownPredecessorError
        UnknownSessionError new_id""",
    "memory": """ChangeSet Citation CreateRecord DeleteRecord Destination DigestWriter FailureReason
        ForgetReport IdleWatcher LocalMemory MemoryLayerError MemoryProvider MemoryWorkspace
        ModelWriter MoveRecords PROVIDER Record RejectedError Rejection RewriteTopic SearchHit
        SearchIndexMissingError Source SourceRef TopicRecord UpdateRecord WorkspaceBusyError
        WorkspaceStoreError WriteFailure WritePipeline WriteRequest Writer WriterUnavailableError
        add_memory approx_tokens forget_session parse_changes run_session split_batches
        wrap_context""",
}
"""Every public name of each package as the module layout work found it, sorted; names may be added
(other work adds them), never removed or renamed: callers import these from the package."""


def test_the_public_lists_are_sorted_and_whole() -> None:
    assert [len(PUBLIC[p].split()) for p in ("graph", "memory")] == [43, 40]
    for names in PUBLIC.values():
        assert names.split() == sorted(names.split())


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_every_public_name_is_still_exported(package: str) -> None:
    mod = importlib.import_module(package)
    missing = set(PUBLIC[package].split()) - set(mod.__all__)
    assert missing == set()
    assert all(hasattr(mod, name) for name in PUBLIC[package].split())


OUTSIDE = re.compile(r"\bDESIGN\.md|\bseeds/|\b[Ss]eed 00\d|\b[Ss]eed's\b")
"""A pointer to the project's specification or its source documents, which live outside the
repository: a reader of the package has neither, so the text must say what it means itself."""


def test_the_packages_explain_themselves_without_documents_outside_the_repository() -> None:
    texts = [*SOURCES, ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    leaks = [
        f"{rel(path)}:{i}: {line.strip()}"
        for path in texts
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert leaks == []
    assert OUTSIDE.search("see DESIGN.md section 4") and OUTSIDE.search("(seed 001, section 04)")


def test_the_readme_links_the_design_page() -> None:
    assert (ROOT / "docs" / "design.md").is_file()
    assert "(docs/design.md)" in (ROOT / "README.md").read_text()

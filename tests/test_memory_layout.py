"""The memory workspace's nouns stay apart: who may talk to the driver, who may write records."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import memory

ROOT = Path(memory.__file__).parent
MODULES = sorted(ROOT.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_database_modules_import_a_driver() -> None:
    allowed = {"sqlite3": {"database.py"}, "psycopg": {"postgres.py"}}
    for path in MODULES:
        for driver, owners in allowed.items():
            if driver in _imports(path):
                assert path.name in owners, f"{path.relative_to(ROOT)} imports {driver}"


_WRITES_RECORDS = re.compile(
    r"(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(records|citations|links|records_fts)\b", re.I
)


def test_installs_is_the_only_writer_of_records() -> None:
    for path in MODULES:
        if path.name in {"installs.py", "database.py", "schema.py"}:
            continue
        found = _WRITES_RECORDS.search(path.read_text("utf-8"))
        assert found is None, f"{path.relative_to(ROOT)} writes {found.group(2)} directly"


def test_transactions_are_opened_by_the_database_only() -> None:
    opened = re.compile(r"""execute\(\s*["'](BEGIN|COMMIT|ROLLBACK|SAVEPOINT)""")
    for path in MODULES:
        if path.name == "database.py" or path.parent.name == "web":
            continue  # web/data.py's read transaction is the web pages' own
        assert not opened.search(path.read_text("utf-8")), path.relative_to(ROOT)


def test_every_memory_error_is_under_the_root() -> None:
    for path in MODULES:
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exceeded")):
                module = "memory." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
                cls = getattr(importlib.import_module(module), node.name)
                assert issubclass(cls, memory.MemoryLayerError), f"{module}.{node.name}"

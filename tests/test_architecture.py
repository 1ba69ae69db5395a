"""Which modules may import which, and what each package exports."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(package: str) -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                found |= {(str(path.relative_to(ROOT)), a.name) for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                found.add((str(path.relative_to(ROOT)), n.module))
    return found


def test_graph_never_imports_memory() -> None:
    bad = [(f, m) for f, m in imported_modules("graph") if m == "memory" or m.startswith("memory.")]
    assert bad == []


def modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return [package] + [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".")]


@pytest.mark.parametrize("name", modules("graph") + modules("memory"))
def test_every_module_declares_all_and_exports_what_it_names(name: str) -> None:
    mod = importlib.import_module(name)
    assert hasattr(mod, "__all__"), f"{name} has no __all__"
    for attr in mod.__all__:
        assert hasattr(mod, attr), f"{name}.__all__ names {attr!r}, which it does not define"


@pytest.mark.parametrize("package", ["graph", "memory"])
def test_package_all_is_sorted_and_complete(package: str) -> None:
    mod = importlib.import_module(package)
    assert list(mod.__all__) == sorted(mod.__all__, key=lambda s: (s.upper() != s, s))
    for name in mod.__all__:  # names a package imports lazily appear when first used
        getattr(mod, name)
    public = {
        n for n, v in vars(mod).items() if not n.startswith("_") and not isinstance(v, type(mod))
    }
    public -= {"annotations"}
    assert public == set(mod.__all__)

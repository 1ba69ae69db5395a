"""The ``sessiongraph`` console script: answers ``--version`` at once, else runs :mod:`graph.cli.commands`.

Kept apart from :mod:`graph.cli.commands` so that printing the version loads neither typer, rich, pydantic
nor the stores, and the plain forms of ``sessions``, ``recent``, ``read``, ``latest`` and
``memory status`` load no typer (:mod:`graph.cli.quick`).
"""

from __future__ import annotations

import sys

__all__ = ["main", "version"]


def version() -> str:
    """The installed version of sessiongraph (``unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("sessiongraph")
    except PackageNotFoundError:
        return "unknown"


def main() -> None:
    """Run the command line (``--version`` without loading it, a plain quick command without typer)."""
    args = sys.argv[1:]
    if args == ["--version"]:
        print(f"sessiongraph {version()}")
        return
    from graph.cli.quick import run as quick

    if quick(args):
        return
    from graph.cli.commands import main as run

    run()


if __name__ == "__main__":
    main()

"""The memory package's ``sessiongraph`` commands, registered through the ``sessiongraph.cli`` entry point."""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the memory commands to the ``sessiongraph`` application."""

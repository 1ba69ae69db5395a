"""Running the command line in-process both ways, for tests comparing the quick path with typer's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graph.cli import commands, launch

__all__ = ["by_launch", "by_typer", "console"]


def by_typer(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, object]:
    """``(stdout, stderr, exit status)`` of ``args`` run through typer's application."""
    code: object = 0
    try:
        commands.main(args)
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return out.out, out.err, code


def by_launch(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str, object]:
    """``(stdout, stderr, exit status)`` of ``args`` run as the console script runs them."""
    monkeypatch.setattr(sys, "argv", ["sessiongraph", *args])
    code: object = 0
    try:
        launch.main()
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return out.out, out.err, code


def console(*args: str, columns: int = 120) -> subprocess.CompletedProcess[str]:
    """The console script run in a fresh interpreter on ``args``: no ``SESSIONGRAPH_*`` setting of
    the caller's, no colour, ``columns`` wide; bounded at 120 s (a command that blocks fails)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    return subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", *args],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"},
        timeout=120,
    )

"""Bidirectional formatting characters in transcript text are made visible in terminal output.

A right-to-left override (U+202E) or an isolate (U+2066-U+2069) in a transcript reorders the
rest of the terminal line it is printed on ("Trojan Source"): ``show`` printed them as they
were while ``read`` did not. Every command prints them as ``\\u202e``, as it prints an escape
character as ``\\x1b``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph.terminal import visible

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
BIDI = "\u202e\u2066\u2069\u200f\u061c"


def test_visible_escapes_the_bidirectional_formatting_characters() -> None:
    assert visible("run \u202etxt.exe\u202c now") == "run \\u202etxt.exe\\u202c now"
    assert visible("\u2066a\u2069\u200e\u200f\u061c") == "\\u2066a\\u2069\\u200e\\u200f\\u061c"
    assert visible("שלום עולם and العربية") == "שלום עולם and العربية"  # letters stay


@pytest.mark.parametrize("command", [["show", "6a7b8c90"], ["latest", "6a7b8c90"]])
def test_show_and_latest_print_no_raw_bidi_character(tmp_path: Path, command: list[str]) -> None:
    hostile = tmp_path / "session.jsonl"
    hostile.write_text(
        EXAMPLE.read_text()
        .replace("Use tenacity", f"Use {BIDI}tenacity")
        .replace("checks the delay", f"checks {BIDI} the delay")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "PYTHONIOENCODING": "utf-8"}
    base = [sys.executable, "-c", "from graph.cli.launch import main; main()"]
    db = ["--db", str(tmp_path / "s.db")]
    subprocess.run([*base, *db, "import", str(hostile)], env=env, check=True, capture_output=True)
    p = subprocess.run([*base, *db, *command], env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode("utf-8")
    assert not any(c in out for c in BIDI), out
    assert "\\u202e" in out

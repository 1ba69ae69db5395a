"""What a new user sees first, in an 80-column terminal: the quick start's import report.

The report is a table of the sessions imported, with eight count columns; the title gets what is
left. Wrapped into that room a title took a line per word (seven lines for the example's one
session, 1,400 for an import of 200); cut with an ellipsis, each session is one row.
"""

from __future__ import annotations

from pathlib import Path

from tests.clikit import console

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


def test_the_import_report_is_a_row_a_session_at_80_columns(tmp_path: Path) -> None:
    got = console("--db", str(tmp_path / "demo.db"), "import", str(EXAMPLE), columns=80)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].strip() == "imported sessions"
    rows = lines[2:-1]  # between the header and the summary line
    assert len(rows) == 2, got.stdout  # the session and its sub-agent
    assert rows[0].split()[1].startswith("Add") and "…" in rows[0]
    assert rows[0].split()[-8:] == ["18", "18", "1", "1", "2", "1", "1", "0"]  # every count shown
    assert all(len(line) <= 80 for line in lines)

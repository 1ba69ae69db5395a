"""A command that only reads names a missing store file instead of making an empty one.

A mistyped ``--db`` (``demo.bd``) used to be answered from a new, empty store ("no sessions",
"unknown session") and left that file behind. The commands that store something (import, memory,
serve, mcp) still make the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clikit import by_launch, by_typer

_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "claude-code-session.jsonl"

READS = {
    "sessions": ["sessions"],
    "search": ["search", "hello"],
    "show": ["show", "abc"],
    "pending": ["pending", "abc"],
    "export": ["export", "abc", "-o", "{out}"],
    "mark": ["mark", "abc", "--pending"],
    "rm": ["rm", "abc", "--yes"],
    "recent": ["recent"],
    "open": ["open", "abc"],
    "read": ["read", "abc"],
    "latest": ["latest", "abc"],
}


@pytest.mark.parametrize("runner", ["typer", "console script"])
@pytest.mark.parametrize("words", list(READS.values()), ids=list(READS))
def test_a_read_of_a_missing_store_names_it_and_makes_nothing(
    words: list[str],
    runner: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "demo.bd"
    args = ["--db", str(db), *(w.format(out=tmp_path / "out.sgb") for w in words)]
    if runner == "typer":
        out, err, code = by_typer(args, capsys)
    else:
        out, err, code = by_launch(args, capsys, monkeypatch)
    assert code not in (0, None)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(db) in lines[0] and "no store there yet" in lines[0]
    assert not db.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_import_makes_the_store_and_the_reads_then_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "demo.db"
    _, err, code = by_typer(["--db", str(db), "import", str(_EXAMPLE)], capsys)
    assert code in (0, None), err
    assert db.exists()
    out, err, code = by_launch(["--db", str(db), "sessions"], capsys, monkeypatch)
    assert code in (0, None), err
    assert "no store there yet" not in out + err
    assert out.strip()


def test_memory_status_still_makes_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory commands keep a workspace beside a store made for it (its first use)."""
    db = tmp_path / "new.db"
    args = ["--db", str(db), "memory", "-w", str(tmp_path / "ws"), "status"]
    _, err, code = by_launch(args, capsys, monkeypatch)
    assert code in (0, None), err
    assert db.exists()

"""Rough edges of the command line a new user met: each one line on stderr and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import SessionStore
from tests.clikit import by_launch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store holding one small Claude Code session."""
    from graph.importers import import_paths

    path = tmp_path / "s.db"
    store = SessionStore(path)
    try:
        import_paths(store, [EXAMPLE])
    finally:
        store.close()
    return path


@pytest.mark.parametrize(
    ("args", "closest"),
    [
        (["sessions", "--runtime", "claude"], "claude-code"),
        (["sessions", "--runtime=codx"], "codex"),
        (["sessions", "--runtime", "xyz"], None),
        (["search", "hello", "--runtime", "Claude-Code"], "claude-code"),
    ],
    ids=["sessions-prefix", "sessions-typo", "sessions-unlike", "search-case"],
)
def test_an_unknown_runtime_is_refused_naming_the_known_ones(
    db: Path,
    args: list[str],
    closest: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, err, code = by_launch(["--db", str(db), *args], capsys, monkeypatch)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "known runtimes: claude-code, pi, codex" in err
    assert ("did you mean" in err) == (closest is not None)
    if closest:
        assert f"did you mean {closest}?" in err


def test_a_known_runtime_still_filters(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, err, code = by_launch(
        ["--db", str(db), "sessions", "--runtime", "claude-code", "--json"], capsys, monkeypatch
    )
    assert code == 0 and err == ""
    assert '"runtime":"claude-code"' in out.replace(" ", "")
    out, err, code = by_launch(
        ["--db", str(db), "sessions", "--runtime", "pi"], capsys, monkeypatch
    )
    assert (code, out.strip()) == (0, "no sessions match")

"""Transcript text that looks like rich's emoji codes (``:smile:``) is shown as written, in every
command that prints it: the terminal shows the transcript, never a rendering of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_display import run

from graph import Role, SessionStore

TEXT = "ship it :smile: :thumbs_up: :red_heart-emoji:"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.db"
    st = SessionStore(path)
    sid = st.create_session(":fire: a title").id
    st.append(sid, TEXT, role=Role.USER)
    st.append(sid, f"answer {TEXT}", role=Role.ASSISTANT)
    st.close()
    return path, sid


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["recent"],
        ["show", "SID"],
        ["read", "SID"],
        ["latest", "SID"],
        ["pending", "SID"],
        ["open", "SID"],
    ],
    ids=lambda a: a[0],
)
def test_emoji_codes_in_transcript_text_are_printed_as_written(
    db: tuple[Path, str], args: list[str]
) -> None:
    path, sid = db
    out = run(path, *[sid if a == "SID" else a for a in args], columns=200).stdout
    assert "\U0001f604" not in out and "\U0001f44d" not in out and "\u2764" not in out, out
    assert "\U0001f525" not in out, out
    if args[0] in ("sessions", "recent", "open"):  # titles only
        assert ":fire:" in out, out
    else:
        assert ":smile:" in out and ":thumbs_up:" in out, out

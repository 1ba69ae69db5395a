"""``serve --set memory.recent.limit=...`` takes a whole number from 1 to 500, or stops with one line.

The setting was read with ``str.isdigit``: ``²`` passed it and failed ``int`` (an unclear
"invalid literal" for the whole extension), ``0``, ``-3`` or ``ten`` were silently taken as 50,
and a number past 64 bits was taken as it was, so ``/api/memory/recent`` failed (500) encoding
it. A malformed setting now stops ``serve`` with one error line naming it, as a malformed
``[memory]`` setting does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import SessionStore
from graph.server import ServerContext, create_app
from graph.server.app import UnknownSettingError
from memory.web import SETTINGS, extension
from tests.clikit import console
from tests.serverkit import client, make_app


@pytest.mark.parametrize(
    "value", ["²", "0", "-3", "ten", "501", "9" * 30, "9" * 5000, ""], ids=repr
)
def test_a_malformed_recent_limit_is_refused_by_name(tmp_path: Path, value: str) -> None:
    store = SessionStore(tmp_path / "s.db")
    ctx = ServerContext(store, {"memory.recent.limit": value})
    with pytest.raises(
        ValueError, match="memory.recent.limit must be a whole number from 1 to 500"
    ):
        extension(ctx, workspace=tmp_path / "ws")


@pytest.mark.parametrize(("value", "limit"), [("1", 1), ("500", 500), (" 007 ", 7)])
def test_a_recent_limit_in_range_is_the_recent_sections(
    tmp_path: Path, value: str, limit: int
) -> None:
    store = SessionStore(tmp_path / "s.db")
    api = client(make_app(store, tmp_path / "ws", {"memory.recent.limit": value}))
    r = api.get("/api/memory/recent")
    assert r.status_code == 200 and r.json()["limit"] == limit
    assert r.headers["x-recent-limit"] == str(limit)


def test_serve_stops_with_one_line(tmp_path: Path) -> None:
    done = console(
        "--db",
        str(tmp_path / "s.db"),
        "serve",
        "-w",
        str(tmp_path / "ws"),
        "--port",
        "0",
        "--set",
        "memory.recent.limit=ten",
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "memory.recent.limit" in lines[0] and "Traceback" not in done.stderr


def test_an_unknown_setting_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    """A typo in a ``--set`` key was silently ignored; it is refused with the closest known key."""
    store = SessionStore(tmp_path / "s.db")
    settings = {"memory.workspace": str(tmp_path / "ws"), "memory.core.injcet": "false"}
    with pytest.raises(UnknownSettingError) as caught:
        create_app(store, token="t" * 32, hosts=["testserver"], settings=settings)
    assert caught.value.key == "memory.core.injcet"
    assert caught.value.closest == "memory.core.inject"
    assert caught.value.known == list(SETTINGS)
    with pytest.raises(UnknownSettingError, match="unknown setting; known settings: none"):
        create_app(store, token="t" * 32, extensions=[], settings={"anything": "1"})
    assert not (tmp_path / "ws").exists(), "nothing is created for a refused start"


def test_with_memory_off_its_settings_are_still_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONGRAPH_MEMORY_BACKEND", "none")
    store = SessionStore(tmp_path / "s.db")
    app = create_app(
        store, token="t" * 32, hosts=["testserver"], settings={"memory.workspace": "x"}
    )
    assert all(not getattr(r, "path", "").startswith("/api/memory") for r in app.routes)


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_workspace_that_is_a_file_stops_the_start_with_one_line(
    tmp_path: Path, command: str
) -> None:
    """``serve`` started and failed every memory request (retryable, "File exists"); ``mcp`` said
    "cannot create the workspace folder: File exists". Both now say what ``memory`` says."""
    afile = tmp_path / "notes.txt"
    afile.write_text("not a workspace")
    extra = ["--no-follow"] if command == "mcp" else ["--port", "0"]
    done = console("--db", str(tmp_path / "s.db"), command, "-w", str(afile), *extra)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(f"-w {afile}: is a file; a workspace is a folder")
    assert len(done.stderr.strip().splitlines()) == 1 and afile.read_text() == "not a workspace"

"""Control and bidirectional formatting characters in the web pages are shown, never obeyed.

A transcript's title or turn, or a memory record, may hold a right-to-left override (U+202E: it
makes ``evil`` read ``live`` and ``txt.exe`` read ``exe.txt``) or a terminal escape. The command line
shows them as escapes (``\\u202e``, ``\\x1b``); the pages do the same, in the server-rendered HTML,
in the drawn SVG, in Markdown, and in what the pages' scripts write (checked in a real browser when
Debian's chromium is installed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph import SessionStore
from memory import MemoryWorkspace, add_memory
from memory.markdown import render_markdown
from tests.serverkit import TOKEN, client, make_app, served

RLO = "\u202e"
TEXT = f"read {RLO}evil\u202c then \x1b]0;owned\x07 done"
SHOWN = "read \\u202eevil\\u202c then \\x1b]0;owned\\x07 done"


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[SessionStore, Path, str]]:
    """A session whose title, turns and marker hold the characters, and a memory record that does."""
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session(TEXT)
    a = store.append(s.id, TEXT, role="user")
    store.append(s.id, "a reply", role="assistant")
    store.mark(s.id, [a.id], "memory", f"ws{RLO}1")
    ws = MemoryWorkspace(tmp_path / "ws")
    add_memory(ws, TEXT, tags=[f"t{RLO}ag"])
    ws.close()
    yield store, tmp_path / "ws", s.id
    store.close()


def _no_raw_controls(html: str) -> None:
    assert RLO not in html and "\x1b" not in html and "\x07" not in html


def test_pages_show_the_characters_as_escapes(hostile: tuple[SessionStore, Path, str]) -> None:
    store, ws, sid = hostile
    http = client(make_app(store, ws))
    for path in ("/", f"/sessions/{sid}", "/memory/panel", "/memory?section=recent"):
        r = http.get(path)
        assert r.status_code == 200, path
        _no_raw_controls(r.text)
        assert SHOWN in r.text, path
    assert "ws\\u202e1" in http.get(f"/sessions/{sid}").text  # the marker's value
    assert "t\\u202eag" in http.get("/memory/panel").text
    hits = http.get("/", params={"q": "evil"}).text
    _no_raw_controls(hits)
    assert "<mark>evil</mark>" in hits


def test_the_api_keeps_the_text_as_stored(hostile: tuple[SessionStore, Path, str]) -> None:
    store, ws, sid = hostile
    http = client(make_app(store, ws))
    node = store.branch(sid)[0]
    assert http.get(f"/api/nodes/{node.id}").json()["text"] == TEXT
    assert http.get(f"/api/sessions/{sid}").json()["title"] == TEXT


def test_markdown_shows_the_characters_as_escapes() -> None:
    html = render_markdown(f"- {TEXT}\n\n```\n\tcode\n```")
    _no_raw_controls(html)
    assert SHOWN in html and "\tcode" in html  # a tab is text, not a control


def test_the_svg_shows_the_characters_as_escapes(hostile: tuple[SessionStore, Path, str]) -> None:
    store, ws, sid = hostile
    svg = client(make_app(store, ws)).get(f"/api/sessions/{sid}/graph", params={"format": "svg"})
    assert svg.status_code == 200
    _no_raw_controls(svg.text)
    assert "\\u202eevil" in svg.text


# ------------------------------------------------------------------------------------- in a browser


def test_the_node_panel_and_the_memory_panel_show_escapes_in_a_browser(
    hostile: tuple[SessionStore, Path, str],
) -> None:
    from tests.test_browser import ARGS, CHROMIUM, _need_browser

    _need_browser()
    from playwright.sync_api import sync_playwright

    store, ws, sid = hostile
    errors: list[str] = []
    with served(make_app(store, ws)) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page: Any = browser.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/?token={TOKEN}")
        page.goto(f"{base}/sessions/{sid}")
        page.locator(".graph .node").first.focus()
        page.keyboard.press("Enter")
        text = page.locator("#node-panel .node-text")
        text.wait_for(state="visible")
        assert text.inner_text() == SHOWN
        assert "ws\\u202e1" in page.locator("#node-panel .node-meta").inner_text()
        page.goto(f"{base}/memory/panel")
        assert SHOWN in page.locator(".record-content").first.inner_text()
        browser.close()
    assert errors == []

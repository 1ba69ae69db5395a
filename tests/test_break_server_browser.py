"""The pages in a real browser over transcripts and memory written to attack them: no script runs.

Session titles, turns, runtimes, projects, records, tags, headings and snippets carry script tags,
attribute breakers, event handlers, ``javascript:`` links in HTML and in Markdown, and template
syntax. Every page is opened (and every node of the session clicked, every topic read) in Debian's
chromium with ``alert``, ``confirm`` and ``prompt`` watched: none is ever called, no script error
or CSP violation happens, and the hostile text is shown as text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from graph import SessionStore
from memory import MemoryWorkspace, WritePipeline, add_memory
from tests.serverkit import TOKEN, make_app, served
from tests.test_browser import ARGS, CHROMIUM, _need_browser

HOSTILE = (
    "<script>alert(1)</script>\"'><img src=x onerror=alert(2)><svg onload=alert(3)>"
    ' javascript:alert(4) [x](javascript:alert(5)) <a href="javascript:alert(6)">l</a>'
    " {{ 7*7 }} {% raw %} </textarea><script>alert(7)</script> --> <!--"
)


INJECTED = """() => [
    ...Array.from(document.querySelectorAll("script:not([src])"), () => "inline script"),
    ...Array.from(document.querySelectorAll("script[src]"), (e) => e.getAttribute("src"))
        .filter((src) => !src.startsWith("/static/")),
    ...Array.from(document.querySelectorAll("*")).flatMap((e) => e.getAttributeNames()
        .filter((a) => a.startsWith("on")).map((a) => `${e.tagName} ${a}`)),
    ...Array.from(document.querySelectorAll("[href], [src], [action]")).flatMap((e) =>
        ["href", "src", "action"].map((a) => e.getAttribute(a) || "")
        .filter((v) => /^\\s*javascript:/i.test(v))),
]"""
"""What on the page could run a script: inline scripts, foreign scripts, handler attributes,
``javascript:`` links."""


@contextlib.contextmanager
def browse(store: SessionStore, workspace: Path) -> Iterator[Any]:
    """A page of chromium, logged in to the server over ``store`` and ``workspace`` (in a thread).

    On leaving, asserts that no dialog opened, no script failed and no CSP violation was reported.
    """
    _need_browser()
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with served(make_app(store, workspace)) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
            page.on(
                "console",
                lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
            )
            page.base = base
            page.goto(f"{page.base}/?token={TOKEN}")
            yield page
        finally:
            browser.close()
    assert problems == [], problems


def test_no_script_from_a_transcript_or_a_record_runs(tmp_path: Path) -> None:
    _need_browser()
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session(HOSTILE, metadata={"runtime": HOSTILE, "cwd": "/tmp/" + HOSTILE})
    store.append(s.id, HOSTILE + " how should retries back off?", role="user")
    store.append(s.id, HOSTILE + " exponentially.", role="assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(ws, store).write(s.id, force=True) is None
    flat = " ".join(HOSTILE.split())
    add_memory(ws, flat, topic="core", tags=("<b>tag</b>",), headings=("<i>h</i>",))
    add_memory(ws, flat, topic="notes", time="<script>alert(8)</script>")
    ws.close()
    with browse(store, tmp_path / "ws") as page:
        pages = [
            "/",
            "/?q=retries",
            f"/?q={quote(HOSTILE[:200])}",
            f"/sessions/{quote(s.id)}",
            "/memory",
            "/memory?section=timeline",
            "/memory?section=recent",
            "/memory?section=core",
            "/memory?section=core&view=records",
            "/memory/panel",
            f"/sessions/{quote(HOSTILE[:100])}",
        ]
        for url in pages:
            page.goto(page.base + url)
            page.wait_for_load_state("load")
            assert page.evaluate(INJECTED) == [], url
        page.goto(f"{page.base}/sessions/{quote(s.id)}")
        assert page.locator("h1").inner_text() == HOSTILE  # shown as text, every character
        page.goto(f"{page.base}/sessions/{quote(s.id)}")
        for n in range(page.locator("g.node").count()):
            page.locator("g.node").nth(n).click()
            page.locator("#node-panel .node-text").wait_for()
        page.goto(f"{page.base}/memory")
        for n in range(page.locator(".topic-row").count()):
            page.locator(".topic-row").nth(n).click()
            page.locator("article.doc").wait_for()
            assert page.evaluate(INJECTED) == []

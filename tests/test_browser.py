"""The web pages in a real headless browser: Debian's chromium driven by playwright.

The browser is the system's (``/usr/bin/chromium``, or ``$SESSIONGRAPH_CHROMIUM``); playwright's own
browser download is never used. Without chromium these tests skip, unless
``SESSIONGRAPH_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they fail instead.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serverkit import SESSION, TOKEN, make_app, served, written_store

CHROMIUM = (
    os.environ.get("SESSIONGRAPH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = (
    Path(os.environ.get("SESSIONGRAPH_SCREENSHOTS", ""))
    if os.environ.get("SESSIONGRAPH_SCREENSHOTS")
    else None
)


def _need_browser() -> None:
    missing = None
    if not Path(CHROMIUM).exists():
        missing = f"chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = (
                "playwright is not installed (pip install playwright; never `playwright install`)"
            )
    if missing:
        if os.environ.get("SESSIONGRAPH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SESSIONGRAPH_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server over the written example, on a free loopback port, in a thread."""
    _need_browser()
    store, ws = written_store(tmp_path_factory.mktemp("browser"))
    with served(make_app(store, ws)) as base:
        yield base, ws
    store.close()


@pytest.fixture(scope="module")
def browser(server: tuple[str, Path]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: tuple[str, Path]) -> Iterator[Any]:
    base, _ = server
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # CSP violations and failed page assets (the tests' own API probes may answer 404 on purpose)
    pg.on(
        "console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None
    )
    pg.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400
            and r.request.resource_type in ("document", "script", "stylesheet", "image")
            else None
        ),
    )
    pg.goto(f"{base}/?token={TOKEN}")  # the start URL: the cookie is set, the token leaves the URL
    assert "token" not in pg.url
    pg.base = base  # type: ignore[attr-defined]
    yield pg
    context.close()
    assert errors == [], errors  # no script error, no CSP violation, no missing asset


def api(page: Any, method: str, path: str, body: Any = None) -> Any:
    """Call the API from inside the page (its cookie, its origin)."""
    return page.evaluate(
        """async ([method, path, body]) => {
            const r = await fetch(path, {method, headers: {'Content-Type': 'application/json'},
                                         body: body === null ? undefined : JSON.stringify(body)});
            return {status: r.status, body: await r.json()};
        }""",
        [method, path, body],
    )


def shot(page: Any, name: str) -> None:
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_example_session_page_shows_fork_rewind_summary_and_subagent(page: Any) -> None:
    page.goto(f"{page.base}/sessions/{SESSION}")
    graph = page.locator("svg.session-graph")
    assert graph.locator("g.node").count() == 17
    assert graph.locator("g.node.rewound").count() == 2
    lanes = {round(float(c.get_attribute("cx"))) for c in graph.locator("circle.dot").all()}
    assert len(lanes) == 2  # the fork: the head's branch and the rewound one
    assert graph.locator("g.node.summary").count() == 1
    assert "covers 11" in graph.locator("g.node.summary").text_content()
    assert graph.locator("path.cover").count() == 1
    assert graph.locator("g.node.head").count() == 1
    # click a node to read it
    graph.locator("g.node.head").click()
    panel = page.locator("#node-panel .node-text")
    panel.wait_for()
    assert "test_backoff_delays" in panel.inner_text()
    shot(page, "session-1280")
    # the sub-agent, linked both ways
    page.locator("a.spawn").first.click()
    page.wait_for_url("**sidechain**")
    page.wait_for_load_state("load")
    assert "Find every caller" in page.locator("h1").inner_text()
    page.locator(".spawned-from a").click()
    page.wait_for_url(f"**/sessions/{SESSION}")


def test_the_memory_page_shows_its_four_sections(page: Any) -> None:
    page.goto(f"{page.base}/memory")
    tabs = page.locator(".section-tab")
    assert tabs.all_inner_texts() == ["Topics", "Timeline", "Recent", "Core"]
    topic_rows = page.locator(".topic-row")
    assert topic_rows.count() == 2 and "core" not in topic_rows.all_inner_texts()
    topic_rows.first.click()
    page.locator(".content-head .meta", has_text="records").wait_for(state="visible")
    page.goto(f"{page.base}/memory?section=timeline")
    assert page.locator("details.year summary").first.inner_text().startswith("2025")
    assert page.locator(".day-row").first.inner_text().startswith("2025-11-03")
    page.locator("details.year > summary").first.click()  # years fold
    assert not page.locator(".day-row").first.is_visible()
    page.goto(f"{page.base}/memory?section=recent")
    assert page.locator(".recent-count").inner_text().startswith("5 / 50 records")
    page.goto(f"{page.base}/memory?section=core")
    status = page.locator(".core-status").inner_text()
    assert "injection on" in status and "/ 2,000 tokens" in status
    assert page.locator(".core-preview").count() == 1 and page.locator("textarea").count() == 0


def test_footnotes_render_as_numbered_superscripts_without_internal_ids(page: Any) -> None:
    page.goto(f"{page.base}/memory")
    page.locator(".topic-row").first.click()
    doc = page.locator("article.doc.markdown")
    doc.locator("sup.footnote-ref").first.wait_for(state="visible")  # the topic's page has loaded
    sups = doc.locator("sup.footnote-ref").all_inner_texts()
    assert sups[:3] == ["[1]", "[2]", "[3]"]
    items = doc.locator("section.footnotes ol > li")
    assert items.count() == len(sups)
    text = doc.inner_text()
    assert "^m-" not in text and "[^" not in text and "s-" not in text.replace("sessions/", "")
    doc.locator("sup.footnote-ref a").first.click()
    assert page.url.endswith("#fn-1")


def _pause_the_clock(page: Any) -> list[str]:
    """Stop the page's timers until the test moves its clock; return the DELETEs it sends, as sent.

    The panel's delete and toast timers then fire only at :meth:`page.clock.run_for`, so a test
    step the machine makes slow is never taken for the user waiting (the undo toast lives a little
    over a second).
    """
    now = time.time()
    page.clock.install(time=now)
    page.clock.pause_at(now + 60)  # the page already open has no timer that matters
    deletes: list[str] = []
    page.on("request", lambda r: deletes.append(r.url) if r.method == "DELETE" else None)
    return deletes


def test_delete_then_undo_within_the_toast(page: Any) -> None:
    deletes = _pause_the_clock(page)
    page.goto(f"{page.base}/memory/panel?delay=1500")  # the toast lives 1125 ms
    rows = page.locator("li.record")
    before = rows.count()
    row = rows.first
    rid = row.get_attribute("data-id")
    row.locator("button.delete").click()
    assert not row.is_visible()  # hidden at once
    assert page.evaluate("document.activeElement.id") == "panel-toolbar"
    toast = page.locator("#toast")
    page.clock.run_for(1000)
    assert toast.is_visible()
    page.locator("#toast .undo").click()
    assert row.is_visible() and not toast.is_visible()
    page.clock.run_for(1000)  # past the delete timer: nothing was sent
    assert api(page, "GET", f"/api/memory/records/{rid}")["status"] == 200
    assert deletes == []
    assert rows.count() == before


def test_the_toast_is_gone_before_the_delete_is_sent_and_a_refresh_keeps_it_hidden(
    page: Any,
) -> None:
    deletes = _pause_the_clock(page)
    page.goto(f"{page.base}/memory/panel?delay=1500")  # the toast lives 1125 ms
    row = page.locator("li.record").first
    rid = row.get_attribute("data-id")
    row.locator("button.delete").click()
    page.evaluate("window.sessiongraphPanelRefresh()")  # waits for the refresh to finish
    assert page.locator(f'li.record[data-id="{rid}"]:visible').count() == 0
    page.clock.run_for(1125)
    assert page.locator("#toast").is_hidden()
    assert api(page, "GET", f"/api/memory/records/{rid}")["status"] == 200  # not sent yet
    assert deletes == []
    with page.expect_response(lambda r: r.request.method == "DELETE", timeout=120_000) as sent:
        page.clock.run_for(375)  # the delete timer
    assert sent.value.ok
    assert api(page, "GET", f"/api/memory/records/{rid}")["status"] == 404


def test_leaving_the_page_commits_pending_deletes(page: Any) -> None:
    page.goto(f"{page.base}/memory/panel?delay=30000")
    row = page.locator("li.record").first
    rid = row.get_attribute("data-id")
    row.locator("button.delete").click()
    page.goto(f"{page.base}/")
    deadline = time.monotonic() + 60  # a bound for a delete never sent, not a speed check
    while api(page, "GET", f"/api/memory/records/{rid}")["status"] != 404:
        assert time.monotonic() < deadline, "leaving the page did not send the pending delete"
        time.sleep(0.05)


def test_a_stale_core_save_is_refused_and_the_draft_kept(
    page: Any, server: tuple[str, Path]
) -> None:
    _, ws = server
    from memory import MemoryWorkspace

    with MemoryWorkspace(ws) as w:
        sid = w.sources()[0].id
    made = api(
        page,
        "POST",
        "/api/memory/records",
        {
            "content": "Answer in English.",
            "topic": "core",
            "sources": [{"source": sid, "label": "lang"}],
        },
    )
    assert made["status"] == 201
    page.goto(f"{page.base}/memory?section=core&view=records")
    editor = page.locator("#core-text")
    assert "Answer in English." in editor.input_value()
    # someone else writes meanwhile
    other = api(
        page,
        "POST",
        "/api/memory/records",
        {
            "content": "Use metric units.",
            "topic": "core",
            "sources": [{"source": sid, "label": "units"}],
        },
    )
    assert other["status"] == 201
    draft = editor.input_value().replace("Answer in English.", "Answer in plain English.")
    editor.fill(draft)
    page.locator("#core-editor button[type=submit]").click()
    status = page.locator("#core-status")
    status.wait_for()
    # The page's CSP forbids eval, so wait on the element rather than with wait_for_function.
    page.locator("#core-status", has_text="STALE").wait_for(state="visible")
    assert "draft is kept" in status.inner_text()
    assert editor.input_value() == draft
    core = api(page, "GET", "/api/memory/core")["body"]
    assert "plain English" not in core["canonical"] and "metric" in core["canonical"]


def _overlaps(page: Any) -> list[tuple[str, str]]:
    """Pairs of visible boxes that overlap without one containing the other."""
    return page.evaluate(
        """() => {
        const sel = '.topbar .brand, .topnav a, .section-tab, .row, .back, .content-head h1,' +
                    '.content-head .meta, .actions .button, .doc, textarea, .editor-actions button,' +
                    '.panel-toolbar > *, li.record, .record .delete';
        const els = [...document.querySelectorAll(sel)].filter(e => {
            const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 &&
                getComputedStyle(e).visibility !== 'hidden'; });
        const name = e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.');
        const out = [];
        for (let i = 0; i < els.length; i++) for (let j = i + 1; j < els.length; j++) {
            const a = els[i], b = els[j];
            if (a.contains(b) || b.contains(a)) continue;
            const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
            const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
            const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
            if (w > 0.5 && h > 0.5) out.push([name(a), name(b)]);
        }
        const wide = document.documentElement.scrollWidth > window.innerWidth + 1;
        if (wide) out.push(['page', 'scrolls sideways']);
        return out;
    }"""
    )


def test_at_375_px_nothing_overlaps(browser: Any, server: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = server
    context = browser.new_context(viewport={"width": 375, "height": 800})
    pg = context.new_page()
    pg.goto(f"{base}/memory?token={TOKEN}")
    try:
        # list state: sections and the topic list, no content
        assert pg.locator(".mem-side").is_visible() and not pg.locator(".mem-content").is_visible()
        assert _overlaps(pg) == []
        pg.locator(".topic-row").first.click()
        pg.locator(".back").wait_for(state="visible")  # the click may load the topic's page
        pg.wait_for_load_state("load")
        # detail state: the content alone, with a back button
        assert not pg.locator(".mem-side").is_visible() and pg.locator(".back").is_visible()
        assert _overlaps(pg) == []
        if SHOTS is not None:
            shot(pg, "memory-topic-375")
        pg.locator(".back").click()
        pg.locator(".mem-side").wait_for(state="visible")  # the back link loads the list's page
        assert pg.locator(".mem-side").is_visible()
        for url in (
            "/memory?section=core",
            "/memory?section=core&view=records",
            "/memory?section=recent",
            "/memory/panel",
        ):
            pg.goto(base + url)
            assert _overlaps(pg) == [], url
        pg.goto(f"{base}/memory?section=core")
        png = tmp_path / "memory-core-375.png"
        pg.screenshot(path=str(png), full_page=True)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        shot(pg, "memory-core-375")
    finally:
        context.close()

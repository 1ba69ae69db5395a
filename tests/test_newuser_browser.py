"""The web pages with the keyboard alone, in a real browser (Debian's chromium; skips without it).

A delete in the memory panel leaves the focus on the toolbar; the undo toast must be the next stop
after it, not after every record of the list (with a few thousand records a keyboard user could
never reach Undo before the toast went away).
"""

from __future__ import annotations

from typing import Any

from tests import test_browser
from tests.test_browser import _pause_the_clock, api

# the browser tests' fixtures (a server over the written example, chromium, a page that fails the
# test on a script error, a CSP violation or a missing asset)
server = test_browser.server
browser = test_browser.browser
page = test_browser.page


def _tab_to(page: Any, text: str, most: int) -> int:
    """Press Tab until the focused element's text is ``text``; return how many presses it took."""
    for presses in range(1, most + 1):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == text:
            return presses
    raise AssertionError(f"{text!r} not reached in {most} presses of Tab")


def test_a_keyboard_delete_is_undone_from_the_keyboard(page: Any) -> None:
    deletes = _pause_the_clock(page)
    page.goto(f"{page.base}/memory/panel?delay=1500")
    rows = page.locator("li.record")
    assert rows.count() >= 2
    row = rows.first
    rid = row.get_attribute("data-id")
    row.locator("button.delete").focus()
    page.keyboard.press("Enter")
    assert not row.is_visible()
    assert page.evaluate("document.activeElement.id") == "panel-toolbar"
    assert _tab_to(page, "Undo", most=3) <= 3  # the filter box, then Undo
    page.keyboard.press("Enter")
    assert row.is_visible() and not page.locator("#toast").is_visible()
    page.clock.run_for(2000)  # past the delete timer: nothing was sent
    assert deletes == []
    assert api(page, "GET", f"/api/memory/records/{rid}")["status"] == 200


def test_a_node_opens_from_the_keyboard(page: Any) -> None:
    from tests.serverkit import SESSION

    page.goto(f"{page.base}/sessions/{SESSION}")
    page.locator(".graph .node").first.focus()
    page.keyboard.press("Enter")
    text = page.locator("#node-panel .node-text")
    text.wait_for(state="visible")
    assert text.inner_text().startswith("Add retries with exponential backoff")

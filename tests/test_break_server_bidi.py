"""Bidirectional formatting characters from transcripts and memory are shown, never obeyed, on the pages.

A right-to-left override (U+202E) in a session's title, a turn or a record reordered the rest of the
text it was shown in ("Trojan Source": ``gnp.exe`` read as ``exe.png``); the command line already
printed them as ``\\u202e``, the web pages passed them through. Every page now shows them as that
escape: the templates' values, the session drawing, search snippets, the sanitized Markdown, and the
text the pages' scripts write. What is sent back stays exact: the core editor's text (saving it
unchanged changes nothing), a search box, and the ids in links and data attributes.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from graph import SessionStore
from memory import MemoryWorkspace, WritePipeline, add_memory
from tests.serverkit import client, make_app

RLO = "\u202e"
BIDI = "\u202e\u202c\u2066\u2069\u200f\u061c"
SHOWN = "\\u202e"


@pytest.fixture
def served(tmp_path: Path) -> tuple[TestClient, SessionStore, str, str]:
    store = SessionStore(tmp_path / "s.db")
    s = store.create_session(f"Release {RLO}gnp.exe notes", metadata={"runtime": "claude-code"})
    store.append(s.id, f"Should the retry wait? {BIDI} see {RLO}fdp.exe", role="user")
    node = store.append(s.id, f"Retry after {RLO}gnp.exe backoff.", role="assistant")
    ws = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(ws, store).write(s.id, force=True) is None
    add_memory(ws, f"Always {RLO}gnp.exe check.", topic="core", tags=(f"t{RLO}ag",))
    add_memory(ws, f"Deploys {RLO}wait.", topic="notes", headings=(f"H{RLO}ead",))
    ws.close()
    return client(make_app(store, tmp_path / "ws")), store, s.id, node.id


def _pages(sid: str) -> list[str]:
    return [
        "/",
        "/?q=retry",
        f"/sessions/{quote(sid)}",
        "/memory",
        "/memory?section=topics&topic=notes",
        "/memory?section=topics&topic=notes&view=source",
        "/memory?section=timeline",
        "/memory?section=recent",
        "/memory?section=core",
        "/memory/panel",
        f"/api/sessions/{quote(sid)}/graph?format=svg",
    ]


def test_no_page_holds_a_raw_bidirectional_character(
    served: tuple[TestClient, SessionStore, str, str],
) -> None:
    api, _, sid, _ = served
    for url in _pages(sid):
        r = api.get(url)
        assert r.status_code == 200, url
        raw = [f"U+{ord(c):04X}" for c in BIDI if c in r.text]
        assert raw == [], (url, raw)
        assert SHOWN in r.text or url == "/memory", url  # the front shows no record


def test_the_markdown_preview_shows_them_too(
    served: tuple[TestClient, SessionStore, str, str],
) -> None:
    api, *_ = served
    html = api.post("/api/memory/preview", json={"text": f"a {RLO}b [^1]\n\n[^1]: c{RLO}d"})
    assert RLO not in html.json()["html"] and html.json()["html"].count(SHOWN) == 2


def test_what_is_sent_back_stays_exact(
    served: tuple[TestClient, SessionStore, str, str],
) -> None:
    api, _, sid, _ = served
    page = api.get("/memory?section=core&view=records").text
    editor = page[page.index("<textarea") : page.index("</textarea>")]
    assert f"Always {RLO}gnp.exe check." in editor and SHOWN not in editor
    core = api.get("/api/memory/core").json()
    saved = api.put(
        "/api/memory/core", json={"text": core["canonical"], "revision": core["revision"]}
    )
    assert saved.status_code == 200 and saved.json()["revision"] == core["revision"]
    box = api.get("/", params={"q": f"retry {RLO}"}).text
    assert f'value="retry {RLO}"' in box


def test_an_id_with_a_bidi_character_or_url_syntax_links_to_its_page(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = f"odd?id#{RLO}x"
    parent = store.create_session("parent", id="parent-session")
    root = store.append(parent.id, "Spawn a helper.", role="user")
    child = store.spawn(parent.id, root.id, title="helper", id=sid)
    store.append(child.id, "Helping.", role="assistant")
    api = client(make_app(store, tmp_path / "ws"))
    listing = api.get("/").text
    href = f'href="/sessions/{quote(sid)}"'
    assert href in listing
    assert api.get(f"/sessions/{quote(sid)}").status_code == 200
    parent_page = api.get("/sessions/parent-session").text
    assert href in parent_page or f'href="/sessions/{quote(sid, safe="")}"' in parent_page
    child_page = api.get(f"/sessions/{quote(sid)}").text
    assert f'data-session="odd?id#{RLO}x"' in child_page


def test_the_pages_scripts_show_them_in_a_browser(
    served: tuple[TestClient, SessionStore, str, str], tmp_path: Path
) -> None:
    """The node panel and the memory panel's rows are written by scripts from JSON."""
    from tests.test_browser import _need_browser

    _need_browser()
    _, store, sid, node = served
    from tests.test_break_server_browser import browse

    with browse(store, tmp_path / "ws") as page:
        page.goto(f"{page.base}/sessions/{quote(sid)}")
        page.locator(f'g.node[data-node="{node}"]').click()
        text = page.locator("#node-panel .node-text")
        text.wait_for()
        assert text.inner_text() == f"Retry after {SHOWN}gnp.exe backoff."
        page.goto(f"{page.base}/memory/panel")
        shown = page.evaluate("document.body.innerText")
        assert not any(c in shown for c in BIDI) and SHOWN in shown

"""The start URL's redirect goes to the same path on this server, whatever the path holds.

Opening ``/?token=...`` answers with the cookie and a redirect to the URL without the token. The
``Location`` was the request's decoded path as it was: a path with a character outside ASCII (a
session id of its own, say ``/sessions/ünïcode``) made the server fail (500), an encoded line
break went into the header, and ``/%2F%2Fhost`` or ``/\\host`` became a ``Location`` a browser
follows to another server. The path is now percent-encoded and always a path of this server.

And every write route, the memory package's included, refuses a cookie-authenticated request
without this server's Origin (none, another site, ``null``, a look-alike host, another scheme)
and changes nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import unquote

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from graph import MemorySessionStore
from graph.server import ServerContext, create_app
from graph.server.security import COOKIE
from memory.web import extension
from tests.serverkit import TOKEN as KIT_TOKEN
from tests.serverkit import make_app, written_store

TOKEN = "token-for-the-redirect-tests"


@pytest.fixture
def api() -> TestClient:
    app = create_app(MemorySessionStore(), token=TOKEN, hosts=["testserver"], extensions=[])
    return TestClient(app, follow_redirects=False)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("/sessions/%C3%BCn%C3%AFcode", "/sessions/ünïcode"),
        ("/sessions/%E2%80%AEx", "/sessions/\u202ex"),
        ("/%2F%2Fevil.example/x", "/evil.example/x"),
        ("/%5Cevil.example", "/\\evil.example"),
        ("/a%0D%0ASet-Cookie:%20x=1", "/a\r\nSet-Cookie: x=1"),
        ("/sessions/a%3Fb%23c", "/sessions/a?b#c"),
    ],
    ids=["non-ascii", "bidi", "double-slash", "backslash", "line-break", "query-syntax"],
)
def test_the_login_redirect_stays_on_this_server(api: TestClient, raw: str, path: str) -> None:
    r = api.get(f"{raw}?token={TOKEN}&q=r%C3%A9sum%C3%A9")
    assert r.status_code == 303, r.text
    location = r.headers["location"]
    assert location.isascii() and "\r" not in location and "\n" not in location
    assert location.startswith("/") and not location.startswith(("//", "/\\"))
    where, _, query = location.partition("?")
    assert unquote(where) == "/" + path.lstrip("/")  # the same path, decoded
    assert query == "q=r%C3%A9sum%C3%A9"
    assert f"{COOKIE}={TOKEN}" in r.headers["set-cookie"]


def test_a_wrong_token_in_the_url_is_refused_even_with_the_cookie(api: TestClient) -> None:
    api.cookies.set(COOKIE, TOKEN)
    assert api.get("/").status_code == 200
    r = api.get("/?token=wrong")
    assert r.status_code == 401 and r.json()["error"]["code"] == "BAD_TOKEN"


def _write_routes() -> list[tuple[str, str]]:
    """Every route of the memory package that writes, with ids filled in."""
    with tempfile.TemporaryDirectory() as folder:  # the workspace is opened on first use only
        ext = extension(ServerContext(MemorySessionStore(), {}), workspace=folder)
    assert ext is not None
    out = set()
    for r in ext.routes:
        if isinstance(r, Route):
            for m in (r.methods or set()) - {"GET", "HEAD"}:
                out.add((m, r.path.replace("{record_id}", "m-0")))
    return sorted(out)


WRITES = _write_routes()


@pytest.mark.parametrize(("method", "path"), WRITES, ids=[f"{m} {p}" for m, p in WRITES])
@pytest.mark.parametrize(
    ("origin", "code"),
    [
        (None, "ORIGIN_REQUIRED"),
        ("http://evil.example", "FOREIGN_ORIGIN"),
        ("null", "FOREIGN_ORIGIN"),
        ("http://testserver.evil.example", "FOREIGN_ORIGIN"),
        ("file://testserver", "FOREIGN_ORIGIN"),
    ],
    ids=["no-origin", "foreign", "null", "lookalike", "file-scheme"],
)
def test_every_write_route_with_the_cookie_needs_this_servers_origin(
    tmp_path: Path, method: str, path: str, origin: str | None, code: str
) -> None:
    """Checked at every write route the server has, the memory package's included."""
    store, ws = written_store(tmp_path)
    api = TestClient(make_app(store, ws), follow_redirects=False)
    api.cookies.set(COOKIE, KIT_TOKEN)
    headers = {} if origin is None else {"Origin": origin}
    before = api.get("/api/memory/core").json()["revision"]
    r = api.request(method, path, headers=headers, json={})
    assert r.status_code == 403 and r.json()["error"]["code"] == code, (method, path, r.text)
    assert api.get("/api/memory/core").json()["revision"] == before
    same = api.request(method, path, headers={"Origin": "http://testserver"}, json={})
    assert same.status_code != 403, (method, path, same.text)

"""Who may come in: the token, the Host and Origin checks and the security headers of every response.

The server holds a person's conversations, so (like a notebook server):

* every request carries the server's random token: in the start URL's ``?token=`` (the server answers
  with a cookie and a redirect to the same URL without it), then in the cookie, or in an
  ``Authorization: Bearer <token>`` or ``X-Sessiongraph-Token`` header for programs;
* the ``Host`` header must name an address the server answers on (a page on another site that
  resolves its own name to 127.0.0.1, DNS rebinding, is refused);
* a state-changing request (anything but GET, HEAD, OPTIONS) that comes with an ``Origin`` must come
  from the server's own origin, and one authenticated by the cookie alone must carry an ``Origin``
  (a cross-site form or fetch cannot write);
* every response carries a Content-Security-Policy without inline script or style, and headers that
  refuse framing and MIME sniffing.

Refusals are JSON ``{"error": {"code", "message"}}`` with 401 (no or wrong token) or 403 (a foreign
Host or Origin).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Collection
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "COOKIE",
    "LOOPBACK_HOSTS",
    "SecurityMiddleware",
    "new_token",
]

COOKIE = "sessiongraph_token"
"""The cookie that carries the token after the first visit."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
"""Host names always accepted in the ``Host`` header."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
"""Sent on every response: scripts and styles from the server's own files only, nothing inline."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def new_token() -> str:
    """A fresh random token (32 bytes of ``secrets``, URL-safe)."""
    return secrets.token_urlsafe(32)


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class SecurityMiddleware:
    """ASGI middleware applying the rules of the module doc to every HTTP request.

    Args:
        app: The application behind it.
        token: The token every request must carry.
        hosts: Extra host names accepted in ``Host`` (the machine's name, the test client's
            ``testserver``); loopback names are always accepted.
        ip_hosts: Also accept any IP address in ``Host`` (when bound beyond loopback, so other
            machines can reach it by address; a rebinding attack needs a domain name).
    """

    def __init__(
        self, app: ASGIApp, token: str, hosts: Collection[str] = (), ip_hosts: bool = False
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = LOOPBACK_HOSTS | {h.lower() for h in hosts}
        self.ip_hosts = ip_hosts

    def _host_ok(self, host: str) -> bool:
        name = _host_name(host).lower()
        if name in self.hosts:
            return True
        if not self.ip_hosts:
            return False
        try:
            ipaddress.ip_address(name.strip("[]"))
        except ValueError:
            return False
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request, then pass it on with the security headers added."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self._host_ok(host):
            await _refuse(send, 403, "FOREIGN_HOST", f"the Host {host!r} is not this server")
            return
        method = scope["method"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.get("token")
        if given is not None and method in _SAFE_METHODS:
            if not self._ok(given):
                await _refuse(send, 401, "BAD_TOKEN", "the token in the URL is not this server's")
                return
            await _login(send, self.token, scope["path"], query)
            return
        via_header = self._header_token(headers)
        cookie = SimpleCookie(headers.get("cookie", "")).get(COOKIE)
        if via_header is not None:
            authorized = self._ok(via_header)
        else:
            authorized = cookie is not None and self._ok(cookie.value)
        if not authorized:
            await _refuse(
                send,
                401,
                "TOKEN_REQUIRED",
                "this server needs its token: open the URL it printed at start",
            )
            return
        if method not in _SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None:
                parts = urlsplit(origin)
                if parts.netloc.lower() != host.lower() or parts.scheme not in ("http", "https"):
                    await _refuse(
                        send, 403, "FOREIGN_ORIGIN", f"a request from {origin!r} may not write here"
                    )
                    return
            elif via_header is None:
                await _refuse(
                    send,
                    403,
                    "ORIGIN_REQUIRED",
                    "a write authenticated by the cookie must carry an Origin header",
                )
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [
                    *(h for h in message["headers"] if h[0].lower() != b"cache-control"),
                    *_HEADERS,
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _ok(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    @staticmethod
    def _header_token(headers: Headers) -> str | None:
        auth = headers.get("authorization")
        if auth is not None and auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return headers.get("x-sessiongraph-token")


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    import orjson

    body = orjson.dumps({"error": {"code": code, "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _login(send: Send, token: str, path: str, query: dict[str, str]) -> None:
    rest = {k: v for k, v in query.items() if k != "token"}
    # The same path, percent-encoded (a header holds ASCII only, and no line break), and never
    # "//host" or "/\host", which a browser would follow to another server.
    location = "/" + quote(path, safe="/").lstrip("/") + ("?" + urlencode(rest) if rest else "")
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode()),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
                *_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})

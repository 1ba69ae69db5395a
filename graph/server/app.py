"""The server's application: routes, extensions, errors as JSON, pages rendered from templates.

:func:`create_app` builds a Starlette application over one store. Other packages add routes and pages
through the ``sessiongraph.server`` entry-point group: each entry point names a factory
``f(ctx: ServerContext) -> Extension | None`` (the memory package adds the Memory page, the memory
panel and ``/api/memory/*`` this way, so ``graph`` never imports ``memory``); a factory that returns
None adds nothing. The ``--set`` keys are the ones the extensions declare (:attr:`Extension.settings`):
any other key is refused (:class:`UnknownSettingError`), so a typo is not silently ignored.

Every endpoint runs on the event loop's thread, one request at a time: the store and a memory
workspace are not thread-safe, and a local single-user server does not need more.

Errors: every error response is JSON ``{"error": {"code": "...", "message": "..."}}``; an
:class:`ApiError` raised by an endpoint becomes one, and so do unknown routes (404) and methods (405).
"""

from __future__ import annotations

import difflib
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from graph import walks
from graph.errors import GraphError
from graph.server.security import SecurityMiddleware
from graph.store.base import BaseStore
from graph.terminal import visible

__all__ = [
    "ApiError",
    "Extension",
    "ExtensionError",
    "Handler",
    "Memo",
    "NavLink",
    "ServerContext",
    "UnknownSettingError",
    "create_app",
    "int_param",
    "int_value",
    "json_body",
    "json_response",
    "load_extensions",
    "render",
]

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

Handler = Callable[[Request, Exception], Awaitable[Response]]
"""An exception handler: the request and the exception to a response."""


class ApiError(Exception):
    """An error answered as JSON ``{"error": {"code", "message"}}`` with an HTTP status.

    Attributes:
        status: The HTTP status (404 unknown id, 409 stale revision, 422 bad or over-cap input, ...).
        code: A stable upper-case code (``UNKNOWN_SESSION``, ``OVER_CAP``, ...).
        message: One sentence for a person.
        facts: Extra JSON-shaped fields put beside code and message (``cap``, ``limit``, ...).
    """

    def __init__(self, status: int, code: str, message: str, **facts: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.facts = facts


def _default(o: Any) -> Any:
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    raise TypeError(f"not JSON-shaped: {type(o).__name__}")


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """A JSON response (orjson; pydantic models and tuples are converted)."""
    body = orjson.dumps(data, default=_default, option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status, headers=dict(headers or {}), media_type="application/json")


async def json_body(request: Request, max_bytes: int = 1 << 20) -> Any:
    """Read a request's JSON body.

    Raises:
        ApiError: 413 over ``max_bytes`` bytes, 422 when it is not JSON.
    """
    raw = await request.body()
    if len(raw) > max_bytes:
        raise ApiError(413, "TOO_LARGE", f"the body has {len(raw)} bytes, over {max_bytes}")
    try:
        return orjson.loads(raw or b"null")
    except orjson.JSONDecodeError as e:
        raise ApiError(422, "MALFORMED", f"the body is not JSON: {e}") from None


def int_value(name: str, raw: str, *, any_size: bool = False) -> int:
    """Read the integer a query parameter spells, within the 64 bits SQL binds and JSON carries.

    Args:
        name: The parameter, for the error.
        raw: Its text.
        any_size: Accept any size (a value the caller clamps into a range next).

    Raises:
        ApiError: 422 when it is not an integer (``MALFORMED``) or does not fit in 64 bits
            (``OUT_OF_RANGE``).
    """
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(422, "MALFORMED", f"{name} must be an integer, got {raw!r}") from None
    if not any_size and not -(2**63) <= value < 2**63:
        raise ApiError(422, "OUT_OF_RANGE", f"{name} must fit in 64 bits, got {raw}")
    return value


def int_param(
    request: Request,
    name: str,
    default: int,
    *,
    low: int | None = None,
    high: int | None = None,
    cap: str | None = None,
    clamp: bool = False,
) -> int:
    """Read an integer query parameter.

    Args:
        request: The request.
        name: The parameter.
        default: Its value when absent.
        low: The least value accepted.
        high: The greatest value accepted.
        cap: The cap's name reported when ``high`` is exceeded.
        clamp: Clamp into ``low..high`` instead of refusing.

    Raises:
        ApiError: 422 when it is not a 64-bit integer or (unless ``clamp``) out of range, naming
            the cap.
    """
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    value = int_value(name, raw, any_size=clamp and low is not None and high is not None)
    if clamp:
        return max(
            low if low is not None else value, min(high if high is not None else value, value)
        )
    if low is not None and value < low:
        raise ApiError(422, "OUT_OF_RANGE", f"{name} must be at least {low}, got {value}")
    if high is not None and value > high:
        what = cap or name
        raise ApiError(
            422, "OVER_CAP", f"{name} is {value}, over {what} ({high})", cap=what, limit=high
        )
    return value


class Memo:
    """Answers computed from a session's index, kept until that index changes (LRU, bounded).

    Counting a session's forks, rewound nodes and live tips walks every node; a list of sessions
    would pay it per session on every request. The key carries the identity of the store's cached
    index (:attr:`graph.index.IndexView.identity`, not the view's, which is new on every call) and
    its revision (which every append, head move, rewind and marker write bumps) and size, so a
    changed session is recomputed and an unchanged one is not, however many requests ask.
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    @staticmethod
    def index_key(store: BaseStore, session_id: str) -> tuple[Hashable, ...]:
        """The key of a session's index as it is now (its identity, revision and size)."""
        idx = store.index(session_id)
        return (session_id, idx.identity, idx.rev, len(idx))

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The answer kept for ``key``, or ``compute()`` kept for it."""
        try:
            self._data.move_to_end(key)
            return self._data[key]
        except KeyError:
            value = compute()
            self._keep(key, value)
            return value

    def _keep(self, key: Hashable, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self._size:
            self._data.popitem(last=False)

    def messages(self, store: BaseStore, session_id: str) -> tuple[str, ...]:
        """The message ids of the session's head's branch, oldest first, rewound nodes left out.

        What :func:`graph.walks.branch_ids` filtered to messages answers, kept per session. When the
        session changed only by growing at its head (the old head is an ancestor of the new one and
        no node was stamped rewound since), the kept list is extended by the walk from the new head
        back to the old one: a transcript of a live session costs what was appended, not its
        branch. Anything else (a fork, a rewind, a rebuilt index) walks the branch again.

        Raises:
            UnknownSessionError: no such session.
        """
        idx = store.index(session_id)
        now = (idx.identity, idx.rev, len(idx))
        key = ("messages", session_id)
        kept: _KeptMessages | None = self._data.get(key)
        if kept is not None and kept.state == now:
            self._data.move_to_end(key)
            return kept.ids
        stop = (
            kept.head
            if kept is not None and kept.state[0] == now[0] and kept.rewound == idx.rewound
            else None
        )
        newer, met = walks.branch_messages_after(idx, idx.head, stop)
        older = kept.ids if kept is not None and stop is not None and met else ()
        ids = (*older, *newer)
        self._keep(key, _KeptMessages(now, idx.rewound, idx.head, ids))
        return ids


@dataclass(frozen=True)
class _KeptMessages:
    """A branch's message ids as :meth:`Memo.messages` saw them: the index's state and head."""

    state: tuple[int, int, int]
    rewound: int
    head: str | None
    ids: tuple[str, ...]


@dataclass(frozen=True)
class NavLink:
    """A link in the pages' top bar."""

    label: str
    path: str


@dataclass
class Extension:
    """What a package adds to the server.

    Attributes:
        name: The package's name (for messages).
        routes: Starlette routes (API under ``/api/``, pages elsewhere).
        nav: Links for the top bar.
        templates: A directory of Jinja2 templates, which may extend ``base.html``.
        static: A directory served under ``/static/<name>/``.
        openapi: OpenAPI ``paths`` entries for its API routes.
        exception_handlers: Handlers for the package's own exceptions.
        settings: The ``--set`` keys the package reads (``memory.workspace``, ...); a key no
            extension declares is refused by :func:`create_app`.
    """

    name: str
    routes: Sequence[BaseRoute] = ()
    nav: Sequence[NavLink] = ()
    templates: Path | None = None
    static: Path | None = None
    openapi: Mapping[str, Any] = field(default_factory=dict)
    exception_handlers: Mapping[type[Exception], Handler] = field(default_factory=dict)
    settings: Sequence[str] = ()


@dataclass
class ServerContext:
    """What an extension factory is given: the store and how the server was started."""

    store: BaseStore
    settings: Mapping[str, str] = field(default_factory=dict)
    """Free-form settings from the command line (``--set key=value``)."""
    memo: Memo = field(default_factory=Memo)
    """The server's cache of per-session answers (see :class:`Memo`)."""


class ExtensionError(GraphError):
    """An extension factory failed (its package's settings are malformed, say).

    Attributes:
        name: The entry point's name.
    """

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"server extension {name}: {detail}")
        self.name = name


class UnknownSettingError(GraphError, ValueError):
    """A ``--set`` key that no extension of the server reads (a typo, or a package not installed).

    Attributes:
        key: The key given.
        known: Every key the extensions read, sorted.
        closest: The known key nearest to ``key`` (``difflib``), or None when none is near.
    """

    def __init__(self, key: str, known: Sequence[str]) -> None:
        self.key = key
        self.known = sorted(known)
        near = difflib.get_close_matches(key, self.known, n=1)
        self.closest = near[0] if near else None
        hint = f" (did you mean {self.closest}?)" if self.closest else ""
        listed = ", ".join(self.known) or "none"
        super().__init__(f"--set {key}: unknown setting{hint}; known settings: {listed}")


def load_extensions(ctx: ServerContext) -> list[Extension]:
    """Call every factory of the ``sessiongraph.server`` entry-point group, in name order.

    A factory returning None adds nothing.

    Raises:
        ExtensionError: a factory raised; the server is not built without it.
    """
    out: list[Extension] = []
    for ep in sorted(entry_points(group="sessiongraph.server"), key=lambda e: e.name):
        try:
            ext = ep.load()(ctx)
        except Exception as e:
            raise ExtensionError(ep.name, str(e) or type(e).__name__) from e
        if ext is not None:
            out.append(ext)
    return out


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    r"""Render a page (Jinja2, autoescaped) with the top bar's links.

    Every value's bidirectional formatting characters are shown as ``\u202e``; the ``exact``
    filter keeps a form field's value or an id as it is.
    """
    env: jinja2.Environment = request.app.state.templates
    page = env.get_template(template).render(
        request=request, nav=request.app.state.nav, path=request.url.path, **context
    )
    return HTMLResponse(page, status)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_response(
        {"error": {"code": exc.code, "message": exc.message, **exc.facts}}, exc.status
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
    message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed here"}
    return json_response(
        {
            "error": {
                "code": codes.get(exc.status_code, f"HTTP_{exc.status_code}"),
                "message": message.get(exc.status_code, str(exc.detail)),
            }
        },
        exc.status_code,
    )


async def _server_error(request: Request, exc: Exception) -> Response:
    return json_response(
        {"error": {"code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"}}, 500
    )


def _exact(value: str) -> markupsafe.Markup:
    r"""The ``exact`` filter: the value escaped but otherwise as it is.

    For what is sent back: a form field a person edits (the core editor's text, a search box)
    and an id a script reads, which must hold the characters they held (saving the core editor
    would otherwise write the visible ``\u202e``).
    """
    return markupsafe.escape(value)


def _format_number(value: float) -> str:
    return f"{value:,.0f}" if math.isfinite(value) else str(value)


def _shown(value: Any) -> Any:
    r"""Every ``{{ value }}`` of a page: its control and bidirectional formatting characters made visible.

    Text from a transcript or a memory may hold a right-to-left override (U+202E) that would
    reorder the rest of a title or a line, or terminal escapes; the pages show them as the command
    line does (``\u202e``, ``\x1b``). Values a person edits or sends back (a textarea, a search
    box, an id a script reads) go through :func:`_exact`; Markup (the drawn SVG, sanitized
    Markdown) was made safe where it was built.
    """
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return visible(value)
    return value


def create_app(
    store: BaseStore,
    *,
    token: str,
    hosts: Iterable[str] = (),
    extensions: Iterable[Extension] | None = None,
    settings: Mapping[str, str] | None = None,
    ip_hosts: bool = False,
) -> Starlette:
    """Build the server over ``store``.

    Args:
        store: The session store.
        token: The token every request must carry (see :mod:`graph.server.security`).
        hosts: Host names accepted besides loopback (the bound address; ``testserver`` in tests).
        extensions: What other packages add; None loads the ``sessiongraph.server`` entry points.
        settings: Passed to the extension factories (``--set key=value``).
        ip_hosts: Accept any IP address in ``Host`` (a server bound beyond loopback).

    Returns:
        The ASGI application (serve it with uvicorn).

    Raises:
        UnknownSettingError: a key of ``settings`` that no extension declares.
        ExtensionError: an extension factory failed.
    """
    from graph.server import api, pages

    ctx = ServerContext(store, dict(settings or {}))
    exts = list(extensions) if extensions is not None else load_extensions(ctx)
    known = {key for ext in exts for key in ext.settings}
    for key in ctx.settings:
        if key not in known:
            raise UnknownSettingError(key, sorted(known))
    routes: list[BaseRoute] = [*api.routes(), *pages.routes()]
    openapi_paths: dict[str, Any] = dict(api.OPENAPI_PATHS)
    nav = [NavLink("Sessions", "/")]
    loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(TEMPLATES)]
    handlers: dict[Any, Handler] = {
        ApiError: _api_error,
        HTTPException: _http_error,
        Exception: _server_error,
    }
    for ext in exts:
        routes.extend(ext.routes)
        nav.extend(ext.nav)
        openapi_paths.update(ext.openapi)
        handlers.update(ext.exception_handlers)
        if ext.templates is not None:
            loaders.append(jinja2.FileSystemLoader(ext.templates))
        if ext.static is not None:
            routes.append(Mount(f"/static/{ext.name}", StaticFiles(directory=ext.static)))
    routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    routes.append(Route("/api/openapi.json", api.openapi_endpoint, methods=["GET"]))
    app = Starlette(routes=routes, exception_handlers=handlers)
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["number"] = _format_number
    env.filters["exact"] = _exact
    app.state.store = store
    app.state.memo = ctx.memo
    app.state.templates = env
    app.state.nav = nav
    app.state.openapi = api.openapi_document(openapi_paths)
    app.state.settings = ctx.settings
    app.add_middleware(SecurityMiddleware, token=token, hosts=list(hosts), ip_hosts=ip_hosts)
    return app

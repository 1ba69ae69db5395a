"""The session graph's web pages: the Sessions list and a session's graph.

* ``/``: sessions, most recently updated first, with a filter (``runtime``, ``project``) and a
  full-text search (``q``: the matching sessions best first, each with the snippet of its best hit);
* ``/sessions/{session_id}``: the picture of the session's DAG (:mod:`graph.drawing`) with its counts,
  the link to the session it was spawned from and to those it spawned, each provider's marked and
  pending counts, and a panel that shows a node when it is clicked (``/static/session.js`` fetches
  ``/api/nodes/{node}`` and writes it as text, never as HTML).

Every text from a transcript goes through Jinja2's autoescape or the drawing module's escaping, and
its control and bidirectional formatting characters are shown as escapes (the ``shown`` filter), so a
right-to-left override in a title cannot reorder what the page shows.
"""

from __future__ import annotations

from urllib.parse import quote

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from graph import drawing
from graph.server.api import MAX_SESSIONS_PAGE, session_data, session_list, session_of
from graph.server.app import ApiError, int_param, render
from graph.store.base import BaseStore
from graph.terminal import visible

__all__ = ["routes"]


async def _sessions_page(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    limit = int_param(request, "limit", 50, low=1, high=MAX_SESSIONS_PAGE, clamp=True)
    q = request.query_params.get("q", "")[:500]
    runtime = request.query_params.get("runtime") or None
    project = request.query_params.get("project") or None
    rows, hits = session_list(store, limit=limit, query=q, runtime=runtime, project=project)
    sessions = []
    for s in rows:
        data = session_data(store, s, memo=request.app.state.memo)
        hit = hits.get(s.id)
        data["hit"] = _marked(hit.snippet, hit.spans) if hit else None
        sessions.append(data)
    return render(
        request,
        "sessions.html",
        sessions=sessions,
        q=q,
        runtime=runtime or "",
        project=project or "",
        limit=limit,
    )


def _marked(snippet: str, spans: tuple[tuple[int, int], ...]) -> Markup:
    """A search snippet with its matched words in ``<mark>``, escaped, its control characters visible."""
    out: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if start < at:
            continue
        out.append(str(escape(visible(snippet[at:start]))))
        out.append(f"<mark>{escape(visible(snippet[start:end]))}</mark>")
        at = end
    out.append(str(escape(visible(snippet[at:]))))
    return Markup("".join(out))


async def _session_page(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    try:
        s = session_of(store, request.path_params["session_id"])
    except ApiError as e:
        return render(request, "error.html", status=404, message=e.message)
    pic = drawing.picture(store, s)
    svg = drawing.to_svg(pic, session_href=lambda sid: f"/sessions/{quote(sid)}", standalone=False)
    parent = None
    if s.parent_session is not None:
        try:
            parent = store.session(s.parent_session)
        except KeyError:
            parent = None
    return render(
        request,
        "session.html",
        session=session_data(store, s, full=True, memo=request.app.state.memo),
        parent=parent,
        picture=pic,
        svg=Markup(svg),  # built by graph.drawing, which escapes every transcript text
    )


def routes() -> list[BaseRoute]:
    """The pages' routes."""
    return [
        Route("/", _sessions_page, methods=["GET"]),
        Route("/sessions/{session_id:path}", _session_page, methods=["GET"]),
    ]

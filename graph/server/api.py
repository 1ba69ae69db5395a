"""The session graph's REST API (JSON) and the OpenAPI document of every route the server has.

Routes (all ``GET``; ids are exact, as the API hands them out, and may contain ``/``):

* ``/api/sessions?limit=&q=&runtime=&project=&since=``: sessions, most recently updated first
  (``limit`` 1..200, default 50; over 200 is 422 naming ``MAX_SESSIONS_PAGE``); with ``q``, the
  sessions whose transcript matches, best first, each with its best ``hit``;
* ``/api/search?q=&session=&since=&runtime=&project=&limit=&offset=``: full-text search of what was
  said (:meth:`BaseStore.search`), best first; no match is ``200 []``;
* ``/api/sessions/{session_id}``: one session with its counts, live tips, spawned sessions and parent;
* ``/api/sessions/{session_id}/graph?format=json|svg|dot``: the picture of its DAG
  (:mod:`graph.drawing`);
* ``/api/nodes/{node_id}``: one node (node ids are unique across sessions): text, blocks, markers,
  rewound, covers, children and the sessions it spawned;
* ``/api/openapi.json``: the OpenAPI 3.1 document.

An unknown session or node is 404 with ``UNKNOWN_SESSION`` / ``UNKNOWN_NODE``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from graph import drawing
from graph.errors import UnknownNodeError
from graph.models import Node, SearchHit, Session
from graph.server.app import ApiError, Memo, int_param, json_response
from graph.store.base import RUNTIMES, BaseStore, unknown_runtime

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_HITS",
    "MAX_SESSIONS_PAGE",
    "OPENAPI_PATHS",
    "hit_data",
    "node_data",
    "openapi_document",
    "openapi_endpoint",
    "routes",
    "session_data",
    "session_list",
    "session_of",
]

MAX_SESSIONS_PAGE = 200
"""The most sessions one ``/api/sessions`` answer lists."""
MAX_SEARCH_HITS = 200
"""The most hits one search answer holds."""
MAX_QUERY_CHARS = 500
"""The longest search query accepted, in characters."""


def session_of(store: BaseStore, session_id: str) -> Session:
    """The session, or a 404 :class:`ApiError`."""
    if not store.has_session(session_id):
        raise ApiError(404, "UNKNOWN_SESSION", f"no session {session_id}")
    return store.session(session_id)


def session_data(
    store: BaseStore, s: Session, *, full: bool = False, memo: Memo | None = None
) -> dict[str, Any]:
    """A session as JSON-shaped data (with counts; with tips and spawns when ``full``).

    ``memo`` keeps the counts and tips (a walk over every node) until the session's index changes.
    """
    memo = memo or Memo(0)
    key = Memo.index_key(store, s.id)
    st = memo.get(("stats", key), lambda: store.stats(s.id)._replace(spawned=0))
    st = st._replace(spawned=len(store.spawns(s.id)))
    out: dict[str, Any] = {
        "id": s.id,
        "title": s.title,
        "created_at": s.created_at.isoformat(),
        "updated_at": s.updated_at.isoformat(),
        "head": s.head,
        "parent_session": s.parent_session,
        "spawned_from": s.spawned_from,
        "runtime": s.metadata.get("runtime"),
        "project": s.metadata.get("project") or s.metadata.get("cwd"),
        "stats": st._asdict(),
    }
    if full:
        out["tips"] = memo.get(("tips", key), lambda: list(store.tips(s.id)))
        out["spawned"] = [
            {"id": c.id, "title": c.title, "spawned_from": c.spawned_from}
            for c in store.spawns(s.id)
        ]
    return out


def node_data(store: BaseStore, node: Node) -> dict[str, Any]:
    """A node as JSON-shaped data, with its children and the sessions it spawned."""
    idx = store.index(node.session_id)
    return node.model_dump(mode="json") | {
        "text": node.text,
        "rewound": node.rewound,
        "written": dict(node.written),
        "head": idx.head == node.id,
        "children": list(idx.children.get(node.id, ())),
        "spawned": [c.id for c in store.spawns(node.session_id) if c.spawned_from == node.id],
    }


def _since(request: Request) -> datetime | None:
    raw = request.query_params.get("since")
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise ApiError(422, "MALFORMED", f"since must be an ISO 8601 time, got {raw!r}") from None


def _runtime(request: Request) -> str | None:
    """``?runtime=``, one of :data:`graph.store.base.RUNTIMES` (an unknown one would match nothing)."""
    raw = request.query_params.get("runtime") or None
    why = unknown_runtime(raw)
    if why is not None:
        raise ApiError(422, "MALFORMED", f"runtime: {why}")
    return raw


def session_list(
    store: BaseStore,
    *,
    limit: int,
    query: str = "",
    runtime: str | None = None,
    project: str | None = None,
    since: datetime | None = None,
) -> tuple[list[Session], dict[str, SearchHit]]:
    """Sessions for the Sessions page and ``/api/sessions``, with each one's best search hit.

    Without ``query``: most recently updated first. With it: the sessions whose transcript matches
    (:meth:`BaseStore.search`), best match first. ``runtime``, ``project`` (a folder; sessions under
    it count) and ``since`` filter either way.

    Returns:
        The sessions (at most ``limit``) and, for a query, session id -> its best hit.
    """
    q = query.strip()
    if not q:
        return store.sessions(limit, runtime=runtime, project=project, since=since), {}
    best: dict[str, SearchHit] = {}
    for hit in store.search(
        q, runtime=runtime, project=project, since=since, limit=MAX_SEARCH_HITS
    ):
        best.setdefault(hit.session_id, hit)
    rows: list[Session] = []
    for sid in list(best)[:limit]:
        if store.has_session(sid):
            rows.append(store.session(sid))
        else:  # removed meanwhile
            best.pop(sid)
    return rows, best


def hit_data(hit: SearchHit) -> dict[str, Any]:
    """A search hit as JSON-shaped data."""
    return hit.model_dump(mode="json")


async def _sessions(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    limit = int_param(request, "limit", 50, low=1, high=MAX_SESSIONS_PAGE, cap="MAX_SESSIONS_PAGE")
    q = request.query_params.get("q", "")
    if len(q) > MAX_QUERY_CHARS:
        raise ApiError(
            422,
            "OVER_CAP",
            f"q has {len(q)} characters, over MAX_QUERY_CHARS ({MAX_QUERY_CHARS})",
            cap="MAX_QUERY_CHARS",
            limit=MAX_QUERY_CHARS,
        )
    rows, hits = session_list(
        store,
        limit=limit,
        query=q,
        runtime=_runtime(request),
        project=request.query_params.get("project") or None,
        since=_since(request),
    )
    memo = request.app.state.memo
    out = []
    for s in rows:
        data = session_data(store, s, memo=memo)
        if s.id in hits:
            data["hit"] = hit_data(hits[s.id])
        out.append(data)
    return json_response(out)


async def _search(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    q = request.query_params.get("q", "")
    if len(q) > MAX_QUERY_CHARS:
        raise ApiError(
            422,
            "OVER_CAP",
            f"q has {len(q)} characters, over MAX_QUERY_CHARS ({MAX_QUERY_CHARS})",
            cap="MAX_QUERY_CHARS",
            limit=MAX_QUERY_CHARS,
        )
    limit = int_param(request, "limit", 20, low=1, high=MAX_SEARCH_HITS, cap="MAX_SEARCH_HITS")
    offset = int_param(request, "offset", 0, low=0)
    session = request.query_params.get("session") or None
    if session is not None:
        session_of(store, session)
    hits = store.search(
        q,
        session=session,
        since=_since(request),
        runtime=_runtime(request),
        project=request.query_params.get("project") or None,
        limit=limit,
        offset=offset,
    )
    return json_response([hit_data(h) for h in hits])


async def _session(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    s = session_of(store, request.path_params["session_id"])
    return json_response(session_data(store, s, full=True, memo=request.app.state.memo))


async def _graph(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    s = session_of(store, request.path_params["session_id"])
    fmt = request.query_params.get("format", "json")
    pic = drawing.picture(store, s)
    if fmt == "svg":
        return Response(
            drawing.to_svg(pic, session_href=lambda sid: f"/sessions/{quote(sid)}"),
            media_type="image/svg+xml",
        )
    if fmt == "dot":
        return Response(drawing.to_dot(pic), media_type="text/vnd.graphviz")
    if fmt != "json":
        raise ApiError(422, "MALFORMED", f"format must be json, svg or dot, got {fmt!r}")
    return json_response(
        {
            "session": s.id,
            "lanes": pic.lanes,
            "folded": pic.folded,
            "providers": [{"provider": p, "value": v} for p, v in pic.providers],
            "marked": pic.marked,
            "pending": pic.pending,
            "rows": [
                {
                    "node": r.node_id,
                    "lane": r.lane,
                    "parent_row": r.parent_row,
                    "kind": r.kind,
                    "role": r.role,
                    "preview": r.preview,
                    "rewound": r.rewound,
                    "head": r.head,
                    "covers": r.covers,
                    "cover_span": r.cover_span,
                    "spawned": [c.id for c in r.spawned],
                    "folded": r.folded,
                    "marked": r.marked,
                    "pending": r.pending,
                }
                for r in pic.rows
            ],
        }
    )


async def _node(request: Request) -> Response:
    store: BaseStore = request.app.state.store
    node_id = request.path_params["node_id"]
    try:
        node = store.node(node_id)
    except UnknownNodeError:
        raise ApiError(404, "UNKNOWN_NODE", f"no node {node_id}") from None
    return json_response(node_data(store, node))


def routes() -> list[BaseRoute]:
    """The session API's routes."""
    return [
        Route("/api/sessions", _sessions, methods=["GET"]),
        Route("/api/search", _search, methods=["GET"]),
        # ids may hold "/" (pi's node ids, Claude Code's sidechain sessions): the specific routes first
        Route("/api/sessions/{session_id:path}/graph", _graph, methods=["GET"]),
        Route("/api/sessions/{session_id:path}", _session, methods=["GET"]),
        Route("/api/nodes/{node_id:path}", _node, methods=["GET"]),
    ]


def _param(name: str, where: str, schema: dict[str, Any], doc: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "schema": schema,
        "description": doc,
    }


_ERROR = {
    "description": "error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_RUNTIME_SCHEMA = {"type": "string", "enum": list(RUNTIMES)}
_SID = _param("session_id", "path", {"type": "string"}, "A session id.")

OPENAPI_PATHS: dict[str, Any] = {
    "/api/sessions": {
        "get": {
            "summary": "Sessions, most recently updated first",
            "parameters": [
                _param(
                    "limit",
                    "query",
                    {"type": "integer", "minimum": 1, "maximum": MAX_SESSIONS_PAGE, "default": 50},
                    "At most this many.",
                ),
                _param(
                    "q",
                    "query",
                    {"type": "string", "maxLength": 500},
                    "Full-text search (or title filter).",
                ),
                _param("runtime", "query", _RUNTIME_SCHEMA, "Only this runtime."),
                _param("project", "query", {"type": "string"}, "Only this project."),
                _param(
                    "since",
                    "query",
                    {"type": "string", "format": "date-time"},
                    "Updated at or after.",
                ),
            ],
            "responses": {"200": {"description": "the sessions"}, "422": _ERROR},
        }
    },
    "/api/search": {
        "get": {
            "summary": "Full-text search of what was said; no match is 200 []",
            "parameters": [
                _param(
                    "q",
                    "query",
                    {"type": "string", "maxLength": 500},
                    "Words, phrases, prefix*, -exclude.",
                ),
                _param("session", "query", {"type": "string"}, "Only this session and its spawns."),
                _param(
                    "since",
                    "query",
                    {"type": "string", "format": "date-time"},
                    "Written at or after.",
                ),
                _param("runtime", "query", _RUNTIME_SCHEMA, "Only this runtime."),
                _param("project", "query", {"type": "string"}, "Only this project folder."),
                _param(
                    "limit",
                    "query",
                    {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_HITS, "default": 20},
                    "At most this many.",
                ),
                _param(
                    "offset",
                    "query",
                    {"type": "integer", "minimum": 0, "default": 0},
                    "Skip this many.",
                ),
            ],
            "responses": {
                "200": {"description": "the hits, best first"},
                "404": _ERROR,
                "422": _ERROR,
            },
        }
    },
    "/api/sessions/{session_id}": {
        "get": {
            "summary": "One session",
            "parameters": [_SID],
            "responses": {"200": {"description": "the session"}, "404": _ERROR},
        }
    },
    "/api/sessions/{session_id}/graph": {
        "get": {
            "summary": "The picture of a session's DAG",
            "parameters": [
                _SID,
                _param("format", "query", {"enum": ["json", "svg", "dot"]}, "Output format."),
            ],
            "responses": {"200": {"description": "the picture"}, "404": _ERROR, "422": _ERROR},
        }
    },
    "/api/nodes/{node_id}": {
        "get": {
            "summary": "One node",
            "parameters": [_param("node_id", "path", {"type": "string"}, "A node id.")],
            "responses": {"200": {"description": "the node"}, "404": _ERROR},
        }
    },
    "/api/openapi.json": {
        "get": {
            "summary": "This OpenAPI document",
            "responses": {"200": {"description": "the document"}},
        }
    },
}
"""OpenAPI ``paths`` of this module's routes."""


def openapi_document(paths: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document for ``paths`` (with the shared error schema and the token scheme)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "sessiongraph", "version": "0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                            },
                            "required": ["code", "message"],
                        }
                    },
                }
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "sessiongraph_token"},
            },
        },
        "security": [{"bearer": []}, {"cookie": []}],
    }


async def openapi_endpoint(request: Request) -> Response:
    """Serve the OpenAPI document."""
    return json_response(request.app.state.openapi)

"""The memory REST API and the bounded session look-up routes.

Session look-up (bounded, :mod:`memory.lookup`):

* ``GET /api/lookup/sessions``: at most 30 sessions, newest first;
* ``GET /api/lookup/sessions/{id}``: one session;
* ``GET /api/lookup/sessions/{id}/transcript?count=&before=``: a window of the head's messages,
  ``count`` clamped to 1..30 (default 10), with the totals;
* ``GET /api/lookup/sessions/{id}/latest``: the newest message (``null`` when there is none).

Memory bank:

* ``GET /api/memory/records[?topic=]``: every record with its citations, snippet and tags;
* ``POST /api/memory/records``: save one record with its citations in one transaction (one
  timestamp); 201 with the persisted row as read back;
* ``GET /api/memory/records/{id}``; ``DELETE /api/memory/records/{id}?grace=SECONDS`` (undoable for
  ``grace`` seconds, default 10); ``POST /api/memory/records/{id}/undo``;
* ``GET /api/memory/search?q=&page=&per_page=``: ranked hits, bound parameters; no match is
  ``200 []``; the total is in ``X-Total-Count``;
* ``POST /api/memory/changes``: ``{"memory_changes": [create_record | update_record |
  delete_record | move_records, ...], "revision": N?}``, one validated transaction, compare-and-set
  on ``revision`` when given; returns ``revision``, ``changed_files``, ``record_ids`` and
  ``citation_ids``;
* ``GET /api/memory/core``; ``PUT /api/memory/core`` ``{"text", "revision"}``: the Core section
  (:func:`memory.web.data.core_state`, :func:`memory.web.data.save_core`);
* ``GET /api/memory/topics``, ``GET /api/memory/topics/{path}``, ``GET /api/memory/timeline``,
  ``GET /api/memory/recent?limit=`` (``X-Recent-Limit`` carries the configured limit),
  ``POST /api/memory/preview`` ``{"text"}`` (the reading view's sanitized HTML).

Errors are JSON ``{"error": {"code", "message", ...}}``: an input over a cap is 422 ``OVER_CAP``
naming the cap and its limit; a refused transaction 422 with its rejection code; an unknown record or
session 404; a stale revision 409 ``STALE_REVISION``; a busy workspace 503 ``BUSY``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from graph.errors import NotOnBranchError, UnknownNodeError, UnknownSessionError
from graph.models import Session
from graph.server.app import ApiError, Memo, int_param, int_value, json_body, json_response
from graph.store.base import BaseStore
from memory import caps
from memory.caps import LOOKUP_MAX_SESSIONS
from memory.changes import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MoveRecords,
    SourceRef,
    UpdateRecord,
)
from memory.editing import EditError
from memory.errors import (
    RejectedError,
    Rejection,
    UnknownRecordError,
    WorkspaceBusyError,
    WorkspaceSchemaError,
    WorkspaceStoreError,
)
from memory.lookup import latest_message, open_session, read_transcript
from memory.markdown import render_markdown
from memory.reading import record_view, record_views, search_page
from memory.tombstones import (
    DEFAULT_GRACE,
    GraceExpiredError,
    NothingToUndoError,
    delete_record,
    undo_delete,
)
from memory.web.data import (
    StaleRevisionError,
    core_state,
    recent,
    records_data,
    save_core,
    timeline,
    topic_tree,
)
from memory.workspace import MemoryWorkspace

__all__ = [
    "MAX_GRACE",
    "MAX_RECENT",
    "OPENAPI_PATHS",
    "openapi_paths",
    "MemoryHandle",
    "error_handlers",
    "routes",
]

MAX_GRACE = 600.0
"""The longest undo grace a DELETE may ask for, in seconds."""

MAX_RECENT = caps.MAX_RESULTS_PER_PAGE * 10
"""The most records one ``/api/memory/recent`` answer lists (500)."""


class MemoryHandle:
    """The server's workspace, opened on first use, and the settings that shape what it shows.

    Args:
        path: The workspace directory (its views only, when ``store`` is set).
        inject: Whether the core block is injected (the ``memory.core.inject`` setting).
        recent_limit: Records the Recent section shows (``memory.recent.limit``).
        store: A ``postgresql://`` URL of the store of record; None keeps it in ``path``.
    """

    def __init__(
        self, path: str, *, inject: bool = True, recent_limit: int = 50, store: str | None = None
    ) -> None:
        self.path = path
        self.store = store
        self.inject = inject
        self.recent_limit = recent_limit
        self._ws: MemoryWorkspace | None = None
        self._cache: tuple[int, dict[str, Any]] = (-1, {})

    @property
    def ws(self) -> MemoryWorkspace:
        """The workspace (opened, or created, on first use)."""
        if self._ws is None:
            self._ws = MemoryWorkspace(self.path, store=self.store)
        return self._ws

    def cached(self, name: str, compute: Callable[[], Any]) -> Any:
        """Return ``compute()``, kept until the workspace's revision changes.

        Every install bumps the revision, another process's included: it is read from the database
        on each call.
        """
        revision = self.ws.revision
        if self._cache[0] != revision:
            self._cache = (revision, {})
        kept = self._cache[1]
        if name not in kept:
            kept[name] = compute()
        return kept[name]

    def all_records(self) -> dict[str, dict[str, Any]]:
        """Every record as :func:`~memory.web.data.record_data`, by id, in topic order."""
        found: dict[str, dict[str, Any]] = self.cached(
            "records", lambda: {r["id"]: r for r in records_data(self.ws, record_views(self.ws))}
        )
        return found


class _Save(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str
    sources: list[SourceRef] = Field(min_length=1)
    topic: str = "notes"
    headings: list[str] = []
    tags: list[str] = []
    time: str | None = None


class _Changes(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Told apart by "op", so an unknown or misspelt op is named as such, not reported as a
    # mismatch with every operation's fields.
    memory_changes: list[
        Annotated[
            CreateRecord | UpdateRecord | DeleteRecord | MoveRecords, Field(discriminator="op")
        ]
    ] = Field(min_length=1)
    revision: StrictInt | None = None  # true is not revision 1


def _validation(e: ValidationError) -> ApiError:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return ApiError(422, "MALFORMED", f"{where}: {first['msg']}", errors=len(e.errors()))


def _record(handle: MemoryHandle, ref: str) -> dict[str, Any]:
    found = handle.all_records().get(ref)
    if found is not None:
        return found
    try:  # a unique prefix of an id
        return records_data(handle.ws, [record_view(handle.ws, ref)])[0]
    except UnknownRecordError:
        raise ApiError(404, "UNKNOWN_RECORD", f"no record {ref}") from None


def routes(handle: MemoryHandle, store: BaseStore, memo: Memo | None = None) -> list[BaseRoute]:
    """The memory API's routes over ``handle``'s workspace and ``store``.

    ``memo`` keeps each session's look-up answer until its index changes.
    """
    memo = memo or Memo(0)

    def info(s: Session) -> Any:
        key = ("lookup", *Memo.index_key(store, s.id), s.updated_at, s.title, s.head)
        return memo.get(key, lambda: open_session(store, s.id, messages=memo.messages(store, s.id)))

    def session_id(request: Request) -> str:
        sid: str = request.path_params["session_id"]
        if not store.has_session(sid):
            raise ApiError(404, "UNKNOWN_SESSION", f"no session {sid}")
        return sid

    async def lookup_sessions(request: Request) -> Response:
        # what memory.lookup.recent_sessions answers, each session's answer memoized
        rows = [info(s) for s in store.sessions(LOOKUP_MAX_SESSIONS)]
        return json_response([r.model_dump(mode="json") for r in rows])

    async def lookup_session(request: Request) -> Response:
        return json_response(info(store.session(session_id(request))).model_dump(mode="json"))

    async def lookup_transcript(request: Request) -> Response:
        sid = session_id(request)
        raw = request.query_params.get("count")
        count: int | None = None
        if raw:
            # Any integer is clamped to 1..30, as everywhere; one past 64 bits is echoed (as
            # ``requested``) saturated, since JSON answers carry 64-bit integers.
            count = max(-(2**63), min(int_value("count", raw, any_size=True), 2**63 - 1))
        before = request.query_params.get("before") or None
        msgs = memo.messages(store, sid)
        try:
            window = read_transcript(store, sid, count, before, messages=msgs)
        except UnknownNodeError:
            raise ApiError(404, "UNKNOWN_NODE", f"no node {before} in session {sid}") from None
        except NotOnBranchError:
            raise ApiError(
                422, "NOT_ON_BRANCH", f"node {before} is not on the head's branch"
            ) from None
        data = window.model_dump(mode="json")
        data["messages"] = [m.model_dump(mode="json") | {"text": m.text} for m in window.messages]
        data["next_before"] = window.next_before
        return json_response(data)

    async def lookup_latest(request: Request) -> Response:
        node = latest_message(store, session_id(request))
        return json_response(
            None if node is None else node.model_dump(mode="json") | {"text": node.text}
        )

    async def list_records(request: Request) -> Response:
        topic = request.query_params.get("topic") or None
        rows = list(handle.all_records().values())
        return json_response([r for r in rows if topic is None or r["topic"] == topic])

    async def save_record(request: Request) -> Response:
        try:
            body = _Save.model_validate(await json_body(request))
        except ValidationError as e:
            raise _validation(e) from None
        change = CreateRecord(
            content=body.content,
            sources=tuple(body.sources),
            destination=Destination(topic_path=body.topic, headings=tuple(body.headings)),
            time=body.time,
            tags=tuple(body.tags),
        )
        p = handle.ws.apply(ChangeSet(changes=(change,)))
        return json_response(_record(handle, p.created[0]), 201)

    async def get_record(request: Request) -> Response:
        return json_response(_record(handle, request.path_params["record_id"]))

    async def delete(request: Request) -> Response:
        raw = request.query_params.get("grace")
        grace = DEFAULT_GRACE
        if raw:
            try:
                grace = float(raw)
            except ValueError:
                raise ApiError(422, "MALFORMED", f"grace must be seconds, got {raw!r}") from None
            if not 0 <= grace <= MAX_GRACE:
                raise ApiError(
                    422,
                    "OVER_CAP",
                    f"grace is {raw} seconds, outside 0..{MAX_GRACE:g}",
                    cap="MAX_GRACE",
                    limit=MAX_GRACE,
                )
        rid = request.path_params["record_id"]
        try:
            stone = delete_record(handle.ws, rid, grace=grace)
        except UnknownRecordError:
            raise ApiError(404, "UNKNOWN_RECORD", f"no record {rid}") from None
        return json_response(
            {
                "id": stone.record.id,
                "deleted_at": stone.deleted_at,
                "expires_at": stone.expires_at,
                "undoable": stone.expires_at > stone.deleted_at,
            }
        )

    async def undo(request: Request) -> Response:
        rid = request.path_params["record_id"]
        try:
            rec = undo_delete(handle.ws, rid)
        except NothingToUndoError:
            raise ApiError(404, "NOTHING_TO_UNDO", f"no deletion of {rid} to undo") from None
        except GraceExpiredError as e:
            raise ApiError(410, "GRACE_EXPIRED", str(e)) from None
        return json_response(_record(handle, rec.id))

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        page = int_param(request, "page", 1, low=1)
        per_page = int_param(
            request,
            "per_page",
            caps.DEFAULT_RESULTS_PER_PAGE,
            low=1,
            high=caps.MAX_RESULTS_PER_PAGE,
            cap="MAX_RESULTS_PER_PAGE",
        )
        result = search_page(handle.ws, q, page, per_page)
        hits = [
            {
                "id": h.record_id,
                "topic": h.topic,
                "headings": list(h.headings),
                "content": h.content,
                "score": h.score,
                "sources": [
                    {"source_id": s, "session_id": sess, "node_id": node}
                    for s, sess, node in h.sources
                ],
            }
            for h in result.hits
        ]
        return json_response(hits, headers={"X-Total-Count": str(result.total)})

    async def changes(request: Request) -> Response:
        try:
            body = _Changes.model_validate(await json_body(request))
        except ValidationError as e:
            raise _validation(e) from None
        caps.check_count(body.memory_changes, "MAX_CHANGES_PER_TRANSACTION", "memory_changes")
        ws = handle.ws
        with ws.write_lock():
            if body.revision is not None and body.revision != ws.revision:
                raise StaleRevisionError(body.revision, ws.revision)
            p = ws.apply(ChangeSet(changes=tuple(body.memory_changes)))
            after = p.after
            touched = [*p.created, *p.updated]
            citations = {
                rid: [f"{rid}-{n}" for n in range(1, len(after.records[rid].citations) + 1)]
                for rid in touched
            }
            changed = sorted(
                {f"topics/{t}.md" for t in p.topics}
                | ({"core.md"} if "core" in p.topics else set())
            )
            return json_response(
                {
                    "revision": ws.revision,
                    "memory_committed": p.changed,
                    "changed_files": changed,
                    "record_ids": {
                        "created": list(p.created),
                        "updated": list(p.updated),
                        "deleted": list(p.deleted),
                        "moved": list(p.moved),
                    },
                    "citation_ids": citations,
                }
            )

    async def get_core(request: Request) -> Response:
        return json_response(
            handle.cached("core", lambda: core_state(handle.ws, inject=handle.inject))
        )

    async def put_core(request: Request) -> Response:
        body = await json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            raise ApiError(422, "MALFORMED", 'the body must be {"text": str, "revision": int}')
        revision = body.get("revision")
        if not isinstance(revision, int) or isinstance(revision, bool):
            raise ApiError(
                422,
                "MALFORMED",
                "revision (the draft's base revision) is required, as an integer; got "
                f"{type(revision).__name__}",
            )
        new, ids = save_core(handle.ws, body["text"], revision)
        return json_response(core_state(handle.ws, inject=handle.inject) | {"saved": ids})

    async def topics(request: Request) -> Response:
        def folder(f: Any) -> dict[str, Any]:
            return {
                "name": f.name,
                "path": f.path,
                "count": f.count,
                "folders": [folder(x) for x in f.folders],
                "topics": [{"name": n, "topic": t, "count": c} for n, t, c in f.topics],
            }

        return json_response(handle.cached("topics", lambda: folder(topic_tree(handle.ws))))

    async def topic(request: Request) -> Response:
        path = request.path_params["topic"]
        records = handle.ws.records(path)
        if not records:
            raise ApiError(404, "UNKNOWN_TOPIC", f"no topic {path}")
        from memory.topic_files import render_topic

        text = render_topic(path, records)
        return json_response(
            {"topic": path, "text": text, "html": render_markdown(text), "records": len(records)}
        )

    async def get_timeline(request: Request) -> Response:
        return json_response(handle.cached("timeline", timeline_data))

    def timeline_data() -> list[dict[str, Any]]:
        return [
            {
                "year": y,
                "months": [
                    {
                        "month": m,
                        "days": [
                            {"date": d.key, "records": [r.id for r in d.records]} for d in days
                        ],
                    }
                    for m, days in months
                ],
            }
            for y, months in timeline(handle.ws)
        ]

    async def get_recent(request: Request) -> Response:
        limit = int_param(
            request,
            "limit",
            handle.recent_limit,
            low=1,
            high=MAX_RECENT,
            cap="MAX_RECENT",
        )
        rows = handle.cached(
            f"recent-{limit}", lambda: records_data(handle.ws, recent(handle.ws, limit))
        )
        return json_response(
            {"records": rows, "count": len(rows), "limit": limit},
            headers={"X-Recent-Limit": str(handle.recent_limit)},
        )

    async def preview(request: Request) -> Response:
        body = await json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            raise ApiError(422, "MALFORMED", 'the body must be {"text": str}')
        return json_response({"html": render_markdown(body["text"], id_prefix="preview")})

    r: Callable[..., Route] = Route
    return [
        r("/api/lookup/sessions", lookup_sessions, methods=["GET"]),
        r("/api/lookup/sessions/{session_id:path}/transcript", lookup_transcript, methods=["GET"]),
        r("/api/lookup/sessions/{session_id:path}/latest", lookup_latest, methods=["GET"]),
        r("/api/lookup/sessions/{session_id:path}", lookup_session, methods=["GET"]),
        r("/api/memory/records", list_records, methods=["GET"]),
        r("/api/memory/records", save_record, methods=["POST"]),
        r("/api/memory/records/{record_id}", get_record, methods=["GET"]),
        r("/api/memory/records/{record_id}", delete, methods=["DELETE"]),
        r("/api/memory/records/{record_id}/undo", undo, methods=["POST"]),
        r("/api/memory/search", search, methods=["GET"]),
        r("/api/memory/changes", changes, methods=["POST"]),
        r("/api/memory/core", get_core, methods=["GET"]),
        r("/api/memory/core", put_core, methods=["PUT"]),
        r("/api/memory/topics", topics, methods=["GET"]),
        r("/api/memory/topics/{topic:path}", topic, methods=["GET"]),
        r("/api/memory/timeline", get_timeline, methods=["GET"]),
        r("/api/memory/recent", get_recent, methods=["GET"]),
        r("/api/memory/preview", preview, methods=["POST"]),
    ]


def _json_error(status: int, code: str, message: str, **facts: Any) -> Response:
    return json_response({"error": {"code": code, "message": message, **facts}}, status)


async def _cap(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, caps.CapExceeded)
    return _json_error(422, "OVER_CAP", str(exc), cap=exc.cap, limit=exc.limit, got=exc.got)


async def _rejected(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RejectedError)
    facts = {k: v for k, v in (("record_id", exc.record_id), ("source_id", exc.source_id)) if v}
    status = 404 if exc.reason is Rejection.UNKNOWN_RECORD else 422
    return _json_error(status, exc.reason.value, exc.detail, **facts)


async def _edit(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EditError)
    return _json_error(422, exc.reason.value, exc.detail, line=exc.line)


async def _stale(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StaleRevisionError)
    return _json_error(409, "STALE_REVISION", str(exc), expected=exc.expected, got=exc.got)


async def _busy(request: Request, exc: Exception) -> Response:
    return _json_error(503, "BUSY", str(exc), retryable=True)


async def _unavailable(request: Request, exc: Exception) -> Response:
    # The workspace is opened on first use: one from a newer sessiongraph, or a memory.db that
    # is no database, is the memory routes' answer, not a server failure.
    retryable = not isinstance(exc, WorkspaceSchemaError)
    return _json_error(503, "WORKSPACE_UNAVAILABLE", str(exc), retryable=retryable)


async def _unknown_session(request: Request, exc: Exception) -> Response:
    return _json_error(404, "UNKNOWN_SESSION", str(exc))


def error_handlers() -> dict[type[Exception], Callable[[Request, Exception], Any]]:
    """The memory errors the server answers as JSON."""
    return {
        caps.CapExceeded: _cap,
        RejectedError: _rejected,
        EditError: _edit,
        StaleRevisionError: _stale,
        WorkspaceBusyError: _busy,
        WorkspaceStoreError: _unavailable,
        UnknownSessionError: _unknown_session,
    }


def _p(name: str, where: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": where, "required": where == "path", "schema": schema}


_E = {
    "description": "error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_OK = {"description": "ok"}
_SID = _p("session_id", "path", {"type": "string"})
_RID = _p("record_id", "path", {"type": "string"})
OPENAPI_PATHS: dict[str, Any] = {
    "/api/lookup/sessions": {
        "get": {"summary": "At most 30 sessions, newest first", "responses": {"200": _OK}}
    },
    "/api/lookup/sessions/{session_id}": {
        "get": {
            "summary": "One session",
            "parameters": [_SID],
            "responses": {"200": _OK, "404": _E},
        }
    },
    "/api/lookup/sessions/{session_id}/transcript": {
        "get": {
            "summary": "A window of the head's messages (count clamped to 1..30, default 10) with totals",
            "parameters": [
                _SID,
                _p("count", "query", {"type": "integer", "default": 10}),
                _p("before", "query", {"type": "string"}),
            ],
            "responses": {"200": _OK, "404": _E, "422": _E},
        }
    },
    "/api/lookup/sessions/{session_id}/latest": {
        "get": {
            "summary": "The newest message",
            "parameters": [_SID],
            "responses": {"200": _OK, "404": _E},
        }
    },
    "/api/memory/records": {
        "get": {
            "summary": "Every record with citations, snippet and tags",
            "parameters": [_p("topic", "query", {"type": "string"})],
            "responses": {"200": _OK},
        },
        "post": {
            "summary": "Save one record and its citations (one transaction)",
            "responses": {"201": _OK, "422": _E},
        },
    },
    "/api/memory/records/{record_id}": {
        "get": {
            "summary": "One record",
            "parameters": [_RID],
            "responses": {"200": _OK, "404": _E},
        },
        "delete": {
            "summary": "Delete a record (undoable for grace seconds)",
            "parameters": [
                _RID,
                _p("grace", "query", {"type": "number", "minimum": 0, "maximum": MAX_GRACE}),
            ],
            "responses": {"200": _OK, "404": _E, "422": _E},
        },
    },
    "/api/memory/records/{record_id}/undo": {
        "post": {
            "summary": "Undo a deletion within its grace",
            "parameters": [_RID],
            "responses": {"200": _OK, "404": _E, "410": _E},
        }
    },
    "/api/memory/search": {
        "get": {
            "summary": "Lexical search; no match is 200 []",
            "parameters": [
                _p("q", "query", {"type": "string", "maxLength": caps.MAX_QUERY_CHARS}),
                _p("page", "query", {"type": "integer", "minimum": 1, "default": 1}),
                _p(
                    "per_page",
                    "query",
                    {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": caps.MAX_RESULTS_PER_PAGE,
                        "default": caps.DEFAULT_RESULTS_PER_PAGE,
                    },
                ),
            ],
            "responses": {"200": _OK, "422": _E},
        }
    },
    "/api/memory/changes": {
        "post": {
            "summary": "memory_changes in one validated transaction",
            "responses": {"200": _OK, "409": _E, "422": _E},
        }
    },
    "/api/memory/core": {
        "get": {
            "summary": "The core topic, rendered block, effective injected block, inject switch, tokens and budget",
            "responses": {"200": _OK},
        },
        "put": {
            "summary": "Save the core topic file (compare-and-set on revision)",
            "responses": {"200": _OK, "409": _E, "422": _E},
        },
    },
    "/api/memory/topics": {
        "get": {"summary": "The folder tree of topics", "responses": {"200": _OK}}
    },
    "/api/memory/topics/{topic}": {
        "get": {
            "summary": "One topic file and its reading view",
            "parameters": [_p("topic", "path", {"type": "string"})],
            "responses": {"200": _OK, "404": _E},
        }
    },
    "/api/memory/timeline": {
        "get": {"summary": "Records by year, month and day", "responses": {"200": _OK}}
    },
    "/api/memory/recent": {
        "get": {
            "summary": "The newest records",
            "parameters": [
                _p(
                    "limit",
                    "query",
                    {"type": "integer", "minimum": 1, "maximum": MAX_RECENT},
                )
            ],
            "responses": {"200": _OK},
        }
    },
    "/api/memory/preview": {
        "post": {
            "summary": "Render memory Markdown to sanitized HTML",
            "responses": {"200": _OK, "422": _E},
        }
    },
}
"""OpenAPI ``paths`` of the memory routes."""


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with its ``$defs`` put in place (none of these models is recursive).

    A ``$ref`` inside an OpenAPI operation resolves against the whole document, not the schema,
    so the definitions cannot stay under the schema's own ``$defs``.
    """
    defs = schema.pop("$defs", {})

    def put(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return put(dict(defs[ref.rsplit("/", 1)[1]]))
            return {k: put(v) for k, v in node.items()}
        if isinstance(node, list):
            return [put(v) for v in node]
        return node

    out: dict[str, Any] = put(schema)
    return out


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def openapi_paths() -> dict[str, Any]:
    """:data:`OPENAPI_PATHS` with each write route's JSON body schema (built from its models).

    Built when the server starts (the models' schemas are not needed before): ``POST
    /api/memory/records`` takes a record to save, ``POST /api/memory/changes`` the changes and an
    optional base revision, ``PUT /api/memory/core`` the core topic's text and its base revision,
    ``POST /api/memory/preview`` the Markdown to render.
    """
    text = {"type": "string"}
    bodies = {
        ("/api/memory/records", "post"): _inline(_Save.model_json_schema()),
        ("/api/memory/changes", "post"): _inline(_Changes.model_json_schema()),
        ("/api/memory/core", "put"): {
            "type": "object",
            "properties": {"text": text, "revision": {"type": "integer"}},
            "required": ["text", "revision"],
        },
        ("/api/memory/preview", "post"): {
            "type": "object",
            "properties": {"text": text},
            "required": ["text"],
        },
    }
    paths = {path: {m: dict(op) for m, op in ops.items()} for path, ops in OPENAPI_PATHS.items()}
    for (path, method), schema in bodies.items():
        paths[path][method]["requestBody"] = _body(schema)
    return paths

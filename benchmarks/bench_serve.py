"""``sessiongraph serve``: server time of a session's page and of each API route.

Subjects: requests go through the whole ASGI application (the token check, routing, the
endpoint, JSON or HTML rendering), called in-process on one event loop, so the figures are server
time without the network or a client library's overhead.

* the page of a 2,359-node forked session (a side branch every 100 nodes, a tail fork at the head),
  against its floor: laying the session out and drawing the SVG alone (:mod:`graph.drawing`);
* every API route on a store whose session has 1e5 nodes (1e4 in quick mode) and a memory workspace
  of 200 records, against the floor of the HTTP stack: ``GET /api/openapi.json`` (a cached document).
  ``/api/sessions/{id}/graph`` lays the whole session out, so it is timed on the 2,359-node session;
  ``POST /api/memory/changes`` is timed apart (a write invalidates the answers the server keeps per
  workspace revision and per session index).

Targets: the page under 300 ms, each API route's median (p50) under 5 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncio  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402
from _gen import build_forked, finish_build  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402
from graph.drawing import picture, to_svg  # noqa: E402
from graph.server import ServerContext, create_app  # noqa: E402
from memory import ChangeSet, CreateRecord, Destination, MemoryWorkspace, SourceRef  # noqa: E402
from memory.web import extension  # noqa: E402

TOKEN = "bench"
PAGE_NODES = 2_280  # + 69 side-branch nodes + 10 tail nodes = 2,359
RECORDS = 200


def _workspace(directory: Path, store: SessionStore, session_id: str) -> Path:
    path = directory / "ws"
    ws = MemoryWorkspace(path)
    if not ws.records():
        nodes = store.branch(session_id)[: RECORDS * 2]
        sources = ws.archive([n for n in nodes if n.text][:RECORDS])
        changes = [
            CreateRecord(
                content=f"Fact {i}: {s.text[:80]}",
                sources=(SourceRef(source=s.id, label=f"turn {i}", snippet=s.text[:40]),),
                destination=Destination(topic_path="core" if i < 10 else f"projects/p{i % 7}"),
                time=f"2025-0{1 + i % 9}-1{i % 10}",
            )
            for i, s in enumerate(sources)
        ]
        for start in range(0, len(changes), 50):
            ws.apply(ChangeSet(changes=tuple(changes[start : start + 50])))
    ws.close()
    return path


class Caller:
    """Calls an ASGI application directly: one request, the status and the body."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        raw = b"" if body is None else orjson.dumps(body)
        route, _, query = path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": route,
            "raw_path": route.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1:8765"),
                (b"authorization", f"Bearer {TOKEN}".encode()),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(raw)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8765),
        }
        sent = False
        out: dict[str, Any] = {"status": 0, "body": []}

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
            elif message["type"] == "http.response.body":
                out["body"].append(message.get("body", b""))

        self.loop.run_until_complete(self.app(scope, receive, send))
        return out["status"], b"".join(out["body"])


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the serve benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    big = 1_000 if args.smoke else 10_000 if args.quick else 100_000
    bench = Bench("sessiongraph serve", args.quick, args.repeats)
    with scratch_dir(args.dir) as directory:
        with bench.timed("generate"):
            store = SessionStore(directory / f"serve-{big}.db")
            if not store.sessions():
                build_forked(store, "page", PAGE_NODES)
                build_forked(store, "big", big)
                finish_build(store)
            ws_path = _workspace(directory, store, "big")
        page_nodes = len(store.index("page"))
        ext = extension(ServerContext(store), workspace=ws_path)
        call = Caller(create_app(store, token=TOKEN, extensions=[ext]))

        def get(path: str) -> None:
            status, body = call("GET", path)
            assert status == 200, (path, status, body[:200])

        session = store.session("page")
        bench.compare(
            "session page",
            page_nodes,
            [
                Alt("GET /sessions/{id}", lambda: get("/sessions/page")),
                Alt("floor: picture + to_svg", lambda: to_svg(picture(store, session))),
            ],
        )
        with MemoryWorkspace(ws_path) as w:
            rid = w.records("projects/p1")[0].id
            cited = w.record(rid).citations
        head = store.session("big").head
        flip = [0]

        def change() -> None:
            flip[0] ^= 1
            body = {
                "memory_changes": [
                    {
                        "op": "update_record",
                        "memory_id": rid,
                        "content": f"Fact, version {flip[0]}",
                        "sources": [
                            {"source": ci.source, "label": ci.label, "snippet": ci.snippet}
                            for ci in cited
                        ],
                    }
                ]
            }
            status, out = call("POST", "/api/memory/changes", body)
            assert status == 200, out[:200]

        routes = {
            "floor: GET /api/openapi.json": lambda: get("/api/openapi.json"),
            "GET /api/sessions": lambda: get("/api/sessions"),
            "GET /api/sessions/{id}": lambda: get("/api/sessions/big"),
            "GET /api/nodes/{id}": lambda: get(f"/api/nodes/{head}"),
            "GET /api/lookup/sessions": lambda: get("/api/lookup/sessions"),
            "GET /api/lookup/sessions/{id}": lambda: get("/api/lookup/sessions/big"),
            "GET .../transcript?count=30": lambda: get(
                "/api/lookup/sessions/big/transcript?count=30"
            ),
            "GET .../latest": lambda: get("/api/lookup/sessions/big/latest"),
            "GET /api/memory/records/{id}": lambda: get(f"/api/memory/records/{rid}"),
            "GET /api/memory/search?q=": lambda: get("/api/memory/search?q=turn+fact"),
            "GET /api/memory/core": lambda: get("/api/memory/core"),
            "GET /api/memory/recent": lambda: get("/api/memory/recent"),
            "GET /api/memory/topics": lambda: get("/api/memory/topics"),
            "GET /api/memory/timeline": lambda: get("/api/memory/timeline"),
            "GET /api/memory/records (200)": lambda: get("/api/memory/records"),
        }
        size = len(store.index("big"))
        results = bench.compare("API route", size, [Alt(n, f) for n, f in routes.items()])
        # a write changes the revision the memory answers are kept under: timed apart
        results += bench.compare(
            "API route (write)", size, [Alt("POST /api/memory/changes (update)", change)]
        )
        bench.compare(
            "API route (layout)",
            page_nodes,
            [Alt("GET /api/sessions/{id}/graph", lambda: get("/api/sessions/page/graph"))],
        )
        call.loop.close()
        store.close()
    bench.target(
        f"session page of {page_nodes} nodes (ms)",
        bench.get("session page", "GET /sessions/{id}", page_nodes).median * 1000,
        "<=",
        300,
        "ms",
    )
    for r in results:
        if not r.name.startswith("floor"):
            bench.target(f"{r.name} p50 (ms)", r.median * 1000, "<=", 5, "ms")
    return bench.finish(args.json)


if __name__ == "__main__":
    main()

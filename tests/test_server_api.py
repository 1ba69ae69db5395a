"""`sessiongraph serve` through Starlette's test client: every route, its errors and the security rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from graph import MemorySessionStore, SessionStore
from graph.server import create_app
from graph.server.security import CONTENT_SECURITY_POLICY
from memory import MemoryWorkspace, caps
from tests.serverkit import SESSION, TOKEN, client, make_app, written_store


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionStore, Path]:
    return written_store(tmp_path_factory.mktemp("serve"))


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[TestClient, SessionStore, Path]]:
    """A client over its own store and workspace (for tests that write)."""
    store, ws = written_store(tmp_path)
    with client(make_app(store, ws)) as c:
        yield c, store, ws
    store.close()


@pytest.fixture
def api(setup: tuple[SessionStore, Path]) -> Iterator[TestClient]:
    store, ws = setup
    with client(make_app(store, ws)) as c:
        yield c


def error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert body["code"] == code
    assert body["message"]
    return body


def source_id(ws: Path) -> str:
    with MemoryWorkspace(ws) as w:
        return w.sources()[0].id


# ------------------------------------------------------------------ who may come in


def test_every_route_needs_the_token(setup: tuple[SessionStore, Path]) -> None:
    store, ws = setup
    bare = TestClient(make_app(store, ws))
    for path in ("/", "/api/sessions", "/memory", "/api/memory/core", "/static/app.css"):
        error(bare.get(path), 401, "TOKEN_REQUIRED")
    error(
        bare.get("/api/sessions", headers={"Authorization": "Bearer wrong"}), 401, "TOKEN_REQUIRED"
    )
    error(bare.get("/?token=wrong"), 401, "BAD_TOKEN")


def test_the_start_url_sets_a_cookie_that_lets_the_browser_in(
    setup: tuple[SessionStore, Path],
) -> None:
    store, ws = setup
    browser = TestClient(make_app(store, ws))
    r = browser.get(f"/memory?section=core&token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/memory?section=core"  # the token leaves the address bar
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    browser.cookies.set("sessiongraph_token", TOKEN)
    assert browser.get("/memory?section=core").status_code == 200
    assert browser.get("/api/sessions").status_code == 200


def test_a_foreign_host_is_refused(api: TestClient) -> None:
    error(api.get("/api/sessions", headers={"Host": "evil.example:8080"}), 403, "FOREIGN_HOST")
    assert api.get("/api/sessions", headers={"Host": "127.0.0.1:8765"}).status_code == 200
    assert api.get("/api/sessions", headers={"Host": "localhost:8765"}).status_code == 200
    error(api.get("/api/sessions", headers={"Host": "192.168.1.9:8765"}), 403, "FOREIGN_HOST")


def test_bound_beyond_loopback_ip_hosts_come_in_with_the_token(
    setup: tuple[SessionStore, Path],
) -> None:
    store, _ = setup
    app = create_app(store, token=TOKEN, extensions=[], ip_hosts=True)
    c = TestClient(app, headers={"Authorization": f"Bearer {TOKEN}", "Host": "192.168.1.9:8765"})
    assert c.get("/api/sessions").status_code == 200
    error(c.get("/api/sessions", headers={"Host": "rebind.example"}), 403, "FOREIGN_HOST")
    error(
        TestClient(app, headers={"Host": "192.168.1.9"}).get("/api/sessions"), 401, "TOKEN_REQUIRED"
    )


def test_writes_from_a_foreign_origin_are_refused(fresh: tuple[TestClient, Any, Path]) -> None:
    c, _, ws = fresh
    rid = c.get("/api/memory/records").json()[0]["id"]
    r = c.delete(f"/api/memory/records/{rid}", headers={"Origin": "http://evil.example"})
    error(r, 403, "FOREIGN_ORIGIN")
    assert c.get(f"/api/memory/records/{rid}").status_code == 200  # nothing was deleted
    # a browser's cookie alone, without an Origin, cannot write either
    cookie_only = TestClient(c.app, cookies={"sessiongraph_token": TOKEN})
    error(cookie_only.delete(f"/api/memory/records/{rid}"), 403, "ORIGIN_REQUIRED")
    same = cookie_only.delete(f"/api/memory/records/{rid}", headers={"Origin": "http://testserver"})
    assert same.status_code == 200


def test_every_response_carries_a_csp_without_inline_script(api: TestClient) -> None:
    for path in ("/", f"/sessions/{SESSION}", "/memory", "/api/sessions", "/api/nope"):
        r = api.get(path)
        csp = r.headers["content-security-policy"]
        assert csp == CONTENT_SECURITY_POLICY
        assert "unsafe-inline" not in csp and "script-src 'self'" in csp
        assert r.headers["x-frame-options"] == "DENY"
    html = api.get(f"/sessions/{SESSION}").text
    assert "<script>" not in html and " style=" not in html and "onclick" not in html


def test_transcript_and_memory_text_is_escaped(tmp_path: Path) -> None:
    store = MemorySessionStore()
    s = store.create_session("<script>alert('t')</script>")
    store.append(s.id, "<img src=x onerror=alert(1)>", role="user")
    ws_path = tmp_path / "ws"
    MemoryWorkspace(ws_path).close()
    c = client(make_app(store, ws_path))  # type: ignore[arg-type]
    page = c.get("/").text
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    graph_page = c.get(f"/sessions/{s.id}").text
    assert "<img src=x" not in graph_page and "&lt;img src=x onerror=alert(1)&gt;" in graph_page
    found = c.get("/?q=onerror").text
    assert "<img src=x" not in found and "<mark>onerror</mark>" in found


# ------------------------------------------------------------------ sessions


def test_sessions_newest_first_with_filters_and_caps(api: TestClient) -> None:
    rows = api.get("/api/sessions").json()
    assert [r["id"] for r in rows][0] == SESSION
    assert rows == sorted(rows, key=lambda r: r["updated_at"], reverse=True)
    assert len(api.get("/api/sessions?limit=1").json()) == 1
    assert [r["id"] for r in api.get("/api/sessions?q=backoff").json()] == [SESSION]
    assert api.get("/api/sessions?q=no-such-words-anywhere").json() == []
    found = api.get("/api/sessions?q=backoff").json()[0]
    assert "backoff" in found["hit"]["snippet"].lower() and found["hit"]["spans"]
    assert api.get("/api/sessions?runtime=claude-code").json()
    assert api.get("/api/sessions?runtime=codex").json() == []
    body = error(api.get("/api/sessions?limit=201"), 422, "OVER_CAP")
    assert body["cap"] == "MAX_SESSIONS_PAGE" and body["limit"] == 200
    error(api.get("/api/sessions?limit=lots"), 422, "MALFORMED")
    error(api.get("/api/sessions?since=yesterday"), 422, "MALFORMED")


def test_search_of_what_was_said(api: TestClient) -> None:
    hits = api.get("/api/search?q=tenacity").json()
    assert hits and {h["session_id"] for h in hits} == {SESSION}
    assert any(h["rewound"] for h in hits)  # the rewound branch was said too
    for h in hits:
        for start, end in h["spans"]:
            assert h["snippet"][start:end].lower().startswith("tenacity")
    assert api.get("/api/search", params={"q": '"unbalanced AND ( OR'}).status_code == 200
    assert api.get("/api/search?q=qqqzzz").json() == []
    assert len(api.get("/api/search?q=the&limit=1").json()) == 1
    error(api.get("/api/search?q=x&limit=1000"), 422, "OVER_CAP")
    error(api.get("/api/search?q=x&session=nope"), 404, "UNKNOWN_SESSION")
    body = error(api.get("/api/search", params={"q": "a" * 501}), 422, "OVER_CAP")
    assert body["cap"] == "MAX_QUERY_CHARS"


def test_one_session_links_its_spawns_both_ways(api: TestClient) -> None:
    parent = api.get(f"/api/sessions/{SESSION}").json()
    assert parent["stats"]["forks"] >= 1 and parent["stats"]["rewound"] == 2
    (child,) = parent["spawned"]
    back = api.get(f"/api/sessions/{child['id']}").json()
    assert back["parent_session"] == SESSION and back["spawned_from"] == child["spawned_from"]
    error(api.get("/api/sessions/no-such-session"), 404, "UNKNOWN_SESSION")


def test_graph_in_three_formats(api: TestClient) -> None:
    data = api.get(f"/api/sessions/{SESSION}/graph").json()
    rows = data["rows"]
    assert sum(r["head"] for r in rows) == 1
    assert sum(r["rewound"] for r in rows) == 2
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["covers"] == 11 and summary["cover_span"] is not None
    assert any(r["spawned"] for r in rows)
    assert data["lanes"] == 2 and data["folded"] >= 1
    svg = api.get(f"/api/sessions/{SESSION}/graph?format=svg")
    assert svg.headers["content-type"].startswith("image/svg+xml") and "<svg" in svg.text
    dot = api.get(f"/api/sessions/{SESSION}/graph?format=dot").text
    assert dot.startswith(f'digraph "{SESSION}"')
    error(api.get(f"/api/sessions/{SESSION}/graph?format=png"), 422, "MALFORMED")
    error(api.get("/api/sessions/nope/graph"), 404, "UNKNOWN_SESSION")


def test_one_node(api: TestClient) -> None:
    head = api.get(f"/api/sessions/{SESSION}").json()["head"]
    node = api.get(f"/api/nodes/{head}").json()
    assert node["id"] == head and node["head"] is True and node["text"]
    error(api.get("/api/nodes/nope"), 404, "UNKNOWN_NODE")


# ------------------------------------------------------------------ session look-up


def test_lookup_lists_at_most_30_newest_first(tmp_path: Path) -> None:
    store = MemorySessionStore()
    for i in range(35):
        s = store.create_session(f"s{i}")
        store.append(s.id, f"turn {i}", role="user")
    c = client(make_app(store, tmp_path / "ws"))  # type: ignore[arg-type]
    rows = c.get("/api/lookup/sessions").json()
    assert len(rows) == 30
    assert [r["title"] for r in rows] == [f"s{i}" for i in range(34, 4, -1)]


def test_lookup_transcript_window_is_clamped_with_totals(api: TestClient) -> None:
    base = f"/api/lookup/sessions/{SESSION}"
    assert api.get(base).json()["id"] == SESSION
    default = api.get(f"{base}/transcript").json()
    assert default["count"] == 10 and default["returned"] == 10
    assert default["total"] == default["returned"] + default["older"]
    assert api.get(f"{base}/transcript?count=100").json()["count"] == 30
    one = api.get(f"{base}/transcript?count=0").json()
    assert one["count"] == 1 and one["returned"] == 1
    older = api.get(f"{base}/transcript?count=2&before={one['messages'][0]['id']}").json()
    assert older["newer"] == 1 and older["returned"] == 2
    latest = api.get(f"{base}/latest").json()
    assert latest["id"] == one["messages"][0]["id"]
    error(api.get(f"{base}/transcript?count=x"), 422, "MALFORMED")
    error(api.get(f"{base}/transcript?before=nope"), 404, "UNKNOWN_NODE")
    error(api.get("/api/lookup/sessions/nope/latest"), 404, "UNKNOWN_SESSION")


def test_lookup_answers_follow_the_session_as_it_changes(
    fresh: tuple[TestClient, Any, Path],
) -> None:
    from memory.lookup import read_transcript

    c, store, _ = fresh
    base = f"/api/lookup/sessions/{SESSION}"
    first = c.get(f"{base}/transcript?count=3").json()
    direct = read_transcript(store, SESSION, 3)
    assert [m["id"] for m in first["messages"]] == [m.id for m in direct.messages]
    assert first["total"] == direct.total and first["note"] == direct.note
    before = c.get(f"{base}/transcript?count=2&before={first['messages'][0]['id']}").json()
    assert before == read_transcript(store, SESSION, 2, first["messages"][0]["id"]).model_dump(
        mode="json"
    ) | {"messages": before["messages"], "next_before": before["next_before"]}
    info = c.get(base).json()
    store.append(SESSION, "One more question.", role="user")
    after = c.get(f"{base}/transcript?count=3").json()
    assert after["total"] == first["total"] + 1
    assert after["messages"][-1]["text"] == "One more question."
    assert c.get(base).json()["messages"] == info["messages"] + 1
    assert c.get(f"/api/sessions/{SESSION}").json()["stats"]["nodes"] == 19


# ------------------------------------------------------------------ memory bank


def test_save_is_one_transaction_and_returns_the_persisted_row(
    fresh: tuple[TestClient, Any, Path],
) -> None:
    c, _, ws = fresh
    sid = source_id(ws)
    r = c.post(
        "/api/memory/records",
        json={
            "content": "The weather client retries with exponential backoff.",
            "topic": "projects/weather",
            "tags": ["retry"],
            "sources": [{"source": sid, "label": "retry", "snippet": "retries"}],
        },
    )
    assert r.status_code == 201, r.text
    row = r.json()
    assert row == c.get(f"/api/memory/records/{row['id']}").json()
    assert row["created_at"] == row["updated_at"]  # one timestamp
    assert [ci["source_id"] for ci in row["citations"]] == [sid]
    assert row["tags"] == ["retry"] and row["snippet"] == "retries"


def test_save_errors(fresh: tuple[TestClient, Any, Path]) -> None:
    c, _, ws = fresh
    sid = source_id(ws)
    before = c.get("/api/memory/records").json()
    long = "x" * (caps.MAX_RECORD_CHARS + 1)
    body = error(
        c.post(
            "/api/memory/records",
            json={"content": long, "sources": [{"source": sid, "label": "k"}]},
        ),
        422,
        "OVER_CAP",
    )
    assert "MAX_RECORD_CHARS" in body["message"]
    error(
        c.post(
            "/api/memory/records",
            json={"content": "ok", "sources": [{"source": "s-" + "0" * 32, "label": "k"}]},
        ),
        422,
        "UNKNOWN_SOURCE",
    )
    error(
        c.post("/api/memory/records", json={"content": "no sources", "sources": []}),
        422,
        "MALFORMED",
    )
    error(c.post("/api/memory/records", content=b"{not json"), 422, "MALFORMED")
    assert c.get("/api/memory/records").json() == before


def test_search_binds_its_query_and_no_match_is_an_empty_list(api: TestClient) -> None:
    hits = api.get("/api/memory/search?q=retry").json()
    assert hits and all("retry" in h["content"].lower() for h in hits)
    # FTS syntax in the words is bound as words (the terms are OR-ed, so the operator is one
    # that no record holds as a word).
    r = api.get("/api/memory/search", params={"q": 'zzz") NEAR qqq* --'})
    assert r.status_code == 200 and r.json() == [] and r.headers["x-total-count"] == "0"
    body = error(api.get("/api/memory/search?q=a&per_page=1000"), 422, "OVER_CAP")
    assert body["cap"] == "MAX_RESULTS_PER_PAGE"
    body = error(api.get("/api/memory/search", params={"q": "a" * 10_000}), 422, "OVER_CAP")
    assert body["cap"] == "MAX_QUERY_CHARS"


def test_delete_and_undo(fresh: tuple[TestClient, Any, Path]) -> None:
    c, _, _ = fresh
    rec = c.get("/api/memory/records").json()[0]
    gone = c.delete(f"/api/memory/records/{rec['id']}?grace=30").json()
    assert gone["undoable"] is True
    error(c.get(f"/api/memory/records/{rec['id']}"), 404, "UNKNOWN_RECORD")
    back = c.post(f"/api/memory/records/{rec['id']}/undo").json()
    assert back["id"] == rec["id"] and back["created_at"] == rec["created_at"]
    error(c.post(f"/api/memory/records/{rec['id']}/undo"), 404, "NOTHING_TO_UNDO")
    error(c.delete("/api/memory/records/m-nope"), 404, "UNKNOWN_RECORD")
    body = error(c.delete(f"/api/memory/records/{rec['id']}?grace=100000"), 422, "OVER_CAP")
    assert body["cap"] == "MAX_GRACE"


def test_memory_changes_in_one_transaction(fresh: tuple[TestClient, Any, Path]) -> None:
    c, _, ws = fresh
    sid = source_id(ws)
    core0 = c.get("/api/memory/core").json()
    records = c.get("/api/memory/records").json()
    first, second = records[0], records[1]
    r = c.post(
        "/api/memory/changes",
        json={
            "revision": core0["revision"],
            "memory_changes": [
                {
                    "op": "create_record",
                    "content": "Prefer hand-rolled retries over new dependencies.",
                    "sources": [{"source": sid, "label": "preference"}],
                    "destination": {"topic_path": "core", "position": "end"},
                },
                {
                    "op": "update_record",
                    "memory_id": first["id"],
                    "content": first["content"] + " (checked)",
                    "sources": [
                        {"source": ci["source_id"], "label": ci["label"], "snippet": ci["snippet"]}
                        for ci in first["citations"]
                    ],
                },
                {
                    "op": "move_records",
                    "memory_ids": [second["id"]],
                    "destination": {"topic_path": "projects/weather", "position": "start"},
                },
            ],
        },
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["revision"] == core0["revision"] + 1 and out["memory_committed"] is True
    (created,) = out["record_ids"]["created"]
    assert out["record_ids"]["updated"] == [first["id"]]
    assert out["record_ids"]["moved"] == [second["id"]]
    assert "topics/core.md" in out["changed_files"] and "core.md" in out["changed_files"]
    assert "topics/projects/weather.md" in out["changed_files"]
    assert out["citation_ids"][created] == [f"{created}-1"]
    core = c.get("/api/memory/core").json()
    assert "Prefer hand-rolled retries" in core["effective"]

    # stale revision: refused, nothing changes
    stale = c.post(
        "/api/memory/changes",
        json={
            "revision": core0["revision"],
            "memory_changes": [{"op": "delete_record", "memory_id": created}],
        },
    )
    error(stale, 409, "STALE_REVISION")
    # unknown id: 404, and a refused transaction changes nothing
    unknown = c.post(
        "/api/memory/changes",
        json={"memory_changes": [{"op": "delete_record", "memory_id": "m-" + "0" * 32}]},
    )
    error(unknown, 404, "UNKNOWN_RECORD")
    assert c.get("/api/memory/core").json()["revision"] == out["revision"]
    error(c.post("/api/memory/changes", json={"memory_changes": []}), 422, "MALFORMED")
    error(
        c.post("/api/memory/changes", json={"memory_changes": [{"op": "merge_records"}]}),
        422,
        "MALFORMED",
    )
    many = [{"op": "delete_record", "memory_id": created}] * (caps.MAX_CHANGES_PER_TRANSACTION + 1)
    body = error(c.post("/api/memory/changes", json={"memory_changes": many}), 422, "OVER_CAP")
    assert body["cap"] == "MAX_CHANGES_PER_TRANSACTION"


def test_core_shows_the_effective_block_and_saves_with_compare_and_set(
    fresh: tuple[TestClient, Any, Path],
) -> None:
    c, _, ws = fresh
    sid = source_id(ws)
    c.post(
        "/api/memory/records",
        json={
            "content": "Speak plainly.",
            "topic": "core",
            "sources": [{"source": sid, "label": "style"}],
        },
    )
    core = c.get("/api/memory/core").json()
    assert (
        core["topic"] == "core"
        and core["inject"] is True
        and core["budget"] == caps.CORE_TOKEN_BUDGET
    )
    assert "Speak plainly." in core["canonical"] and "Speak plainly." in core["effective"]
    assert core["rendered"] == core["effective"] and 0 < core["tokens"] <= core["budget"]
    assert {"content", "size", "mtime", "left_out", "revision"} <= core.keys()

    edited = core["canonical"].replace("Speak plainly.", "Speak plainly and briefly.")
    saved = c.put("/api/memory/core", json={"text": edited, "revision": core["revision"]})
    assert saved.status_code == 200, saved.text
    assert saved.json()["revision"] == core["revision"] + 1
    assert "briefly" in c.get("/api/memory/core").json()["effective"]

    stale = c.put(
        "/api/memory/core", json={"text": core["canonical"], "revision": core["revision"]}
    )
    body = error(stale, 409, "STALE_REVISION")
    assert body["expected"] == core["revision"] and body["got"] == core["revision"] + 1
    assert "briefly" in c.get("/api/memory/core").json()["canonical"]  # nothing written
    emptied = c.put(
        "/api/memory/core", json={"text": "# core\n", "revision": saved.json()["revision"]}
    )
    error(emptied, 422, "RECORD_LOST")  # records go by delete (undoable), never by a dropped block
    assert "briefly" in c.get("/api/memory/core").json()["canonical"]
    error(c.put("/api/memory/core", json={"text": "x"}), 422, "MALFORMED")


def test_core_with_injection_off_injects_nothing(setup: tuple[SessionStore, Path]) -> None:
    store, ws = setup
    c = client(make_app(store, ws, {"memory.core.inject": "false"}))
    core = c.get("/api/memory/core").json()
    assert core["inject"] is False and core["effective"] == "" and core["tokens"] == 0
    assert "Injection is off" in c.get("/memory?section=core").text


def test_topics_timeline_recent_and_preview(api: TestClient) -> None:
    tree = api.get("/api/memory/topics").json()
    (folder,) = tree["folders"]
    assert folder["name"] == "sessions" and folder["count"] == 5
    topic = folder["topics"][0]["topic"]
    one = api.get(f"/api/memory/topics/{topic}").json()
    assert (
        one["text"].startswith(f"# {topic}") and "<sup" in one["html"] and "^m-" not in one["html"]
    )
    error(api.get("/api/memory/topics/no/such"), 404, "UNKNOWN_TOPIC")
    (year,) = api.get("/api/memory/timeline").json()
    assert (
        year["year"] == "2025"
    )  # the day the turns were said, not the day the views were rendered
    assert year["months"][0]["days"][0]["date"] == "2025-11-03"
    recent = api.get("/api/memory/recent")
    assert recent.headers["x-recent-limit"] == "50"
    body = recent.json()
    assert body["count"] == 5 and body["limit"] == 50
    stamps = [r["created_at"] for r in body["records"]]
    assert stamps == sorted(stamps, reverse=True)
    html = api.post("/api/memory/preview", json={"text": "a [^x]\n\n[^x]: note"}).json()["html"]
    assert '<sup class="footnote-ref">' in html and "[1]" in html
    error(api.post("/api/memory/preview", json={}), 422, "MALFORMED")


def test_errors_are_json_and_the_schema_lists_every_api_route(api: TestClient) -> None:
    error(api.get("/api/nope"), 404, "NOT_FOUND")
    error(api.post("/api/sessions"), 405, "METHOD_NOT_ALLOWED")
    schema = api.get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    app = api.app
    paths = {
        r.path.replace(":path}", "}")
        for r in app.routes  # type: ignore[attr-defined]
        if isinstance(r, Route) and r.path.startswith("/api/")
    }
    assert paths <= set(schema["paths"]), paths - set(schema["paths"])


def test_the_server_without_extensions_serves_sessions_only() -> None:
    store = MemorySessionStore()
    c = TestClient(create_app(store, token=TOKEN, hosts=["testserver"], extensions=[]))
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    assert c.get("/").status_code == 200
    error(c.get("/api/memory/core"), 404, "NOT_FOUND")

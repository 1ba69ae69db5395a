"""The OpenAPI document says what each route accepts: its numbers' bounds and its JSON bodies.

A client generated from ``/api/openapi.json`` (or a person reading it) sent values the routes
refused: ``/api/search`` refuses ``limit=0`` and a negative ``offset``, the memory search a
``page`` or ``per_page`` below 1, ``/api/memory/recent`` a ``limit`` outside 1..500 and a delete a
negative ``grace``, none of which the document said; and no write route described its body. Every
integer or number parameter's bounds are now declared and checked against the route (the bound
itself answers, one past it is 422), a parameter the route refuses below a value declares that
minimum, and every write route has a JSON body schema whose required fields the route requires.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.serverkit import SESSION, client, make_app, written_store


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    store, ws = written_store(tmp_path_factory.mktemp("openapi"))
    return client(make_app(store, ws))


@pytest.fixture(scope="module")
def schema(api: TestClient) -> dict[str, Any]:
    doc: dict[str, Any] = api.get("/api/openapi.json").json()
    return doc


def _url(api: TestClient, path: str) -> str:
    """The path with real ids; a record of its own for each call (a DELETE removes it)."""
    if "{record_id}" in path:
        saved = api.post(
            "/api/memory/records",
            json={
                "content": "Probe record.",
                "sources": [{"source": "", "label": "l", "snippet": "s"}],
            },
        )
        assert saved.status_code == 201, saved.text
        path = path.replace("{record_id}", saved.json()["id"])
    return path.replace("{session_id}", SESSION).replace("{topic}", "notes")


def _numbers(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            for p in op.get("parameters", []):
                if p["in"] == "query" and p["schema"].get("type") in ("integer", "number"):
                    out.append((method, path, p))
    return out


def _call(api: TestClient, method: str, path: str, name: str, value: object) -> int:
    r = api.request(method.upper(), _url(api, path), params={name: str(value)})
    return r.status_code


def test_every_declared_bound_is_the_routes_bound(api: TestClient, schema: dict[str, Any]) -> None:
    checked = 0
    for method, path, p in _numbers(schema):
        s, name = p["schema"], p["name"]
        if "minimum" in s:
            assert _call(api, method, path, name, s["minimum"]) < 400, (path, name, "minimum")
            assert _call(api, method, path, name, s["minimum"] - 1) == 422, (path, name, "below")
            checked += 1
        if "maximum" in s:
            assert _call(api, method, path, name, s["maximum"]) < 400, (path, name, "maximum")
            assert _call(api, method, path, name, s["maximum"] + 1) == 422, (path, name, "above")
            checked += 1
    assert checked >= 12


@pytest.mark.parametrize("value", [-1, 0], ids=["minus-one", "zero"])
def test_a_value_the_route_refuses_is_below_a_declared_minimum(
    api: TestClient, schema: dict[str, Any], value: int
) -> None:
    for method, path, p in _numbers(schema):
        if _call(api, method, path, p["name"], value) == 422:
            assert value < p["schema"].get("minimum", value), (method, path, p["name"], value)


WRITES = [
    (
        "post",
        "/api/memory/records",
        {"content": "A record.", "sources": [{"source": "", "label": "l", "snippet": "s"}]},
    ),
    ("post", "/api/memory/changes", None),
    ("put", "/api/memory/core", None),
    ("post", "/api/memory/preview", {"text": "*hi*"}),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_every_write_route_describes_its_body(
    api: TestClient, schema: dict[str, Any], method: str, path: str, body: dict[str, Any] | None
) -> None:
    op = schema["paths"][path][method]
    body_schema = op["requestBody"]["content"]["application/json"]["schema"]
    assert op["requestBody"]["required"] is True
    required = body_schema["required"]
    assert required, path
    if body is None:
        return
    assert api.request(method.upper(), path, json=body).status_code < 400
    for name in required:
        partial = {k: v for k, v in body.items() if k != name}
        assert api.request(method.upper(), path, json=partial).status_code == 422, (path, name)


def test_the_bodies_schemas_resolve(schema: dict[str, Any]) -> None:
    """Every ``$ref`` in the document names a schema it holds."""
    defined = set(schema["components"]["schemas"])
    refs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in defined, ref


def test_every_declared_enum_is_what_the_route_accepts(
    api: TestClient, schema: dict[str, Any]
) -> None:
    """Before, ``runtime`` was declared a free string while the routes refuse all but three."""
    checked = 0
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            for p in op.get("parameters", []):
                if p["in"] != "query" or p["name"] != "runtime":
                    continue
                values = p["schema"]["enum"]
                assert values, (path, "runtime enum")
                for value in values:
                    assert _call(api, method, path, "runtime", value) < 400, (path, value)
                assert _call(api, method, path, "runtime", "cursor") == 422, (path, "unlisted")
                checked += 1
    assert checked == 2

"""The write routes' bodies: a wrong ``op`` is named as such, a revision is an integer, not a boolean.

``POST /api/memory/changes`` with ``{"op": "create_recrod"}`` answered with the first of 13
mismatches against every operation's fields (``memory_changes.0.CreateRecord.op: Input should be
'create_record'``); it now names the op it does not know and the ones it does. A ``revision`` of
``true`` was taken as revision 1 by both ``/api/memory/changes`` and ``PUT /api/memory/core`` (a
stale draft could pass the compare-and-set), and ``/api/memory/changes`` took ``1.0`` and ``"1"``
as 1 too; each is refused as not an integer, as the OpenAPI document says.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.serverkit import client, make_app, written_store


@pytest.fixture
def api(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    store, ws = written_store(tmp_path_factory.mktemp("bodies"))
    return client(make_app(store, ws))


@pytest.mark.parametrize("op", ["create_recrod", "rewrite_topic", "", None])
def test_an_unknown_op_is_named(api: TestClient, op: object) -> None:
    r = api.post("/api/memory/changes", json={"memory_changes": [{"op": op, "memory_id": "m-0"}]})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert message.startswith("memory_changes.0") and "op" in message
    assert "create_record" in message and "delete_record" in message
    assert r.json()["error"]["errors"] == 1


@pytest.mark.parametrize("revision", [True, 1.0, "1"], ids=["true", "float", "string"])
def test_a_revision_that_is_no_integer_is_refused(api: TestClient, revision: object) -> None:
    at = api.get("/api/memory/core").json()
    with_base = {"revision": revision}
    changes = {"memory_changes": [{"op": "delete_record", "memory_id": "m-0"}], **with_base}
    r = api.post("/api/memory/changes", json=changes)
    assert r.status_code == 422 and "revision" in r.json()["error"]["message"], r.text
    r = api.put("/api/memory/core", json={"text": at["canonical"], **with_base})
    assert r.status_code == 422 and "revision" in r.json()["error"]["message"], r.text
    assert api.get("/api/memory/core").json()["revision"] == at["revision"]

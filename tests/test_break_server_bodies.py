"""The write routes' bodies: a wrong ``op`` is named as such, a revision is an integer, not a boolean.

``POST /api/memory/changes`` with ``{"op": "create_recrod"}`` answered with the first of 13
mismatches against every operation's fields (``memory_changes.0.CreateRecord.op: Input should be
'create_record'``); it now names the op it does not know and the ones it does. A ``revision`` of
``true`` was taken as revision 1 by both ``/api/memory/changes`` and ``PUT /api/memory/core`` (a
stale draft could pass the compare-and-set); it is refused as not an integer.
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

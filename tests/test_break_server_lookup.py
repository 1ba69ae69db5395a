"""The look-up API clamps a transcript's count whatever its size, as the command line and MCP do.

``count`` is clamped to 1..30 (``sessiongraph read --count``, the ``read_transcript`` tool), but
``/api/lookup/sessions/{id}/transcript?count=`` refused a count past 64 bits with ``422
OUT_OF_RANGE`` while it clamped ``count=2**62``: one more digit turned the documented clamp into
an error. Every integer is clamped (and the note says so); what is not an integer is ``422
MALFORMED``, an unknown session or node 404, a node off the head's branch 422. The memory panel's
``delay`` is clamped the same way, whatever its digits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.serverkit import SESSION, client, make_app, written_store


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    store, ws = written_store(tmp_path_factory.mktemp("lookup"))
    return client(make_app(store, ws))


URL = f"/api/lookup/sessions/{SESSION}/transcript"


@pytest.mark.parametrize(
    ("count", "window"),
    [
        ("0", 1),
        ("-5", 1),
        (str(-(10**30)), 1),
        ("31", 30),
        (str(2**62), 30),
        (str(2**64), 30),
        ("9" * 400, 30),
        ("", 10),
    ],
    ids=["zero", "negative", "huge-negative", "31", "2**62", "2**64", "400-digits", "empty"],
)
def test_every_integer_count_is_clamped(api: TestClient, count: str, window: int) -> None:
    r = api.get(URL, params={"count": count})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["count"] == window and data["returned"] == min(window, data["total"])
    if count and int(count) != window:
        assert f"clamped to {window}" in data["note"]


@pytest.mark.parametrize("count", ["ten", "1.5", "1e3", "0x10"])
def test_a_count_that_is_no_integer_is_malformed(api: TestClient, count: str) -> None:
    r = api.get(URL, params={"count": count})
    assert r.status_code == 422 and r.json()["error"]["code"] == "MALFORMED"
    assert "count" in r.json()["error"]["message"]


def test_unknown_ids_and_windows_past_the_end(api: TestClient, tmp_path: Path) -> None:
    assert api.get("/api/lookup/sessions/nope/transcript").status_code == 404
    r = api.get(URL, params={"before": "nope"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "UNKNOWN_NODE"
    first = api.get(URL, params={"count": "30"}).json()["messages"][0]["id"]
    r = api.get(URL, params={"before": first})
    assert r.status_code == 200 and r.json()["returned"] == 0 and r.json()["next_before"] is None


@pytest.mark.parametrize(
    ("delay", "ms"),
    [("²", 5000), ("9" * 5000, 30_000), ("0" * 5000 + "700", 700), ("100", 500), ("x", 5000)],
    ids=["superscript-two", "5000-digits", "leading-zeros", "below", "not-a-number"],
)
def test_the_panels_delay_is_clamped_or_defaulted(api: TestClient, delay: str, ms: int) -> None:
    """``/memory/panel?delay=``: "²" passed ``str.isdigit`` and failed ``int`` (500), as did a
    number past Python's 4300-digit conversion limit."""
    r = api.get("/memory/panel", params={"delay": delay})
    assert r.status_code == 200, r.text
    assert f'data-delay-ms="{ms}"' in r.text

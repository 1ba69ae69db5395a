"""A runtime filter that names no runtime is refused on every surface, naming the known ones.

The CLI's ``--runtime`` refused one already; ``/api/sessions?runtime=``, ``/api/search?runtime=``
and the MCP tools ``list_sessions`` and ``search_sessions`` took any value and matched nothing,
so a typo read as "no sessions of that runtime".
"""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from starlette.testclient import TestClient

from graph.server.app import create_app
from graph.store.base import RUNTIMES, unknown_runtime
from graph.store.in_memory import MemorySessionStore
from memory.mcp_server import SessionTools

__all__: list[str] = []


def test_unknown_runtime_names_the_closest_and_every_runtime() -> None:
    assert unknown_runtime(None) is None
    assert all(unknown_runtime(r) is None for r in RUNTIMES)
    why = unknown_runtime("claude")
    assert why is not None and "did you mean claude-code" in why
    assert all(r in why for r in RUNTIMES)


@pytest.mark.parametrize("route", ["/api/sessions", "/api/search?q=x&"], ids=["sessions", "search"])
def test_the_api_refuses_an_unknown_runtime_naming_the_known_ones(route: str) -> None:
    store = MemorySessionStore()
    store.create_session(metadata={"runtime": "codex"})
    app = create_app(store, token="t", hosts=["testserver"], extensions=[])
    with TestClient(app) as api:
        sep = "" if route.endswith("&") else "?"
        ok = api.get(f"{route}{sep}runtime=codex", headers={"Authorization": "Bearer t"})
        assert ok.status_code == 200
        r = api.get(f"{route}{sep}runtime=codx", headers={"Authorization": "Bearer t"})
        assert r.status_code == 422
        assert "known runtimes: claude-code, pi, codex" in r.text and "codex?" in r.text


@pytest.mark.parametrize("tool", ["list_sessions", "search_sessions"])
def test_the_mcp_tools_refuse_an_unknown_runtime_naming_the_known_ones(tool: str) -> None:
    tools = SessionTools(MemorySessionStore())
    args = {"query": "x"} if tool == "search_sessions" else {}
    getattr(tools, tool)(runtime="codex", **args)
    with pytest.raises(ToolError, match="known runtimes: claude-code, pi, codex"):
        getattr(tools, tool)(runtime="Codex", **args)

"""``sessiongraph mcp`` as a real subprocess, talked to with the MCP SDK's own client.

Over stdio: the tool list, every tool on a store built from the example transcript (and a corpus
transcript when the shared corpus is present), the bounds (count 0 and 31 clamped, at most 30
sessions), unknown ids as tool errors with their message, a refused secret, a ``memory_save`` then
``memory_search`` round trip, ``memory_update`` through the validated transaction, the core block as
a resource and a prompt, and the refresh from a followed folder before an answer. Over ``--http``: a
request without the token is refused, with it (query or bearer header) the tools answer.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from graph.importers import import_paths
from graph.store.sqlite import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
EXAMPLE_SESSION = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
SECRET = "sk-ant-api03-" + "Zq8vR2mK4tW9xL1c" * 4 + "AA"
TOOLS = {
    "list_sessions",
    "open_session",
    "read_transcript",
    "latest_message",
    "search_sessions",
    "memory_search",
    "memory_get",
    "memory_save",
    "memory_update",
    "memory_status",
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    return env | {"HOME": str(tmp_path / "home")}


def _command(db: Path, ws: Path, *args: str) -> list[str]:
    return [
        "-c",
        "from graph.cli.commands import main; main()",
        "--db",
        str(db),
        "mcp",
        "--workspace",
        str(ws),
        *args,
    ]


def _store_of(tmp_path: Path, *files: Path) -> Path:
    db = tmp_path / "store.db"
    store = SessionStore(db)
    report = import_paths(store, list(files))
    store.close()
    assert not report.failed
    return db


def _stdio(
    tmp_path: Path, db: Path, *args: str
) -> Callable[[Callable[[Client], Awaitable[None]]], None]:
    params = StdioServerParameters(
        command=sys.executable, args=_command(db, tmp_path / "ws", *args), env=_env(tmp_path)
    )

    def run(scenario: Callable[[Client], Awaitable[None]]) -> None:
        async def main() -> None:
            async with Client(params, read_timeout_seconds=60) as client:
                await scenario(client)

        anyio.run(main)

    return run


async def _ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def _error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


def test_every_tool_over_stdio_on_the_example(tmp_path: Path) -> None:
    db = _store_of(tmp_path, EXAMPLE)

    async def scenario(client: Client) -> None:
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        for tool in listed:
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.output_schema is not None, tool.name
        save = next(t for t in listed if t.name == "memory_save")
        assert "confirm" in (save.description or "")

        sessions = await _ok(client, "list_sessions")
        by_id = {s["id"]: s for s in sessions["sessions"]}
        assert EXAMPLE_SESSION in by_id and by_id[EXAMPLE_SESSION]["runtime"] == "claude-code"
        spawned = [s for s in by_id.values() if s["parent_session"] == EXAMPLE_SESSION]
        assert len(by_id) == 2 and len(spawned) == 1  # the sub-agent's sidechain
        assert (await _ok(client, "list_sessions", limit=500))["limit"] == 30
        assert (await _ok(client, "list_sessions", runtime="codex"))["sessions"] == []
        assert (await _ok(client, "list_sessions", since="2030-01-01"))["sessions"] == []
        project = by_id[EXAMPLE_SESSION]["project"]
        assert project and (await _ok(client, "list_sessions", project=project))["returned"] >= 1
        assert (await _ok(client, "list_sessions", project="/nowhere"))["sessions"] == []
        assert "not a date" in await _error(client, "list_sessions", since="last tuesday")

        opened = await _ok(client, "open_session", session_id=EXAMPLE_SESSION[:8])
        assert opened["id"] == EXAMPLE_SESSION and opened["messages"] == 13
        assert "unknown session 'nope'" in await _error(client, "open_session", session_id="nope")

        window = await _ok(client, "read_transcript", session_id=EXAMPLE_SESSION)
        assert (window["count"], window["returned"], window["total"], window["older"]) == (
            10,
            10,
            13,
            3,
        )
        assert "3 older messages were not returned" in window["note"]
        older = await _ok(
            client,
            "read_transcript",
            session_id=EXAMPLE_SESSION,
            before=window["next_before"],
        )
        assert older["returned"] == 3 and older["next_before"] is None
        assert older["messages"][-1]["id"] != window["messages"][0]["id"]
        low = await _ok(client, "read_transcript", session_id=EXAMPLE_SESSION, count=0)
        assert (low["count"], low["returned"]) == (1, 1)
        assert "clamped to 1" in low["note"]
        high = await _ok(client, "read_transcript", session_id=EXAMPLE_SESSION, count=31)
        assert (high["count"], high["returned"], high["older"]) == (30, 13, 0)
        assert "clamped to 30" in high["note"]
        assert "unknown node 'zzz'" in await _error(
            client, "read_transcript", session_id=EXAMPLE_SESSION, before="zzz"
        )

        latest = await _ok(client, "latest_message", session_id=EXAMPLE_SESSION)
        assert latest["message"]["id"] == window["messages"][-1]["id"]
        assert latest["message"]["role"] == "assistant"

        refused = await _error(client, "memory_save", content=f"The deploy key is {SECRET}.")
        assert "secret" in refused and SECRET not in refused and SECRET[14:30] not in refused
        over = await _error(client, "memory_save", content="x" * 2001)
        assert "MAX_RECORD_CHARS" in over
        blank = await _error(client, "memory_save", content="one\n\ntwo paragraphs")
        assert "one paragraph" in blank
        untouched = await _ok(client, "memory_status")
        assert (untouched["records"], untouched["sources"], untouched["revision"]) == (0, 0, 0)

        cited = window["messages"][0]
        saved = await _ok(
            client,
            "memory_save",
            content="fetch_json retries with exponential backoff: delays 0.5, 1, 2, 4 and 8 seconds.",
            topic="projects/weather",
            tags=["retries"],
            citations=[
                {"session_id": EXAMPLE_SESSION, "node_id": cited["id"], "snippet": "backoff"}
            ],
        )
        (record_id,) = saved["created"]
        found = await _ok(client, "memory_search", query="exponential backoff")
        assert [r["record_id"] for r in found["records"]] == [record_id]
        (citation,) = found["records"][0]["citations"]
        assert (citation["session_id"], citation["node_id"]) == (EXAMPLE_SESSION, cited["id"])
        nothing = await _ok(client, "memory_search", query="kubernetes")
        assert nothing["records"] == [] and nothing["total"] == 0
        assert "nothing was found" in nothing["note"]

        plain = await _ok(client, "memory_save", content="The person prefers uv over pip.")
        got = await _ok(client, "memory_get", record_id=plain["created"][0])
        assert got["topic"] == "notes" and got["citations"][0]["label"] == "confirmed by the person"
        assert "no record" in (await _error(client, "memory_get", record_id="m-nope")).lower()

        updated = await _ok(
            client,
            "memory_update",
            memory_changes=[
                {
                    "op": "update_record",
                    "memory_id": record_id,
                    "content": "fetch_json retries five times with exponential backoff.",
                    "sources": [
                        {
                            "source": citation["source_id"],
                            "label": citation["label"],
                            "snippet": citation["snippet"],
                        }
                    ],
                }
            ],
        )
        assert updated["updated"] == [record_id]
        assert (await _ok(client, "memory_get", record_id=record_id))["content"].startswith(
            "fetch_json retries five times"
        )
        lost = await _error(
            client,
            "memory_update",
            memory_changes=[{"op": "delete_record", "memory_id": "m-" + "0" * 32}],
        )
        assert "m-" + "0" * 32 in lost

        status = await _ok(client, "memory_status")
        assert status["records"] == 2 and status["revision"] == 3
        assert status["pending_sessions"][0]["session_id"] == EXAMPLE_SESSION

        assert (await client.read_resource("memory://core.md")).contents[0].text == ""  # type: ignore[union-attr]
        await _ok(client, "memory_save", content="Answer in British English.", topic="core")
        block = (await client.read_resource("memory://core.md")).contents[0].text  # type: ignore[union-attr]
        assert block.startswith("<memory-context>") and "Answer in British English." in block
        prompt = await client.get_prompt("memory_core")
        assert "Answer in British English." in prompt.messages[0].content.text  # type: ignore[union-attr]

        hits = await _ok(client, "search_sessions", query="exponential backoff")
        assert hits["hits"] and hits["returned"] == len(hits["hits"])
        first = hits["hits"][0]
        assert first["session_id"] in by_id and "backoff" in first["snippet"].lower()
        start, end = first["spans"][0]
        assert first["snippet"][start:end].lower() in {"exponential", "backoff"}
        assert (await _ok(client, "search_sessions", query='"( NEAR* -'))["hits"] == []
        assert (await _ok(client, "search_sessions", query="kubernetes"))["note"].startswith("No ")
        only = await _ok(client, "search_sessions", query="backoff", runtime="codex")
        assert only["hits"] == []
        assert "unknown session" in await _error(
            client, "search_sessions", query="backoff", session_id="nope"
        )

    _stdio(tmp_path, db, "--no-follow")(scenario)


def test_a_corpus_transcript_over_stdio(tmp_path: Path, corpus: Path) -> None:
    transcript = corpus / "claude-code" / "ccl-dag-compact-after-rewind.jsonl"
    db = _store_of(tmp_path, EXAMPLE, transcript)

    async def scenario(client: Client) -> None:
        sessions = (await _ok(client, "list_sessions"))["sessions"]
        assert len(sessions) >= 2
        for s in sessions:
            window = await _ok(client, "read_transcript", session_id=s["id"], count=5)
            assert window["total"] == s["messages"]
            assert window["returned"] == min(5, s["messages"])
            assert window["older"] == max(0, s["messages"] - 5)
            if s["messages"]:
                latest = await _ok(client, "latest_message", session_id=s["id"])
                assert latest["message"]["id"] == window["messages"][-1]["id"]

    _stdio(tmp_path, db, "--no-follow")(scenario)


def test_the_server_imports_what_was_appended_before_it_answers(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    db = tmp_path / "store.db"
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    transcript = folder / "session.jsonl"
    transcript.write_text("".join(lines[:4]))

    async def scenario(client: Client) -> None:
        first = (await _ok(client, "list_sessions"))["sessions"][0]
        shutil.copyfile(EXAMPLE, transcript)
        again = (await _ok(client, "list_sessions"))["sessions"][0]
        assert first["messages"] < again["messages"] == 13

    _stdio(tmp_path, db, "--follow", str(folder))(scenario)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """A ``mcp --http`` server on a free port; its address as printed, connected to at once."""
    db = _store_of(tmp_path, EXAMPLE)
    proc = subprocess.Popen(
        [
            sys.executable,
            *_command(db, tmp_path / "ws", "--no-follow", "--http", "--port", "0"),
            "--token",
            "t0ken-for-tests",
        ],
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    printed = []
    try:
        for line in proc.stderr:  # ends if the command exits before printing its address
            printed.append(line)
            if line.startswith("sessiongraph mcp: http://"):
                break
        assert printed and "token=t0ken-for-tests" in printed[-1], "".join(printed)
        url = printed[-1].split(": ", 1)[1].split("?", 1)[0]
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # never a full pipe
        # no retry: the socket listens before the address is printed
        assert httpx2.get(url, timeout=30).status_code == 401
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        ("70000", "error: --port 70000: not a port number (0..65535)"),
        ("taken", "error: --host 127.0.0.1 --port {port}: cannot bind: Address already in use"),
    ],
)
def test_http_on_a_port_it_cannot_have_says_so_in_one_line(
    tmp_path: Path, port: str, expected: str
) -> None:
    db = _store_of(tmp_path, EXAMPLE)
    with contextlib.ExitStack() as stack:
        if port == "taken":
            holder = stack.enter_context(socket.socket())
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = str(holder.getsockname()[1])
        done = subprocess.run(
            [
                sys.executable,
                *_command(db, tmp_path / "ws", "--no-follow", "--http", "--port", port),
            ],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [expected.format(port=port)]


def test_http_needs_the_token(http_server: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx2.post(
            http_server,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", **headers},
        )
        assert refused.status_code == 401
        assert "token" in refused.json()["error"]
    assert httpx2.get(http_server + "?token=wrong").status_code == 401

    async def main() -> None:
        async with Client(http_server + "?token=t0ken-for-tests") as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            sessions = await _ok(client, "list_sessions")
            assert EXAMPLE_SESSION in {s["id"] for s in sessions["sessions"]}
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer t0ken-for-tests"}) as http:
            async with Client(streamable_http_client(http_server, http_client=http)) as client:
                latest = await _ok(client, "latest_message", session_id=EXAMPLE_SESSION)
                assert latest["message"]["role"] == "assistant"

    anyio.run(main)

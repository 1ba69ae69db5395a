"""Real model adapters against local HTTP servers that speak the providers' protocols.

The servers here are stand-ins written in this test: they answer OpenAI's ``POST /chat/completions``
and Anthropic's ``POST /v1/messages`` with the shapes those APIs document, and play a scripted model
that reads the batch's source ids from the prompt. No real model or network is involved. The adapters
under test are the official ``openai`` and ``anthropic`` SDKs wired by :mod:`memory.completion`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from graph import SessionStore
from memory import PROVIDER, FailureReason, MemoryWorkspace, WritePipeline
from memory.completion import ModelRequestError, writer_for
from memory.config import ConfigError, MemoryConfig
from memory.errors import WriterUnavailableError
from memory.writers import DigestWriter, ModelWriter

pytest.importorskip("openai")
pytest.importorskip("anthropic")

KEY = "sk-test-0123456789abcdef0123456789abcdef"


def changes_citing(prompt: str) -> str:
    """A scripted model's answer: one record citing every source id the prompt lists."""
    batch = prompt.split("Sources of this batch:", 1)[1]
    ids = [json.loads(line)["source"] for line in batch.splitlines() if line.startswith("{")]
    return json.dumps(
        {
            "changes": [
                {
                    "op": "create_record",
                    "content": "The user asked about deploying a flask service.",
                    "sources": [{"source": i, "label": "turn", "snippet": "deploy"} for i in ids],
                    "destination": {"topic_path": "projects/deploy", "headings": []},
                }
            ]
        }
    )


class Server:
    """A local server speaking one provider's protocol; ``behaviour`` decides each answer."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.behaviour = "ok"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                outer.answer(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if self.protocol == "openai" else "")

    def prompt_of(self, body: dict[str, Any]) -> str:
        return str(body["messages"][-1]["content"])

    def text_answer(self, text: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.protocol == "openai":
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
            }
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    def answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        b = self.behaviour
        status, payload = 200, b""
        if b == "ok":
            payload = json.dumps(
                self.text_answer(changes_citing(self.prompt_of(body)), body)
            ).encode()
        elif b == "not json changes":
            payload = json.dumps(self.text_answer("Sure! Here are some memories.", body)).encode()
        elif b == "garbage body":
            payload = b"<html>proxy error</html>"
        elif b == "slow":
            time.sleep(3)
            payload = json.dumps(self.text_answer("{}", body)).encode()
        elif b in ("429", "500", "401"):
            status = int(b)
            payload = json.dumps({"error": {"message": f"status {b}", "type": "error"}}).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    s = Server(request.param)
    yield s
    s.close()


def _setup(tmp_path: Path) -> tuple[SessionStore, MemoryWorkspace, str]:
    store = SessionStore(tmp_path / "g.db")
    s = store.create_session("deploy")
    store.append(s.id, "How should we deploy the flask service?", role="user")
    store.append(s.id, "Use gunicorn behind nginx.", role="assistant")
    return store, MemoryWorkspace(tmp_path / "ws"), s.id


def _writer(server: Server, timeout: float = 10.0) -> Callable[[], Any]:
    config = MemoryConfig(
        model=f"{server.protocol}:test-model", base_url=server.url, timeout=timeout
    )
    env = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    return lambda: writer_for(config, env=env)


def test_a_real_sdk_writes_memory_through_the_protocol(server: Server, tmp_path: Path) -> None:
    store, ws, sid = _setup(tmp_path)
    writer = _writer(server)()
    assert isinstance(writer, ModelWriter) and writer.name == f"{server.protocol}:test-model"
    assert WritePipeline(ws, store, writer).write(sid, force=True) is None
    (record,) = ws.records()
    assert "flask" in record.content
    assert store.pending(sid, PROVIDER, ws.id) == []
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert "How should we deploy the flask service?" in server.prompt_of(body)
    sent = server.headers[0]
    auth = sent.get("Authorization") or sent.get("authorization") or sent.get("x-api-key", "")
    assert KEY in auth  # the key travels to the server, and only there


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("429", FailureReason.WRITER_UNAVAILABLE),
        ("500", FailureReason.WRITER_UNAVAILABLE),
        ("garbage body", FailureReason.WRITER_UNAVAILABLE),
        ("slow", FailureReason.WRITER_UNAVAILABLE),
        ("not json changes", FailureReason.COMMIT_REJECTED),
        ("401", FailureReason.INTERNAL),
    ],
)
def test_failures_are_classified_and_mark_nothing(
    server: Server, tmp_path: Path, behaviour: str, reason: FailureReason
) -> None:
    store, ws, sid = _setup(tmp_path)
    server.behaviour = behaviour
    # Only the slow answer is meant to time out: the others get the default timeout, so a busy
    # machine's slow answer is not taken for the failure under test.
    writer = _writer(server, timeout=1.0 if behaviour == "slow" else 10.0)()
    failure = WritePipeline(ws, store, writer).write(sid, force=True)
    assert failure is not None and failure.reason is reason
    assert failure.retryable is (reason is FailureReason.WRITER_UNAVAILABLE)
    assert KEY not in failure.detail
    assert ws.records() == []
    assert len(store.pending(sid, PROVIDER, ws.id)) == 2
    if behaviour == "not json changes":
        assert len(server.requests) == 2  # the one repair attempt, then refused


def test_each_failure_kind_raises_the_typed_error(server: Server) -> None:
    impatient = _writer(server, timeout=1.0)().complete  # type: ignore[attr-defined]
    server.behaviour = "slow"
    with pytest.raises(WriterUnavailableError, match="timed out"):
        impatient("hello")
    server.behaviour = "401"
    with pytest.raises(ModelRequestError) as e:
        _writer(server)().complete("hello")  # type: ignore[attr-defined]
    assert e.value.status == 401 and KEY not in str(e.value)


def test_unreachable_server_is_retryable(tmp_path: Path) -> None:
    config = MemoryConfig(model="openai:m", base_url="http://127.0.0.1:9/v1", timeout=2)
    complete = writer_for(config, env={}).complete  # type: ignore[attr-defined]
    with pytest.raises(WriterUnavailableError, match="could not be reached"):
        complete("hello")


def test_keys_come_from_the_environment_only() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        writer_for(MemoryConfig(model="openai:gpt-4o-mini"), env={})
    with pytest.raises(ConfigError, match="MY_KEY"):
        writer_for(MemoryConfig(model="anthropic:claude", api_key_env="MY_KEY"), env={})
    assert isinstance(writer_for(MemoryConfig(), env={}), DigestWriter)
    local = writer_for(
        MemoryConfig(model="openai:llama3", base_url="http://127.0.0.1:9/v1"), env={}
    )
    assert isinstance(local, ModelWriter)  # a local OpenAI-compatible server needs no key
    with pytest.raises(ConfigError, match="expected digest"):
        writer_for(MemoryConfig(), model="ollama/llama3", env={})

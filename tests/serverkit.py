"""Shared set-up for the server tests: a store holding the example transcript, a written workspace."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph import SessionStore
from graph.importers import import_file
from graph.server import ServerContext, create_app
from memory import MemoryWorkspace, WritePipeline
from memory.web import extension

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
SESSION = "7d3c9a52-4f1e-4b8a-9c2d-1e5f6a7b8c90"
TOKEN = "test-token-0123456789"


def written_store(tmp: Path) -> tuple[SessionStore, Path]:
    """The example imported into ``tmp/s.db`` and written into the workspace ``tmp/ws``."""
    store = SessionStore(tmp / "s.db")
    import_file(store, EXAMPLE)
    ws = MemoryWorkspace(tmp / "ws")
    for s in store.sessions():
        assert WritePipeline(ws, store).write(s.id, force=True) is None
    ws.close()
    return store, tmp / "ws"


def make_app(
    store: SessionStore, workspace: Path, settings: dict[str, str] | None = None
) -> Starlette:
    ctx = ServerContext(store, settings or {})
    return create_app(
        store,
        token=TOKEN,
        hosts=["testserver"],
        extensions=[extension(ctx, workspace=workspace)],
        settings=settings,
    )


def client(app: Starlette) -> TestClient:
    """A client that sends the token as a header (programs' way in)."""
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


@contextmanager
def served(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port, in a thread; yield its base URL.

    The socket is bound before the thread starts, and the URL is yielded once uvicorn says it
    started (a bound of 60 s for a stuck start, not a speed check); the server stops on leaving.
    """
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    try:
        while not srv.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()

"""``sessiongraph mcp``: serve the session look-up and memory tools to an MCP client.

Registered on the ``sessiongraph`` application through the ``sessiongraph.cli`` entry-point group::

    sessiongraph [--db FILE] mcp [--workspace DIR|URL [--views DIR]] [--follow PATH]... [--no-follow]
    sessiongraph [--db FILE] mcp --http [--host 127.0.0.1] [--port 8765] [--token TOKEN]

Over stdio (the default) the client starts the command and talks on its stdin/stdout; nothing else is
written to stdout. With ``--http`` it serves streamable HTTP on ``http://HOST:PORT/mcp``, bound to
127.0.0.1 unless told otherwise (another interface prints a warning and still needs the token).
Every HTTP request must carry the token, as ``Authorization: Bearer TOKEN`` or as ``?token=TOKEN``;
the token is ``--token``, else ``$SESSIONGRAPH_TOKEN``, else a random one printed on stderr at start.
A request without it gets 401 and reaches no tool. The address is printed on stderr once the socket
listens, so a client that connects on reading it is answered (``--port 0`` takes any free port; the
printed address says which).

Before each tool call the server imports what was appended to the followed transcript folders: the
``--follow`` paths, else the runtimes' own folders (``~/.claude/projects``, ``~/.pi/agent/sessions``,
``~/.codex/sessions``); ``--no-follow`` reads the store as it is.

The workspace is found as for ``sessiongraph memory``: ``-w`` (a folder, or a ``postgresql://`` URL
of a shared store of record whose views go to ``--views DIR``), else ``$SESSIONGRAPH_MEMORY``, else
the settings file's ``memory.store``, else the user data directory's ``memory``.

With memory off (``memory.backend = "none"`` in the settings file, or
``SESSIONGRAPH_MEMORY_BACKEND=none``) only the look-up tools are served: no memory tool, resource or
prompt, and no workspace is opened or created.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import parse_qs

import typer

from graph.cli.commands import open_store

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TokenGate", "mcp_command", "register"]

DEFAULT_PORT = 8765
"""The ``--http`` port used without ``--port``."""

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class TokenGate:
    """ASGI middleware: HTTP requests without the token get 401; the lifespan passes through.

    Args:
        app: The application behind the gate.
        token: The token, compared in constant time with the ``Authorization: Bearer`` header or the
            ``token`` query parameter.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                if hmac.compare_digest(value[7:].strip(), self.token):
                    return True
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return any(hmac.compare_digest(t.encode(), self.token) for t in query.get("token", ()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` when it carries the token (or is not an HTTP request)."""
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        body = (
            b'{"error": "missing or wrong token: send Authorization: Bearer TOKEN or ?token=TOKEN"}'
        )
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="sessiongraph"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def mcp_command(
    ctx: typer.Context,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Memory workspace directory, or a postgresql:// URL of a shared store of record "
            "(default: $SESSIONGRAPH_MEMORY, memory.store, or the user data dir).",
        ),
    ] = None,
    views: Annotated[
        Path | None,
        typer.Option(
            "--views",
            help="Local folder for the Markdown views when the workspace is a postgresql:// URL "
            "(default: memory.views, else memory-<host>-<db>-<schema> beside the default one).",
        ),
    ] = None,
    follow: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="PATH",
            help="Transcript file or directory to import from before each call (repeatable; "
            "default: the runtimes' own folders).",
        ),
    ] = None,
    no_follow: Annotated[
        bool, typer.Option("--no-follow", help="Do not import anything; read the store as it is.")
    ] = False,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Interface to bind (--http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (--http; 0: any free port).")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            help="The token HTTP requests must carry (default: $SESSIONGRAPH_TOKEN or random)."
        ),
    ] = None,
) -> None:
    """Serve the session look-up and memory tools over MCP (stdio, or --http on 127.0.0.1)."""
    # The MCP SDK and the workspace load here, not when the command line lists its commands.
    import anyio
    from rich.console import Console
    from rich.markup import escape

    from graph.importers import default_locations
    from memory.mcp_server import build_server
    from memory.workspace import MemoryWorkspace

    err = Console(stderr=True, emoji=False)
    paths = [] if no_follow else list(follow or default_locations())
    from graph.terminal import CommandLineError
    from memory.config import ConfigError, load_config, workspace_location
    from memory.errors import MemoryLayerError, WorkspacePathError

    try:
        config = load_config()
        where = workspace_location(workspace, views, config=config)
    except ConfigError as e:
        raise CommandLineError("config", str(e)) from None
    except WorkspacePathError as e:
        raise CommandLineError("--workspace", str(e)) from None
    if config.enabled and where.folder.exists() and not where.folder.is_dir():
        raise CommandLineError(where.shown, "is a file; a workspace is a folder")  # as memory says
    store = open_store(ctx)
    try:
        # memory off: the look-up tools only, no workspace
        ws = MemoryWorkspace(where.folder, store=where.store) if config.enabled else None
    except (MemoryLayerError, OSError) as e:  # a newer library's workspace, a bad folder, ...
        store.close()
        raise CommandLineError("--workspace" if where.store else where.shown, str(e)) from None
    try:
        server = build_server(store, ws, paths)
        if not http:
            server.run("stdio")
            return
        secret = token or os.environ.get("SESSIONGRAPH_TOKEN") or secrets.token_urlsafe(24)
        if host not in _LOOPBACK:
            err.print(
                f"[yellow]warning:[/] serving on {escape(host)}, not only this machine; "
                "the token is still required"
            )
        from graph.server.cli import bind

        if not 0 <= port <= 65535:
            raise CommandLineError(f"--port {port}", "not a port number (0..65535)")
        try:
            sock = bind(host, port)  # listening before the address is printed: never refused
        except OSError as e:
            raise CommandLineError(
                f"--host {host} --port {port}", f"cannot bind: {e.strerror or e}"
            ) from None
        shown = f"[{host}]" if ":" in host else host
        bound = sock.getsockname()[1]
        # Printed for copying: never wrapped by rich (the terminal wraps a long line).
        err.print(f"sessiongraph mcp: http://{shown}:{bound}/mcp?token={secret}", soft_wrap=True)
        err.print(f"  or send the header: Authorization: Bearer {secret}", soft_wrap=True)
        app = TokenGate(server.streamable_http_app(host=host), secret)
        with sock:
            anyio.run(_serve_http, app, sock)
    except KeyboardInterrupt:
        pass
    finally:
        if ws is not None:
            ws.close()
        store.close()


async def _serve_http(app: ASGIApp, sock: socket.socket) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to the ``sessiongraph`` application (a second call adds nothing)."""
    if all(c.name != "mcp" for c in app.registered_commands):
        app.command("mcp")(mcp_command)

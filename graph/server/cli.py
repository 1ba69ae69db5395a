"""``sessiongraph serve``: the local web server over the store (registered through ``sessiongraph.cli``).

It binds 127.0.0.1 unless told otherwise (``--host``), on ``--port`` (0: any free port), prints the
start URL with the random token once the socket listens (a client that connects on reading it is
answered, never refused) and runs until Ctrl-C. Binding to another interface prints a warning
on stderr; the token is still needed there. ``-w``/``--workspace`` and ``--views`` are short for
``--set memory.workspace=...`` and ``--set memory.views=...`` (the memory extension reads them);
a ``--set`` key no extension reads is a usage mistake (one line naming the known keys, exit 2).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import webbrowser
from typing import Annotated

import typer

__all__ = ["bind", "is_loopback", "register", "serve"]

_BACKLOG = 2048
"""Connections the listening socket queues before the server accepts them (uvicorn's default)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option(help="Interface to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the start URL in a browser.")
    ] = False,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            help="The memory workspace: a folder or a postgresql:// URL (--set memory.workspace=).",
        ),
    ] = None,
    views: Annotated[
        str | None,
        typer.Option(
            "--views",
            help="The local folder for the memory views of a postgresql:// workspace "
            "(--set memory.views=).",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A setting for an extension; repeatable: memory.workspace=DIR, "
            "memory.views=DIR, memory.core.inject=false (the core block not injected), "
            "memory.recent.limit=N (1..500); any other key is refused.",
            metavar="KEY=VALUE",
        ),
    ] = None,
) -> None:
    """Serve the sessions, their graphs, the Memory page and the REST API on a local web server."""
    import uvicorn

    from graph.cli.commands import open_store
    from graph.server.app import ExtensionError, UnknownSettingError, create_app
    from graph.server.security import new_token

    settings: dict[str, str] = {}
    for item in set_ or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            typer.echo(f"error: --set {item}: expected KEY=VALUE", err=True)
            raise typer.Exit(2)
        settings[key] = value
    for key, given in (("memory.workspace", workspace), ("memory.views", views)):
        if given is not None:
            settings[key] = given
    if not 0 <= port <= 65535:
        typer.echo(f"error: --port {port}: not a port number (0..65535)", err=True)
        raise typer.Exit(2)
    try:
        sock = bind(host, port)
    except OSError as e:
        typer.echo(f"error: --host {host} --port {port}: cannot bind: {e.strerror or e}", err=True)
        raise typer.Exit(1) from None
    bound = sock.getsockname()[1]
    token = new_token()
    store = open_store(ctx)
    local = is_loopback(host)
    hosts = [] if local else [host.strip("[]"), socket.gethostname()]
    try:
        app = create_app(store, token=token, hosts=hosts, settings=settings, ip_hosts=not local)
    except (ExtensionError, UnknownSettingError) as e:
        sock.close()
        store.close()
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2 if isinstance(e, UnknownSettingError) else 1) from None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/?token={token}"
    if not is_loopback(host):
        typer.echo(
            f"warning: serving on {host}, reachable from other machines; every request still "
            "needs the token",
            err=True,
        )
    where = getattr(store, "path", None) or "the PostgreSQL store"
    typer.echo(f"sessiongraph serving {where} at {url}")
    typer.echo("Ctrl-C stops it.")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", backlog=_BACKLOG)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host`` (an IPv6 address may be in brackets) and ``port``, listening.

    Made before a server prints its address, so that a client connecting as soon as it reads the
    address waits in the backlog (2,048 connections) until the server accepts, instead of being
    refused. ``port`` 0 takes any free port (``getsockname()[1]`` says which).

    Raises:
        OSError: the address cannot be bound (in use, not this machine's, not permitted).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the command line."""
    app.command("serve")(serve)

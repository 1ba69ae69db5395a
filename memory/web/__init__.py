"""The memory package's part of ``sessiongraph serve``: the Memory page, the memory panel and the API.

Registered through the ``sessiongraph.server`` entry-point group (:func:`extension`), so the graph
package's server never imports memory. The workspace is the ``memory.workspace`` setting
(``sessiongraph serve -w DIR``, or ``--set memory.workspace=DIR``: a folder, or a ``postgresql://`` URL
of a shared store of record whose views go to ``--views DIR``, the ``memory.views`` setting), else
``$SESSIONGRAPH_MEMORY``, else the settings file's ``memory.store``, else the user data directory's
``memory``, found as ``sessiongraph memory`` finds it; ``memory.core.inject`` (``true``/``false``, default true) and
``memory.recent.limit`` (1..500, default 50) shape the Core and Recent sections (:data:`SETTINGS`:
the server refuses any other ``--set`` key). With memory off (``memory.backend = "none"``, or
``SESSIONGRAPH_MEMORY_BACKEND=none``) the extension adds nothing but those keys, which are then
accepted and unused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from graph.server.app import Extension, NavLink, ServerContext
from memory.config import load_config, workspace_location
from memory.web import api, pages
from memory.web.api import MemoryHandle

__all__ = ["SETTINGS", "extension"]

HERE = Path(__file__).parent

SETTINGS = ("memory.core.inject", "memory.recent.limit", "memory.views", "memory.workspace")
"""The ``--set`` keys the memory extension reads."""


_FLAGS = {"1": True, "true": True, "yes": True, "on": True}
_FLAGS |= {"0": False, "false": False, "no": False, "off": False}


def _flag(key: str, value: str) -> bool:
    """A yes/no setting (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``).

    Raises:
        ValueError: any other value (a typo such as ``flase`` is not taken for either).
    """
    try:
        return _FLAGS[value.strip().lower()]
    except KeyError:
        raise ValueError(f"{key} must be true or false, got {value!r}") from None


def _recent_limit(value: str) -> int:
    """``memory.recent.limit``: a whole number of records from 1 to ``api.MAX_RECENT`` (500)."""
    digits = value.strip().lstrip("0")
    if digits.isascii() and digits.isdigit() and len(digits) <= 3 and int(digits) <= api.MAX_RECENT:
        return int(digits)
    raise ValueError(
        f"memory.recent.limit must be a whole number from 1 to {api.MAX_RECENT}, got {value!r}"
    )


def extension(
    ctx: ServerContext, workspace: str | Path | None = None, env: Mapping[str, str] | None = None
) -> Extension:
    """The memory extension of the server (only its settings when memory is off).

    Args:
        ctx: The server's context (the store and the ``--set`` settings).
        workspace: The workspace folder or ``postgresql://`` URL; None reads the settings as the
            module doc says.
        env: The environment the memory settings are read from (default ``os.environ``).

    Returns:
        The routes, pages, top-bar links, assets, OpenAPI paths, error handlers and
        :data:`SETTINGS`; when memory is off (``memory.backend = "none"`` in the settings file, or
        ``SESSIONGRAPH_MEMORY_BACKEND=none``) only :data:`SETTINGS` (so ``-w`` is still a known
        setting): the server then has no memory route, page, link or OpenAPI path, and no
        workspace is opened or created.

    Raises:
        memory.config.ConfigError: the settings file is malformed.
        ValueError: ``memory.recent.limit`` is not a whole number from 1 to 500,
            ``memory.core.inject`` is not true or false, or the workspace folder is a file.
    """
    config = load_config(env=env)
    if not config.enabled:
        return Extension(name="memory", settings=SETTINGS)
    where = workspace_location(
        workspace or ctx.settings.get("memory.workspace"),
        ctx.settings.get("memory.views"),
        config=config,
        env=env,
    )
    if where.folder.exists() and not where.folder.is_dir():
        # Opened on first use, it would fail every memory request instead of the start.
        raise ValueError(f"{where.shown}: is a file; a workspace is a folder")
    limit_raw = ctx.settings.get("memory.recent.limit", "50")
    handle = MemoryHandle(
        str(where.folder),
        store=where.store,
        inject=_flag("memory.core.inject", ctx.settings.get("memory.core.inject", "true")),
        recent_limit=_recent_limit(limit_raw),
    )
    return Extension(
        name="memory",
        routes=[*api.routes(handle, ctx.store, ctx.memo), *pages.routes(handle)],
        nav=[NavLink("Memory", "/memory"), NavLink("Memory panel", "/memory/panel")],
        templates=HERE / "templates",
        static=HERE / "static",
        openapi=api.openapi_paths(),
        exception_handlers=api.error_handlers(),
        settings=SETTINGS,
    )

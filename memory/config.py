"""Memory's settings: whether memory is on, where its workspace is, and which model writes it.

Read from a TOML file, ``$SESSIONGRAPH_CONFIG`` or ``config.toml`` in the user config directory
(``~/.config/sessiongraph/config.toml`` on Linux), then overridden by the environment; a missing file
means the defaults. The file's ``[memory]`` table::

    [memory]
    backend = "sqlite"          # or "none": memory is off
    model = "openai:gpt-4o-mini" # or "anthropic:claude-sonnet-4-5", "digest" (the offline default)
    base_url = "http://localhost:11434/v1"   # an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)
    api_key_env = "OPENAI_API_KEY"           # the variable holding the key (the provider's own by default)
    timeout = 60                # seconds one model call may take
    store = "postgresql://user:pass@host/db?schema=memory"   # a shared store of record (optional)
    views = "~/memory-views"    # the local folder its Markdown views are rendered to (optional)

Where the workspace is (:func:`workspace_location`, used by ``sessiongraph memory``, ``sessiongraph
mcp`` and ``sessiongraph serve`` alike): ``--workspace``/``-w`` (a folder or a ``postgresql://``
URL), else ``$SESSIONGRAPH_MEMORY`` (likewise), else ``memory.store``, else ``memory`` under the user
data directory. With a URL the views go to ``--views``, else ``memory.views``, else
``memory-<host>-<database>-<schema>`` beside the default workspace folder.

``SESSIONGRAPH_MEMORY_BACKEND=none`` turns memory off whatever the file says. The key itself is never
read from the file: only the name of the environment variable that holds it.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from memory.errors import MemoryLayerError, WorkspacePathError

__all__ = [
    "BACKEND_ENV",
    "CONFIG_ENV",
    "ConfigError",
    "MEMORY_ENV",
    "MemoryConfig",
    "MemoryOffError",
    "WorkspaceLocation",
    "config_path",
    "default_workspace",
    "is_store_url",
    "load_config",
    "views_folder",
    "workspace_location",
]

CONFIG_ENV = "SESSIONGRAPH_CONFIG"
"""The environment variable naming the settings file."""
BACKEND_ENV = "SESSIONGRAPH_MEMORY_BACKEND"
"""The environment variable that overrides ``memory.backend`` (``none`` turns memory off)."""

MEMORY_ENV = "SESSIONGRAPH_MEMORY"
"""The environment variable naming the workspace: a folder or a ``postgresql://`` URL."""

_BACKENDS = ("sqlite", "none")
_SETTINGS = ("api_key_env", "backend", "base_url", "model", "store", "timeout", "views")
"""The keys of the ``[memory]`` table; any other key is refused."""


class ConfigError(MemoryLayerError, ValueError):
    """The settings file cannot be read, or a setting has a wrong type or value.

    Attributes:
        path: The file (or the environment variable) at fault.
        key: The setting, as ``memory.<name>``; empty when the whole file is at fault.
    """

    def __init__(self, path: str, key: str, detail: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.key = key


class MemoryOffError(MemoryLayerError):
    """Memory is turned off (``memory.backend = "none"`` or ``SESSIONGRAPH_MEMORY_BACKEND=none``).

    Attributes:
        source: Where it was turned off: the settings file or the environment variable.
    """

    def __init__(self, source: str) -> None:
        super().__init__(f'memory is off ({source}); set memory.backend = "sqlite" to use it')
        self.source = source


@dataclass(frozen=True)
class MemoryConfig:
    """The ``[memory]`` settings (see the module docstring for the file)."""

    backend: str = "sqlite"
    """``sqlite`` (the workspace's store of record) or ``none`` (memory off)."""
    model: str = "digest"
    """The writer: ``digest`` (offline, no model), ``openai:MODEL`` or ``anthropic:MODEL``."""
    base_url: str | None = None
    """An OpenAI-compatible server's base URL, for ``openai:MODEL`` against a local model."""
    api_key_env: str | None = None
    """The environment variable holding the key; None means the provider's usual one."""
    timeout: float = 60.0
    """Seconds one model call may take before it counts as unavailable (retryable)."""
    store: str | None = None
    """A ``postgresql://`` URL of a shared store of record; None keeps it in the workspace folder."""
    views: str | None = None
    """The local folder for the Markdown views of ``store`` (``~`` is expanded); None: the default."""
    source: str = "defaults"
    """Where ``backend`` was decided: the file's path, the environment variable, or ``defaults``."""

    @property
    def enabled(self) -> bool:
        """Whether memory is on."""
        return self.backend != "none"

    def require_enabled(self) -> None:
        """Raise :class:`MemoryOffError` when memory is off."""
        if not self.enabled:
            raise MemoryOffError(self.source)


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """Return the settings file: ``$SESSIONGRAPH_CONFIG`` or the user config directory's."""
    env = os.environ if env is None else env
    named = env.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    return Path(platformdirs.user_config_dir("sessiongraph")) / "config.toml"


def _typed(path: str, table: Mapping[str, Any], key: str, kind: type, default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(path, f"memory.{key}", f"expected a {kind.__name__}, got {value!r}")
    return value


def _unknown(key: str, known: list[str]) -> str:
    """The message for an unknown key: the closest known one (``difflib``) and every known one."""
    near = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"unknown setting{hint}; known settings: {', '.join(known)}"


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> MemoryConfig:
    """Read the settings file (if any) and the environment.

    Args:
        path: The file; :func:`config_path` when None. A missing file gives the defaults.
        env: The environment (``os.environ`` when None).

    Raises:
        ConfigError: the file is not TOML, holds another table than ``[memory]`` or a key
            ``[memory]`` does not have (the message names the closest known one), ``[memory]`` is
            not a table, a setting has the wrong type, an unknown backend or model provider is
            named, or the timeout is not positive.
    """
    env = os.environ if env is None else env
    path = path or config_path(env)
    table: Mapping[str, Any] = {}
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(where, "", f"cannot be read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(where, "", f"not TOML: {e}") from None
    stray = sorted(set(data) - {"memory"})
    if stray:
        # The file holds nothing but [memory]: a [memroy] table would otherwise be ignored.
        raise ConfigError(where, stray[0], _unknown(stray[0], ["memory"]))
    memory = data.get("memory", {})
    if not isinstance(memory, Mapping):
        raise ConfigError(where, "memory", "must be a table ([memory])")
    table = memory
    known = [f"memory.{key}" for key in _SETTINGS]
    unknown = sorted(set(table) - set(_SETTINGS))
    if unknown:
        key = f"memory.{unknown[0]}"
        raise ConfigError(where, key, _unknown(key, known))
    backend = _typed(where, table, "backend", str, "sqlite")
    source = where if "backend" in table else "defaults"
    if env.get(BACKEND_ENV):
        backend, source, where_backend = env[BACKEND_ENV].strip().lower(), BACKEND_ENV, BACKEND_ENV
    else:
        where_backend = where
    if backend not in _BACKENDS:
        raise ConfigError(
            where_backend, "memory.backend", f"expected one of {_BACKENDS}, got {backend!r}"
        )
    model = _typed(where, table, "model", str, "digest")
    provider = model.split(":", 1)[0]
    if model != "digest" and (provider not in ("openai", "anthropic") or ":" not in model):
        raise ConfigError(
            where,
            "memory.model",
            f"expected digest, openai:MODEL or anthropic:MODEL, got {model!r}",
        )
    timeout = _typed(where, table, "timeout", float, 60.0)
    if timeout <= 0:
        raise ConfigError(where, "memory.timeout", f"must be positive, got {timeout!r}")
    store = _typed(where, table, "store", str, None)
    if store is not None and not is_store_url(store):
        raise ConfigError(
            where, "memory.store", f"expected a postgresql:// URL, got {store.split(':', 1)[0]!r}"
        )
    return MemoryConfig(
        store=store,
        views=_typed(where, table, "views", str, None),
        backend=backend,
        model=model,
        base_url=_typed(where, table, "base_url", str, None),
        api_key_env=_typed(where, table, "api_key_env", str, None),
        timeout=timeout,
        source=source,
    )


def is_store_url(value: object) -> bool:
    """Whether ``value`` names a PostgreSQL store of record (``postgresql://`` or ``postgres://``)."""
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


def default_workspace() -> Path:
    """The workspace folder used when nothing names one: ``memory`` under the user data directory."""
    return Path(platformdirs.user_data_dir("sessiongraph")) / "memory"


def views_folder(url: str) -> Path:
    """The default views folder of a PostgreSQL store of record: one per host, database and schema.

    Returns:
        ``memory-<host>-<database>-<schema>`` beside :func:`default_workspace` (the schema is the
        URL's ``?schema=``, else ``memory``; characters other than letters, digits, ``_.-`` become
        ``_``).
    """
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    schema = parse_qs(parts.query).get("schema", ["memory"])[0]
    name = "-".join([parts.hostname or "local", parts.path.strip("/") or "db", schema])
    return default_workspace().parent / ("memory-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name))


@dataclass(frozen=True)
class WorkspaceLocation:
    """Where a workspace is: the local folder, and the store of record when it is not in the folder.

    ``MemoryWorkspace(loc.folder, store=loc.store)`` opens it.
    """

    folder: Path
    """The workspace folder: the views, and the SQLite ``memory.db`` unless ``store`` is set."""
    store: str | None = None
    """The ``postgresql://`` URL of the store of record; None: ``memory.db`` in ``folder``."""
    source: str = "defaults"
    """What decided it, for messages: ``-w``, the environment variable, the settings file, ...."""

    @property
    def shown(self) -> str:
        """The option a message names the folder by: ``--views DIR`` (a URL) or ``-w DIR``."""
        return f"--views {self.folder}" if self.store else f"-w {self.folder}"


def _expand(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` made the home directory.

    Raises:
        WorkspacePathError: ``~user`` names no user (it would become a folder of that name).
    """
    out = os.path.expanduser(str(path))
    if out.startswith("~"):
        raise WorkspacePathError(str(path), f"no user's home directory is {out.split(os.sep)[0]}")
    return Path(out)


def workspace_location(
    workspace: str | os.PathLike[str] | None = None,
    views: str | os.PathLike[str] | None = None,
    *,
    config: MemoryConfig | None = None,
    env: Mapping[str, str] | None = None,
) -> WorkspaceLocation:
    """Decide where the workspace is, the same way for every command and the server.

    Args:
        workspace: ``--workspace``/``-w``: a folder, or a ``postgresql://`` URL; None: what
            ``$SESSIONGRAPH_MEMORY`` says, else ``memory.store`` of the settings file, else
            :func:`default_workspace`.
        views: ``--views``: the local folder for the views when the store of record is a URL (ignored
            otherwise); None: ``memory.views``, else :func:`views_folder` of the URL.
        config: The settings (:func:`load_config` when None).
        env: The environment (``os.environ`` when None).

    Returns:
        The folder and the store URL (None for a SQLite workspace in the folder).

    Raises:
        ConfigError: the settings file is malformed (only read when ``config`` is None).
    """
    env = os.environ if env is None else env
    if workspace is not None and str(workspace) != "":
        chosen, source = str(workspace), "--workspace"
    elif env.get(MEMORY_ENV):
        chosen, source = env[MEMORY_ENV], MEMORY_ENV
    else:
        config = load_config(env=env) if config is None else config
        if config.store is not None:
            chosen, source = config.store, f"{config_path(env)}: memory.store"
        else:
            return WorkspaceLocation(default_workspace())
    if not is_store_url(chosen):
        return WorkspaceLocation(_expand(chosen), None, source)
    if views is None:
        config = load_config(env=env) if config is None else config
        views = config.views
    folder = _expand(views) if views else views_folder(chosen)
    return WorkspaceLocation(folder, chosen, source)

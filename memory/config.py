"""Memory's settings: whether memory is on, and which model writes it.

Read from a TOML file, ``$SESSIONGRAPH_CONFIG`` or ``config.toml`` in the user config directory
(``~/.config/sessiongraph/config.toml`` on Linux), then overridden by the environment; a missing file
means the defaults. The file's ``[memory]`` table::

    [memory]
    backend = "sqlite"          # or "none": memory is off
    model = "openai:gpt-4o-mini" # or "anthropic:claude-sonnet-4-5", "digest" (the offline default)
    base_url = "http://localhost:11434/v1"   # an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)
    api_key_env = "OPENAI_API_KEY"           # the variable holding the key (the provider's own by default)
    timeout = 60                # seconds one model call may take

``SESSIONGRAPH_MEMORY_BACKEND=none`` turns memory off whatever the file says. The key itself is never
read from the file: only the name of the environment variable that holds it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from memory.errors import MemoryLayerError

__all__ = [
    "BACKEND_ENV",
    "CONFIG_ENV",
    "ConfigError",
    "MemoryConfig",
    "MemoryOffError",
    "config_path",
    "load_config",
]

CONFIG_ENV = "SESSIONGRAPH_CONFIG"
"""The environment variable naming the settings file."""
BACKEND_ENV = "SESSIONGRAPH_MEMORY_BACKEND"
"""The environment variable that overrides ``memory.backend`` (``none`` turns memory off)."""

_BACKENDS = ("sqlite", "none")


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


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> MemoryConfig:
    """Read the settings file (if any) and the environment.

    Args:
        path: The file; :func:`config_path` when None. A missing file gives the defaults.
        env: The environment (``os.environ`` when None).

    Raises:
        ConfigError: the file is not TOML, ``[memory]`` is not a table, a setting has the wrong type,
            an unknown backend or model provider is named, or the timeout is not positive.
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
    memory = data.get("memory", {})
    if not isinstance(memory, Mapping):
        raise ConfigError(where, "memory", "must be a table ([memory])")
    table = memory
    unknown = sorted(set(table) - {"backend", "model", "base_url", "api_key_env", "timeout"})
    if unknown:
        raise ConfigError(where, f"memory.{unknown[0]}", "unknown setting")
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
    return MemoryConfig(
        backend=backend,
        model=model,
        base_url=_typed(where, table, "base_url", str, None),
        api_key_env=_typed(where, table, "api_key_env", str, None),
        timeout=timeout,
        source=source,
    )

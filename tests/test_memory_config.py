"""Memory's settings file, memory off, and the model chosen by configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory.config import BACKEND_ENV, CONFIG_ENV, ConfigError, MemoryOffError, load_config


def test_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml", env={})
    assert config.enabled and config.model == "digest" and config.timeout == 60.0


def test_file_settings_and_the_environment_override(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[memory]\nmodel = "openai:llama3"\nbase_url = "http://127.0.0.1:11434/v1"\ntimeout = 5\n'
    )
    config = load_config(path, env={})
    assert (config.model, config.base_url, config.timeout) == (
        "openai:llama3",
        "http://127.0.0.1:11434/v1",
        5.0,
    )
    off = load_config(path, env={BACKEND_ENV: "none"})
    assert not off.enabled and off.source == BACKEND_ENV
    with pytest.raises(MemoryOffError, match="memory is off"):
        off.require_enabled()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[memory\n", "not TOML"),
        ("memory = 3\n", "must be a table"),
        ('[memory]\nbackend = "postgres"\n', "memory.backend"),
        ('[memory]\nmodel = "gpt-4"\n', "memory.model"),
        ("[memory]\ntimeout = 0\n", "memory.timeout"),
        ("[memory]\ntimeout = true\n", "memory.timeout"),
        ('[memory]\napi_key = "sk-live-123"\n', "memory.api_key: unknown setting"),
        (
            '[memory]\nbase_ulr = "http://x"\n',
            r"memory.base_ulr: unknown setting \(did you mean memory.base_url\?\); known settings: "
            "memory.api_key_env, memory.backend, memory.base_url, memory.model, memory.store, "
            "memory.timeout, memory.views",
        ),
        ('[memroy]\nbackend = "none"\n', r"memroy: unknown setting \(did you mean memory\?\)"),
        ('backend = "none"\n', "backend: unknown setting"),
    ],
)
def test_bad_settings_name_the_file_and_the_key(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as e:
        load_config(path, env={})
    assert str(path) in str(e.value)


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH")}
    full.update(env)
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(tmp_path / "g.db"),
            *args,
        ],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )


@pytest.mark.parametrize(
    "command", [["status"], ["list"], ["write"], ["search", "x"], ["export", "-o", "out"]], ids=str
)
def test_memory_off_refuses_every_command_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    ws = tmp_path / "ws"
    r = _run(tmp_path, "memory", "-w", str(ws), *command, **{BACKEND_ENV: "none"})
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f'error: memory is off ({BACKEND_ENV}); set memory.backend = "sqlite" to use it'
    ]
    assert not ws.exists() and not (tmp_path / "out").exists()


def test_a_bad_settings_file_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[memory]\nmodel = "gpt-4"\n')
    r = _run(tmp_path, "memory", "-w", str(tmp_path / "ws"), "status", **{CONFIG_ENV: str(path)})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "memory.model" in r.stderr


def test_model_on_the_command_line_without_a_key_is_one_line(tmp_path: Path) -> None:
    r = _run(
        tmp_path,
        "memory",
        "-w",
        str(tmp_path / "ws"),
        "write",
        "--model",
        "anthropic:claude-sonnet-4-5",
        **{CONFIG_ENV: str(tmp_path / "none.toml")},
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "ANTHROPIC_API_KEY" in r.stderr

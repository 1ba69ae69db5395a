"""Real models behind :class:`~memory.writers.ModelWriter`: OpenAI, Anthropic and OpenAI-compatible servers.

Choosing the model is configuration (``memory.model`` in the settings file, or ``--model`` on the
command line), never code:

- ``openai:MODEL``: OpenAI's Chat Completions API through the official ``openai`` SDK (the
  ``sessiongraph[openai]`` extra); with ``base_url`` any OpenAI-compatible server (Ollama, vLLM,
  llama.cpp's server, LM Studio), which may need no key.
- ``anthropic:MODEL``: Anthropic's Messages API through the official ``anthropic`` SDK
  (``sessiongraph[anthropic]``).
- ``digest``: the offline :class:`~memory.writers.DigestWriter`, no model.

The key comes from the environment (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, or the variable
``memory.api_key_env`` names); it is handed to the SDK and never stored, printed or put in an error.
The SDKs' own retries are off: a timeout, a refused connection, a rate limit (429), an overloaded or
failing server (5xx) or an unreadable response is :class:`~memory.errors.WriterUnavailableError`, the
pipeline's retryable ``WRITER_UNAVAILABLE``, and the idle watcher retries later. A refusal that will not
clear by waiting (a bad key, an unknown model, a request the API refuses) is :class:`ModelRequestError`,
which names the HTTP status only. An answer that is not the JSON change shape is the writer's
``MALFORMED`` rejection, which gets the one repair attempt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from memory.config import ConfigError, MemoryConfig
from memory.errors import MemoryLayerError, WriterUnavailableError
from memory.writers import DigestWriter, ModelWriter, Writer

__all__ = ["ModelRequestError", "anthropic_complete", "openai_complete", "writer_for"]

_MAX_TOKENS = 4096  # the longest answer asked of an Anthropic model (the API requires a bound)


class ModelRequestError(MemoryLayerError):
    """The model's API refused the request in a way waiting will not fix (status 4xx but 429).

    Attributes:
        writer: The writer's name (``openai:MODEL``).
        status: The HTTP status code.
    """

    def __init__(self, writer: str, status: int, kind: str) -> None:
        super().__init__(f"writer {writer!r}: the API refused the request (HTTP {status}, {kind})")
        self.writer = writer
        self.status = status


def _key(config: MemoryConfig, default_env: str, env: Mapping[str, str], *, required: bool) -> str:
    name = config.api_key_env or default_env
    key = env.get(name, "")
    if not key and required:
        raise ConfigError(
            name, "", f"the environment variable {name} holding the API key is not set"
        )
    return key or "unused"  # an OpenAI-compatible local server takes any key


def _translate(writer: str, e: Exception, module: Any) -> Exception:
    """Map an SDK exception to the pipeline's errors, keeping nothing of the response body."""
    if isinstance(e, module.APITimeoutError):
        return WriterUnavailableError(writer, "the request timed out")
    if isinstance(e, module.APIConnectionError):
        return WriterUnavailableError(writer, "the server could not be reached")
    if isinstance(e, module.APIStatusError):
        status = int(e.status_code)
        if status == 429 or status >= 500:
            what = "rate limited" if status == 429 else "server error"
            return WriterUnavailableError(writer, f"HTTP {status} ({what})")
        return ModelRequestError(writer, status, type(e).__name__)
    if isinstance(e, module.APIError):  # a response the SDK could not read
        return WriterUnavailableError(writer, f"unreadable response ({type(e).__name__})")
    if isinstance(e, ValueError | KeyError | TypeError | AttributeError):
        return WriterUnavailableError(writer, f"unreadable response ({type(e).__name__})")
    return e


def openai_complete(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = 60.0,
) -> Callable[[str], str]:
    """Return ``complete(prompt) -> str`` over the Chat Completions API.

    Args:
        model: The model name the server knows (``gpt-4o-mini``, ``llama3.1``).
        api_key: The key (any string for a local server that checks none).
        base_url: An OpenAI-compatible server's base URL (``http://localhost:11434/v1``); OpenAI's
            own when None.
        timeout: Seconds one call may take.

    Raises:
        ImportError: the ``openai`` package is not installed (the ``sessiongraph[openai]`` extra).
    """
    import openai

    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
    name = f"openai:{model}"

    def complete(prompt: str) -> str:
        try:
            response = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], temperature=0
            )
            text = response.choices[0].message.content
        except Exception as e:
            raise _translate(name, e, openai) from None
        if not isinstance(text, str):
            raise WriterUnavailableError(name, "the response holds no text")
        return text

    return complete


def anthropic_complete(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = 60.0,
) -> Callable[[str], str]:
    """Return ``complete(prompt) -> str`` over Anthropic's Messages API.

    Args:
        model: The model name (``claude-sonnet-4-5``).
        api_key: The key.
        base_url: Another endpoint speaking the Messages API; Anthropic's when None.
        timeout: Seconds one call may take.

    Raises:
        ImportError: the ``anthropic`` package is not installed (the ``sessiongraph[anthropic]`` extra).
    """
    import anthropic

    client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
    name = f"anthropic:{model}"

    def complete(prompt: str) -> str:
        try:
            response = client.messages.create(
                model=model,
                max_tokens=_MAX_TOKENS,
                messages=[{"role": "user", "content": prompt}],
            )
            parts = [b.text for b in response.content if isinstance(b, anthropic.types.TextBlock)]
        except Exception as e:
            raise _translate(name, e, anthropic) from None
        if not parts:
            raise WriterUnavailableError(name, "the response holds no text")
        return "".join(parts)

    return complete


def writer_for(
    config: MemoryConfig,
    *,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Writer:
    """Return the writer the settings name (``--model`` and ``--base-url`` override them).

    Raises:
        ConfigError: the model is not ``digest``, ``openai:MODEL`` or ``anthropic:MODEL``, the key's
            environment variable is unset (a local ``base_url`` needs none), or the provider's SDK
            is not installed.
    """
    env = os.environ if env is None else env
    spec = model or config.model
    url = base_url or config.base_url
    if spec == "digest":
        return DigestWriter()
    provider, _, name = spec.partition(":")
    if not name or provider not in ("openai", "anthropic"):
        raise ConfigError(
            "--model", "", f"expected digest, openai:MODEL or anthropic:MODEL, got {spec!r}"
        )
    try:
        if provider == "openai":
            key = _key(config, "OPENAI_API_KEY", env, required=url is None)
            complete = openai_complete(name, api_key=key, base_url=url, timeout=config.timeout)
        else:
            key = _key(config, "ANTHROPIC_API_KEY", env, required=True)
            complete = anthropic_complete(name, api_key=key, base_url=url, timeout=config.timeout)
    except ImportError:
        raise ConfigError(
            "--model",
            "",
            f"{spec!r} needs the {provider} package: pip install 'sessiongraph[{provider}]'",
        ) from None
    return ModelWriter(complete, name=spec)

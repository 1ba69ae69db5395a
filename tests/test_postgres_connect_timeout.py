"""A PostgreSQL connection gives up on a silent host: ``connect_timeout`` unless the URL sets one.

libpq waits without limit by default, so ``--db postgresql://`` naming a host that drops packets
hung the command. Every connection the package opens (the session store, the memory workspace,
the PostgresSaver importer) passes :data:`graph.store.postgres.CONNECT_TIMEOUT` when the URL and
``PGCONNECT_TIMEOUT`` leave it unset, and leaves a URL's own value alone.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("psycopg")

from conftest import postgres_store  # noqa: E402

from graph.store import postgres  # noqa: E402
from graph.store.postgres import CONNECT_TIMEOUT, PostgresSessionStore, connect_options  # noqa: E402

__all__: list[str] = []


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)


@pytest.mark.parametrize(
    "url, options",
    [
        ("postgresql://u@db.example:5432/x", {"connect_timeout": CONNECT_TIMEOUT}),
        ("postgresql://u@db.example/x?sslmode=require", {"connect_timeout": CONNECT_TIMEOUT}),
        ("host=db.example dbname=x", {"connect_timeout": CONNECT_TIMEOUT}),
        ("postgresql://u@db.example/x?connect_timeout=3", {}),
        ("host=db.example dbname=x connect_timeout=0", {}),
    ],
    ids=["url", "url-with-query", "key-value", "url-sets-it", "key-value-sets-it"],
)
def test_a_url_without_connect_timeout_gets_it_and_one_with_it_keeps_its_own(
    url: str, options: dict[str, Any]
) -> None:
    assert connect_options(url) == options


def test_pgconnect_timeout_in_the_environment_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    assert connect_options("postgresql://u@db.example/x") == {}


def test_the_store_connects_with_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def connect(url: str, **kwargs: Any) -> Any:
        seen.append((url, kwargs))
        raise postgres.psycopg.OperationalError("timeout expired")

    monkeypatch.setattr(postgres.psycopg, "connect", connect)
    with pytest.raises(Exception, match="timeout expired"):
        PostgresSessionStore("postgresql://u@db.example/x")
    with pytest.raises(Exception, match="timeout expired"):
        PostgresSessionStore("postgresql://u@db.example/x?connect_timeout=3")
    assert [kw.get("connect_timeout") for _, kw in seen] == [CONNECT_TIMEOUT, None]


def test_a_real_connection_carries_the_timeout() -> None:
    store = next(gen := postgres_store())
    try:
        assert store.conn.info.get_parameters().get("connect_timeout") == str(CONNECT_TIMEOUT)  # type: ignore[attr-defined]
    finally:
        gen.close()

"""Shared fixtures and the hypothesis profiles.

Profiles, chosen with ``HYPOTHESIS_PROFILE``: ``ci`` (bounded, the default, keeps the suite fast on two
cores), ``deep`` (many more examples, for a long local run).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from graph import MemorySessionStore, SessionStore
from graph.store.base import BaseStore
from graph.testing.contract import StoreFactory
from tests.memory_backends import WorkspaceFactory

# The tests, and the command lines they start, never read or write the user's own data, settings or
# default store: the per-user folders point into a temporary directory, and the variables that would
# choose another store, workspace or config are cleared.
_USER_DIRS = Path(tempfile.mkdtemp(prefix="sessiongraph-tests-user-"))
for _var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
    os.environ[_var] = str(_USER_DIRS / _var.lower())
for _var in (
    "SESSIONGRAPH_DB",
    "SESSIONGRAPH_MEMORY",
    "SESSIONGRAPH_CONFIG",
    "SESSIONGRAPH_MEMORY_BACKEND",
    "SESSIONGRAPH_TOKEN",
    "SESSIONGRAPH_DEBUG",
):
    os.environ.pop(_var, None)

# ci leaves out the explain phase: on a failure it re-runs the shrunk example once per line it covers,
# which cost most of the suite's CPU time; the failing example is still shrunk and printed.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[p for p in Phase if p is not Phase.explain],
)
settings.register_profile(
    "deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CORPUS = Path(
    os.environ.get("SESSIONGRAPH_CORPUS")
    or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)
"""The shared corpus of real transcripts (beside the repository, or ``$SESSIONGRAPH_CORPUS``; never
copied into it)."""


@pytest.fixture
def corpus() -> Path:
    """The corpus directory; skips the test when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS} (it lives beside the repository)")
    return CORPUS


POSTGRES_URL = os.environ.get("SESSIONGRAPH_TEST_POSTGRES", "")
"""A PostgreSQL database the tests may create schemas in (``.ci/run`` starts one and sets it)."""


def postgres_url() -> str:
    """The test database's URL; skips the test when none is configured (fails in CI instead)."""
    if not POSTGRES_URL:
        if os.environ.get("CI"):
            pytest.fail("CI must set SESSIONGRAPH_TEST_POSTGRES (.ci/run starts PostgreSQL)")
        pytest.skip("no PostgreSQL: set SESSIONGRAPH_TEST_POSTGRES to a database URL to run these")
    return POSTGRES_URL


def postgres_store(**kw: object) -> Iterator[BaseStore]:
    """A PostgreSQL store in a fresh schema of the test database, dropped afterwards."""
    from graph.store.postgres import PostgresSessionStore

    s = PostgresSessionStore(postgres_url(), schema=f"t_{uuid.uuid4().hex[:16]}", **kw)  # type: ignore[arg-type]
    try:
        yield s
    finally:
        s.drop_schema()
        s.close()


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Each backend in turn, as the contract suites' factory of handles onto one storage.

    SQLite: a new connection to one temporary file per call. In-memory: the same store every call.
    PostgreSQL: a new connection to one fresh schema per call, the schema dropped afterwards.
    """
    if request.param == "sqlite":
        yield lambda: SessionStore(tmp_path / "store.db")
        return
    if request.param == "memory":
        shared = MemorySessionStore()
        yield lambda: shared
        return
    from graph.store.postgres import PostgresSessionStore

    url, schema = postgres_url(), f"t_{uuid.uuid4().hex[:16]}"
    yield lambda: PostgresSessionStore(url, schema=schema)
    cleanup = PostgresSessionStore(url, schema=schema)
    cleanup.drop_schema()
    cleanup.close()


@pytest.fixture(params=["sqlite", "postgres"])
def workspace_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WorkspaceFactory]:
    """Each backend of the memory workspace's store of record in turn (see tests/memory_backends)."""
    url = postgres_url() if request.param == "postgres" else ""
    factory = WorkspaceFactory(request.param, tmp_path, url)
    yield factory
    factory.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> Iterator[BaseStore]:
    """Each backend in turn: the SQLite store on a temporary file, the in-memory twin, PostgreSQL."""
    s = store_factory()
    yield s
    s.close()

"""Shared fixtures and the hypothesis profiles.

Profiles, chosen with ``HYPOTHESIS_PROFILE``: ``ci`` (bounded, the default, keeps the suite fast on two
cores), ``deep`` (many more examples, for a long local run).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from graph import MemorySessionStore, SessionStore
from graph.store import BaseStore
from graph.testing_contract import StoreFactory

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


@pytest.fixture(params=["sqlite", "memory"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Each store twin in turn, as the contract suites' factory of handles onto one storage.

    SQLite: a new connection to one temporary file per call. In-memory: the same store every call.
    """
    if request.param == "sqlite":
        return lambda: SessionStore(tmp_path / "store.db")
    shared = MemorySessionStore()
    return lambda: shared


@pytest.fixture
def store(store_factory: StoreFactory) -> Iterator[BaseStore]:
    """Each store twin in turn: the SQLite store on a temporary file, and the in-memory twin."""
    s = store_factory()
    yield s
    s.close()

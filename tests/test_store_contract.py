"""The store contract (:mod:`graph.testing_contract`) run against the SQLite store and its in-memory
twin, through the ``store_factory`` fixture of ``conftest.py``."""

from __future__ import annotations

from graph.testing_contract import *  # noqa: F403

"""The store contract (:mod:`graph.testing.contract`) run against the SQLite store and its in-memory
twin, through the ``store_factory`` fixture of ``conftest.py``."""

from __future__ import annotations

from graph.testing.contract import *  # noqa: F403

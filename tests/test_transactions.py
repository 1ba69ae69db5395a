"""The transaction contract (:mod:`graph.testing.transactions`) run against the SQLite store and its
in-memory twin, through the ``store_factory`` fixture of ``conftest.py``."""

from __future__ import annotations

from graph.testing.transactions import *  # noqa: F403

"""The transaction contract (:mod:`graph.testing_transactions`) run against the SQLite store and its
in-memory twin, through the ``store_factory`` fixture of ``conftest.py``."""

from __future__ import annotations

from graph.testing_transactions import *  # noqa: F403

"""The ``sessiongraph`` command line.

* :mod:`graph.cli.launch`: the console script; answers ``--version`` before importing anything heavy;
* :mod:`graph.cli.commands`: the typer application and the graph's own commands;
* :mod:`graph.cli.quick`: the plain forms of the quick commands (``sessions``, and those other
  packages describe), answered without typer;
* :mod:`graph.cli.importing`: ``import`` and ``export``;
* :mod:`graph.cli.entries`: the entry points of this distribution's own commands, read from its own
  metadata (another package's through ``importlib.metadata``).

Other packages add commands through the ``sessiongraph.cli`` entry-point group. This package imports
nothing itself, so that starting the console script stays cheap.
"""

__all__: list[str] = []

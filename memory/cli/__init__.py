"""The memory package's ``sessiongraph`` commands, added through the ``sessiongraph.cli`` entry points.

* :mod:`memory.cli.lookup`: the session look-up commands (``recent``, ``show``, ...), and the
  registration of the ``memory`` group;
* :mod:`memory.cli.memory`: ``sessiongraph memory``: see, search, correct, delete and write memory;
* :mod:`memory.cli.mcp`: ``sessiongraph mcp``, the MCP server's command.

This package imports nothing itself, so that starting the console script stays cheap.
"""

__all__: list[str] = []

"""sessiongraph's memory layer: a long-term memory writer that consumes the graph's pending turns."""

__all__: list[str] = []

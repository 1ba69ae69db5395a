"""sessiongraph's session graph: agent conversations as predecessor-linked node DAGs.

Start with :class:`SessionStore` (SQLite, the store of record) or :class:`MemorySessionStore` (its
in-memory twin); :meth:`~graph.store.base.BaseStore.pending` says which turns a consumer has not written.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from graph.errors import (
        CodecError,
        CoverageError,
        CycleError,
        DuplicateNodeError,
        DuplicateSessionError,
        ForeignPredecessorError,
        GraphError,
        HeadConflictError,
        InvalidWriteError,
        MarkerGapError,
        NotFoundError,
        NotOnBranchError,
        SchemaVersionError,
        StoreBusyError,
        StoreConnectError,
        StoreError,
        UnknownNodeError,
        UnknownPredecessorError,
        UnknownSessionError,
    )
    from graph.ids import NodeId, SessionId, new_id
    from graph.index import MEMORY_ELIGIBLE, Eligibility, Eligible, IndexView, NodeInfo
    from graph.models import (
        Block,
        Content,
        ImageBlock,
        Kind,
        Node,
        Role,
        SearchHit,
        Session,
        TextBlock,
        ToolCallBlock,
        ToolResultBlock,
    )
    from graph.store.base import HEAD, BaseStore, SessionStats
    from graph.store.in_memory import MemorySessionStore
    from graph.store.sqlite import SessionStore
    from graph.walks import MarkerGap

# The names are imported when first used, so that ``sessiongraph --version`` and the command line's
# quick commands do not load pydantic, networkx and the stores they do not need.
_LAZY = {
    "BaseStore": "graph.store.base",
    "Block": "graph.models",
    "CodecError": "graph.errors",
    "Content": "graph.models",
    "CoverageError": "graph.errors",
    "CycleError": "graph.errors",
    "DuplicateNodeError": "graph.errors",
    "DuplicateSessionError": "graph.errors",
    "Eligibility": "graph.index",
    "Eligible": "graph.index",
    "ForeignPredecessorError": "graph.errors",
    "GraphError": "graph.errors",
    "HEAD": "graph.store.base",
    "HeadConflictError": "graph.errors",
    "ImageBlock": "graph.models",
    "IndexView": "graph.index",
    "InvalidWriteError": "graph.errors",
    "Kind": "graph.models",
    "MEMORY_ELIGIBLE": "graph.index",
    "MarkerGap": "graph.walks",
    "MarkerGapError": "graph.errors",
    "MemorySessionStore": "graph.store.in_memory",
    "Node": "graph.models",
    "NodeId": "graph.ids",
    "NodeInfo": "graph.index",
    "NotFoundError": "graph.errors",
    "NotOnBranchError": "graph.errors",
    "Role": "graph.models",
    "SchemaVersionError": "graph.errors",
    "Session": "graph.models",
    "SessionId": "graph.ids",
    "SessionStats": "graph.store.base",
    "SessionStore": "graph.store.sqlite",
    "SearchHit": "graph.models",
    "StoreBusyError": "graph.errors",
    "StoreConnectError": "graph.errors",
    "StoreError": "graph.errors",
    "TextBlock": "graph.models",
    "ToolCallBlock": "graph.models",
    "ToolResultBlock": "graph.models",
    "UnknownNodeError": "graph.errors",
    "UnknownPredecessorError": "graph.errors",
    "UnknownSessionError": "graph.errors",
    "new_id": "graph.ids",
}


__all__ = [
    "HEAD",
    "MEMORY_ELIGIBLE",
    "BaseStore",
    "Block",
    "CodecError",
    "Content",
    "CoverageError",
    "CycleError",
    "DuplicateNodeError",
    "DuplicateSessionError",
    "Eligibility",
    "Eligible",
    "ForeignPredecessorError",
    "GraphError",
    "HeadConflictError",
    "ImageBlock",
    "IndexView",
    "InvalidWriteError",
    "Kind",
    "MarkerGap",
    "MarkerGapError",
    "MemorySessionStore",
    "Node",
    "NodeId",
    "NodeInfo",
    "NotFoundError",
    "NotOnBranchError",
    "Role",
    "SchemaVersionError",
    "SearchHit",
    "Session",
    "SessionId",
    "SessionStats",
    "SessionStore",
    "StoreBusyError",
    "StoreConnectError",
    "StoreError",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "UnknownNodeError",
    "UnknownPredecessorError",
    "UnknownSessionError",
    "new_id",
]


def __getattr__(name: str) -> _typing.Any:
    """Import a public name on first use (the module stays cheap to import)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

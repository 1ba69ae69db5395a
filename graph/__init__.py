"""sessiongraph's session graph: agent conversations as predecessor-linked node DAGs.

Start with :class:`SessionStore` (SQLite, the store of record) or :class:`MemorySessionStore` (its
in-memory twin); :meth:`~graph.store.BaseStore.pending` says which turns a consumer has not written.
"""

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
    StoreError,
    UnknownNodeError,
    UnknownPredecessorError,
    UnknownSessionError,
)
from graph.ids import NodeId, SessionId, new_id
from graph.index import MEMORY_ELIGIBLE, Eligibility, Eligible, IndexView, NodeInfo
from graph.memory_store import MemorySessionStore
from graph.models import (
    Block,
    Content,
    ImageBlock,
    Kind,
    Node,
    Role,
    Session,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from graph.sqlite_store import SessionStore
from graph.store import HEAD, BaseStore, SessionStats
from graph.walks import MarkerGap

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
    "Session",
    "SessionId",
    "SessionStats",
    "SessionStore",
    "StoreBusyError",
    "StoreError",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "UnknownNodeError",
    "UnknownPredecessorError",
    "UnknownSessionError",
    "new_id",
]

"""sessiongraph's memory layer: a long-term memory writer that consumes the graph's pending turns.

Start with :class:`MemoryWorkspace` (a directory; its SQLite file is the store of record) and
:class:`WritePipeline` (pending turns -> batches -> archive -> writer -> validate -> install -> mark);
:class:`IdleWatcher` finishes idle sessions; :class:`LocalMemory` is the nine-method interface
(:class:`MemoryProvider`) over both, and :func:`run_session` drives a conversation through it.
"""

from memory.adding import add_memory
from memory.changes import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MoveRecords,
    RewriteTopic,
    SourceRef,
    TopicRecord,
    UpdateRecord,
    parse_changes,
)
from memory.errors import (
    MemoryLayerError,
    RejectedError,
    Rejection,
    SearchIndexMissingError,
    WorkspaceBusyError,
    WorkspaceStoreError,
    WriterUnavailableError,
)
from memory.forget import ForgetReport, forget_session
from memory.interface import LocalMemory, MemoryProvider, run_session, wrap_context
from memory.pipeline import PROVIDER, FailureReason, WriteFailure, WritePipeline, split_batches
from memory.records import Citation, Record, Source
from memory.watcher import IdleWatcher
from memory.workspace import MemoryWorkspace, SearchHit, approx_tokens
from memory.writers import DigestWriter, ModelWriter, Writer, WriteRequest

__all__ = [
    "PROVIDER",
    "ChangeSet",
    "Citation",
    "CreateRecord",
    "DeleteRecord",
    "Destination",
    "DigestWriter",
    "FailureReason",
    "ForgetReport",
    "IdleWatcher",
    "LocalMemory",
    "MemoryLayerError",
    "MemoryProvider",
    "MemoryWorkspace",
    "ModelWriter",
    "MoveRecords",
    "Record",
    "RejectedError",
    "Rejection",
    "RewriteTopic",
    "SearchHit",
    "SearchIndexMissingError",
    "Source",
    "SourceRef",
    "TopicRecord",
    "UpdateRecord",
    "WorkspaceBusyError",
    "WorkspaceStoreError",
    "WriteFailure",
    "WritePipeline",
    "WriteRequest",
    "Writer",
    "WriterUnavailableError",
    "add_memory",
    "approx_tokens",
    "forget_session",
    "parse_changes",
    "run_session",
    "split_batches",
    "wrap_context",
]

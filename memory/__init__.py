"""sessiongraph's memory layer: a long-term memory writer that consumes the graph's pending turns.

Start with :class:`MemoryWorkspace` (a directory; its SQLite file is the store of record) and
:class:`WritePipeline` (pending turns -> batches -> archive -> writer -> validate -> install -> mark);
:class:`IdleWatcher` finishes idle sessions; :class:`LocalMemory` is the nine-method interface
(:class:`MemoryProvider`) over both, and :func:`run_session` drives a conversation through it.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
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
    from memory.recall import SearchHit
    from memory.records import Citation, Record, Source
    from memory.watcher import IdleWatcher
    from memory.workspace import MemoryWorkspace, approx_tokens
    from memory.writers import DigestWriter, ModelWriter, Writer, WriteRequest

# The names are imported when first used, so that the command line's quick commands (``recent``,
# ``read``) and ``import memory.cli...`` do not load the pipeline, the writers and the workspace.
_LAZY = {
    "ChangeSet": "memory.changes",
    "Citation": "memory.records",
    "CreateRecord": "memory.changes",
    "DeleteRecord": "memory.changes",
    "Destination": "memory.changes",
    "DigestWriter": "memory.writers",
    "FailureReason": "memory.pipeline",
    "ForgetReport": "memory.forget",
    "IdleWatcher": "memory.watcher",
    "LocalMemory": "memory.interface",
    "MemoryLayerError": "memory.errors",
    "MemoryProvider": "memory.interface",
    "MemoryWorkspace": "memory.workspace",
    "ModelWriter": "memory.writers",
    "MoveRecords": "memory.changes",
    "PROVIDER": "memory.pipeline",
    "Record": "memory.records",
    "RejectedError": "memory.errors",
    "Rejection": "memory.errors",
    "RewriteTopic": "memory.changes",
    "SearchHit": "memory.recall",
    "SearchIndexMissingError": "memory.errors",
    "Source": "memory.records",
    "SourceRef": "memory.changes",
    "TopicRecord": "memory.changes",
    "UpdateRecord": "memory.changes",
    "WorkspaceBusyError": "memory.errors",
    "WorkspaceStoreError": "memory.errors",
    "WriteFailure": "memory.pipeline",
    "WritePipeline": "memory.pipeline",
    "WriteRequest": "memory.writers",
    "Writer": "memory.writers",
    "WriterUnavailableError": "memory.errors",
    "add_memory": "memory.adding",
    "approx_tokens": "memory.workspace",
    "forget_session": "memory.forget",
    "parse_changes": "memory.changes",
    "run_session": "memory.interface",
    "split_batches": "memory.pipeline",
    "wrap_context": "memory.interface",
}


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


def __getattr__(name: str) -> _typing.Any:
    """Import a public name on first use (the package stays cheap to import)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

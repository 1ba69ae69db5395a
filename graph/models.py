"""The models handed to callers: frozen pydantic models of sessions, nodes and content blocks.

Each class says what its fields mean. Times are timezone-aware UTC datetimes, stored as integer
microseconds since the Unix epoch so they round-trip exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.ids import NodeId, SessionId

__all__ = [
    "Block",
    "Content",
    "ImageBlock",
    "Kind",
    "Node",
    "Role",
    "SearchHit",
    "Session",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "content_text",
    "from_micros",
    "to_micros",
    "utcnow",
]


class Kind(StrEnum):
    """What a node is: a message, a compaction summary, or a runtime's event (progress, hooks)."""

    MESSAGE = "message"
    """A turn of the conversation."""
    SUMMARY = "summary"
    """A compaction summary; its ``covers`` name the nodes it replaces."""
    EVENT = "event"
    """Anything else the runtime recorded (progress, snapshots, mode changes)."""


class Role(StrEnum):
    """Who produced a node: the user, the assistant, the system or a tool."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


_frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextBlock(BaseModel):
    """Plain text."""

    model_config = _frozen
    type: Literal["text"] = "text"
    text: str
    """The text."""


class ToolCallBlock(BaseModel):
    """A tool call made by the assistant."""

    model_config = _frozen
    type: Literal["tool_call"] = "tool_call"
    id: str
    """The call id the runtime gave it (joins the result)."""
    name: str
    """The tool's name."""
    arguments: Any = None
    """The arguments as the runtime recorded them: JSON-shaped (the codec refuses anything else)."""


class ToolResultBlock(BaseModel):
    """The result of a tool call."""

    model_config = _frozen
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    """The id of the call this answers."""
    text: str = ""
    """The result as text."""
    is_error: bool = False
    """Whether the tool reported failure."""


class ImageBlock(BaseModel):
    """A reference to an image; the image bytes are not stored in the graph."""

    model_config = _frozen
    type: Literal["image"] = "image"
    ref: str
    """Where the image is: a path, URL or content hash."""
    media_type: str = ""
    """The MIME type, when known (``image/png``)."""


Block = Annotated[
    TextBlock | ToolCallBlock | ToolResultBlock | ImageBlock, Field(discriminator="type")
]
"""One content block, told apart by its ``type`` field."""

Content = str | tuple[Block, ...]
"""A node's content: plain text, or a sequence of blocks."""


def utcnow() -> datetime:
    """Return the current time as an aware UTC datetime, truncated to microseconds."""
    return datetime.now(UTC)


def to_micros(moment: datetime) -> int:
    """Return ``moment`` as integer microseconds since the Unix epoch (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """Return the aware UTC datetime for integer microseconds since the Unix epoch."""
    return datetime.fromtimestamp(micros // 1_000_000, UTC).replace(microsecond=micros % 1_000_000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def content_text(content: Content) -> str:
    """Return the plain text of ``content``: the string itself, or its text and tool-result blocks.

    Blocks are joined with a newline; tool calls and images contribute nothing.
    """
    if isinstance(content, str):
        return content
    parts = [b.text for b in content if isinstance(b, TextBlock | ToolResultBlock) and b.text]
    return "\n".join(parts)


class Node(BaseModel):
    """One entry of a session. Content is immutable once appended; metadata is not.

    ``metadata["written"]`` holds the written markers (provider -> the values it wrote, sorted: one
    provider may mark a node for several consumers, a memory workspace each) and
    ``metadata["rewound"]`` is True for rewound nodes; both are maintained by the store and read back
    here.
    """

    model_config = _frozen
    id: NodeId
    """Stable id: kept from the transcript on import, UUIDv7 style when the store makes it."""
    session_id: SessionId
    """The session the node belongs to."""
    predecessor: NodeId | None
    """The node this one follows, or None for a root."""
    kind: Kind
    """message, summary or event."""
    role: Role
    """user, assistant, system or tool."""
    content: Content
    """Plain text or a tuple of blocks."""
    created_at: datetime
    """When the runtime wrote it (UTC)."""
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    """Free-form and JSON-shaped, checked by the codec's allow-list when stored (a pydantic JSON
    validation here would cost more than the rest of an import); ``written`` and ``rewound`` are the
    store's (see the class doc)."""
    covers: tuple[NodeId, ...] = ()
    """For a compaction summary: the nodes it replaces, oldest first."""

    @property
    def text(self) -> str:
        """The node's plain text (see :func:`content_text`)."""
        return content_text(self.content)

    @property
    def written(self) -> Mapping[str, tuple[str, ...]]:
        """The written markers on this node: provider -> the values written, sorted."""
        w = self.metadata.get("written")
        return w if isinstance(w, Mapping) else {}

    def is_written(self, provider: str, value: str) -> bool:
        """Whether this node carries the marker ``(provider, value)``."""
        return value in self.written.get(provider, ())

    @property
    def rewound(self) -> bool:
        """Whether a rewind stamped this node (it then leaves every branch and pending)."""
        return bool(self.metadata.get("rewound", False))


class Session(BaseModel):
    """One conversation: its nodes, its durable head, and where it was spawned from, if anywhere."""

    model_config = _frozen
    id: SessionId
    """The session id (kept from the transcript on import)."""
    title: str = ""
    """A human title, possibly empty."""
    created_at: datetime
    """When the session was created (UTC)."""
    updated_at: datetime
    """When content was last appended. Head moves, markers and rewound stamps leave it alone."""
    head: NodeId | None
    """The node the session continues from; None while the session is empty."""
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    """Free-form, JSON-shaped (an importer keeps the transcript's header here)."""
    spawned_from: NodeId | None = None
    """For a spawned sub-agent session: the node of the parent session that started it."""
    parent_session: SessionId | None = None
    """For a spawned session: the session holding ``spawned_from``."""


class SearchHit(BaseModel):
    """One node found by a full-text search of what was said (see :mod:`graph.search`)."""

    model_config = _frozen
    session_id: SessionId
    """The session holding the node."""
    node_id: NodeId
    """The node that matched."""
    created_at: datetime
    """When the runtime wrote the node (UTC)."""
    kind: Kind
    """message or summary (events are not indexed)."""
    role: Role
    """Who said it."""
    snippet: str
    """One line of plain text around the match, control characters removed; ``…`` marks a cut."""
    spans: tuple[tuple[int, int], ...] = ()
    """``[start, end)`` character offsets of the matched words in :attr:`snippet`."""
    rank: float
    """FTS5's bm25 score: negative, lower is a better match."""
    rewound: bool = False
    """The node was rewound (it is on no branch, but it was said)."""

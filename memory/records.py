"""What a memory workspace holds: archived sources, records, citations.

A *source* is one turn exactly as it was handed to a writer, content-addressed and never changed. A
*record* is one plain-text statement with a stable id, a place (topic path, heading path, position) and
citations; a *citation* points from a record to an archived source with a label and a snippet.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

__all__ = [
    "CORE_TOPIC",
    "LINK_RE",
    "Citation",
    "Record",
    "Source",
    "content_hash",
    "source_id",
]

CORE_TOPIC = "core"
"""The topic ``core.md`` is rendered from (``topics/core.md`` is the original)."""

LINK_RE = re.compile(r"\[\[([a-z0-9/_-]*)#\^([A-Za-z0-9-]+)\]\]")
"""A link from a record's content to another record: ``[[topic/path#^record-id]]`` (Obsidian block link).

An empty topic part (``[[#^record-id]]``) means the linking record's own topic.
"""


def content_hash(text: str) -> str:
    """Return the SHA-256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_id(session_id: str, node_id: str, speaker: str, text: str) -> str:
    """Return the content address of a source: ``s-`` and 32 hex digits of a SHA-256.

    The digest covers the session id, node id, speaker and text, so archiving the same turn twice
    names the same row and a turn whose text differs would be a different source. Any ``str`` has an
    address (a lone surrogate is hashed as its code point), so text that the validation refuses is
    refused there, with its reason, rather than here.
    """
    joined = "\0".join((session_id, node_id, speaker, text))
    h = hashlib.sha256(joined.encode("utf-8", "surrogatepass"))
    return "s-" + h.hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Source:
    """One archived turn."""

    id: str
    """The content address (:func:`source_id`)."""
    session_id: str
    """The session the turn came from."""
    node_id: str
    """The graph node id of the turn."""
    speaker: str
    """The node's role: ``user`` or ``assistant``."""
    text: str
    """The turn's plain text as handed to the writer: the session's text with every credential
    :func:`memory.secrets.scan` finds replaced by ``[redacted <kind>]``."""
    content_hash: str
    """SHA-256 of ``text`` (:func:`content_hash`), checked before every install."""
    created_at: str = ""
    """When the turn was written (ISO 8601 UTC), from the node."""
    original_hash: str = ""
    """SHA-256 of the turn's text as it was in the session, before credentials were redacted (equal
    to ``content_hash`` when nothing was redacted; empty for rows archived before redaction)."""
    redactions: tuple[tuple[str, int, int], ...] = ()
    """What was redacted: ``(kind, start, end)`` per credential, offsets in characters into the
    original text, kinds from :data:`memory.secrets.KINDS`. The value itself is never kept."""


@dataclass(frozen=True, slots=True)
class Citation:
    """A record's reference to an archived source."""

    source: str
    """The source id; empty for a bare snippet citation (a person's own save with nothing to cite)."""
    label: str
    """A short local display keyword, kept exactly as the writer gave it (never rewritten)."""
    snippet: str = ""
    """A short excerpt of the source supporting the record."""


@dataclass(frozen=True, slots=True)
class Record:
    """One plain-text statement in a topic."""

    id: str
    """The stable record id (``m-`` and 32 hex digits); also the block anchor in the Markdown view."""
    topic: str
    """The topic path, ``/``-separated lowercase segments (``sessions/abc``, ``core``)."""
    headings: tuple[str, ...]
    """The heading path inside the topic, outermost first (may be empty)."""
    content: str
    """The statement; may link other records as ``[[topic#^record-id]]``."""
    citations: tuple[Citation, ...]
    """Its evidence, in order."""
    tags: tuple[str, ...] = ()
    """Free tags."""
    time: str | None = None
    """When the statement holds or was said (free text such as ``2025-06-01``); None when undated."""
    created_at: int = 0
    """When the record was created, microseconds since the Unix epoch."""
    updated_at: int = 0
    """When its content, citations, tags or time last changed, microseconds since the Unix epoch."""
    links: tuple[str, ...] = field(default=(), compare=False)
    """The record ids its content links to, derived from ``content``."""

    def same_payload(self, other: Record) -> bool:
        """Whether two versions of a record hold the same content, citations, tags and time."""
        return (
            self.content == other.content
            and self.citations == other.citations
            and self.tags == other.tags
            and self.time == other.time
        )

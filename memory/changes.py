"""The changes a writer (or a human edit) hands to a transaction.

Four record operations, and one whole-topic form for edited Markdown files:

* ``create_record``: final ``content``, ``time``, ``tags``, non-empty ``sources`` and a
  ``destination`` (topic path, heading path, position ``start``/``end``/``before``/``after``, and an
  ``anchor_memory_id`` for ``before``/``after``);
* ``update_record``: an existing ``memory_id`` with the complete final content, time, tags and sources;
  the record keeps its id and place;
* ``delete_record``: an existing ``memory_id``;
* ``move_records``: an ordered, non-empty list of ``memory_ids`` and a destination; ids, content and
  citations are kept, the order given is the order installed;
* ``rewrite_topic``: the complete new list of a topic's records in order (what parsing an edited
  ``topics/<path>.md`` gives). Existing ids keep their identity; entries without ``memory_id`` are
  created. An id that was in the topic and appears nowhere afterwards, and is not deleted explicitly,
  is a lost record and the transaction is rejected.

JSON shape (what :class:`~memory.writers.ModelWriter` asks a model for)::

    {"changes": [
      {"op": "create_record", "content": "...", "time": null, "tags": [],
       "sources": [{"source": "s-...", "label": "keyword", "snippet": "..."}],
       "destination": {"topic_path": "projects/x", "headings": ["Setup"], "position": "end"}},
      {"op": "update_record", "memory_id": "m-...", "content": "...", "sources": [...]},
      {"op": "delete_record", "memory_id": "m-..."},
      {"op": "move_records", "memory_ids": ["m-...", "m-..."], "destination": {...}}
    ]}
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.errors import RejectedError, Rejection

__all__ = [
    "Change",
    "ChangeSet",
    "CreateRecord",
    "DeleteRecord",
    "Destination",
    "MoveRecords",
    "RewriteTopic",
    "SourceRef",
    "TopicRecord",
    "UpdateRecord",
    "parse_changes",
]

# Built on first use: a command that only reads memory never builds the change validators.
_strict = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SourceRef(BaseModel):
    """One citation as a writer states it."""

    model_config = _strict
    source: str
    """The archived source id (``s-...``); empty for a bare snippet citation (a person's own save
    with no turn to cite), which then needs a snippet."""
    label: str
    """A short keyword shown as the link text; kept exactly as given."""
    snippet: str = ""
    """An excerpt of the source supporting the record."""


class Destination(BaseModel):
    """Where records go: a topic, a heading path in it, and a position there."""

    model_config = _strict
    topic_path: str
    """``/``-separated lowercase segments of ``[a-z0-9_-]``; ``core`` is the core topic."""
    headings: tuple[str, ...] = ()
    """The heading path inside the topic, outermost first; created when new."""
    position: Literal["start", "end", "before", "after"] = "end"
    """Where in that section; ``before``/``after`` need ``anchor_memory_id``."""
    anchor_memory_id: str | None = None
    """For ``before``/``after``: a record in that topic and heading path, not itself being moved."""


class CreateRecord(BaseModel):
    """Create a record (a new id is assigned)."""

    model_config = _strict
    op: Literal["create_record"] = "create_record"
    content: str
    sources: tuple[SourceRef, ...]
    destination: Destination
    time: str | None = None
    tags: tuple[str, ...] = ()


class UpdateRecord(BaseModel):
    """Replace a record's content, time, tags and sources; its id and place are kept."""

    model_config = _strict
    op: Literal["update_record"] = "update_record"
    memory_id: str
    content: str
    sources: tuple[SourceRef, ...]
    time: str | None = None
    tags: tuple[str, ...] = ()


class DeleteRecord(BaseModel):
    """Delete a record; links to it must go in the same transaction."""

    model_config = _strict
    op: Literal["delete_record"] = "delete_record"
    memory_id: str


class MoveRecords(BaseModel):
    """Move records, in the order given, to one destination."""

    model_config = _strict
    op: Literal["move_records"] = "move_records"
    memory_ids: tuple[str, ...] = Field(min_length=1)
    destination: Destination


class TopicRecord(BaseModel):
    """One record of a :class:`RewriteTopic`, in file order."""

    model_config = _strict
    memory_id: str | None = None
    """An existing record's id, or None for a new record."""
    headings: tuple[str, ...] = ()
    content: str
    sources: tuple[SourceRef, ...]
    time: str | None = None
    tags: tuple[str, ...] = ()


class RewriteTopic(BaseModel):
    """The complete new content of one topic (an edited Markdown view parsed back)."""

    model_config = _strict
    op: Literal["rewrite_topic"] = "rewrite_topic"
    topic_path: str
    records: tuple[TopicRecord, ...]


Change = Annotated[
    CreateRecord | UpdateRecord | DeleteRecord | MoveRecords | RewriteTopic,
    Field(discriminator="op"),
]
"""One operation, told apart by its ``op`` field."""


class ChangeSet(BaseModel):
    """The operations of one transaction, applied in order, all or nothing."""

    model_config = _strict
    changes: tuple[Change, ...] = ()
    skipped: tuple[str, ...] = ()
    """Source ids of the batch the writer read and found nothing worth remembering in. A batch whose
    changes change nothing is written (marked) without an install only when every one of its sources
    is listed here; otherwise it is the ``NO_PROGRESS`` failure. Each id must be a source of the
    batch (``SOURCE_NOT_IN_BATCH`` otherwise)."""


def parse_changes(text: str) -> ChangeSet:
    """Read a change set from a writer's answer.

    Accepts the JSON object ``{"changes": [...]}`` or a bare list, optionally inside a Markdown code
    fence (models add them).

    Raises:
        RejectedError: ``MALFORMED``: not text, not JSON (or nested too deeply to parse), or not
            the shape above (the detail says where).
    """
    if not isinstance(text, str):  # a model client's answer is untrusted: None, bytes, a dict
        raise RejectedError(
            Rejection.MALFORMED,
            f"the answer is not text but {type(text).__name__}; "
            'answer with one JSON object {"changes": [...]} as text',
        )
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise RejectedError(
            Rejection.MALFORMED,
            f"the answer is not JSON ({e.msg} at line {e.lineno} column {e.colno}); "
            'answer with one JSON object {"changes": [...]} and nothing else',
        ) from e
    except RecursionError as e:  # json recurses per level: a hostile answer can exhaust the stack
        raise RejectedError(
            Rejection.MALFORMED,
            "the answer is JSON nested too deeply to read; "
            'answer with one JSON object {"changes": [...]} and nothing else',
        ) from e
    if isinstance(data, list):
        data = {"changes": data}
    try:
        return ChangeSet.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise RejectedError(
            Rejection.MALFORMED,
            f"the changes do not have the required shape: {loc}: {first['msg']}",
            field=loc,
        ) from e

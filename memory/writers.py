"""Writers: what turns a batch of archived turns into changes, staged for validation.

A writer receives a :class:`WriteRequest` (the batch's sources, the current records, and on the one
repair attempt the rejection of its first answer) and returns a :class:`~memory.changes.ChangeSet`. It
raises :class:`~memory.errors.RejectedError` for an answer it cannot turn into changes (that answer then
gets the repair, like a rejected one) and :class:`~memory.errors.WriterUnavailableError` when it cannot
reach what it needs (the pipeline reports it as retryable).

* :class:`DigestWriter`: the deterministic offline default; no model. One digest topic per session
  (``sessions/<session>``), one record per user request with the gist of the reply, each citing its
  source turns; every source of the batch is cited exactly once.
* :class:`ModelWriter`: asks any ``complete(prompt) -> str`` callable for JSON changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memory import caps
from memory.changes import ChangeSet, CreateRecord, Destination, SourceRef, parse_changes
from memory.errors import RejectedError, WriterUnavailableError
from memory.records import Source
from memory.secrets import scan
from memory.transactions import State

__all__ = ["DigestWriter", "ModelWriter", "WriteRequest", "Writer", "redact", "session_topic"]


@dataclass(frozen=True)
class WriteRequest:
    """What a writer is handed for one batch."""

    session_id: str
    """The session the batch comes from."""
    sources: tuple[Source, ...]
    """The batch: archived turns, oldest first. Cite them by ``Source.id``."""
    state: State
    """The workspace's records now (read-only)."""
    rejection: RejectedError | None = None
    """On the repair attempt: why the first answer was refused."""


@runtime_checkable
class Writer(Protocol):
    """Turns a batch into changes."""

    @property
    def name(self) -> str:
        """A short name for logs and failures."""
        ...

    def write(self, request: WriteRequest) -> ChangeSet:
        """Return the changes for ``request``.

        Raises:
            RejectedError: the answer could not be read (it gets the repair attempt).
            WriterUnavailableError: the writer could not run (retryable).
        """
        ...


def session_topic(session_id: str) -> str:
    """Return the digest topic path of a session: ``sessions/`` and a slug of its id."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", session_id.lower()).strip("-_")[:80] or "session"
    return f"sessions/{slug}"


def redact(text: str) -> str:
    """Replace every secret :func:`memory.secrets.scan` finds with ``[redacted <kind>]``."""
    for f in sorted(scan(text), key=lambda f: f.start, reverse=True):
        text = text[: f.start] + f"[redacted {f.kind}]" + text[f.end :]
    return text


def _gist(text: str, limit: int) -> str:
    """The first sentence or so of ``text``, one line, within ``limit`` characters, secrets redacted."""
    flat = " ".join(redact(text).split()).replace("[[", "[ [")
    m = re.match(r"(.{20,}?[.!?。！？])(\s|$)", flat)
    gist = m.group(1) if m and len(m.group(1)) <= limit else flat
    if len(gist) > limit:
        gist = gist[: limit - 1].rstrip() + "…"
    return gist


class DigestWriter:
    """The deterministic offline writer (no model), the pipeline's default.

    For a batch it creates, in the session's digest topic under a heading of the first turn's date,
    one record per user request: ``Asked: <gist>. Answer: <gist of the first reply>``, citing the request
    and every reply up to the next request (a long run of replies is split into several records so
    that no record exceeds ``caps.MAX_CITATIONS_PER_RECORD``). Replies before the batch's first request
    (a batch cut mid-answer) become a ``Continued: ...`` record. Secrets are redacted from gists and
    snippets before they are written. The same batch always gives the same changes.

    Args:
        gist_chars: The longest gist of one turn, in characters.
    """

    name = "digest"

    def __init__(self, gist_chars: int = 240) -> None:
        self.gist_chars = gist_chars

    def write(self, request: WriteRequest) -> ChangeSet:
        """Return one ``create_record`` per user request of the batch (see the class doc)."""
        groups: list[list[Source]] = []
        for s in request.sources:
            if s.speaker == "user" or not groups:
                groups.append([s])
            else:
                groups[-1].append(s)
        topic = session_topic(request.session_id)
        per = caps.MAX_CITATIONS_PER_RECORD
        changes = []
        for group in groups:
            for k in range(0, len(group), per):
                chunk = group[k : k + per]
                changes.append(self._record(topic, chunk, continued=k > 0))
        return ChangeSet(changes=tuple(changes))

    def _record(self, topic: str, group: Sequence[Source], *, continued: bool) -> CreateRecord:
        head = group[0]
        replies = [s for s in group if s.speaker != "user"]
        if head.speaker == "user" and not continued:
            text = f"Asked: {_gist(head.text, self.gist_chars)}"
            if replies:
                text += f" Answer: {_gist(replies[0].text, self.gist_chars)}"
        else:
            text = f"Continued: {_gist(head.text, self.gist_chars)}"
        refs = tuple(
            SourceRef(
                source=s.id,
                label="request" if s.speaker == "user" else f"reply {n}",
                snippet=_gist(s.text, min(caps.MAX_SNIPPET_CHARS, 160)),
            )
            for n, s in enumerate(group)
        )
        day = head.created_at[:10]
        return CreateRecord(
            content=text[: caps.MAX_RECORD_CHARS],
            sources=refs,
            destination=Destination(topic_path=topic, headings=(day,) if day else ()),
        )


_INSTRUCTIONS = """You maintain a long-term memory of conversations as plain-text records in topics.
Record only facts that will still be useful later (decisions, preferences, project facts); skip
repeated status checks, one-off tool output and details that can be re-read from files.
Answer with ONE JSON object and nothing else:
{"changes": [ ... ]}
Operations:
- {"op": "create_record", "content": str, "time": str|null, "tags": [str],
   "sources": [{"source": "<source id>", "label": "<short keyword>", "snippet": "<short excerpt>"}],
   "destination": {"topic_path": "a/b", "headings": [str], "position": "start"|"end"|"before"|"after",
                   "anchor_memory_id": "<record id, for before/after>"}}
- {"op": "update_record", "memory_id": str, "content": str, "time": str|null, "tags": [str], "sources": [...]}
- {"op": "delete_record", "memory_id": str}
- {"op": "move_records", "memory_ids": [str], "destination": {...}}
Rules: every record cites at least one source; new citations cite only the source ids listed below;
content is one paragraph; never copy keys, tokens or passwords; topic paths are lowercase a-z0-9_-
segments joined by "/"; link another record as [[topic/path#^record-id]] only if it exists."""


class ModelWriter:
    """A writer backed by any ``complete(prompt) -> str`` callable (a model client, a test script).

    The prompt gives the instructions and JSON schema, the current topics (paths, headings, record
    ids and contents, cut to ``outline_chars``), the batch's sources, and on the repair attempt the
    rejection code and detail with the instruction to fix exactly that. The answer is parsed with
    :func:`memory.changes.parse_changes`; a malformed answer is a ``MALFORMED`` rejection.

    Args:
        complete: Called with the whole prompt; returns the model's answer.
        name: The writer's name.
        outline_chars: The most characters of current records put in the prompt.

    ``complete`` raising ``ConnectionError``, ``TimeoutError`` or ``OSError`` is reported as
    :class:`~memory.errors.WriterUnavailableError` (retryable).
    """

    def __init__(
        self, complete: Callable[[str], str], *, name: str = "model", outline_chars: int = 12_000
    ) -> None:
        self.complete = complete
        self.name = name
        self.outline_chars = outline_chars

    def prompt(self, request: WriteRequest) -> str:
        """Return the prompt for ``request``."""
        lines = [_INSTRUCTIONS, "", "Current topics:"]
        used = 0
        for topic in sorted(request.state.order):
            lines.append(f"## {topic}")
            for rec in request.state.topic_records(topic):
                entry = f"- {rec.id} {list(rec.headings)}: {rec.content}"
                used += len(entry)
                if used > self.outline_chars:
                    lines.append("- ... (more records not shown)")
                    break
                lines.append(entry)
        if not request.state.order:
            lines.append("(none yet)")
        lines += ["", f"Session: {request.session_id}", "Sources of this batch:"]
        for s in request.sources:
            lines.append(
                json.dumps(
                    {"source": s.id, "speaker": s.speaker, "text": s.text}, ensure_ascii=False
                )
            )
        if request.rejection is not None:
            r = request.rejection
            lines += [
                "",
                f"Your previous answer was REJECTED with {r.reason.value}: {r.detail}",
                "Answer again with the whole corrected JSON object, fixing exactly that.",
            ]
        return "\n".join(lines)

    def write(self, request: WriteRequest) -> ChangeSet:
        """Ask the model and parse its answer.

        Raises:
            RejectedError: ``MALFORMED``: the answer is not the JSON change shape.
            WriterUnavailableError: ``complete`` could not reach the model.
        """
        try:
            answer = self.complete(self.prompt(request))
        except (ConnectionError, TimeoutError, OSError) as e:
            raise WriterUnavailableError(self.name, f"{type(e).__name__}: {e}") from e
        return parse_changes(answer)

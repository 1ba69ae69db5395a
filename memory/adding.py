"""A person's own save: one statement written into memory by hand (``sessiongraph memory add``).

The statement goes through the same validated transaction as a writer's changes (secrets, caps, form,
topic path), as one ``create_record``. It may cite turns of stored sessions: each cited node is
archived as a source (content-addressed, so a turn archived before is the same source) and cited with
its role as the label and the start of its text as the snippet. A statement with nothing to cite keeps
a bare snippet citation (an empty source id, the statement itself as the snippet), so every record
still says what it stands on.

Nothing is written when the statement is refused: the transaction is validated against the sources
the cited turns will have before anything is archived.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.errors import UnknownNodeError
from graph.models import Node
from graph.store.base import BaseStore
from memory import caps
from memory.changes import ChangeSet, CreateRecord, Destination, SourceRef
from memory.records import Record, source_id
from memory.transactions import plan
from memory.workspace import MemoryWorkspace

__all__ = ["DEFAULT_ADD_TOPIC", "SAVED_LABEL", "add_memory", "cited_nodes"]

DEFAULT_ADD_TOPIC = "notes"
"""The topic a saved statement goes to when none is given."""

SAVED_LABEL = "saved by hand"
"""The label of the bare snippet citation of a statement that cites nothing."""

_SNIPPET_CHARS = 200


def _snippet(text: str, limit: int) -> str:
    one = re.sub(r"\s+", " ", text).strip()
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


def cited_nodes(store: BaseStore, cites: Sequence[str]) -> list[Node]:
    """Resolve ``SESSION/NODE`` references to nodes, in the order given (duplicates dropped).

    ``SESSION`` is a session id or a unique prefix of one; ``NODE`` is a node id of that session or a
    unique prefix or suffix of one (tables show the last 8 characters).

    Raises:
        ValueError: a reference is not ``SESSION/NODE``, or its node is ambiguous (the message names
            the reference).
        UnknownSessionError: no session matches.
        UnknownNodeError: the session has no such node.
    """
    # The command line's own session-prefix rule, imported here so that the library does not load the
    # command line's dependencies.
    from graph.cli.commands import resolve_session

    out: list[Node] = []
    for ref in cites:
        session_ref, sep, node_ref = ref.partition("/")
        if not sep or not session_ref or not node_ref:
            raise ValueError(f"citation {ref!r}: write it as SESSION/NODE")
        session = resolve_session(store, session_ref)
        ids = list(store.index(session.id).pred)
        if node_ref in ids:
            node_id = node_ref
        else:
            tail = node_ref.lstrip("…")
            matches = sorted(i for i in ids if i.startswith(node_ref) or i.endswith(tail))
            if len(matches) > 1:
                raise ValueError(
                    f"citation {ref!r}: {len(matches)} nodes of session {session.id} match "
                    f"{node_ref!r}; give more of the id"
                )
            if not matches:
                raise UnknownNodeError(node_ref, session.id)
            node_id = matches[0]
        node = store.nodes(session.id, [node_id])[0]
        if all(n.id != node.id for n in out):
            out.append(node)
    return out


def add_memory(
    ws: MemoryWorkspace,
    content: str,
    *,
    cites: Sequence[Node] = (),
    topic: str = DEFAULT_ADD_TOPIC,
    headings: Sequence[str] = (),
    tags: Sequence[str] = (),
    time: str | None = None,
) -> Record:
    """Save one statement as a new record at the end of ``topic`` (under ``headings``).

    Args:
        ws: The workspace.
        content: The statement (one paragraph; may link records as ``[[topic#^id]]``).
        cites: The turns it stands on (see :func:`cited_nodes`); each is archived as a source and
            cited. None: the record keeps a bare snippet citation labelled :data:`SAVED_LABEL`.
        topic: The topic path (``core`` puts it in the core block).
        headings: The heading path inside the topic, created when new.
        tags: Free tags.
        time: When the statement holds (free text), or None.

    Returns:
        The created record.

    Raises:
        RejectedError: refused by the transaction (``SECRET``, ``OVER_CAP``, ``MALFORMED``,
            ``UNKNOWN_POSITION`` for a bad topic path, ...); nothing was written, not even an archived
            source.
        WorkspaceBusyError: another writer holds the lock.
    """
    if cites:
        refs = tuple(
            SourceRef(
                source=source_id(n.session_id, n.id, n.role.value, n.text),
                label=n.role.value,
                snippet=_snippet(n.text, _SNIPPET_CHARS),
            )
            for n in cites
        )
    else:
        refs = (
            SourceRef(
                source="", label=SAVED_LABEL, snippet=_snippet(content, caps.MAX_SNIPPET_CHARS)
            ),
        )
    changes = ChangeSet(
        changes=(
            CreateRecord(
                content=content,
                sources=refs,
                destination=Destination(topic_path=topic, headings=tuple(headings)),
                time=time,
                tags=tuple(tags),
            ),
        )
    )
    with ws.write_lock():
        new = {r.source for r in refs if r.source}
        # Validate as if the cited turns were archived, so a refusal archives nothing.
        plan(
            ws.state(),
            changes,
            archived=lambda ids: (set(ids) & new) | ws.archived(ids),
            batch=None,
            now=0,
        )
        if cites:
            ws.archive(cites)
        p = ws.apply(changes, batch=None, kind="add")
    return p.after.records[p.created[0]]

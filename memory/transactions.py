r"""Planning and validating one transaction of changes against the workspace's records.

:func:`plan` applies a :class:`~memory.changes.ChangeSet` to a copy of the records, in order, and checks
everything the transaction may not do. It either returns a :class:`Plan` (the records before and after,
and what changed) or raises :class:`~memory.errors.RejectedError` with a :class:`~memory.errors.Rejection`
code, having touched nothing: the workspace installs a plan only after it was fully validated.

Checks, in the order they run:

1. the number of changes (``MAX_CHANGES_PER_TRANSACTION``);
2. each id receives at most one content operation and one move, and is not both deleted and moved
   (``MALFORMED``);
3. per change: the ids it names exist (``UNKNOWN_RECORD``), its destination is a valid topic path with
   a known position and anchor (``UNKNOWN_POSITION``), its fields fit the caps (``OVER_CAP``), hold no
   secret (``SECRET``, naming the kind and offsets only) and have the required form (``MALFORMED``:
   a lone surrogate, which a JSON escape such as ``\ud800`` decodes to, is not text any store can encode);
4. no record that existed is missing afterwards without an explicit ``delete_record`` (``RECORD_LOST``);
5. every source of the batch is still archived (``SOURCE_MISSING``), every citation the transaction
   adds or changes names an archived source (``UNKNOWN_SOURCE``; the archive is append-only but for
   a forgotten session, whose citations go in the same transaction, so the citations already
   installed stay valid) or is a bare snippet (an empty source id, with a non-empty snippet: a
   person's own save with nothing to cite), and every citation the transaction adds
   names a source of this batch (``SOURCE_NOT_IN_BATCH``) when the transaction has a batch;
6. every ``[[topic#^record-id]]`` link names a record that exists afterwards in that topic
   (``DANGLING_LINK``).

The source archive's own integrity (``SOURCE_CHANGED``, ``SOURCE_MISSING``) is checked by the workspace
inside the install transaction, against the baseline read before the writer ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

from graph.ids import new_id
from memory import caps
from memory.changes import (
    ChangeSet,
    CreateRecord,
    DeleteRecord,
    Destination,
    MoveRecords,
    RewriteTopic,
    SourceRef,
    UpdateRecord,
)
from memory.errors import RejectedError, Rejection
from memory.records import LINK_RE, Citation, Record
from memory.secrets import scan

__all__ = ["TOPIC_RE", "Plan", "State", "new_record_id", "plan", "plan_in_steps", "record_links"]

TOPIC_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*$")
"""A valid topic path: ``/``-separated segments of lowercase letters, digits, ``_`` and ``-``."""

_MAX_TOPIC_CHARS = 200


def new_record_id() -> str:
    """Return a new time-ordered record id: ``m-`` and 32 hex digits."""
    return "m-" + new_id().replace("-", "")


def record_links(content: str, topic: str) -> tuple[tuple[str, str], ...]:
    """Return the ``(topic, record_id)`` pairs ``content`` links to (an empty topic is ``topic``)."""
    if "[[" not in content:
        return ()
    return tuple((m.group(1) or topic, m.group(2)) for m in LINK_RE.finditer(content))


@dataclass
class State:
    """The records of a workspace: by id, and each topic's ids in position order."""

    records: dict[str, Record] = field(default_factory=dict)
    order: dict[str, list[str]] = field(default_factory=dict)

    def copy(self) -> State:
        """Return a copy whose dict and lists can be changed independently."""
        return State(dict(self.records), {t: list(ids) for t, ids in self.order.items()})

    def topic_records(self, topic: str) -> list[Record]:
        """Return a topic's records in position order (empty for an unknown topic)."""
        return [self.records[i] for i in self.order.get(topic, [])]


@dataclass(frozen=True)
class Plan:
    """A validated transaction: the records before and after, and what it changes."""

    before: State
    after: State
    created: tuple[str, ...]
    updated: tuple[str, ...]
    """Records whose content, citations, tags or time changed."""
    deleted: tuple[str, ...]
    moved: tuple[str, ...]
    """Records whose topic, heading path or position changed (created and deleted ones excluded)."""
    topics: frozenset[str]
    """Topics whose rendered file changes."""

    @property
    def changed(self) -> bool:
        """Whether installing the plan changes anything at all."""
        return bool(self.created or self.updated or self.deleted or self.moved)


def _reject(reason: Rejection, detail: str, **facts: object) -> RejectedError:
    return RejectedError(reason, detail, **facts)  # type: ignore[arg-type]


def _check_encodable(value: str, field_name: str, i: int) -> None:
    """Refuse text that is not Unicode the store can encode (a lone surrogate, from a JSON escape)."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _reject(
            Rejection.MALFORMED,
            f"{field_name} holds a lone surrogate (U+{ord(value[e.start]):04X}) at character "
            f"{e.start}, which is not text; remove it",
            field=field_name,
            change=i,
        ) from None


def _check_text(
    value: str, field_name: str, cap: int, cap_name: str, i: int, *, one_line: bool
) -> None:
    if len(value) > cap:
        raise _reject(
            Rejection.OVER_CAP,
            f"{field_name} has {len(value)} characters, over {cap_name}={cap}; shorten it",
            field=field_name,
            kind=cap_name,
            change=i,
        )
    _check_encodable(value, field_name, i)
    if one_line and ("\n" in value or "\r" in value):
        raise _reject(
            Rejection.MALFORMED, f"{field_name} must be one line", field=field_name, change=i
        )
    for finding in scan(value):
        raise _reject(
            Rejection.SECRET,
            f"{field_name} holds a secret of kind {finding.kind} at characters "
            f"{finding.start}-{finding.end}; remove it (never copy keys or tokens into memory)",
            field=field_name,
            kind=finding.kind,
            start=finding.start,
            end=finding.end,
            change=i,
        )


def _check_fields(
    content: str,
    sources: Iterable[SourceRef],
    tags: Iterable[str],
    time: str | None,
    headings: Iterable[str],
    i: int,
) -> None:
    if not content.strip():
        raise _reject(Rejection.MALFORMED, "content is empty", field="content", change=i)
    # A blank first line is a blank line too: the topic file would show it as the gap between
    # blocks, and reading the file back would lose it (or part the record from its tags line).
    if re.search(r"\n[ \t]*\n", content) or re.match(r"[ \t]*\n", content):
        raise _reject(
            Rejection.MALFORMED,
            "content must be one paragraph (no blank line, nor a blank first line); split it "
            "into several records",
            field="content",
            change=i,
        )
    _check_text(content, "content", caps.MAX_RECORD_CHARS, "MAX_RECORD_CHARS", i, one_line=False)
    refs = list(sources)
    if not refs:
        raise _reject(
            Rejection.MALFORMED,
            "a record needs at least one source; cite the turns it comes from",
            field="sources",
            change=i,
        )
    if len(refs) > caps.MAX_CITATIONS_PER_RECORD:
        raise _reject(
            Rejection.OVER_CAP,
            f"{len(refs)} citations, over MAX_CITATIONS_PER_RECORD={caps.MAX_CITATIONS_PER_RECORD}",
            field="sources",
            kind="MAX_CITATIONS_PER_RECORD",
            change=i,
        )
    for ref in refs:
        _check_encodable(ref.source, "source", i)
        if not ref.label.strip():
            raise _reject(Rejection.MALFORMED, "a citation label is empty", field="label", change=i)
        _check_text(
            ref.label, "label", caps.MAX_HEADING_CHARS, "MAX_HEADING_CHARS", i, one_line=True
        )
        _check_text(
            ref.snippet, "snippet", caps.MAX_SNIPPET_CHARS, "MAX_SNIPPET_CHARS", i, one_line=False
        )
        if not ref.source and not ref.snippet.strip():
            raise _reject(
                Rejection.MALFORMED,
                "a citation without a source needs a snippet (the words it stands on)",
                field="snippet",
                change=i,
            )
    tag_list = list(tags)
    if len(tag_list) > caps.MAX_TAGS:
        raise _reject(
            Rejection.OVER_CAP,
            f"{len(tag_list)} tags, over MAX_TAGS={caps.MAX_TAGS}",
            field="tags",
            kind="MAX_TAGS",
            change=i,
        )
    for tag in tag_list:
        if not tag.strip():
            raise _reject(Rejection.MALFORMED, "a tag is empty", field="tags", change=i)
        _check_text(tag, "tags", caps.MAX_TAG_CHARS, "MAX_TAG_CHARS", i, one_line=True)
    if time is not None:
        _check_text(time, "time", caps.MAX_TAG_CHARS, "MAX_TAG_CHARS", i, one_line=True)
    _check_headings(headings, i)


def _check_headings(headings: Iterable[str], i: int) -> None:
    for h in headings:
        if not h.strip() or h != h.strip():
            raise _reject(
                Rejection.UNKNOWN_POSITION,
                f"heading {h!r} is empty or has surrounding spaces",
                field="headings",
                change=i,
            )
        _check_text(h, "headings", caps.MAX_HEADING_CHARS, "MAX_HEADING_CHARS", i, one_line=True)


def _check_topic(topic: str, i: int) -> None:
    if len(topic) > _MAX_TOPIC_CHARS or not TOPIC_RE.match(topic):
        raise _reject(
            Rejection.UNKNOWN_POSITION,
            f"topic path {topic!r} is not valid: use /-separated segments of a-z, 0-9, _ and -",
            target=topic,
            change=i,
        )


def _citations(refs: Iterable[SourceRef]) -> tuple[Citation, ...]:
    return tuple(Citation(r.source, r.label, r.snippet) for r in refs)


def _place(state: State, ids: list[str], dest: Destination, i: int) -> None:
    """Insert ``ids`` (already removed from every topic order) at ``dest``, in the order given."""
    _check_topic(dest.topic_path, i)
    _check_headings(dest.headings, i)
    order = state.order.setdefault(dest.topic_path, [])
    records, headings = state.records, dest.headings
    # Only the section's first or last record, or the anchor, is needed: scan from the end that
    # finds it soonest (appending at the end of a large topic costs one step, not the topic).
    if dest.position in ("before", "after") and dest.anchor_memory_id is not None:
        try:
            hit = order.index(dest.anchor_memory_id)
        except ValueError:
            hit = -1
        section = [hit] if hit >= 0 and records[order[hit]].headings == headings else []
    elif dest.position == "start":
        section = next(
            ([n] for n, rid in enumerate(order) if records[rid].headings == headings), []
        )
    else:
        section = next(
            ([n] for n in range(len(order) - 1, -1, -1) if records[order[n]].headings == headings),
            [],
        )
    if dest.position in ("before", "after"):
        anchor = dest.anchor_memory_id
        if anchor is None:
            raise _reject(
                Rejection.UNKNOWN_POSITION,
                f"position {dest.position!r} needs anchor_memory_id",
                change=i,
            )
        if anchor in ids:
            raise _reject(
                Rejection.UNKNOWN_POSITION,
                f"anchor {anchor} is itself being placed",
                target=anchor,
                change=i,
            )
        at = next((n for n in section if order[n] == anchor), None)
        if at is None:
            raise _reject(
                Rejection.UNKNOWN_POSITION,
                f"anchor {anchor} is not a record of topic {dest.topic_path!r} under headings "
                f"{list(dest.headings)}",
                target=anchor,
                change=i,
            )
        at = at if dest.position == "before" else at + 1
    elif dest.anchor_memory_id is not None:
        raise _reject(
            Rejection.UNKNOWN_POSITION,
            f"position {dest.position!r} takes no anchor_memory_id",
            target=dest.anchor_memory_id,
            change=i,
        )
    elif not section:
        # A new section goes last; the topic's own (heading-less) records always lead the file,
        # because Markdown cannot return to a topic's top level after a heading.
        at = 0 if not dest.headings else len(order)
    else:
        at = section[0] if dest.position == "start" else section[-1] + 1
    order[at:at] = ids


def _unplace(state: State, ids: Collection[str]) -> None:
    gone = set(ids)
    for topic in {state.records[r].topic for r in gone}:
        if topic not in state.order:
            continue  # left out by a rewrite of its topic, placed nowhere yet
        state.order[topic] = [r for r in state.order[topic] if r not in gone]
        if not state.order[topic]:
            del state.order[topic]


def _conflicts(changes: ChangeSet) -> None:
    content: dict[str, int] = {}
    moves: dict[str, int] = {}
    deletes: set[str] = set()

    def once(table: dict[str, int], rid: str, i: int, what: str) -> None:
        if rid in table:
            raise _reject(
                Rejection.MALFORMED,
                f"record {rid} gets more than one {what} (changes {table[rid]} and {i}); combine them",
                record_id=rid,
                change=i,
            )
        table[rid] = i

    for i, ch in enumerate(changes.changes):
        if isinstance(ch, UpdateRecord):
            once(content, ch.memory_id, i, "content operation")
        elif isinstance(ch, DeleteRecord):
            once(content, ch.memory_id, i, "content operation")
            deletes.add(ch.memory_id)
        elif isinstance(ch, MoveRecords):
            for rid in ch.memory_ids:
                once(moves, rid, i, "move")
        elif isinstance(ch, RewriteTopic):
            for tr in ch.records:
                if tr.memory_id is not None:
                    once(content, tr.memory_id, i, "content operation")
    for rid in deletes & moves.keys():
        raise _reject(
            Rejection.MALFORMED,
            f"record {rid} is both deleted and moved",
            record_id=rid,
            change=moves[rid],
        )


def _known(state: State, rid: str, i: int) -> Record:
    rec = state.records.get(rid)
    if rec is None:
        raise _reject(
            Rejection.UNKNOWN_RECORD,
            f"record {rid} does not exist; use create_record for new statements",
            record_id=rid,
            change=i,
        )
    return rec


def plan(
    state: State,
    changes: ChangeSet,
    *,
    archived: Callable[[Collection[str]], set[str]],
    batch: Collection[str] | None,
    now: int,
    make_id: Callable[[], str] = new_record_id,
) -> Plan:
    """Apply ``changes`` to a copy of ``state`` and validate the result (see the module doc).

    Args:
        state: The workspace's records now (the baseline, read before the writer ran).
        changes: The transaction's operations, applied in order.
        archived: Given source ids, returns those present in the archive.
        batch: The source ids of the batch being written; citations the transaction adds must name
            one of them. None for a transaction without a batch (a human edit, a reorganization):
            any archived source may then be cited.
        now: The transaction's time, microseconds since the Unix epoch.
        make_id: Makes record ids (tests make them deterministic).

    Returns:
        The validated plan; :attr:`Plan.changed` is False when it changes nothing.

    Raises:
        RejectedError: the transaction is refused; the reason and the facts are its attributes.
    """
    if len(changes.changes) > caps.MAX_CHANGES_PER_TRANSACTION:
        raise _reject(
            Rejection.OVER_CAP,
            f"{len(changes.changes)} changes, over MAX_CHANGES_PER_TRANSACTION="
            f"{caps.MAX_CHANGES_PER_TRANSACTION}; split the work",
            kind="MAX_CHANGES_PER_TRANSACTION",
        )
    _conflicts(changes)
    after = state.copy()
    deleted: set[str] = set()
    created: list[str] = []
    left_out: set[str] = set()  # records a rewrite_topic left out of its topic (see _rewrite)
    for i, ch in enumerate(changes.changes):
        if isinstance(ch, CreateRecord):
            _check_fields(ch.content, ch.sources, ch.tags, ch.time, ch.destination.headings, i)
            rid = make_id()
            after.records[rid] = Record(
                rid,
                ch.destination.topic_path,
                ch.destination.headings,
                ch.content,
                _citations(ch.sources),
                ch.tags,
                ch.time,
                now,
                now,
            )
            _place(after, [rid], ch.destination, i)
            created.append(rid)
        elif isinstance(ch, UpdateRecord):
            rec = _known(after, ch.memory_id, i)
            _check_fields(ch.content, ch.sources, ch.tags, ch.time, (), i)
            after.records[rec.id] = replace(
                rec,
                content=ch.content,
                citations=_citations(ch.sources),
                tags=ch.tags,
                time=ch.time,
            )
        elif isinstance(ch, DeleteRecord):
            rec = _known(after, ch.memory_id, i)
            _unplace(after, [rec.id])
            del after.records[rec.id]
            deleted.add(rec.id)
        elif isinstance(ch, MoveRecords):
            ids = [_known(after, rid, i).id for rid in ch.memory_ids]
            _unplace(after, ids)
            for rid in ids:
                after.records[rid] = replace(
                    after.records[rid],
                    topic=ch.destination.topic_path,
                    headings=ch.destination.headings,
                )
            _place(after, ids, ch.destination, i)
        else:
            _rewrite(after, ch, i, now, make_id, created, left_out)
    for rid in left_out:
        # Left out of its topic and placed by no later change (a rewrite of the topic it moved
        # to, a move): it is gone, and RECORD_LOST below says so unless it was deleted.
        kept = after.records.get(rid)
        if kept is not None and rid not in after.order.get(kept.topic, ()):
            del after.records[rid]
    for rid in state.records.keys() - after.records.keys() - deleted:
        raise _reject(
            Rejection.RECORD_LOST,
            f"record {rid} would disappear without delete_record; keep its id or delete it explicitly",
            record_id=rid,
        )
    # Only the records the changes name can differ from the baseline: the checks below look at
    # those (a write appending to a large workspace costs its changes, not the workspace).
    touched = [rid for rid in dict.fromkeys([*created, *_named(changes)]) if rid in after.records]
    result = _diff(state, after, created, touched, now)
    changed = [after.records[rid] for rid in touched]
    _check_citations(state, changed, archived, batch)
    _check_links(after, None if result.deleted or result.moved else changed)
    return result


def _named(changes: ChangeSet) -> list[str]:
    """The ids of existing records the changes update, move or rewrite, in order."""
    out: list[str] = []
    for ch in changes.changes:
        if isinstance(ch, UpdateRecord):
            out.append(ch.memory_id)
        elif isinstance(ch, MoveRecords):
            out.extend(ch.memory_ids)
        elif isinstance(ch, RewriteTopic):
            out.extend(tr.memory_id for tr in ch.records if tr.memory_id is not None)
    return out


def plan_in_steps(
    state: State,
    steps: Iterable[ChangeSet],
    *,
    archived: Callable[[Collection[str]], set[str]],
    now: int,
    make_id: Callable[[], str] = new_record_id,
) -> Plan:
    """Validate change sets one after another and return one plan covering all of them.

    For work that is one transaction but may hold more than ``MAX_CHANGES_PER_TRANSACTION`` changes
    (forgetting a session touches every record citing it): each step is validated by :func:`plan`
    against the records the previous steps leave, with no batch, and the result is installed as one
    transaction. ``make_id`` names created records (a restore gives them back their own ids).

    Raises:
        RejectedError: a step is refused (as by :func:`plan`); nothing is installed.
    """
    after = state
    created: list[str] = []
    touched: dict[str, None] = {}
    for step in steps:
        p = plan(after, step, archived=archived, batch=None, now=now, make_id=make_id)
        after = p.after
        created += [rid for rid in p.created if rid in after.records]
        touched.update(dict.fromkeys(r for r in (*p.updated, *p.moved) if r in after.records))
    everything = [r for r in touched if r in state.records]
    return _diff(state, after.copy(), created, everything, now)


def _rewrite(
    state: State,
    ch: RewriteTopic,
    i: int,
    now: int,
    make_id: Callable[[], str],
    created: list[str],
    left_out: set[str],
) -> None:
    _check_topic(ch.topic_path, i)
    ids: list[str] = []
    for tr in ch.records:
        _check_fields(tr.content, tr.sources, tr.tags, tr.time, tr.headings, i)
        if tr.memory_id is None:
            rid = make_id()
            state.records[rid] = Record(
                rid,
                ch.topic_path,
                tr.headings,
                tr.content,
                _citations(tr.sources),
                tr.tags,
                tr.time,
                now,
                now,
            )
            created.append(rid)
        else:
            rid = _known(state, tr.memory_id, i).id
            _unplace(state, [rid])
            state.records[rid] = replace(
                state.records[rid],
                topic=ch.topic_path,
                headings=tr.headings,
                content=tr.content,
                citations=_citations(tr.sources),
                tags=tr.tags,
                time=tr.time,
            )
        ids.append(rid)
    # Records of the topic that the rewrite leaves out stay known, placed nowhere, until every
    # change has run: a later change may place them elsewhere (a record cut from one topic file
    # and pasted into another, whichever topic comes first); the others are dropped at the end.
    for rid in state.order.pop(ch.topic_path, []):
        if rid not in ids:
            left_out.add(rid)
    if ids:
        state.order[ch.topic_path] = ids


def _diff(before: State, after: State, created: list[str], touched: list[str], now: int) -> Plan:
    new = set(created)
    updated: list[str] = []
    moved: set[str] = set()
    topics: set[str] = {after.records[rid].topic for rid in created}
    for rid in touched:
        rec = after.records[rid]
        if rid in new:
            continue
        old = before.records[rid]
        if rec is old:
            continue  # untouched by the changes
        if not rec.same_payload(old):
            updated.append(rid)
            after.records[rid] = replace(rec, updated_at=now)
            topics.add(rec.topic)
        if (old.topic, old.headings) != (rec.topic, rec.headings):
            moved.add(rid)
            topics.update((old.topic, rec.topic))
    gone = before.records.keys() - after.records.keys()
    deleted = tuple(rid for rid in before.records if rid in gone) if gone else ()
    topics.update(before.records[rid].topic for rid in deleted)
    # A reorder inside one topic: the surviving records' relative order differs.
    for topic, ids in after.order.items():
        was_ids = before.order.get(topic, [])
        if ids[: len(was_ids)] == was_ids:
            continue  # unchanged, or records appended after the old ones
        kept = [r for r in ids if r in before.records and before.records[r].topic == topic]
        kept_set = set(kept)
        was = [r for r in before.order.get(topic, []) if r in kept_set]
        if kept != was:
            moved.update(r for r, w in zip(kept, was, strict=True) if r != w)
            topics.add(topic)
    return Plan(
        before,
        after,
        tuple(created),
        tuple(updated),
        deleted,
        tuple(sorted(moved)),
        frozenset(topics),
    )


def _check_citations(
    before: State,
    changed: list[Record],
    archived: Callable[[Collection[str]], set[str]],
    batch: Collection[str] | None,
) -> None:
    if batch is not None:
        for sid in sorted(set(batch) - archived(batch)):
            raise _reject(
                Rejection.SOURCE_MISSING,
                f"source {sid} of this batch is no longer in the archive",
                source_id=sid,
            )
    # Records whose citations did not change were checked when they were installed; the archive is
    # append-only, and the install transaction checks it against the baseline.
    cited = {
        c.source
        for rec in changed
        if (old := before.records.get(rec.id)) is None or old.citations != rec.citations
        for c in rec.citations
        if c.source
    }
    # A citation with no source (an empty id) is a bare snippet: a person's own save.
    present = archived(cited) | {""}
    allowed = set(batch) if batch is not None else None
    for rec in changed:
        old = before.records.get(rec.id)
        if old is not None and old.citations == rec.citations:
            continue
        kept = {c.source for c in old.citations} if old is not None else set()
        for c in rec.citations:
            if c.source not in present:
                raise _reject(
                    Rejection.UNKNOWN_SOURCE,
                    f"record cites source {c.source!r}, which is not in the archive; cite one of "
                    "the batch's source ids exactly",
                    record_id=rec.id,
                    source_id=c.source,
                )
            if allowed is not None and c.source not in kept and c.source not in allowed:
                raise _reject(
                    Rejection.SOURCE_NOT_IN_BATCH,
                    f"record cites source {c.source!r}, which is archived but not evidence of this "
                    "batch; cite the batch's sources only"
                    if c.source
                    else "a citation without a source is a person's own save; a writer cites the "
                    "batch's sources",
                    record_id=rec.id,
                    source_id=c.source,
                )


def _check_links(after: State, changed: list[Record] | None) -> None:
    """Check the links of ``changed`` records (of every record when None: after a delete or move)."""
    for rec in after.records.values() if changed is None else changed:
        for topic, target in record_links(rec.content, rec.topic):
            hit = after.records.get(target)
            if hit is None or hit.topic != topic:
                raise _reject(
                    Rejection.DANGLING_LINK,
                    f"record links [[{topic}#^{target}]], which does not exist afterwards; update or "
                    "remove the link in the same transaction",
                    record_id=rec.id,
                    target=target,
                )

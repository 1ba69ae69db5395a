"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as sessions.

Mapping (DESIGN.md 5, corpus ``FORMATS.md`` section 3):

* A rollout has no parent pointers: each node follows the previous one in file order. The first
  ``session_meta`` is the identity: its ``id`` is the session id and its payload the session metadata.
* Node ids are ``<thread id>:<position>``, the position being the item's index among the thread's own
  rollout items (its ``session_meta`` is 0), so they are the same wherever the item is read.
* ``response_item`` messages are messages (``developer``/``system`` and the context the CLI injects as
  user text, such as ``<environment_context>`` and AGENTS.md instructions, have the role ``system``);
  tool calls (``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) are
  assistant messages with a tool-call block; their outputs are ``tool`` messages, joined by
  ``call_id``. Reasoning, ``turn_context``, ``event_msg`` and unknown items are events (``event_msg``
  repeats the user and agent messages, so only the ``response_item`` copy is a message).
* ``compacted`` is an inline compaction summary covering the whole branch before it; its
  ``replacement_history`` stays in its metadata.
* Forks: a rollout whose first ``session_meta`` has ``forked_from_id`` and is followed by the parent's
  copied ``session_meta`` carries a verbatim copy of the parent's items. The copy gets the parent's
  ids (recursively, for forks of forks), so it maps onto the parent's nodes, and the fork's own items
  join the parent's session as a branch at the cut (``metadata["transcript_session"]`` names the
  fork's thread). The copy ends at an ``event_msg/thread_settings_applied`` marker, else before the
  first turn whose ``turn_context.turn_id`` (UUIDv7) is newer than the fork, else where the copy stops
  matching the stored parent; when none of these tells, the rollout is kept as a session of its own and
  the report says so. The parent session is created from the copied ``session_meta`` when it is not
  stored yet; a fork never moves the head of a parent that has one.
* The head is the last node.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from graph.importers._common import (
    EPOCH,
    ensure_session,
    file_import,
    parse_time,
    preview,
    stored_ids,
)
from graph.importers.jsonl import Line, read_jsonl
from graph.importers.report import FileReport
from graph.models import (
    Block,
    Content,
    ImageBlock,
    Kind,
    Node,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from graph.store import BaseStore

__all__ = ["FORMAT", "import_file"]

FORMAT = "codex"
"""The format name :func:`graph.importers.detect_format` gives these files."""

_INJECTED = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions",
)
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _payload(line: Line) -> Mapping[str, Any]:
    p = line.data.get("payload")
    return p if isinstance(p, Mapping) else {}


def _is_meta(line: Line) -> bool:
    return line.data.get("type") == "session_meta"


def _uuid7_time(value: Any) -> datetime | None:
    try:
        u = uuid.UUID(str(value))
    except ValueError:
        return None
    if u.version != 7:
        return None
    return datetime.fromtimestamp((u.int >> 80) / 1000, UTC)


# ------------------------------------------------------------------------------------- ids


class _Ids:
    """Node ids for a rollout's items, and the thread whose session holds them."""

    def __init__(self, store: BaseStore, items: Sequence[Line], report: FileReport) -> None:
        self.store = store
        self.report = report
        self.metas: dict[str, Mapping[str, Any]] = {}
        self.root = ""
        self.cut: str | None = None
        self.ids = self._assign(items, top=True)

    def _assign(self, items: Sequence[Line], *, top: bool) -> list[str | None]:
        meta = _payload(items[0])
        thread = str(meta.get("id") or "")
        self.metas[thread] = meta
        ids: list[str | None] = [None] * len(items)
        end = 1
        parent = meta.get("forked_from_id")
        if (
            parent
            and len(items) > 1
            and _is_meta(items[1])
            and _payload(items[1]).get("id") == parent
        ):
            found = self._copy_end(items, str(parent))
            if found is None:
                self.report.notes.append(
                    f"fork of {parent}: the end of the copied prefix was not found; "
                    "the rollout is kept as a session of its own"
                )
                end = 1
            else:
                end = found
                ids[1:end] = self._assign(items[1:end], top=False)
                if top:
                    self.cut = next((i for i in reversed(ids[1:end]) if i), None)
        else:
            self.root = thread
        for k in range(end, len(items)):
            ids[k] = f"{thread}:{k}"
        if not self.root:
            self.root = thread
        return ids

    def _copy_end(self, items: Sequence[Line], parent: str) -> int | None:
        fork_time = parse_time(_payload(items[0]).get("timestamp"), EPOCH)
        if fork_time == EPOCH:
            fork_time = _uuid7_time(_payload(items[0]).get("id")) or EPOCH
        for k in range(2, len(items)):
            p = _payload(items[k])
            if (
                items[k].data.get("type") == "event_msg"
                and p.get("type") == "thread_settings_applied"
            ):
                return k
        for k in range(2, len(items)):
            p = _payload(items[k])
            if items[k].data.get("type") != "turn_context":
                continue
            born = _uuid7_time(p.get("turn_id"))
            if born is not None and fork_time != EPOCH and born >= fork_time:
                j = k
                while j > 2 and _opens_turn(items[j - 1]):
                    j -= 1
                return j
        # The parent's own items may sit in its source's session (a fork of a fork): ask by id.
        wanted = [f"{parent}:{k - 1}" for k in range(2, len(items))]
        stored = self.store.locate(wanted)
        if stored:
            k = 2
            while k < len(items) and f"{parent}:{k - 1}" in stored:
                k += 1
            return k
        return None


def _exists(store: BaseStore, session_id: str) -> bool:
    return store.has_session(session_id)


def _opens_turn(line: Line) -> bool:
    """Items a turn starts with, before its ``turn_context``."""
    kind, p = line.data.get("type"), _payload(line)
    if kind == "event_msg":
        return p.get("type") in ("task_started", "user_message", "turn_started")
    return kind == "response_item" and p.get("type") == "message" and p.get("role") == "user"


# ------------------------------------------------------------------------------------- nodes


def _text_of(content: Any) -> tuple[Block, ...]:
    blocks: list[Block] = []
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, Mapping):
            continue
        if b.get("type") in ("input_text", "output_text", "text"):
            blocks.append(TextBlock(text=str(b.get("text", ""))))
        elif b.get("type") == "input_image":
            blocks.append(ImageBlock(ref=str(b.get("image_url", ""))[:2000]))
    return tuple(blocks)


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _item(line: Line) -> tuple[Kind, Role, Content]:
    kind, p = line.data.get("type"), _payload(line)
    ptype = p.get("type")
    if kind == "response_item":
        if ptype == "message":
            content = _text_of(p.get("content"))
            role = p.get("role")
            text = "\n".join(b.text for b in content if isinstance(b, TextBlock)).lstrip()
            if role == "assistant":
                return Kind.MESSAGE, Role.ASSISTANT, content
            if role == "user" and not text.startswith(_INJECTED):
                return Kind.MESSAGE, Role.USER, content
            return Kind.MESSAGE, Role.SYSTEM, content
        if ptype in _CALLS:
            call = ToolCallBlock(
                id=str(p.get("call_id") or p.get("id") or ""),
                name=str(p.get("name") or ptype),
                arguments=_args(p.get("arguments", p.get("input", p.get("action")))),
            )
            return Kind.MESSAGE, Role.ASSISTANT, (call,)
        if ptype in _OUTPUTS:
            out = p.get("output")
            text = out if isinstance(out, str) else orjson.dumps(out).decode()
            return (
                Kind.MESSAGE,
                Role.TOOL,
                (ToolResultBlock(call_id=str(p.get("call_id", "")), text=text),),
            )
        if ptype == "reasoning":
            summary = p.get("summary")
            parts = (
                [str(s.get("text", "")) for s in summary if isinstance(s, Mapping)]
                if isinstance(summary, list)
                else []
            )
            return Kind.EVENT, Role.ASSISTANT, "\n".join(parts)
        return Kind.EVENT, Role.SYSTEM, str(ptype or kind)
    if kind == "compacted":
        return Kind.SUMMARY, Role.SYSTEM, str(p.get("message") or "")
    if kind == "event_msg":
        said = p.get("message") or p.get("text") or ""
        return Kind.EVENT, Role.SYSTEM, f"{ptype}: {said}" if said else str(ptype or kind)
    if kind == "turn_context":
        return Kind.EVENT, Role.SYSTEM, f"turn_context {p.get('model', '')}".strip()
    return Kind.EVENT, Role.SYSTEM, str(kind)


# ------------------------------------------------------------------------------------- import


def import_file(store: BaseStore, path: Path) -> FileReport:
    """Import one Codex rollout in one transaction.

    Re-importing changes nothing; a file that grew adds only its new items.

    Returns:
        The file's report (see :class:`~graph.importers.report.FileReport`).

    Raises:
        OSError: the file cannot be read.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    path = Path(path)
    with file_import(path, FORMAT) as (report, problems):
        items = list(read_jsonl(path, problems))
        first = next((i for i, line in enumerate(items) if _is_meta(line)), None)
        if first is None:
            report.notes.append("no session_meta: the rollout is named after its file")
            items.insert(0, Line(0, {"type": "session_meta", "payload": {"id": path.stem}}))
            first = 0
        for line in items[:first]:
            problems.skipped.append((line.number, "item before the first session_meta"))
        items = items[first:]
        with store.atomic():
            _import(store, path, items, report)
    return report


def _import(store: BaseStore, path: Path, items: list[Line], report: FileReport) -> None:
    ids = _Ids(store, items, report)
    own = str(_payload(items[0]).get("id") or path.stem)
    sid = ids.root
    root_meta = dict(ids.metas[sid])
    if sid != own:
        report.notes.append(f"fork of session {sid}: its new items join that session as a branch")
    report.session_ids.append(sid)
    known = stored_ids(store, sid)
    had_head = store.session(sid).head if known else None
    order: list[tuple[str, Line]] = [(i, items[k]) for k, i in enumerate(ids.ids) if i]
    last = parse_time(_payload(items[0]).get("timestamp"), EPOCH)
    title = ""
    new: list[Node] = []
    pred: dict[str, str | None] = {}
    prev: str | None = None
    for node_id, line in order:
        last = parse_time(line.data.get("timestamp"), last)
        kind, role, content = _item(line)
        if not title and kind is Kind.MESSAGE and role is Role.USER:
            title = preview(content)
        pred[node_id] = prev
        p, prev = prev, node_id
        if node_id in known:
            continue
        meta: dict[str, Any] = {"type": line.data.get("type"), "line": line.number}
        meta["payload"] = (
            dict(_payload(line))
            if kind is not Kind.MESSAGE
            else {k: v for k, v in _payload(line).items() if k not in ("content", "output")}
        )
        thread = node_id.rsplit(":", 1)[0]
        if thread != sid:
            meta["transcript_session"] = thread
        covers: tuple[str, ...] = ()
        if kind is Kind.SUMMARY and p is not None:
            path_ids = []
            n: str | None = p
            while n is not None:
                path_ids.append(n)
                n = pred[n] if n in pred else known.get(n)
            covers = tuple(reversed(path_ids))
        new.append(
            Node(
                id=node_id,
                session_id=sid,
                predecessor=p,
                kind=kind,
                role=role,
                content=content if content != "" or kind is not Kind.SUMMARY else "[compacted]",
                created_at=last,
                metadata=meta,
                covers=covers,
            )
        )
    current = dict(store.session(sid).metadata) if known or _exists(store, sid) else {}
    if sid == own or not current:
        meta = {"runtime": FORMAT, "session_meta": root_meta}
        meta |= {"path": str(path)} if sid == own else {}
        if "forks" in current:
            meta["forks"] = current["forks"]
        ensure_session(
            store,
            sid,
            title=title if sid == own else "",
            metadata=meta,
            created_at=parse_time(root_meta.get("timestamp"), EPOCH),
        )
    if sid != own:
        stored_meta = store.session(sid).metadata
        forks = dict(stored_meta.get("forks") or {})
        child = {k: v for k, v in ids.metas[own].items() if k != "base_instructions"}
        if forks.get(own) != child | {"path": str(path), "cut": ids.cut}:
            forks[own] = child | {"path": str(path), "cut": ids.cut}
            store.update_session(sid, metadata=dict(stored_meta) | {"forks": forks})
    head = prev if (sid == own or had_head is None) else had_head
    report.nodes_added += len(store.add_nodes(sid, new, head=head))

"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as sessions.

Mapping (DESIGN.md 5, corpus ``FORMATS.md`` section 1):

* Every entry with a ``uuid`` is a node with that id; ``parentUuid`` is its predecessor. The session id
  is the entries' ``sessionId``. Several assistant entries of one API response stay separate nodes
  (their ``message.id`` is in the metadata).
* ``user``/``assistant`` entries are ``message`` nodes. A user entry made only of tool results has the
  role ``tool``; an ``isMeta`` entry (a caveat the CLI injects) the role ``system``. Thinking blocks go
  to ``metadata["thinking"]``, never into the content. Every other field of the entry is kept in the
  metadata, except ``uuid``, ``parentUuid`` and ``message.content``.
* ``system``, ``progress`` and unknown entries with a uuid are ``event`` nodes (role ``system``).
* Entries without a uuid (``file-history-snapshot``, ``queue-operation``, ``summary``, titles, unknown
  types) are kept, with their line numbers, in the session metadata under ``entries``. A title comes
  from the newest ``custom-title``/``ai-title`` entry, else a ``summary`` entry whose ``leafUuid`` is in
  the file, else the first user prompt.
* Compaction: a ``system/compact_boundary`` entry (``parentUuid: null``) gets its ``logicalParentUuid``
  as predecessor when that node exists (the original null parent is kept in the metadata), so the
  session stays one tree. The following ``isCompactSummary`` entry becomes a ``summary`` node whose
  covers are the whole branch up to the logical parent (inline layout: they are its ancestors).
* Sub-agents: inline sidechains (``isSidechain: true``, older builds) and ``<session>/subagents/
  agent-*.jsonl`` (and ``agent-*.jsonl`` beside the session file) become spawned sessions, ids
  ``<session>/sidechain-<root uuid>`` and ``<session>/agent-<agentId>``, linked to the assistant node
  holding the ``Task`` tool call that started them (found through the ``agent-*.meta.json`` sidecar,
  the tool result's ``toolUseResult.agentId``, ``agent_progress`` entries, or the prompt text), else
  to the main node the agent's first entry names as parent (the compaction agent).
* Rewinds: a node with two or more user-prompt children (text typed by the user, not tool results,
  progress or meta entries) at different times is a rewind; every branch below it except the one
  holding the head (else the newest) is stamped rewound, as :meth:`BaseStore.rewind` does. Recording
  artifacts (a tool call's progress entry beside its result, parallel tool calls) stay plain forks.
* The head is the newest leaf of the main conversation in file order (appends, not timestamps).
* A parent that is in no file read (and not stored) is dangling: the node becomes a root, the parent is
  kept as ``metadata["dangling_parent"]`` and reported. Entries whose uuid another session already
  holds (a resumed or ``--fork-session`` copy) are not stored twice: when the transcript's own session
  does not exist yet, its new entries join the session holding the copied ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from graph.importers._common import (
    EPOCH,
    ensure_session,
    file_import,
    image_block,
    parse_time,
    preview,
    stamp_subtrees,
    stored_ids,
)
from graph.importers.jsonl import Line, LineProblems, read_jsonl
from graph.importers.report import FileReport
from graph.models import (
    Block,
    Content,
    Kind,
    Node,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from graph.store import BaseStore

__all__ = ["FORMAT", "agent_files", "import_file", "is_agent_file"]

FORMAT = "claude-code"
"""The format name :func:`graph.importers.detect_format` gives these files."""

_TITLE_TYPES = ("custom-title", "ai-title")


@dataclass
class _Transcript:
    """One file's entries, split into uuid entries (in file order) and the rest."""

    path: Path
    entries: dict[str, Line] = field(default_factory=dict)
    other: list[Line] = field(default_factory=list)
    duplicates: int = 0

    @property
    def session_id(self) -> str:
        for line in self.entries.values():
            sid = line.data.get("sessionId")
            if isinstance(sid, str) and sid:
                return sid
        for line in self.other:
            sid = line.data.get("sessionId")
            if isinstance(sid, str) and sid:
                return sid
        return self.path.stem


def _read(path: Path, problems: LineProblems) -> _Transcript:
    t = _Transcript(path)
    for line in read_jsonl(path, problems):
        uid = line.data.get("uuid")
        if isinstance(uid, str) and uid:
            if uid in t.entries:
                t.duplicates += 1  # a replayed entry: the earliest copy is kept
            else:
                t.entries[uid] = line
        else:
            t.other.append(line)
    return t


def is_agent_file(path: Path) -> bool:
    """Whether ``path`` is a sub-agent transcript (``agent-<id>.jsonl``) rather than a session's."""
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def agent_files(path: Path) -> list[Path]:
    """The sub-agent transcripts that belong to the session file ``path``.

    They are ``<session>/subagents/agent-*.jsonl`` (2.1.x) and ``agent-*.jsonl`` beside the session
    file whose entries name the session (2.0.3x); the result is sorted by path.
    """
    found = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    for beside in sorted(path.parent.glob("agent-*.jsonl")):
        if _first_session_id(beside) == path.stem:
            found.append(beside)
    return found


def _first_session_id(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            for raw in f:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    return str(obj["sessionId"])
    except OSError:
        return None
    return None


# ------------------------------------------------------------------------------------- content


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, Mapping):
                if b.get("type") == "text":
                    parts.append(str(b.get("text", "")))
                elif b.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return "" if content is None else orjson.dumps(content).decode()


def _content(message: Mapping[str, Any]) -> tuple[Content, list[str], list[Any]]:
    """Return (content, thinking texts, blocks of unknown type) of a message."""
    raw = message.get("content")
    if isinstance(raw, str):
        return raw, [], []
    blocks: list[Block] = []
    thinking: list[str] = []
    other: list[Any] = []
    for b in raw if isinstance(raw, list) else []:
        if not isinstance(b, Mapping):
            other.append(b)
            continue
        kind = b.get("type")
        if kind == "text":
            blocks.append(TextBlock(text=str(b.get("text", ""))))
        elif kind == "tool_use":
            blocks.append(
                ToolCallBlock(
                    id=str(b.get("id", "")), name=str(b.get("name", "")), arguments=b.get("input")
                )
            )
        elif kind == "tool_result":
            blocks.append(
                ToolResultBlock(
                    call_id=str(b.get("tool_use_id", "")),
                    text=_flatten(b.get("content")),
                    is_error=bool(b.get("is_error", False)),
                )
            )
        elif kind == "image":
            blocks.append(image_block(b.get("source")))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
        elif kind == "redacted_thinking":
            thinking.append("[redacted]")
        else:
            other.append(dict(b))
    return tuple(blocks), thinking, other


def _is_prompt(data: Mapping[str, Any]) -> bool:
    """Whether an entry is text the user typed (a rewind re-prompts with one)."""
    if data.get("type") != "user" or data.get("isMeta") or data.get("isCompactSummary"):
        return False
    message = data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list):
        return False
    kinds = {b.get("type") for b in content if isinstance(b, Mapping)}
    return "text" in kinds and "tool_result" not in kinds


def _event_text(data: Mapping[str, Any]) -> str:
    kind = str(data.get("type", ""))
    if kind == "system":
        content = data.get("content")
        subtype = data.get("subtype")
        text = content if isinstance(content, str) else ""
        return f"{subtype}: {text}" if subtype and text else text or str(subtype or "system")
    if kind == "progress":
        d = data.get("data")
        if isinstance(d, Mapping):
            what = d.get("hookName") or d.get("command") or d.get("agentId") or ""
            return f"{d.get('type', 'progress')} {what}".strip()
    return kind


def _node(
    sid: str, line: Line, predecessor: str | None, when: datetime, extra: Mapping[str, Any]
) -> Node:
    data = line.data
    meta: dict[str, Any] = {k: v for k, v in data.items() if k not in ("uuid", "parentUuid")}
    meta["line"] = line.number
    meta.update(extra)
    kind, role = Kind.EVENT, Role.SYSTEM
    content: Content = _event_text(data)
    message = data.get("message")
    if data.get("type") in ("user", "assistant") and isinstance(message, Mapping):
        content, thinking, other = _content(message)
        meta["message"] = {k: v for k, v in message.items() if k != "content"}
        if thinking:
            meta["thinking"] = thinking
        if other:
            meta["other_blocks"] = other
        kind = Kind.MESSAGE
        if data["type"] == "assistant":
            role = Role.ASSISTANT
        elif data.get("isCompactSummary"):
            kind = Kind.SUMMARY
        elif data.get("isMeta"):
            role = Role.SYSTEM
        elif (
            isinstance(content, tuple)
            and content
            and all(isinstance(b, ToolResultBlock) for b in content)
        ):
            role = Role.TOOL
        else:
            role = Role.USER
    return Node(
        id=data["uuid"],
        session_id=sid,
        predecessor=predecessor,
        kind=kind,
        role=role,
        content=content,
        created_at=when,
        metadata=meta,
    )


# ------------------------------------------------------------------------------------- graph


def _preds(t: _Transcript, uuids: Sequence[str], known: Mapping[str, Any]) -> dict[str, Any]:
    """Predecessor of each entry after the compaction relink, or ("dangling", parent)."""
    inside = set(uuids)
    out: dict[str, Any] = {}
    for u in uuids:
        data = t.entries[u].data
        parent = data.get("parentUuid")
        logical = data.get("logicalParentUuid")
        if parent is None and isinstance(logical, str) and (logical in inside or logical in known):
            out[u] = logical
        elif parent is None or parent in inside or parent in known:
            out[u] = parent
        else:
            out[u] = ("dangling", parent)
    return out


def _times(t: _Transcript, uuids: Sequence[str]) -> dict[str, datetime]:
    out: dict[str, datetime] = {}
    last = EPOCH
    for u in uuids:
        last = parse_time(t.entries[u].data.get("timestamp"), last)
        out[u] = last
    return out


def _covers(pred: Mapping[str, Any], known: Mapping[str, Any], last: str) -> list[str]:
    path = []
    n: Any = last
    while isinstance(n, str):
        path.append(n)
        n = pred[n] if n in pred else known.get(n)
    path.reverse()
    return path


def _newest_leaf(uuids: Sequence[str], pred: Mapping[str, Any]) -> str | None:
    has_child = {p for p in pred.values() if isinstance(p, str)}
    for u in reversed(uuids):
        if u not in has_child:
            return u
    return uuids[-1] if uuids else None


def _rewinds(
    t: _Transcript, uuids: Sequence[str], pred: Mapping[str, Any], head: str | None
) -> list[tuple[str, list[str]]]:
    """(fork point, abandoned children) for every rewind among ``uuids``."""
    prompts: dict[str, list[str]] = {}
    for u in uuids:
        p = pred[u]
        if isinstance(p, str) and _is_prompt(t.entries[u].data):
            prompts.setdefault(p, []).append(u)
    on_head = set()
    n: Any = head
    while isinstance(n, str) and n in pred:
        on_head.add(n)
        n = pred[n]
    out = []
    for point, kids in prompts.items():
        stamps = {k: str(t.entries[k].data.get("timestamp", "")) for k in kids}
        if len(kids) < 2 or len(set(stamps.values())) < 2:
            continue
        kept = next((k for k in kids if k in on_head), None)
        if kept is None:
            kept = max(kids, key=lambda k: (stamps[k], t.entries[k].number))
        out.append((point, [k for k in kids if k != kept and stamps[k] != stamps[kept]]))
    return out


def _foreign(store: BaseStore, ids: Sequence[str]) -> dict[str, str]:
    """Which of ``ids`` another session already holds: id -> that session."""
    return {str(i): str(s) for i, s in store.locate(ids).items()}


# ------------------------------------------------------------------------------------- import


def import_file(store: BaseStore, path: Path) -> FileReport:
    """Import one Claude Code session file, with its sub-agent files, in one transaction.

    Re-importing changes nothing; a file that grew adds only its new entries (lines whose uuid is
    stored are not turned into nodes at all). An ``agent-*.jsonl`` file given alone is imported as a
    spawned session of its trunk session when that is stored, else as a session of its own.

    Returns:
        The file's report (see :class:`~graph.importers.report.FileReport`).

    Raises:
        OSError: the file cannot be read.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    with file_import(path, FORMAT) as (report, problems):
        t = _read(Path(path), problems)
        with store.atomic():
            if is_agent_file(Path(path)) and t.session_id != Path(path).stem:
                _import_agent(store, t, t.session_id, {}, report)
            else:
                _import_main(store, t, report, problems)
    return report


def _import_main(
    store: BaseStore, t: _Transcript, report: FileReport, problems: LineProblems
) -> None:
    sid = t.session_id
    main = [u for u, line in t.entries.items() if not line.data.get("isSidechain")]
    side = [u for u, line in t.entries.items() if line.data.get("isSidechain")]
    known = stored_ids(store, sid)
    if not known:
        foreign = _foreign(store, main)
        if foreign:
            holders = sorted(set(foreign.values()), key=list(foreign.values()).count)
            report.notes.append(
                f"{len(foreign)} entries are copies of session {holders[-1]}'s; "
                f"the transcript's new entries join that session"
            )
            sid = holders[-1]
            known = stored_ids(store, sid)
            main = [u for u in main if u not in foreign or foreign[u] == sid]
    pred = _preds(t, main, known)
    when = _times(t, main)
    head = _newest_leaf(main, pred)
    report.session_ids.append(sid)
    ensure_session(
        store,
        sid,
        title=_title(t, main),
        metadata=_session_meta(t),
        created_at=min(when.values(), default=EPOCH),
    )
    new: list[Node] = []
    for u in main:
        if u in known:
            continue
        extra: dict[str, Any] = {}
        p = pred[u]
        if isinstance(p, tuple):
            extra["dangling_parent"] = p[1]
            report.dangling.append((u, p[1]))
            p = None
        elif t.entries[u].data.get("parentUuid") is None and p is not None:
            extra["parentUuid"] = None
        if sid != t.session_id:
            extra["transcript_session"] = t.session_id
        node = _node(sid, t.entries[u], p, when[u], extra)
        if node.kind is Kind.SUMMARY and isinstance(p, str):
            boundary = t.entries.get(p)
            logical = boundary.data.get("logicalParentUuid") if boundary else None
            if isinstance(logical, str) and pred.get(p) == logical:
                node = node.model_copy(update={"covers": tuple(_covers(pred, known, logical))})
        new.append(node)
    added = store.add_nodes(sid, new, head=head if head in pred else store.session(sid).head)
    report.nodes_added += len(added)
    for point, abandoned in _rewinds(t, main, pred, head):
        stamp_subtrees(store, sid, point, abandoned)
    tool_calls = _tool_calls(t, main)
    if t.duplicates:
        report.notes.append(f"{t.duplicates} replayed entries (same uuid) kept once")
    _import_sidechains(store, t, sid, side, tool_calls, report)
    for agent in agent_files(t.path):
        sub = _read(agent, problems)
        _import_agent(store, sub, sid, tool_calls, report)
    _note_missing_agents(t, main, report)


def _title(t: _Transcript, main: Sequence[str]) -> str:
    for line in reversed(t.other):
        kind = line.data.get("type")
        if kind in _TITLE_TYPES:
            for key in ("customTitle", "aiTitle", "title"):
                if isinstance(line.data.get(key), str) and line.data[key]:
                    return str(line.data[key])
    for line in reversed(t.other):
        if line.data.get("type") == "summary" and line.data.get("leafUuid") in t.entries:
            return str(line.data.get("summary", ""))
    for u in main:
        data = t.entries[u].data
        if _is_prompt(data):
            content, _, _ = _content(data["message"])
            text = preview(content)
            if text and not text.startswith(("<", "[Request interrupted")):
                return text
    return ""


def _session_meta(t: _Transcript) -> dict[str, Any]:
    meta: dict[str, Any] = {"runtime": FORMAT, "path": str(t.path)}
    for line in t.entries.values():
        for key, name in (("cwd", "cwd"), ("version", "version"), ("gitBranch", "git_branch")):
            if line.data.get(key):
                meta[name] = line.data[key]
    meta["entries"] = [{"line": line.number, **line.data} for line in t.other]
    return meta


def _tool_calls(t: _Transcript, uuids: Sequence[str]) -> dict[str, Any]:
    """Links from sub-agents to the node that started them, keyed by what the agent is known by."""
    calls: dict[str, Any] = {"tool_use": {}, "agent": {}, "prompt": {}, "task_order": []}
    for u in uuids:
        data = t.entries[u].data
        message = data.get("message")
        blocks = message.get("content") if isinstance(message, Mapping) else None
        for b in blocks if isinstance(blocks, list) else []:
            if not isinstance(b, Mapping):
                continue
            if b.get("type") == "tool_use":
                calls["tool_use"][b.get("id")] = u
                args = b.get("input")
                if b.get("name") in ("Task", "Agent") and isinstance(args, Mapping):
                    calls["task_order"].append((t.entries[u].number, u))
                    if isinstance(args.get("prompt"), str):
                        calls["prompt"][args["prompt"].strip()] = u
            elif b.get("type") == "tool_result":
                result = data.get("toolUseResult")
                if isinstance(result, Mapping) and result.get("agentId"):
                    calls["agent"][str(result["agentId"])] = b.get("tool_use_id")
        d = data.get("data")
        if data.get("type") == "progress" and isinstance(d, Mapping) and d.get("agentId"):
            use = data.get("parentToolUseID") or data.get("toolUseID")
            calls["agent"].setdefault(str(d["agentId"]), use)
    return calls


def _spawn_point(
    calls: Mapping[str, Any], agent_id: str | None, prompt: str, line: int
) -> str | None:
    tool_use = calls["tool_use"]
    if agent_id and calls["agent"].get(agent_id) in tool_use:
        return str(tool_use[calls["agent"][agent_id]])
    if prompt.strip() in calls["prompt"]:
        return str(calls["prompt"][prompt.strip()])
    before = [u for n, u in calls["task_order"] if n < line]
    return str(before[-1]) if before else None


def _import_sidechains(
    store: BaseStore,
    t: _Transcript,
    sid: str,
    side: Sequence[str],
    calls: Mapping[str, Any],
    report: FileReport,
) -> None:
    inside = set(side)
    root_of: dict[str, str] = {}
    for u in side:
        n, seen = u, set()
        while True:
            p = t.entries[n].data.get("parentUuid")
            if p not in inside or p in seen:
                break
            seen.add(n)
            n = p
        root_of[u] = n
    groups: dict[str, list[str]] = {}
    for u in side:
        groups.setdefault(root_of[u], []).append(u)
    for root, members in groups.items():
        sub = _Transcript(t.path, {u: t.entries[u] for u in members})
        _import_spawned(store, sub, sid, f"{sid}/sidechain-{root}", None, calls, report)


def _import_agent(
    store: BaseStore,
    t: _Transcript,
    parent_sid: str,
    calls: Mapping[str, Any],
    report: FileReport,
) -> None:
    agent_id = next(
        (str(line.data["agentId"]) for line in t.entries.values() if line.data.get("agentId")),
        t.path.stem.removeprefix("agent-"),
    )
    sidecar = t.path.with_name(t.path.stem + ".meta.json")
    use_id = None
    if sidecar.exists():
        try:
            meta = orjson.loads(sidecar.read_bytes())
            use_id = meta.get("toolUseId") if isinstance(meta, dict) else None
        except (OSError, orjson.JSONDecodeError):
            report.notes.append(f"{sidecar}: unreadable, ignored")
    if use_id and use_id in calls.get("tool_use", {}):
        calls = {**calls, "agent": {**calls["agent"], agent_id: use_id}}
    sid = f"{parent_sid}/agent-{agent_id}"
    _import_spawned(store, t, parent_sid, sid, agent_id, calls, report)


def _import_spawned(
    store: BaseStore,
    t: _Transcript,
    parent_sid: str,
    sid: str,
    agent_id: str | None,
    calls: Mapping[str, Any],
    report: FileReport,
) -> None:
    uuids = list(t.entries)
    if not uuids:
        return
    parent_nodes = stored_ids(store, parent_sid)
    known = stored_ids(store, sid)
    pred = _preds(t, uuids, known)
    when = _times(t, uuids)
    first = t.entries[uuids[0]]
    prompt = preview(_content(first.data.get("message") or {})[0], 10_000)
    spawned_from = (
        _spawn_point(calls, agent_id, prompt, first.number) if calls.get("tool_use") else None
    )
    new = []
    for u in uuids:
        if u in known:
            continue
        p = pred[u]
        extra: dict[str, Any] = {}
        if isinstance(p, tuple):
            if p[1] in parent_nodes:
                extra["parent_in_session"] = {"session": parent_sid, "node": p[1]}
                spawned_from = spawned_from or p[1]
            else:
                extra["dangling_parent"] = p[1]
                report.dangling.append((u, p[1]))
            p = None
        new.append(_node(sid, t.entries[u], p, when[u], extra))
    if spawned_from is None:
        report.notes.append(f"sub-agent session {sid}: the node that started it was not found")
    if spawned_from is not None and spawned_from not in parent_nodes:
        spawned_from = None
    meta = {"runtime": FORMAT, "path": str(t.path), "agent_id": agent_id}
    if not parent_nodes:
        meta["parent_session"] = parent_sid
    ensure_session(
        store,
        sid,
        title=preview(_content(first.data.get("message") or {})[0]),
        metadata=meta,
        created_at=min(when.values()),
        spawned_from=spawned_from,
        parent_session=parent_sid if parent_nodes else None,
    )
    head = _newest_leaf(uuids, pred)
    report.nodes_added += len(store.add_nodes(sid, new, head=head))
    report.session_ids.append(sid)


def _note_missing_agents(t: _Transcript, main: Sequence[str], report: FileReport) -> None:
    linked = {s.rsplit("/agent-", 1)[-1] for s in report.session_ids if "/agent-" in s}
    seen: list[str] = []
    for u in main:
        d = t.entries[u].data.get("data")
        if isinstance(d, Mapping) and d.get("type") == "agent_progress" and d.get("agentId"):
            a = str(d["agentId"])
            if a not in linked and a not in seen:
                seen.append(a)
    for a in seen:
        report.notes.append(
            f"sub-agent {a} has progress entries but no transcript file; no session was made"
        )

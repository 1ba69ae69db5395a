"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as sessions.

Mapping (a rollout is one ``{timestamp, type, payload}`` record per line, in file order):

* A rollout has no parent pointers: each node follows the previous one in file order. The first
  ``session_meta`` is the identity: its ``id`` is the session id and its payload the session metadata.
* Node ids are ``<thread id>:<position>``, the position being the item's index among the thread's own
  rollout items (its ``session_meta`` is 0), so they are the same wherever the item is read.
* ``response_item`` messages are messages (``developer``/``system`` and the context the CLI injects as
  user text, such as the environment context and AGENTS.md instructions, have the role ``system``).
  Injected context is told from a prompt by structure: the CLI echoes every prompt the user typed as
  an ``event_msg`` ``user_message`` beside it, and injected text has no echo, so sanitized and
  localized rollouts are read right; only a rollout with no echo at all (older builds) falls back
  to the known text prefixes.
* Tool calls (``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) are
  assistant messages with a tool-call block; their outputs are ``tool`` messages, joined by
  ``call_id``. Reasoning, ``turn_context``, ``event_msg`` and unknown items are events (``event_msg``
  repeats the user and agent messages, so only the ``response_item`` copy is a message).
* ``compacted`` is an inline compaction summary covering the branch before it, back to the previous
  compaction (which it covers, standing for that one's span) or the root. Its
  ``replacement_history``, when present, *is* the model-visible history after it, so the summary's
  content is that history's text item by item (the items themselves stay in
  ``metadata["payload"]``) and the context reads ``[summary, what followed]``; without one, the
  content is its ``message``.
* ``event_msg`` ``thread_rolled_back`` (``num_turns``) drops the last turns from the history while
  their lines stay in the file: the items after it follow the node before the first dropped prompt
  (a fork), and the dropped turns are stamped rewound, as a rewind would. A rollback naming more
  turns than there are since the start or the last compaction is reported and not applied.
* Forks: a rollout whose first ``session_meta`` has ``forked_from_id`` and is followed by the parent's
  copied ``session_meta`` carries a verbatim copy of the parent's items. The copy gets the parent's
  ids (recursively, for forks of forks), so it maps onto the parent's nodes, and the fork's own items
  join the parent's session as a branch at the cut (``metadata["transcript_session"]`` names the
  fork's thread). The copy ends at an ``event_msg/thread_settings_applied`` marker, else before the
  first turn whose ``turn_context.turn_id`` (UUIDv7) is newer than the fork, else where the copy stops
  matching the stored parent; when none of these tells, the rollout is kept as a session of its own and
  the report says so. The parent session is created from the copied ``session_meta`` when it is not
  stored yet; a fork never moves the head of a parent that has one (a head still on this fork's
  own items, where an earlier read of the same rollout left it, follows the fork's last item).
* A fork rollout read while Codex still writes it (only its own ``session_meta``, or a copy whose end
  is not there yet) is kept as a session of its own; the read that places it as a branch replaces
  that session, in the same transaction, so the store holds what a single read of the finished
  rollout stores (the markers a consumer wrote on the replaced session go with it).
* A rollout concatenated with itself (``cat a.jsonl a.jsonl``) is read once: a run from a later
  ``session_meta`` that repeats the file's first lines byte for byte is left out, each line
  reported as skipped with the line it repeats (:func:`_without_repeats`).
* The head is the last node.
* A rollout is read in two passes: the first keeps of each item only what the rules read
  (:func:`_slim`: types, roles, times, a user item's first characters and a digest of each user
  item's and echo's text for the pairing), the second reads each item whole again by its byte
  offset as its chunk of nodes is made, so an import holds about the same per item whatever the
  items' size. A line whose bytes changed since (the first pass keeps their digest: the file
  rewritten meanwhile) fails the import, and nothing of the file is stored.
* A prompt read before its echo is written (Codex writes the prompt's item, then the echo) would
  be taken for injected context and stored so for good: the items from the first one whose role
  a later item may still change (an unpaired user item after the last echo, or the last echo's
  choice when it chose by nearness and its run reaches the end of the file) are left for the
  next import, which reads them again from their line (the report's notes say so). A rollout
  that ends for good with a prompt that never got its echo or its reply keeps that tail out.
* A last line Codex is still writing (no newline yet, torn) stores nothing, not even an object
  found inside it (:func:`graph.importers.resume.without_torn_tail`): the next import reads it
  whole. A rollout whose first line is still torn stores nothing at all.
* A rollout imported before is resumed from where that import stopped
  (:mod:`graph.importers.resume`): only the appended lines are read, with the last items' prompt
  pairing kept in the file's state, so a grown rollout costs about its new lines. Appended lines
  the resumed path does not take (a ``compacted`` item, whose span reaches back through the stored
  branch; a rollback; a fork), or a rollout whose last prompt echo may still pair with an item yet
  to come, or that ended in an unterminated line, are imported in full, as is a file truncated,
  rewritten or replaced since (named in the report's notes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from graph.importers._common import (
    EPOCH,
    Plan,
    add_chunked,
    ensure_session,
    file_import,
    holders,
    parse_time,
    preview,
    refuse_another_transcript,
    rereading,
    stamp_subtrees,
    stored_ids,
    write_planned,
)
from graph.importers.jsonl import Line, LineProblems, ReadPosition, Slim
from graph.importers.report import FileReport, TranscriptError
from graph.importers.resume import (
    FileState,
    nothing_complete_yet,
    read_complete,
    resumed,
    save_state,
)
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
from graph.store.base import BaseStore

__all__ = ["FORMAT", "import_file"]

FORMAT = "codex"
"""The format name :func:`graph.importers.detect_format` gives these files."""

_INJECTED = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions",
)
_NEVER_ECHOED = (*_INJECTED, "<user_shell_command>")
"""Text forms of user items Codex writes with no echo (context it injects, a ``!`` shell command)."""
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


_TEXTS = ("input_text", "output_text", "text")
"""The content block types whose text is a message's text."""


def _slim(data: dict[str, Any]) -> dict[str, Any]:
    """What the rules read of a rollout item: the rest stays in the file until its node is made.

    Kept: the item's type and time, its payload's type, role and ``turn_id``; of a user item, the
    first :data:`_HEAD` characters of its text (the prefixes that tell injected context) and,
    under ``said``, a digest of its text (:func:`_said`: the echo pairing compares texts); of an
    echo, the digest of its ``message``; a ``session_meta`` and a ``thread_rolled_back`` whole.
    Texts, outputs, arguments, reasoning and images are read again when the item's node is made
    (:func:`graph.importers._common.rereading`), so a read holds about the same per item whatever
    the items' size.
    """
    kind = data.get("type")
    p = data.get("payload")
    if kind == "session_meta":
        return data
    out = Slim({k: data[k] for k in ("type", "timestamp") if k in data})
    if not isinstance(p, dict):  # (parsed JSON: a dict; abc's Mapping check costs 4x as much)
        return out
    ptype = p.get("type")
    if kind == "event_msg" and ptype == "thread_rolled_back":
        out["payload"] = p
        return out
    kept = {k: p[k] for k in ("type", "role", "turn_id") if k in p}
    out["payload"] = kept
    if kind == "response_item" and ptype == "message" and p.get("role") == "user":
        text = _joined(p.get("content"))  # (what _text_of's blocks join to, none of them made)
        out["said"] = _digest(text.strip())
        kept["content"] = [{"type": "input_text", "text": text.lstrip()[:_HEAD]}]
    elif kind == "event_msg" and ptype == "user_message":
        out["said"] = _said(Line(0, data))
    return out


_HEAD = 64
"""Characters of a user item's text a slim item keeps: the prefixes :func:`_item` and
:func:`_settled` look for (:data:`_NEVER_ECHOED`) are all shorter."""


def _said(line: Line) -> bytes | None:
    """A digest (BLAKE2b, 16 bytes) of what an echo says or of a user item's text, to compare them.

    None for an echo that says nothing. A slim item (:func:`_slim`) holds its digest; an echo
    pairs with a user item of the same digest (two texts apart share one with odds of 2**-128).
    """
    if isinstance(line.data, Slim):
        kept = line.data.get("said")
        return kept if isinstance(kept, bytes) else None
    if _is_echo(line):
        text = str(_payload(line).get("message") or "").strip()
        if not text:
            return None
    else:
        text = _plain(_payload(line).get("content"))
    return _digest(text)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _payload(line: Line) -> Mapping[str, Any]:
    p = line.data.get("payload")
    return p if isinstance(p, dict) else {}  # (parsed JSON: a dict)


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
        if b.get("type") in _TEXTS:
            blocks.append(TextBlock(text=str(b.get("text", ""))))
        elif b.get("type") == "input_image":
            blocks.append(ImageBlock(ref=str(b.get("image_url", ""))[:2000]))
    return tuple(blocks)


def _joined(content: Any) -> str:
    """A message's texts joined by newlines, as :func:`_item` joins its blocks' (none made)."""
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") in _TEXTS
    )


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _is_user_item(line: Line) -> bool:
    p = _payload(line)
    return (
        line.data.get("type") == "response_item"
        and p.get("type") == "message"
        and p.get("role") == "user"
    )


def _is_echo(line: Line) -> bool:
    return line.data.get("type") == "event_msg" and _payload(line).get("type") == "user_message"


def _plain(content: Any) -> str:
    return "\n".join(b.text for b in _text_of(content) if isinstance(b, TextBlock)).strip()


_RUN = 64
"""How far (items) an echo's run is searched each way; keeps the pairing linear on any input."""


def _in_run(line: Line) -> bool:
    """Items a prompt's run may hold besides user items: bookkeeping and injected instructions."""
    kind, p = line.data.get("type"), _payload(line)
    if kind == "turn_context":
        return True
    if kind == "event_msg":
        return p.get("type") not in ("user_message", "agent_message", "agent_reasoning")
    return kind == "response_item" and p.get("type") == "message" and p.get("role") != "assistant"


Picks = dict[int, tuple[list[int], bool]]
"""Per echo position: the unpaired user items of its run it chose from, and whether by text."""


def _prompts(
    items: Sequence[Line], *, start: int = 0, paired: set[int] | None = None, echoed: bool = False
) -> set[int] | None:
    """The positions of the user items that are real prompts (see :func:`_pairing`)."""
    return _pairing(items, start=start, paired=paired, echoed=echoed)[0]


def _pairing(
    items: Sequence[Line], *, start: int = 0, paired: set[int] | None = None, echoed: bool = False
) -> tuple[set[int] | None, Picks]:
    """The positions of the user items that are real prompts, told by structure; None if it cannot.

    The CLI echoes each prompt the user typed as an ``event_msg`` ``user_message`` beside its
    ``response_item``; the context it injects as user text (AGENTS.md, the environment context)
    has no echo, whatever its wording (sanitized and localized rollouts defeat text prefixes). Each
    echo is paired with one unpaired user item of its run (the user items and bookkeeping around
    it, up to the nearest model output or other echo): the one with the echo's text, else the
    nearest before it, else the nearest after it. A rollout without any echo returns None (older
    builds did not write them), and the caller falls back to the injected-text prefixes.

    A resumed import pairs only the echoes from ``start`` on, with the items before it paired as
    ``paired`` says, and ``echoed`` when the file held an echo before ``start``.

    Returns:
        ``(prompts, picks)``: the prompts' positions (None: no echo), and for each echo paired here
        the candidates it chose from and whether its choice matched its text
        (:func:`_settled` reads them).
    """
    echoes = [k for k, line in enumerate(items) if k >= start and _is_echo(line)]
    picks: Picks = {}
    if not echoes and not echoed:
        return None, picks
    paired = set(paired or ())

    def run(k: int, step: int) -> list[int]:
        out: list[int] = []
        j = k + step
        while 0 <= j < len(items) and abs(j - k) <= _RUN:
            if _is_user_item(items[j]):
                if j not in paired:
                    out.append(j)
            elif not _in_run(items[j]):
                break
            j += step
        return out

    for k in echoes:
        near = run(k, -1) + run(k, 1)
        said = _said(items[k])
        same = [j for j in near if said is not None and _said(items[j]) == said]
        picks[k] = (near, bool(same))
        if same or near:
            paired.add((same or near)[0])
    return paired, picks


def _settled(items: Sequence[Line], prompts: set[int] | None, picks: Picks) -> int:
    """How many of ``items`` no item written later can change; the rest waits for more lines.

    A node is final once stored, and a user item's role hangs on the pairing with echoes, which
    items not written yet can change while the file's last items are user items, bookkeeping and
    echoes (nothing since that ends a run: a model output, a compaction):

    * an unpaired user item after the last echo (after every one, in a rollout without any) may
      be a prompt whose echo Codex writes next (it writes the prompt, then its echo), unless its
      text is one Codex never echoes (:data:`_NEVER_ECHOED`; in a rollout without any echo, only
      the injected-text prefixes, which classify it the same either way);
    * the last echo, when its run reaches the end of the file and it chose by nearness (no item
      with its text), may choose an item written later that has its text.

    Returns:
        The number of leading items to store now: ``len(items)`` when nothing is open, else the
        position of the first open one (with every item after it).
    """
    n = len(items)
    lo = n
    while lo > max(1, n - _RUN) and (
        _is_user_item(items[lo - 1]) or _in_run(items[lo - 1]) or _is_echo(items[lo - 1])
    ):
        lo -= 1
    echoes = [k for k in range(lo, n) if _is_echo(items[k])]
    paired = prompts or set()
    after = echoes[-1] + 1 if echoes else lo
    never = _NEVER_ECHOED if prompts is not None else _INJECTED

    def open_item(j: int) -> bool:
        if not _is_user_item(items[j]) or j in paired:
            return False
        return not _plain(_payload(items[j]).get("content")).startswith(never)

    held = next((j for j in range(after, n) if open_item(j)), n)
    if echoes:
        near, by_text = picks.get(echoes[-1], ([], True))
        if near and not by_text and n - echoes[-1] <= _RUN:
            held = min(held, *near)
    while 1 < held < n and items[held - 1].number == items[held].number:
        held -= 1  # a line is stored whole or not at all
    return held


def _hold_back(
    items: list[Line], held: int, position: ReadPosition, report: FileReport
) -> list[Line]:
    """``items[:held]``, with ``position`` moved back to the first held item's line (read again)."""
    if held >= len(items):
        return items
    line = items[held]
    position.offset, position.line = line.offset, line.number - 1
    report.notes.append(
        f"line {line.number} on: a prompt whose echo is not written yet, or an echo that may "
        "pair an item still to come; stored once the rollout goes on"
    )
    return items[:held]


def _kind_role(line: Line, prompt: bool | None = None) -> tuple[Kind, Role]:
    """Kind and role of a rollout item, as :func:`_item` gives them, without making its content.

    What the plan reads of a slim item (:func:`_slim`): its content blocks are made when its node
    is (a tenth of an import went to blocks made and dropped).
    """
    kind, p = line.data.get("type"), _payload(line)
    ptype = p.get("type")
    if kind == "response_item":
        if ptype == "message":
            role = p.get("role")
            if role == "assistant":
                return Kind.MESSAGE, Role.ASSISTANT
            if role == "user" and (
                not _joined(p.get("content")).lstrip().startswith(_INJECTED)
                if prompt is None
                else prompt
            ):
                return Kind.MESSAGE, Role.USER
            return Kind.MESSAGE, Role.SYSTEM
        if ptype in _CALLS:
            return Kind.MESSAGE, Role.ASSISTANT
        if ptype in _OUTPUTS:
            return Kind.MESSAGE, Role.TOOL
        return (Kind.EVENT, Role.ASSISTANT) if ptype == "reasoning" else (Kind.EVENT, Role.SYSTEM)
    return (Kind.SUMMARY, Role.SYSTEM) if kind == "compacted" else (Kind.EVENT, Role.SYSTEM)


def _item(line: Line, prompt: bool | None = None) -> tuple[Kind, Role, Content]:
    """Kind, role and content of a rollout item.

    ``prompt`` tells whether a user item is a real prompt (:func:`_prompts`); None leaves it to the
    injected-text prefixes.
    """
    kind, p = line.data.get("type"), _payload(line)
    ptype = p.get("type")
    if kind == "response_item":
        if ptype == "message":
            content = _text_of(p.get("content"))
            role = p.get("role")
            text = "\n".join(b.text for b in content if isinstance(b, TextBlock)).lstrip()
            if role == "assistant":
                return Kind.MESSAGE, Role.ASSISTANT, content
            if role == "user" and (not text.startswith(_INJECTED) if prompt is None else prompt):
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
        history = p.get("replacement_history")
        if isinstance(history, list):
            return Kind.SUMMARY, Role.SYSTEM, _replacement(history)
        return Kind.SUMMARY, Role.SYSTEM, str(p.get("message") or "")
    if kind == "event_msg":
        said = p.get("message") or p.get("text") or ""
        return Kind.EVENT, Role.SYSTEM, f"{ptype}: {said}" if said else str(ptype or kind)
    if kind == "turn_context":
        return Kind.EVENT, Role.SYSTEM, f"turn_context {p.get('model', '')}".strip()
    return Kind.EVENT, Role.SYSTEM, str(kind)


def _replacement(history: list[Any]) -> tuple[Block, ...]:
    """A ``compacted`` item's ``replacement_history`` as the summary's content, item by item.

    The replacement is the whole model-visible history after the compaction (the kept prompts, the
    summary the model wrote, a remote compaction's encrypted item), so the summary's content is its
    text in order; each item's role and fields stay in the node's ``metadata["payload"]``.
    """
    blocks: list[Block] = []
    for item in history:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            blocks.extend(_text_of(item.get("content")))
        else:
            blocks.append(TextBlock(text=f"[{item.get('type') or 'item'}]"))
    return tuple(blocks)


# ------------------------------------------------------------------------------------- import


def import_file(store: BaseStore, path: Path, *, resume: bool = True) -> FileReport:
    """Import one Codex rollout in one transaction.

    Re-importing changes nothing; a file that grew adds only its new items, read from where the
    last import stopped when the resumed path takes them (see the module docstring).

    Args:
        store: The store to import into.
        path: The rollout file.
        resume: False reads the whole file even when a recorded state would let it resume.

    Returns:
        The file's report (see :class:`~graph.importers.report.FileReport`).

    Raises:
        OSError: the file cannot be read.
        TranscriptError: the file holds no Codex item, or the ``session_meta`` of a second session.
        GraphError: the store refused a write; nothing of the file was stored.
    """
    path = Path(path)
    with file_import(path, FORMAT) as (report, problems):
        if resume and resumed(store, path, FORMAT, report, problems, _resume):
            return report
        position = ReadPosition()
        items = read_complete(path, problems, position, _slim)
        if nothing_complete_yet(path, items, position, report):
            return report
        if items and not any(line.data.get("type") in _TYPES for line in items):
            raise TranscriptError(
                path, f"no Codex item in it ({len(items)} objects of no Codex type)"
            )
        first = next((i for i, line in enumerate(items) if _is_meta(line)), None)
        has_meta = first is not None  # else item positions shift once one is written
        if first is None:
            report.notes.append("no session_meta: the rollout is named after its file")
            items.insert(0, Line(0, {"type": "session_meta", "payload": {"id": path.stem}}))
            first = 0
        elif not _payload(items[first]).get("id"):  # sanitized away: named as if it had none
            report.notes.append("session_meta without an id: the rollout is named after its file")
            meta = items[first]
            payload = {**_payload(meta), "id": path.stem}
            items[first] = dataclasses.replace(meta, data={**meta.data, "payload": payload})
        items = _without_self_forks(items, report)
        for line in items[:first]:
            problems.skipped.append((line.number, "item before the first session_meta"))
        items = _without_repeats(items[first:], problems)
        _check_one_session(path, items)
        prompts, picks = _pairing(items)
        items = _hold_back(items, _settled(items, prompts, picks), position, report)
        if _payload(items[0]).get("forked_from_id"):  # reads the fork's source: all under the lock
            with store.atomic():
                _import(store, path, items, prompts, report, position, has_meta)[1]()
        else:  # worked out outside the write lock, checked and written under it
            write_planned(
                store,
                report,
                lambda: _import(store, path, items, prompts, report, position, has_meta),
            )
    return report


def _without_self_forks(items: list[Line], report: FileReport) -> list[Line]:
    """``items`` with each ``forked_from_id`` that names its own ``session_meta``'s id left out.

    A thread is no fork of itself (a sanitizer or a faulty build wrote its own id there): read as
    one, the stored nodes would be taken for a parent's copied prefix on the next import. The
    report notes each line so changed.
    """
    out = []
    for line in items:
        p = _payload(line)
        if _is_meta(line) and p.get("id") and p.get("forked_from_id") == p.get("id"):
            report.notes.append(
                f"line {line.number}: forked_from_id names the rollout itself; not a fork"
            )
            payload = {k: v for k, v in p.items() if k != "forked_from_id"}
            line = dataclasses.replace(line, data={**line.data, "payload": payload})
        out.append(line)
    return out


def _without_repeats(items: list[Line], problems: LineProblems) -> list[Line]:
    """``items`` without the copies of the rollout's own first lines that follow them.

    A rollout concatenated with itself (``cat a.jsonl a.jsonl``) has no parent pointers to tell
    the copy: read in file order it would repeat every turn. A run that starts at a later
    ``session_meta`` and repeats, line for line and byte for byte (:attr:`Slim.digest`; an object kept whole, by its JSON), the
    rollout's first lines (two at least: a ``session_meta`` alone may be repeated by Codex) is a
    copy; its lines are left out and listed in ``problems.skipped`` with the line each repeats.
    Lines after a copy that do not repeat are read as the rollout's own (``cat a b``, b grown).
    """
    keys = [_key(line) for line in items]
    out: list[Line] = []
    i = 0
    while i < len(items):
        m = 0
        if i and _is_meta(items[i]):
            while i + m < len(items) and m < i and keys[i + m] == keys[m]:
                m += 1
        if m >= 2:
            for k in range(m):
                problems.skipped.append(
                    (
                        items[i + k].number,
                        f"repeats line {items[k].number} (the rollout's lines copied into it again)",
                    )
                )
            i += m
            continue
        out.append(items[i])
        i += 1
    return out


def _key(line: Line) -> tuple[bytes, int]:
    """What tells a line's copy: its bytes' digest, or for an object kept whole, its JSON."""
    digest = getattr(line.data, "digest", None)
    if digest is None:
        digest = orjson.dumps(line.data, option=orjson.OPT_SORT_KEYS)
    return digest, line.part


_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
"""The item types a Codex rollout holds: a file holding none of them is not a rollout."""


def _check_one_session(path: Path, items: list[Line]) -> None:
    """Refuse a rollout (not a fork) holding a ``session_meta`` of another id: two in one file.

    A fork's rollout copies its parent's ``session_meta`` after its own, and a rollout may repeat
    its own; another id anywhere else is a second session written into the file.

    Raises:
        TranscriptError: naming the file and the line of the other ``session_meta``.
    """
    own = _payload(items[0]).get("id")
    if not _is_meta(items[0]) or _payload(items[0]).get("forked_from_id"):
        return
    for line in items[1:]:
        other = _payload(line).get("id") if _is_meta(line) else None
        if other and other != own:
            raise TranscriptError(
                path,
                f"line {line.number}: a session_meta of another session "
                f"({other!r}): two sessions in one file",
            )


def _import(
    store: BaseStore,
    path: Path,
    items: list[Line],
    prompts: set[int] | None,
    report: FileReport,
    position: ReadPosition,
    has_meta: bool,
) -> Plan:
    """Work out a rollout's import from reads of the store: ``(still_true, write)``.

    ``prompts``: the prompts' positions, paired over the whole file read (``items`` may stop
    before its end: :func:`_settled`). ``has_meta``: the rollout has a ``session_meta`` (else one
    was made up from the file's name).
    """
    ids = _Ids(store, items, report)
    own = str(_payload(items[0]).get("id") or path.stem)
    sid = ids.root
    root_meta = dict(ids.metas[sid])
    if sid != own:
        report.notes.append(f"fork of session {sid}: its new items join that session as a branch")
    report.session_ids.append(sid)
    known = stored_ids(store, sid)
    covers_of: dict[str, tuple[str, ...]] = dict(store.index(sid).covers) if known else {}
    had_head = store.session(sid).head if known else None
    order: list[tuple[str, Line, bool | None]] = [
        (i, items[k], None if prompts is None else k in prompts) for k, i in enumerate(ids.ids) if i
    ]
    last = parse_time(_payload(items[0]).get("timestamp"), EPOCH)
    # (line, node id, prompt, predecessor, covers, time): the content is read when it is written
    planned: list[tuple[Line, str, bool | None, str | None, tuple[str, ...], datetime]] = []
    pred: dict[str, str | None] = {}
    prev: str | None = None
    turns: list[str] = []  # the prompts on the current chain, oldest first
    rollbacks: list[tuple[str, str]] = []  # (node kept, first prompt dropped)
    stored: list[tuple[str, int, Line, bool | None]] = []  # entries the session holds
    users: list[tuple[Line, bool | None]] = []  # the user items: the first with text is the title
    for node_id, line, prompt in order:
        last = parse_time(line.data.get("timestamp"), last)
        kind, role = _kind_role(line, prompt)  # (a slim item's content is not its content)
        if kind is Kind.MESSAGE and role is Role.USER:
            users.append((line, prompt))
            turns.append(node_id)
        elif kind is Kind.SUMMARY:
            turns.clear()  # the turns before a compaction are no longer in the history
        elif (back := _rolled_back(line, turns, pred, report)) is not None:
            prev, first = back
            if prev is not None:
                rollbacks.append((prev, first))
        pred[node_id] = prev
        p, prev = prev, node_id
        if node_id in known:
            stored.append((node_id, line.number, line, prompt))
            continue
        covers: tuple[str, ...] = ()
        if kind is Kind.SUMMARY and p is not None:
            covers = _since_last_compaction(p, pred, known, covers_of)
            covers_of[node_id] = covers
        planned.append((line, node_id, prompt, p, covers, last))
    with rereading(path, _slim) as whole:
        said = (preview(_item(whole(line), prompt)[2]) for line, prompt in users)
        title = next((t for t in said if t), "")
        if known and sid == own:
            refuse_another_transcript(
                store,
                path,
                sid,
                lambda: [(i, n, *_item(whole(line), prompt)) for i, n, line, prompt in stored],
                len(planned),
            )

    def nodes(whole: Callable[[Line], Line]) -> Iterator[Node]:
        # Each item is read whole and made a node as its chunk is written (add_chunked).
        for line, node_id, prompt, p, covers, when in planned:
            full = whole(line)
            kind, role, content = _item(full, prompt)
            yield _node(full, node_id, kind, role, content, p, sid, covers, when)

    existed = _exists(store, sid)
    session = store.session(sid) if existed else None
    seen = holders(store, [i for i in ids.ids if i])
    resumable = (
        sid == own
        and has_meta
        # A fork rollout (read while Codex still writes its copied prefix, too) is read whole.
        and not any(_is_meta(line) and _payload(line).get("forked_from_id") for line in items)
        and not (items and items[-1].number > position.line)  # an unterminated last line
    )
    with rereading(path, _slim) as whole:
        state = _state(
            sid, items, prompts, title=title, prev=prev, time=last, resumable=resumable, whole=whole
        )

    def still_true() -> bool:
        now = store.session(sid) if _exists(store, sid) else None
        same = (now is None) == (session is None)
        if now is not None and session is not None:
            same = (now.head, now.metadata) == (session.head, session.metadata)
        return same and holders(store, seen) == seen

    def write() -> None:
        with rereading(path, _slim) as whole:
            new = nodes(whole)
            _write(
                store, path, sid, own, ids, root_meta, title, new, prev, had_head, rollbacks, report
            )
        save_state(store, path, FORMAT, position, state)

    return still_true, write


def _lite(line: Line, paired: bool) -> list[Any]:
    """What pairing a later echo reads of an item: type, payload type, role, text, paired."""
    p = _payload(line)
    text = _plain(p.get("content")) if _is_user_item(line) else ""
    return [line.data.get("type"), p.get("type"), p.get("role"), text, paired]


def _unlite(number: int, lite: list[Any]) -> Line:
    kind, ptype, role, text, _ = lite
    content = [{"type": "input_text", "text": text}]
    return Line(
        number, {"type": kind, "payload": {"type": ptype, "role": role, "content": content}}
    )


def _open_echo(window: Sequence[Line]) -> bool:
    """Whether an echo among ``window`` (the file's last items) may still pair an item to come.

    An echo's run reaches forward over user items and bookkeeping, up to :data:`_RUN` items: one
    that reaches the end of the file may pair an appended item, which only a full read settles.
    """
    for k, line in enumerate(window):
        if not _is_echo(line):
            continue
        j = k + 1
        while j < len(window) and j - k <= _RUN:
            if not _is_user_item(window[j]) and not _in_run(window[j]):
                break
            j += 1
        else:
            if j - k <= _RUN:
                return True
    return False


def _state(
    sid: str,
    items: Sequence[Line],
    prompts: set[int] | None,
    *,
    title: str,
    prev: str | None,
    time: datetime,
    resumable: bool,
    whole: Callable[[Line], Line] = lambda line: line,
) -> dict[str, Any]:
    """A rollout's state after an import: where its chain ends and its last items' pairing.

    A rollout is resumed only when it was ``resumable`` (not a fork, a session_meta first, no
    unterminated last line) and no echo among its last items may still pair an appended item.
    ``whole`` reads a slim item whole (the last items' texts are kept in the state).
    """
    start = max(0, len(items) - _RUN)
    window = items[start:]
    return {
        "session": sid,
        "resumable": resumable and not _open_echo(window),
        "count": len(items),
        "prev": prev,
        "time": time.isoformat(),
        "title": title,
        "echoed": prompts is not None,
        "window": [
            _lite(whole(line), prompts is not None and start + k in prompts)
            for k, line in enumerate(window)
        ],
    }


def _resume(
    store: BaseStore, path: Path, saved: FileState, problems: LineProblems, report: FileReport
) -> bool:
    """Import the items appended since ``saved``, inside the caller's transaction.

    The new items continue the chain from the stored last node; their prompts are paired with the
    echoes among them over the last items the state keeps (see :func:`_prompts`). Nothing is
    written, and False returned, when a full import is needed: the rollout was not resumable, the
    session is gone, or a new item is a compaction, a rollback or a ``session_meta`` (a fork rollout
    copies its parent's meta and items after its own, so one imported while being written grows
    into a fork).

    Returns:
        Whether the file was imported.
    """
    st = saved.state
    sid = st.get("session")
    window = st.get("window")
    if not st.get("resumable") or not isinstance(sid, str) or not isinstance(window, list):
        return False
    if not store.has_session(sid):
        return False
    position = saved.position
    new = read_complete(path, problems, position)
    for line in new:
        p = _payload(line)
        if line.data.get("type") in ("compacted", "session_meta") or (
            line.data.get("type") == "event_msg" and p.get("type") == "thread_rolled_back"
        ):
            return (
                False  # a new session_meta: a fork's copied parent, which only a full read places
            )
    count = int(st.get("count", 0))
    items = [_unlite(0, lite) for lite in window] + new
    start = len(window)
    before = {k for k, lite in enumerate(window) if lite[4]}
    prompts, picks = _pairing(items, start=start, paired=before, echoed=bool(st.get("echoed")))
    held = _settled(items, prompts, picks)
    if held < start:  # an item stored before is open again: only a full read settles it
        return False
    items = _hold_back(items, held, position, report)
    new = items[start:]
    title = str(st.get("title") or "")
    prev = st.get("prev")
    prev = prev if isinstance(prev, str) else None
    last = parse_time(st.get("time"), EPOCH)
    planned: list[tuple[Line, str, Kind, Role, Content, str | None, datetime]] = []
    for j, line in enumerate(new):
        node_id = f"{sid}:{count + j}"
        last = parse_time(line.data.get("timestamp"), last)
        prompt = None if prompts is None else start + j in prompts
        kind, role, content = _item(line, prompt)
        if kind is Kind.MESSAGE and role is Role.USER:
            title = title or preview(content)
        planned.append((line, node_id, kind, role, content, prev, last))
        prev = node_id
    report.session_ids.append(sid)
    if title and title != store.session(sid).title:
        store.update_session(sid, title=title)
    if planned:
        nodes = (_node(x[0], x[1], x[2], x[3], x[4], x[5], sid, (), x[6]) for x in planned)
        report.nodes_added += add_chunked(store, sid, nodes, head=prev)
    state = _state(sid, items, prompts, title=title, prev=prev, time=last, resumable=True)
    state["count"] = count + len(new)
    save_state(store, path, FORMAT, position, state)
    return True


def _node(
    line: Line,
    node_id: str,
    kind: Kind,
    role: Role,
    content: Content,
    p: str | None,
    sid: str,
    covers: tuple[str, ...],
    when: datetime,
) -> Node:
    """The node of a rollout item."""
    meta: dict[str, Any] = {"type": line.data.get("type"), "line": line.number}
    meta["payload"] = (
        dict(_payload(line))
        if kind is not Kind.MESSAGE
        else {k: v for k, v in _payload(line).items() if k not in ("content", "output")}
    )
    thread = node_id.rsplit(":", 1)[0]
    if thread != sid:
        meta["transcript_session"] = thread
    return Node(
        id=node_id,
        session_id=sid,
        predecessor=p,
        kind=kind,
        role=role,
        content=content if content or kind is not Kind.SUMMARY else "[compacted]",
        created_at=when,
        metadata=meta,
        covers=covers,
    )


def _write(
    store: BaseStore,
    path: Path,
    sid: str,
    own: str,
    ids: _Ids,
    root_meta: dict[str, Any],
    title: str,
    new: Iterable[Node],
    prev: str | None,
    had_head: str | None,
    rollbacks: list[tuple[str, str]],
    report: FileReport,
) -> None:
    """Write a planned rollout: the session (and a fork's record), the nodes, the rollbacks."""
    known = _exists(store, sid)
    current = dict(store.session(sid).metadata) if known else {}
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
        _replace_unplaced(store, own, ids.metas[own], report)
        stored_meta = store.session(sid).metadata
        forks = dict(stored_meta.get("forks") or {})
        child = {k: v for k, v in ids.metas[own].items() if k != "base_instructions"}
        if forks.get(own) != child | {"path": str(path), "cut": ids.cut}:
            forks[own] = child | {"path": str(path), "cut": ids.cut}
            store.update_session(sid, metadata=dict(stored_meta) | {"forks": forks})
    head = prev if (sid == own or had_head is None or had_head.startswith(f"{own}:")) else had_head
    report.nodes_added += add_chunked(store, sid, new, head=head)
    for kept, first in rollbacks:
        stamp_subtrees(store, sid, kept, [first])


def _replace_unplaced(
    store: BaseStore, own: str, meta: Mapping[str, Any], report: FileReport
) -> None:
    """Delete the session an earlier read stored for fork ``own`` before it could place it.

    A fork rollout whose copied prefix had not ended yet when it was read was kept as a session of
    its own (its thread id, its ``session_meta`` naming ``forked_from_id``); once its items join the
    parent's session as a branch, that session would be a second copy, and its node ids (the
    fork's own items keep theirs) would collide with the branch's. Only a Codex session of this
    thread forked from the same parent is removed; any other session of that id is left alone.
    """
    if not store.has_session(own):
        return
    stored = store.session(own).metadata
    first = stored.get("session_meta")
    if (
        stored.get("runtime") != FORMAT
        or not isinstance(first, Mapping)
        or not first.get("forked_from_id")
        or first.get("forked_from_id") != meta.get("forked_from_id")
    ):
        return
    store.delete_session(own)
    report.notes.append(
        f"replaced session {own}, stored by an earlier read of this fork before its copied "
        "prefix ended, with its branch of the parent session"
    )


def _since_last_compaction(
    start: str,
    pred: Mapping[str, str | None],
    known: Mapping[str, str | None],
    covers_of: Mapping[str, tuple[str, ...]],
) -> tuple[str, ...]:
    """The span a ``compacted`` item replaces, oldest first.

    It is the branch before the item, back to the root or to the span of the previous compaction
    (included: it stands for what it covered). Bounded by the items since that compaction, so a
    rollout's covers stay linear in its length.
    """
    out: list[str] = []
    ends: set[str] = set()
    n: str | None = start
    while n is not None and n not in ends:
        out.append(n)
        cv = covers_of.get(n)
        if cv:
            ends.add(cv[-1])
        n = pred[n] if n in pred else known.get(n)
    out.reverse()
    return tuple(out)


def _rolled_back(
    line: Line, turns: list[str], pred: Mapping[str, str | None], report: FileReport
) -> tuple[str | None, str] | None:
    """Where a ``thread_rolled_back`` event takes the history back to.

    Returns ``(node the history goes back to, first prompt dropped)``; None for any other item or
    a rollback that cannot be applied (reported). ``num_turns`` drops the last turns from the
    history (Codex keeps their lines in the file): the history goes back to just before the
    ``num_turns``-th last prompt. ``turns`` loses them.
    """
    p = _payload(line)
    if line.data.get("type") != "event_msg" or p.get("type") != "thread_rolled_back":
        return None
    n = p.get("num_turns")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= len(turns):
        report.notes.append(
            f"line {line.number}: thread_rolled_back {orjson.dumps(dict(p)).decode()[:120]} "
            f"names no span of the {len(turns)} turns since the start or the last compaction; "
            "not applied"
        )
        return None
    first = turns[-n]
    del turns[-n:]
    back = pred[first]
    if back is None:
        report.notes.append(
            f"line {line.number}: thread_rolled_back drops every turn; the history restarts there"
        )
    return back, first

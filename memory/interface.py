"""The nine-method memory interface, its local implementation, and a runtime harness.

The interface is the only thing between an agent runtime and a memory system. Its points in a session's
life: ``name`` and ``is_available`` when a memory system is chosen; ``initialize`` at session start;
``system_prompt`` once at session start (the core block); ``search`` before each turn runs; ``write``
after each turn (``force=False``) and at the session boundary (``force=True``);
``extract_before_discard`` when compaction is about to drop turns; ``reorganize`` off the write path
(nightly); ``shutdown`` after the last turn.

Recall text is wrapped in ``<memory-context>`` exactly once, where it is produced (:func:`wrap_context`);
the runtime never wraps it again (wrapping twice would leave an empty shell once the inner layer is
stripped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from graph.models import Node, Role
from graph.store.base import BaseStore
from memory.branches import alternatives
from memory.organizer import OfflineOrganizer, reorganize
from memory.pipeline import WriteFailure, WritePipeline
from memory.records import CORE_TOPIC
from memory.workspace import MemoryWorkspace
from memory.writers import Writer

__all__ = [
    "LocalMemory",
    "MemoryProvider",
    "SessionRun",
    "run_session",
    "select_provider",
    "wrap_context",
]

_OPEN, _CLOSE = "<memory-context>", "</memory-context>"


def wrap_context(text: str) -> str:
    """Wrap recall text in ``<memory-context>`` once; text already wrapped is returned as it is."""
    stripped = text.strip()
    if stripped.startswith(_OPEN) and stripped.endswith(_CLOSE):
        return text
    return f"{_OPEN}\n{text}\n{_CLOSE}"


@runtime_checkable
class MemoryProvider(Protocol):
    """The nine methods a memory system offers a runtime, each called at its point of a session."""

    @property
    def name(self) -> str:
        """The memory system's name (used to choose one)."""
        ...

    def is_available(self) -> bool:
        """Whether it can run here (its store opens, its backend answers)."""
        ...

    def initialize(self, session_id: str) -> None:
        """Prepare for a session, once at its start."""
        ...

    def system_prompt(self) -> str:
        """Return the core block for the system prompt, wrapped in ``<memory-context>``, or ``""``."""
        ...

    def search(self, query: str, limit: int = 5) -> str:
        """Return recall text for ``query`` wrapped in ``<memory-context>``, or ``""`` for no hit."""
        ...

    def write(self, session_id: str, force: bool = False) -> WriteFailure | None:
        """Write what the session owes (see :meth:`memory.pipeline.WritePipeline.write`)."""
        ...

    def reorganize(self) -> list[str]:
        """Rearrange what is stored (no new content); return the view files whose bytes changed."""
        ...

    def extract_before_discard(self, nodes: Sequence[Node]) -> list[str]:
        """Given turns compaction is about to drop, return what memory says should be kept."""
        ...

    def shutdown(self) -> None:
        """Flush and release everything, after the last turn."""
        ...


class LocalMemory:
    """The local implementation: a :class:`~memory.workspace.MemoryWorkspace` and a write pipeline.

    Args:
        workspace: The workspace.
        store: The session store.
        writer: The writer (the offline digest writer by default).
        budget: Tokens per batch.
    """

    name = "local"

    def __init__(
        self,
        workspace: MemoryWorkspace,
        store: BaseStore,
        writer: Writer | None = None,
        *,
        budget: int | None = None,
    ) -> None:
        self.workspace = workspace
        self.store = store
        kwargs = {"budget": budget} if budget is not None else {}
        self.pipeline = WritePipeline(workspace, store, writer, **kwargs)  # type: ignore[arg-type]
        self.sessions: list[str] = []

    def is_available(self) -> bool:
        """True when the workspace database answers."""
        try:
            self.workspace.revision  # noqa: B018 - a read that fails when the file is gone
        except Exception:
            return False
        return True

    def initialize(self, session_id: str) -> None:
        """Remember the session (it is written at :meth:`shutdown` if still owed)."""
        if session_id not in self.sessions:
            self.sessions.append(session_id)

    def system_prompt(self) -> str:
        """Return ``core.md`` wrapped once, or ``""`` when the core topic is empty."""
        if not self.workspace.records(CORE_TOPIC):
            return ""
        text = (self.workspace.views_path / "core.md").read_text("utf-8").strip()
        return wrap_context(text)

    def search(self, query: str, limit: int = 5) -> str:
        """Return the best records for ``query`` as lines, wrapped once; ``""`` when nothing matches.

        Args:
            query: Words as a person types them (read as :meth:`~memory.workspace.MemoryWorkspace.search` reads them).
            limit: Records at most (clamped to 1..50).

        Raises:
            SearchIndexMissingError: the workspace's full-text index is gone.
        """
        hits = self.workspace.search(query, limit)
        if not hits:
            return ""
        return wrap_context("\n".join(f"- [{h.topic}] {h.content}" for h in hits))

    def write(self, session_id: str, force: bool = False) -> WriteFailure | None:
        """Write what the session owes this workspace (:meth:`memory.pipeline.WritePipeline.write`).

        Args:
            session_id: The session.
            force: False after a turn (write only when a full batch is owed); True at the session
                boundary (write until nothing is owed, on every live tip, the head first).

        Returns:
            None on success or when nothing is owed yet; else the :class:`WriteFailure` with its
            reason code and whether it is worth retrying. Never raises for a classified failure.
        """
        return self.pipeline.write(session_id, force)

    def reorganize(self) -> list[str]:
        """Run an organizer pass and report the view files whose bytes changed.

        The pass is the offline organizer's (exact duplicates merged, never alternatives from
        exclusive branches; see :func:`memory.organizer.reorganize`). It never writes new content and
        never moves markers.
        """
        with self.workspace.write_lock():
            return sorted(
                {
                    *self.workspace.render_views(),
                    *reorganize(
                        self.workspace,
                        OfflineOrganizer(apart=alternatives(self.workspace, self.store)),
                    ).changed_files,
                }
            )

    def extract_before_discard(self, nodes: Sequence[Node]) -> list[str]:
        """Return the contents of the records citing any of ``nodes`` (memory's version of them)."""
        cited = self.workspace.citations_of([n.id for n in nodes])
        ids = list(dict.fromkeys(r for rs in cited.values() for r in rs))
        records = {r.id: r for r in self.workspace.records()}
        return [records[r].content for r in ids if r in records]

    def shutdown(self) -> None:
        """Write what every initialized session still owes (``force=True``)."""
        for session_id in self.sessions:
            self.write(session_id, force=True)


def select_provider(providers: Sequence[MemoryProvider]) -> MemoryProvider | None:
    """Return the first available provider (``is_available``), or None."""
    for p in providers:
        if p.is_available():
            return p
    return None


@dataclass
class SessionRun:
    """What :func:`run_session` did."""

    session_id: str
    provider: str
    system_prompt: str = ""
    recalls: list[str] = field(default_factory=list)
    """The recall text of each turn's search, in order."""
    kept: list[str] = field(default_factory=list)
    """What ``extract_before_discard`` returned at compaction."""
    failures: list[WriteFailure] = field(default_factory=list)
    reorganized: list[str] = field(default_factory=list)


def run_session(
    providers: Sequence[MemoryProvider],
    store: BaseStore,
    user_turns: Sequence[str],
    reply: Callable[[str, str], str],
    *,
    compact_after: int | None = None,
    title: str = "",
) -> SessionRun:
    """Drive one conversation through all nine methods at their points in a session's life.

    Args:
        providers: Candidate memory systems; the first available one is used.
        store: Where the session is stored.
        user_turns: The user's messages in order.
        reply: Makes the assistant's answer from ``(system prompt + recall, user message)``.
        compact_after: After this many turns, compact the conversation so far (inline layout),
            calling ``extract_before_discard`` first and putting what it returns in the summary.
        title: The session's title.

    Raises:
        LookupError: no provider is available.
    """
    provider = select_provider(providers)
    if provider is None:
        raise LookupError(f"no available memory provider among {[p.name for p in providers]}")
    session = store.create_session(title)
    run = SessionRun(session.id, provider.name)
    provider.initialize(session.id)
    run.system_prompt = provider.system_prompt()
    for n, text in enumerate(user_turns, 1):
        recall = provider.search(text)
        run.recalls.append(recall)
        store.append(session.id, text, role=Role.USER)
        store.append(session.id, reply(run.system_prompt + recall, text), role=Role.ASSISTANT)
        failure = provider.write(session.id, force=False)
        if failure is not None:
            run.failures.append(failure)
        if compact_after is not None and n == compact_after:
            branch = store.branch(session.id)
            run.kept = provider.extract_before_discard(branch)
            summary = "Summary of the conversation so far." + "".join(f"\n- {k}" for k in run.kept)
            store.compact(session.id, [x.id for x in branch], summary)
    failure = provider.write(session.id, force=True)
    if failure is not None:
        run.failures.append(failure)
    run.reorganized = provider.reorganize()
    provider.shutdown()
    return run

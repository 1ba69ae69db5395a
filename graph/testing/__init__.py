"""Hypothesis strategies and a stateful machine for session histories, to fuzz consumers of sessions.

Runtimes that embed sessiongraph can fuzz their own consumers with the histories generated here; our
own property tests (``tests/test_properties.py``) run the same machine against both store twins.

A history is a sequence of operations (:class:`Op` subclasses, frozen dataclasses with readable
reprs) applied to a :class:`History`: appends of user, assistant, tool and system turns,
runtime-scheduled turns and empty messages; forks at any node; head moves between live tips; rewinds;
compactions in both layouts; spawns; consumer passes (the oldest ``k`` pending of the head, or a
session-boundary pass over every live tip); a crash between "written" and "marked"; a memory reset
(a new workspace id); and copying the session into a second store read with another workspace id.
Operations refer to nodes and tips by small integers taken modulo what exists, so every operation
applies to every history and hypothesis shrinks towards short, low-numbered programs.

After each operation :meth:`History.check` asserts the marker properties (pending is exactly the
unwritten eligible nodes of a branch, markers form a prefix of every branch, nothing is handed out
twice) against the id-set oracle (:class:`graph.cursors.IdSetCursor`); an :class:`AssertionError`
says which one broke. With ``cursor="ordinal"`` the consumers use an ordinal cursor (a count of turns
written) instead of markers, and hypothesis finds a history where it goes wrong
(``tests/test_properties.py`` shows the shortest).

Use it as a program strategy::

    from hypothesis import given
    from graph.testing import History, operations

    @given(operations())
    def test_my_consumer(ops):
        history = History(MemorySessionStore)
        for op in ops:
            op.apply(history)

or as a stateful test: ``TestHistories = history_machine(MemorySessionStore).TestCase``.
Requires hypothesis (a dev dependency), imported only by this module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from graph.cursors import (
    IdSetCursor,
    OrdinalCursor,
    effective_branch,
    is_sibling_summary,
    oracle_eligible,
)
from graph.index import MEMORY_ELIGIBLE
from graph.models import Content, Kind, Node, Role, ToolCallBlock, ToolResultBlock
from graph.store.base import BaseStore
from graph.walks import walk_pending

__all__ = [
    "Append",
    "Boundary",
    "Compact",
    "Consume",
    "Consumer",
    "Copy",
    "Crash",
    "Fork",
    "History",
    "Op",
    "Reset",
    "Rewind",
    "SetHead",
    "Spawn",
    "Turn",
    "history_machine",
    "operations",
    "ops",
    "turns",
]

StoreFactory = Callable[[], BaseStore]


# ---------------------------------------------------------------------------------------- turns


@dataclass(frozen=True)
class Turn:
    """One node to append: what the runtime wrote.

    Attributes:
        role: user, assistant, system or tool.
        kind: message or event (summaries come from :class:`Compact`).
        text: The text ("" and whitespace make an empty message).
        scheduled: A runtime-scheduled turn (``metadata={"scheduled": True}``).
        tool: Content as blocks: a tool call (assistant) or a tool result (tool).
    """

    role: Role = Role.USER
    kind: Kind = Kind.MESSAGE
    text: str = "hi"
    scheduled: bool = False
    tool: bool = False

    def content(self) -> Content:
        """The node content this turn stands for."""
        if not self.tool:
            return self.text
        if self.role is Role.TOOL:
            return (ToolResultBlock(call_id="c1", text=self.text),)
        return (ToolCallBlock(id="c1", name="grep", arguments={"q": self.text}),)

    def __repr__(self) -> str:
        extra = "".join(
            f" {flag}"
            for flag, on in (
                ("scheduled", self.scheduled),
                ("tool", self.tool),
                (self.kind.value, self.kind is not Kind.MESSAGE),
            )
            if on
        )
        return f"<{self.role.value} {self.text!r}{extra}>"


_TEXTS = st.sampled_from(["hi", "ok", "why?", "sure", ""])


def turns() -> st.SearchStrategy[Turn]:
    """Turns of every shape a runtime writes.

    User and assistant messages come first (the eligible ones, so they are what shrinking reaches),
    then tool calls and results, system messages, runtime-scheduled turns, empty messages and events.
    """
    said = st.builds(Turn, role=st.sampled_from([Role.USER, Role.ASSISTANT]), text=_TEXTS)
    return st.one_of(
        said,
        said,
        said,
        said,
        st.builds(Turn, role=st.just(Role.ASSISTANT), tool=st.just(True)),
        st.builds(Turn, role=st.just(Role.TOOL), tool=st.just(True)),
        st.builds(Turn, role=st.just(Role.SYSTEM)),
        st.builds(Turn, role=st.just(Role.USER), scheduled=st.just(True)),
        st.builds(Turn, role=st.just(Role.SYSTEM), kind=st.just(Kind.EVENT)),
    )


# ---------------------------------------------------------------------------------------- consumers


@dataclass
class Consumer:
    """A consumer of sessions (a provider with one marker value) and what it was handed.

    Attributes:
        provider: Its name.
        value: Its marker value (for memory, the workspace id); a reset changes it.
        cursor: ``"marker"`` (written markers and :meth:`~graph.store.base.BaseStore.pending`) or
            ``"ordinal"`` (an :class:`~graph.cursors.OrdinalCursor` per session).
        oracle: Per session, the ids it recorded as written (the id-set oracle).
        ordinals: Per session, its ordinal cursor (``cursor="ordinal"`` only).
        delivered: How many times each node was handed to it.
        crashes: How many times each node was handed to it in a batch whose mark never happened.
    """

    provider: str
    value: str
    cursor: str = "marker"
    oracle: dict[str, IdSetCursor] = field(default_factory=dict)
    ordinals: dict[str, OrdinalCursor] = field(default_factory=dict)
    delivered: Counter[str] = field(default_factory=Counter)
    crashes: Counter[str] = field(default_factory=Counter)

    def written(self, session_id: str) -> IdSetCursor:
        """The oracle of one session."""
        return self.oracle.setdefault(session_id, IdSetCursor())

    def pending(self, store: BaseStore, session_id: str, head: str | None = None) -> list[Node]:
        """What the consumer's cursor says is pending for ``head`` (the stored head by default)."""
        if self.cursor == "ordinal":
            ordinal = self.ordinals.setdefault(session_id, OrdinalCursor())
            return ordinal.pending(store, session_id, head)
        return store.pending(session_id, self.provider, self.value, head=head)

    def deliver(self, batch: list[Node], *, crash: bool = False) -> None:
        """Hand a batch to the consumer's store; ``crash``: the process dies before marking it."""
        for n in batch:
            self.delivered[n.id] += 1
            if crash:
                self.crashes[n.id] += 1

    def acknowledge(
        self, store: BaseStore, session_id: str, batch: list[Node], head: str | None = None
    ) -> None:
        """Record a written batch: mark it (or advance the ordinal cursor) and update the oracle."""
        if not batch:
            return
        if self.cursor == "ordinal":
            ordinal = self.ordinals.setdefault(session_id, OrdinalCursor())
            positions = {n.id: i for i, n in ordinal.positions(store, session_id, head)}
            ordinal.advance(batch[-1].id, positions[batch[-1].id])
        else:
            store.mark(session_id, batch, self.provider, self.value)
        self.written(session_id).record(batch)

    def reset(self, value: str) -> None:
        """Start over with a new marker value (a memory reset: a new, empty workspace)."""
        self.value = value
        self.oracle.clear()
        self.ordinals.clear()
        self.delivered.clear()
        self.crashes.clear()


# ---------------------------------------------------------------------------------------- history


class History:
    """A store, its sessions, and the consumers reading them; operations apply here.

    Args:
        store_factory: Makes an empty store (called once now, and again by :class:`Copy`).
        cursor: ``"marker"`` or ``"ordinal"``, for every consumer.

    Attributes:
        store: The store.
        sessions: Session ids, the first one first, then spawned ones.
        nodes: Per session, the node ids in the order they were made.
        consumers: ``memory`` (value ``ws-1``, changed by :class:`Reset`) and ``search``.
        resets: How many memory resets happened.
    """

    def __init__(self, store_factory: StoreFactory, *, cursor: str = "marker") -> None:
        self.store_factory = store_factory
        self.store = store_factory()
        self.sessions: list[str] = [self.store.create_session("fuzz").id]
        self.nodes: dict[str, list[str]] = {self.sessions[0]: []}
        self.consumers = [Consumer("memory", "ws-1", cursor), Consumer("search", "idx-1", cursor)]
        self.resets = 0

    def session(self, i: int) -> str:
        """The ``i``-th session, modulo how many exist."""
        return self.sessions[i % len(self.sessions)]

    def consumer(self, i: int) -> Consumer:
        """The ``i``-th consumer, modulo two."""
        return self.consumers[i % len(self.consumers)]

    def head(self, sid: str) -> str | None:
        """The stored head of ``sid``."""
        return self.store.session(sid).head

    def path(self, sid: str) -> list[str]:
        """The predecessor path of the head, root first, rewound nodes included."""
        pred = self.store.index(sid).pred
        out: list[str] = []
        n = self.head(sid)
        while n is not None:
            out.append(n)
            n = pred[n]
        out.reverse()
        return out

    def append(self, sid: str, turn: Turn, predecessor: Any) -> Node:
        """Append ``turn`` after ``predecessor`` (a node id, or the head) and record it."""
        kwargs: dict[str, Any] = {"metadata": {"scheduled": True}} if turn.scheduled else {}
        if predecessor is not None:
            kwargs["predecessor"] = predecessor
        node = self.store.append(sid, turn.content(), role=turn.role, kind=turn.kind, **kwargs)
        self.nodes[sid].append(node.id)
        return node

    # ------------------------------------------------------------------------------ consumer passes

    def boundary(self, consumer: Consumer) -> None:
        """The session-boundary pass: write and mark every live tip's pending, the head first."""
        for sid in self.sessions:
            if consumer.cursor == "ordinal":
                head = self.head(sid)
                tips = [head] if head is not None else []
                tips += [t for t in self.store.tips(sid) if t != head]
                for tip in tips:
                    batch = consumer.pending(self.store, sid, head=tip)
                    consumer.deliver(batch)
                    consumer.acknowledge(self.store, sid, batch, head=tip)
                continue
            for tip, batch in self.store.pending_by_tip(sid, consumer.provider, consumer.value):
                consumer.deliver(batch)
                consumer.acknowledge(self.store, sid, batch, head=tip)
            for tip in self.store.tips(sid):
                left = consumer.written(sid).pending(self.store, sid, head=tip)
                assert not left, f"after a boundary pass, tip {tip} still has {_ids(left)} pending"

    # ------------------------------------------------------------------------------ properties

    def check(self) -> None:
        """Assert every marker property on every session, for every consumer.

        Raises:
            AssertionError: a property does not hold; the message says which.
        """
        for sid in self.sessions:
            head = self.head(sid)
            tips = {t for t in self.store.tips(sid)} | ({head} if head else set())
            for c in self.consumers:
                oracle = c.written(sid)
                for tip in sorted(tips) if c.cursor == "marker" else [head]:
                    got = _ids(c.pending(self.store, sid, head=tip))
                    want = _ids(oracle.pending(self.store, sid, head=tip))
                    assert got == want, (
                        f"{c.provider}={c.value} pending of {tip} in {sid}: the {c.cursor} cursor"
                        f" says {got}, the id-set oracle says {want}"
                    )
                if c.cursor == "marker":
                    self._check_markers(sid, c, tips)
            for c in self.consumers:
                for n, times in c.delivered.items():
                    acked = any(n in o.written for o in c.oracle.values())
                    assert times == c.crashes[n] + acked, (
                        f"{c.provider}: node {n} delivered {times} times with {c.crashes[n]}"
                        f" crashes and {'one' if acked else 'no'} recorded write"
                    )

    def _check_markers(self, sid: str, c: Consumer, tips: set[str]) -> None:
        store = self.store
        gaps = [g for g in store.verify_markers(sid, c.provider) if g.value == c.value]
        assert not gaps, f"verify_markers found gaps: {gaps}"
        idx = store.index(sid)
        models: dict[str, Node] = {m.id: m for m in store.nodes(sid)}
        clean: dict[str, bool] = {}  # every eligible node from the root to here is marked

        def is_clean(n: str | None) -> bool:
            path: list[str] = []
            while n is not None and n not in clean:
                path.append(n)
                m = models[n]
                sibling = m.covers and is_sibling_summary(m, models[m.covers[0]])
                n = m.covers[-1] if sibling else m.predecessor
            ok = True if n is None else clean[n]
            for x in reversed(path):
                if oracle_eligible(models[x]):
                    marked = models[x].is_written(c.provider, c.value)
                    assert ok or not marked, (
                        f"{c.provider}={c.value}: {x} is marked below an unmarked eligible node"
                    )
                    ok = ok and marked
                clean[x] = ok
            return ok

        for n in models:
            is_clean(n)
        for tip in tips:
            walk = walk_pending(idx, tip, c.provider, c.value, MEMORY_ELIGIBLE)
            path = effective_branch(store, sid, tip)
            since = 0
            for x in reversed(path):
                since += 1
                if oracle_eligible(x) and x.is_written(c.provider, c.value):
                    break
            assert walk.visited <= since, (
                f"the walk from {tip} visited {walk.visited} nodes; {since} lie after (and at) the"
                " newest marker"
            )


def _ids(nodes: list[Node]) -> list[str]:
    return [n.id for n in nodes]


# ---------------------------------------------------------------------------------------- operations


class Op:
    """One step of a history; :meth:`apply` performs it (a no-op where it does not apply)."""

    def apply(self, h: History) -> None:
        """Perform the step on ``h``."""
        raise NotImplementedError


@dataclass(frozen=True)
class Append(Op):
    """Append a turn at the head of a session."""

    turn: Turn = Turn()
    session: int = 0

    def apply(self, h: History) -> None:
        """Append; the head moves to the new node."""
        h.append(h.session(self.session), self.turn, None)


@dataclass(frozen=True)
class Fork(Op):
    """Append a turn after the ``at``-th node of a session (modulo), making a fork there."""

    at: int = 0
    turn: Turn = Turn()
    session: int = 0

    def apply(self, h: History) -> None:
        """Fork (an append to an empty session starts it); the head moves to the new node."""
        sid = h.session(self.session)
        made = h.nodes[sid]
        h.append(sid, self.turn, made[self.at % len(made)] if made else None)


@dataclass(frozen=True)
class SetHead(Op):
    """Move the head to the ``tip``-th live tip (newest first, modulo)."""

    tip: int = 0
    session: int = 0

    def apply(self, h: History) -> None:
        """Compare-and-swap the head onto the tip."""
        sid = h.session(self.session)
        tips = h.store.tips(sid)
        if tips:
            h.store.set_head(sid, tips[self.tip % len(tips)], expected=h.head(sid))


@dataclass(frozen=True)
class Rewind(Op):
    """Rewind the head ``back`` nodes (at least one) along its branch."""

    back: int = 1
    session: int = 0

    def apply(self, h: History) -> None:
        """Rewind; a session whose head is a root is left alone."""
        sid = h.session(self.session)
        path = h.path(sid)
        if len(path) > 1:
            h.store.rewind(sid, path[-1 - (1 + (self.back - 1) % (len(path) - 1))])


@dataclass(frozen=True)
class Compact(Op):
    """Compact a span of the head's branch into a summary, in the inline or the sibling layout."""

    start: int = 0
    length: int = 1
    layout: str = "inline"
    session: int = 0

    def apply(self, h: History) -> None:
        """Append the summary; the head moves to it."""
        sid = h.session(self.session)
        path = h.path(sid)
        if not path:
            return
        i = self.start % len(path)
        span = path[i : i + self.length]
        node = h.store.compact(sid, span, "summary", layout=self.layout)
        h.nodes[sid].append(node.id)


@dataclass(frozen=True)
class Spawn(Op):
    """Spawn a sub-agent session from the ``at``-th node and give it a user and an assistant turn."""

    at: int = 0
    session: int = 0

    def apply(self, h: History) -> None:
        """Create the spawned session; later operations reach it by its session number."""
        sid = h.session(self.session)
        made = h.nodes[sid]
        if not made or len(h.sessions) >= 3:
            return
        child = h.store.spawn(sid, made[self.at % len(made)], title="sub-agent").id
        h.sessions.append(child)
        h.nodes[child] = []
        h.append(child, Turn(Role.USER, text="task"), None)
        h.append(child, Turn(Role.ASSISTANT, text="done"), None)


@dataclass(frozen=True)
class Consume(Op):
    """A consumer pass after a turn: write the oldest ``k`` pending of the head, then mark them."""

    k: int = 1
    consumer: int = 0
    session: int = 0

    def apply(self, h: History) -> None:
        """Deliver and acknowledge one batch."""
        sid, c = h.session(self.session), h.consumer(self.consumer)
        batch = c.pending(h.store, sid)[: self.k]
        c.deliver(batch)
        c.acknowledge(h.store, sid, batch)


@dataclass(frozen=True)
class Crash(Op):
    """A consumer writes the oldest ``k`` pending of the head and dies before marking them."""

    k: int = 1
    consumer: int = 0
    session: int = 0

    def apply(self, h: History) -> None:
        """Deliver one batch; nothing is marked or recorded."""
        sid, c = h.session(self.session), h.consumer(self.consumer)
        c.deliver(c.pending(h.store, sid)[: self.k], crash=True)


@dataclass(frozen=True)
class Boundary(Op):
    """The session-boundary pass of one consumer over every session and live tip."""

    consumer: int = 0

    def apply(self, h: History) -> None:
        """Write every live tip; afterwards every eligible node on a live tip's branch is marked."""
        h.boundary(h.consumer(self.consumer))


@dataclass(frozen=True)
class Reset(Op):
    """A memory reset: the memory consumer starts over with a new workspace id."""

    def apply(self, h: History) -> None:
        """Give ``memory`` a new value; everything reads as unwritten for it, ``search`` keeps its markers."""
        h.resets += 1
        h.consumers[0].reset(f"ws-{h.resets + 1}")


@dataclass(frozen=True)
class Copy(Op):
    """Copy the first session (nodes, head, rewound stamps, markers) into a second store and read it there.

    The copy must read the same for the original consumers, everything eligible on the head's branch
    must be pending for a new workspace id, and a boundary pass with that id must leave the other
    provider's markers as they were.
    """

    def apply(self, h: History) -> None:
        """Copy, check, consume the copy with a new value, check again; the copy is then dropped."""
        src, sid = h.store, h.sessions[0]
        idx = src.index(sid)
        nodes = src.nodes(sid)
        dst = h.store_factory()
        try:
            dst.create_session("copy", id=sid)
            dst.add_nodes(sid, list(reversed(nodes)), head=idx.head)  # children before parents
            dst.stamp_rewound(sid, [n.id for n in nodes if n.rewound])
            for c in h.consumers:
                if c.cursor == "marker":
                    ids = [n.id for n in nodes if n.is_written(c.provider, c.value)]
                    dst.mark(sid, ids, c.provider, c.value)
            before = {
                c.provider: _ids(c.pending(src, sid)) for c in h.consumers if c.cursor == "marker"
            }
            for c in h.consumers:
                if c.cursor == "marker":
                    assert _ids(c.pending(dst, sid)) == before[c.provider], "markers did not travel"
            fresh = Consumer(h.consumers[0].provider, "ws-copy")
            want = _ids(IdSetCursor().pending(dst, sid))
            assert _ids(fresh.pending(dst, sid)) == want, "a new workspace id must see all pending"
            for tip, batch in dst.pending_by_tip(sid, fresh.provider, fresh.value):
                fresh.deliver(batch)
                fresh.acknowledge(dst, sid, batch, head=tip)
            assert all(v == 1 for v in fresh.delivered.values()), "the copy delivered a node twice"
            other = h.consumers[1]
            if other.cursor == "marker":
                got = _ids(other.pending(dst, sid))
                assert got == before[other.provider], "another provider's markers changed"
        finally:
            dst.close()


# ---------------------------------------------------------------------------------------- strategies

_small = st.integers(min_value=0, max_value=7)


def ops() -> dict[str, st.SearchStrategy[Op]]:
    """One strategy per kind of operation, by name (the state machine has one rule per entry)."""
    return {
        "append": st.builds(Append, turn=turns(), session=_small),
        "fork": st.builds(Fork, at=_small, turn=turns(), session=_small),
        "set_head": st.builds(SetHead, tip=_small, session=_small),
        "rewind": st.builds(Rewind, back=st.integers(1, 4), session=_small),
        "compact": st.builds(
            Compact,
            start=_small,
            length=st.integers(1, 3),
            layout=st.sampled_from(["inline", "sibling"]),
            session=_small,
        ),
        "spawn": st.builds(Spawn, at=_small, session=_small),
        "consume": st.builds(Consume, k=st.integers(1, 4), consumer=_small, session=_small),
        "crash": st.builds(Crash, k=st.integers(1, 4), consumer=_small, session=_small),
        "boundary": st.builds(Boundary, consumer=_small),
        "reset": st.just(Reset()),
        "copy": st.just(Copy()),
    }


def operations(max_size: int = 30) -> st.SearchStrategy[list[Op]]:
    """Programs: lists of operations, appends weighted up so histories grow branches worth reading."""
    every = ops()
    weighted = st.one_of(every["append"], every["append"], every["fork"], *every.values())
    return st.lists(weighted, max_size=max_size)


# ---------------------------------------------------------------------------------------- machine


class _HistoryMachine(RuleBasedStateMachine):
    store_factory: ClassVar[StoreFactory]
    cursor: ClassVar[str] = "marker"

    def __init__(self) -> None:
        super().__init__()
        self.history = History(type(self).store_factory, cursor=type(self).cursor)

    def teardown(self) -> None:
        self.history.store.close()

    @rule(op=ops()["append"])
    def append(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["append"])
    def append_more(self, op: Op) -> None:  # appends weigh double: histories grow past their forks
        op.apply(self.history)

    @rule(op=ops()["fork"])
    def fork(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["set_head"])
    def set_head(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["rewind"])
    def rewind(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["compact"])
    def compact(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["spawn"])
    def spawn(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["consume"])
    def consume(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["crash"])
    def crash(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["boundary"])
    def boundary(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["reset"])
    def reset(self, op: Op) -> None:
        op.apply(self.history)

    @rule(op=ops()["copy"])
    def copy(self, op: Op) -> None:
        op.apply(self.history)

    @invariant()
    def properties_hold(self) -> None:
        self.history.check()


def history_machine(
    store_factory: StoreFactory, *, cursor: str = "marker"
) -> type[RuleBasedStateMachine]:
    """Return a state machine class running histories on stores made by ``store_factory``.

    Every rule is one operation of :func:`ops`; the invariant is :meth:`History.check`. Use its
    ``TestCase`` attribute as a pytest test, or :func:`hypothesis.stateful.run_state_machine_as_test`.

    Args:
        store_factory: Makes an empty store (``lambda: SessionStore(":memory:")``).
        cursor: ``"marker"`` (the properties hold) or ``"ordinal"`` (hypothesis finds where they do not).
    """
    name = f"HistoryMachine_{cursor}"
    return type(
        name, (_HistoryMachine,), {"store_factory": staticmethod(store_factory), "cursor": cursor}
    )

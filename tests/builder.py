"""A compact DAG builder for scenario tests: ``build(store, "m1-m2-m3; m2-f1-f2")``.

Segments are separated by ``;``; each is a chain of node labels joined by ``-``. A segment whose first
label already exists continues from it (a fork when it already has a child); otherwise its first label
is a new root. Labels are the node ids and the text. Roles alternate by depth (user at the root), and
the head ends on the last label of the last segment unless ``head`` says otherwise.
"""

from __future__ import annotations

from graph.store import BaseStore


def build(store: BaseStore, spec: str, *, session: str = "s", head: str | None = None) -> str:
    """Create session ``session`` holding the DAG ``spec``; return its id."""
    if session not in {s.id for s in store.sessions()}:
        store.create_session(session, id=session)
    depth: dict[str, int] = {n: 0 for n in store.index(session).pred}
    last = None
    for segment in spec.split(";"):
        labels = [x.strip() for x in segment.split("-") if x.strip()]
        if not labels:
            continue
        prev = None
        if labels[0] in depth:
            prev, labels = labels[0], labels[1:]
        for label in labels:
            d = depth[prev] + 1 if prev is not None else 0
            store.append(
                session,
                label,
                role="user" if d % 2 == 0 else "assistant",
                predecessor=prev,
                id=label,
            )
            depth[label] = d
            prev = label
        last = prev
    if head is not None or last is not None:
        store.set_head(session, head or last)
    return session


def chain(prefix: str, first: int, last: int) -> str:
    """``chain("m", 1, 3)`` -> ``"m1-m2-m3"``."""
    return "-".join(f"{prefix}{i}" for i in range(first, last + 1))


def turns(
    store: BaseStore, sid: str, n: int, *, after: str | None = None, tag: str = "m"
) -> list[str]:
    """Append ``n`` alternating user/assistant turns (after ``after``, else at the head); their ids."""
    ids: list[str] = []
    for i in range(n):
        kw = {"predecessor": after} if (i == 0 and after is not None) else {}
        role = "user" if i % 2 == 0 else "assistant"
        ids.append(store.append(sid, f"{tag}{i}", role=role, **kw).id)
    return ids

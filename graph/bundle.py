"""Session bundles: one session (and the sessions spawned from it) as a msgpack file (DESIGN.md 5).

A bundle carries everything that makes the graph: the session records (id, title, times, head,
metadata, spawn link), every node with its id, predecessor, kind, role, content, time, metadata and
covers, the written markers and the rewound stamps. Importing it into another store reproduces the
same graph, heads and markers; importing it twice changes nothing.

Layout (msgpack, a closed set of plain types, no extension types)::

    {"format": "sessiongraph-bundle", "version": 2, "exported_at": <µs>,
     "sessions": [{"id", "title", "created_at", "updated_at", "head", "metadata",
                   "spawned_from", "parent_session",
                   "nodes": [{"id", "predecessor", "kind", "role", "content", "created_at",
                              "metadata", "covers"}, ...],        # predecessors first
                   "markers": {provider: {node id: [value, ...]}},  # version 1: one value
                   "rewound": [node id, ...]}, ...]}             # parents before spawned sessions

Times are integer microseconds since the Unix epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from pydantic import TypeAdapter, ValidationError

from graph.errors import CodecError, GraphError
from graph.index import Eligible
from graph.models import Block, Kind, Node, Role, from_micros, to_micros, utcnow
from graph.store import BaseStore

__all__ = [
    "BUNDLE_VERSION",
    "MAGIC",
    "BundleError",
    "BundleReport",
    "export_session",
    "import_bundle",
    "read_bundle",
]

BUNDLE_VERSION = 2
"""The bundle format version this library writes and the newest it reads."""

MAGIC = b"sessiongraph-bundle"
"""The value of a bundle's ``format`` field; it appears in a bundle's first bytes."""

_blocks: TypeAdapter[tuple[Block, ...]] = TypeAdapter(tuple[Block, ...])
_NOTHING_ELIGIBLE = Eligible(kinds=frozenset())


class BundleError(GraphError, ValueError):
    """A file is not a session bundle this version can read.

    Attributes:
        path: The file.
        reason: What is wrong with it.
    """

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


@dataclass
class BundleReport:
    """What :func:`import_bundle` did."""

    session_ids: list[str] = field(default_factory=list)
    """The sessions of the bundle, the exported one first."""
    nodes_added: int = 0
    """Nodes newly stored."""
    markers: int = 0
    """Markers newly written or changed."""
    rewound: int = 0
    """Nodes newly stamped rewound."""


def _no_ext(code: int, data: bytes) -> Any:
    raise CodecError(f"msgpack extension type {code}", "not in the allow-list")


def _session_record(store: BaseStore, session_id: str) -> dict[str, Any]:
    s = store.session(session_id)
    idx = store.index(session_id)
    nodes = []
    for n in store.nodes(session_id):
        nodes.append(
            {
                "id": n.id,
                "predecessor": n.predecessor,
                "kind": n.kind.value,
                "role": n.role.value,
                "content": n.content
                if isinstance(n.content, str)
                else [b.model_dump(mode="python") for b in n.content],
                "created_at": to_micros(n.created_at),
                "metadata": {
                    k: v for k, v in n.metadata.items() if k not in ("written", "rewound")
                },
                "covers": list(n.covers),
            }
        )
    return {
        "id": s.id,
        "title": s.title,
        "created_at": to_micros(s.created_at),
        "updated_at": to_micros(s.updated_at),
        "head": s.head,
        "metadata": dict(s.metadata),
        "spawned_from": s.spawned_from,
        "parent_session": s.parent_session,
        "nodes": nodes,
        "markers": _markers(idx.marks),
        "rewound": [n for n in idx.pred if idx.is_rewound(n)],
    }


def _markers(marks: Mapping[tuple[str, str], Any]) -> dict[str, dict[str, list[str]]]:
    """Provider -> node id -> the values written (a node holds any number of values per provider)."""
    out: dict[str, dict[str, list[str]]] = {}
    for provider, value in sorted(marks):
        for n in sorted(marks[(provider, value)]):
            out.setdefault(provider, {}).setdefault(n, []).append(value)
    return out


def export_session(
    store: BaseStore, session_id: str, path: Path | str, *, spawned: bool = True
) -> int:
    """Write ``session_id`` (and, with ``spawned``, every session spawned from it) to a bundle file.

    Returns:
        The number of bytes written.

    Raises:
        UnknownSessionError: no such session.
        OSError: the file cannot be written.
    """
    order = [session_id]
    store.session(session_id)
    if spawned:
        i = 0
        while i < len(order):
            order.extend(c.id for c in store.spawns(order[i]) if c.id not in order)
            i += 1
    data = {
        "format": MAGIC.decode(),
        "version": BUNDLE_VERSION,
        "exported_at": to_micros(utcnow()),
        "sessions": [_session_record(store, sid) for sid in order],
    }
    payload: bytes = msgpack.packb(data, use_bin_type=True)
    Path(path).write_bytes(payload)
    return len(payload)


def read_bundle(path: Path | str) -> dict[str, Any]:
    """Read and check a bundle file; return its decoded data.

    Raises:
        BundleError: not a bundle, a newer version, or a malformed one.
        OSError: the file cannot be read.
    """
    raw = Path(path).read_bytes()
    try:
        data = msgpack.unpackb(raw, raw=False, ext_hook=_no_ext, strict_map_key=True)
    except Exception as e:  # msgpack raises several unrelated types for corrupt input
        raise BundleError(path, f"not a msgpack session bundle ({e})") from e
    if not isinstance(data, dict) or data.get("format") != MAGIC.decode():
        raise BundleError(path, "not a session bundle (no format field)")
    version = data.get("version")
    if not isinstance(version, int) or version > BUNDLE_VERSION:
        raise BundleError(path, f"bundle version {version!r} is newer than {BUNDLE_VERSION}")
    if not isinstance(data.get("sessions"), list):
        raise BundleError(path, "no sessions")
    return data


def _node(session_id: str, n: Mapping[str, Any]) -> Node:
    content = n["content"]
    return Node(
        id=n["id"],
        session_id=session_id,
        predecessor=n["predecessor"],
        kind=Kind(n["kind"]),
        role=Role(n["role"]),
        content=content if isinstance(content, str) else _blocks.validate_python(content),
        created_at=from_micros(n["created_at"]),
        metadata=n.get("metadata") or {},
        covers=tuple(n.get("covers") or ()),
    )


def import_bundle(store: BaseStore, path: Path | str) -> BundleReport:
    """Import a bundle in one transaction: sessions, nodes, heads, markers and rewound stamps.

    Sessions that already exist keep their title and metadata; their missing nodes are added.
    Markers are restored exactly as exported (the prefix rule was checked when they were written).

    Raises:
        BundleError: the file is not a bundle this version reads.
        GraphError: the store refused a write (a node id held by another session, say); nothing
            was stored.
    """
    data = read_bundle(path)
    report = BundleReport()
    try:
        with store.atomic():
            for rec in data["sessions"]:
                sid = rec["id"]
                if not store.has_session(sid):
                    store.create_session(
                        rec.get("title") or "",
                        id=sid,
                        metadata=rec.get("metadata") or {},
                        created_at=from_micros(rec["created_at"]),
                        spawned_from=rec.get("spawned_from"),
                        parent_session=rec.get("parent_session"),
                    )
                nodes = [_node(sid, n) for n in rec.get("nodes") or []]
                report.nodes_added += len(store.add_nodes(sid, nodes, head=rec.get("head")))
                report.rewound += len(store.stamp_rewound(sid, list(rec.get("rewound") or [])))
                groups: dict[tuple[str, str], list[str]] = {}
                for provider, pm in (rec.get("markers") or {}).items():
                    for node_id, values in pm.items():
                        # version 1 bundles hold one value per node and provider, version 2 a list
                        for value in [values] if isinstance(values, str) else values:
                            groups.setdefault((provider, value), []).append(node_id)
                for (provider, value), ids in groups.items():
                    report.markers += store.mark(sid, ids, provider, value, _NOTHING_ELIGIBLE)
                report.session_ids.append(sid)
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        if isinstance(e, GraphError):
            raise
        raise BundleError(path, f"malformed bundle ({type(e).__name__}: {e})") from e
    return report

"""Session bundles: one session (and the sessions spawned from it) as a msgpack file.

A bundle imports back to the same graph.

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

A bundle is checked like any other write before anything is stored: every value is a plain JSON-safe
type (``None``, booleans, integers, floats, strings, lists and string-keyed maps: no bytes, no msgpack
extension type, the msgpack ``Timestamp`` included, which msgpack decodes without asking), every field
has the shape above (markers a map of maps, rewound a list of ids, and so on), and the import goes
through the store's own checked writes in one transaction: nodes through ``add_nodes`` (predecessors,
cycles, duplicates), heads, rewound stamps through ``rewind``, spawn links (a session spawned from a
node must name a node of its parent session when that session is stored or in the bundle), and
markers through ``mark``; the
``memory`` provider's markers are checked with the memory eligibility, so a bundle whose markers leave
a gap (an unmarked eligible turn above a marked one, which would hide turns from ``pending``) is
refused with ``MarkerGapError`` (another provider's eligibility is not known here). Any refusal stores
nothing. Exporting refuses a session whose metadata holds bytes, so what is written reads back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from pydantic import TypeAdapter, ValidationError

from graph.errors import CodecError, GraphError
from graph.index import MEMORY_ELIGIBLE, Eligible
from graph.models import Block, Kind, Node, Role, from_micros, to_micros, utcnow
from graph.store.base import BaseStore

__all__ = [
    "BUNDLE_VERSION",
    "MAGIC",
    "BundleError",
    "BundleReport",
    "ExportTargetError",
    "check_export_target",
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
_MARKER_CHECK = {"memory": MEMORY_ELIGIBLE}
"""Providers whose eligibility is known here, so their markers' prefix rule is checked on import."""


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


class ExportTargetError(BundleError):
    """The file an export would write is a folder, or exists and is not a session bundle.

    Only a bundle is written over, so an export aimed by mistake at the store itself, a transcript
    or any other file leaves it as it is. Attributes as :class:`BundleError`'s.
    """


def check_export_target(path: Path | str) -> None:
    """Refuse a file :func:`export_session` must not write over; a missing file or a bundle passes.

    A file that cannot be read (or is no regular file, a device say) passes too: writing it says
    why it cannot be written.

    Raises:
        ExportTargetError: ``path`` is a folder, or a readable file whose first bytes are not a
            bundle's (:data:`MAGIC`).
    """
    path = Path(path)
    if path.is_dir():
        raise ExportTargetError(path, "is a folder; give the bundle file to write")
    head = b""
    if path.is_file():
        try:
            with path.open("rb") as f:
                head = f.read(64)
        except OSError:
            pass
    if head and MAGIC not in head:
        raise ExportTargetError(path, "exists and is not a session bundle; it is left as it is")


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


def _plain_problem(data: Any) -> str | None:
    """Where ``data`` holds a value that is not plain JSON-safe data, and what it is; None if nowhere.

    Iterative (a deeply nested value cannot exhaust the stack) and linear in the values walked.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        if value is None or isinstance(value, bool | int | float | str):
            continue
        if isinstance(value, list):
            stack.extend((v, (*where, i)) for i, v in enumerate(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return f"{_where(where)} has a {type(k).__name__} key"
                stack.append((v, (*where, k)))
        else:
            kind = "bytes" if isinstance(value, bytes | bytearray) else type(value).__name__
            return f"{_where(where)} is {kind}, not plain JSON-safe data"
    return None


def _where(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out or "the bundle"


_OPT_STR = (str, type(None))
_SESSION_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "title": _OPT_STR,
    "created_at": (int,),
    "updated_at": (int, type(None)),
    "head": _OPT_STR,
    "metadata": (dict, type(None)),
    "spawned_from": _OPT_STR,
    "parent_session": _OPT_STR,
    "nodes": (list, type(None)),
    "markers": (dict, type(None)),
    "rewound": (list, type(None)),
}
_NODE_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "predecessor": _OPT_STR,
    "kind": (str,),
    "role": (str,),
    "content": (str, list),
    "created_at": (int,),
    "metadata": (dict, type(None)),
    "covers": (list, type(None)),
}
_REQUIRED_SESSION = ("id", "created_at")
_REQUIRED_NODE = ("id", "predecessor", "kind", "role", "content", "created_at")


def _fields(
    rec: Any, spec: dict[str, tuple[type, ...]], required: tuple[str, ...], where: str
) -> str | None:
    if not isinstance(rec, dict):
        return f"{where} is a {type(rec).__name__}, not a map"
    for name in required:
        if name not in rec:
            return f"{where} has no {name!r}"
    for name, types in spec.items():
        if name in rec and (
            not isinstance(rec[name], types) or isinstance(rec[name], bool) and bool not in types
        ):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            return f"{where}.{name} is a {type(rec[name]).__name__}, expected {want}"
    return None


def _shape_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a bundle's sessions (see the module doc), or None."""
    for i, rec in enumerate(data["sessions"]):
        where = f"sessions[{i}]"
        problem = _fields(rec, _SESSION_FIELDS, _REQUIRED_SESSION, where)
        if problem:
            return problem
        for j, n in enumerate(rec.get("nodes") or ()):
            problem = _fields(n, _NODE_FIELDS, _REQUIRED_NODE, f"{where}.nodes[{j}]")
            if problem:
                return problem
            if any(not isinstance(c, str) for c in n.get("covers") or ()):
                return f"{where}.nodes[{j}].covers holds a value that is not a node id"
        for provider, pm in (rec.get("markers") or {}).items():
            if not isinstance(pm, dict) or any(
                not isinstance(k, str) or not _marker_values(v) for k, v in pm.items()
            ):
                return (
                    f"{where}.markers.{provider} is not a map of node id -> marker values "
                    "(markers are {provider: {node id: [value, ...]}}, or one value in version 1)"
                )
        if any(not isinstance(r, str) for r in rec.get("rewound") or ()):
            return f"{where}.rewound holds a value that is not a node id"
    return None


def _marker_values(v: Any) -> bool:
    """Whether ``v`` is a node's marker values: a list of strings (version 2) or one (version 1)."""
    if isinstance(v, str):
        return True
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) for x in v)


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

    An existing ``path`` is replaced (all or nothing) only when it is a bundle: the store's own
    file, a transcript or any other file is refused and left as it is (:func:`check_export_target`).

    Raises:
        ExportTargetError: ``path`` is a folder, or exists and is not a bundle; nothing is written.
        UnknownSessionError: no such session.
        BundleError: the session's metadata holds a value a bundle cannot carry (bytes).
        OSError: the file cannot be written.
    """
    check_export_target(path)
    order = [session_id]
    seen = {session_id}
    store.session(session_id)
    if spawned:
        i = 0
        while i < len(order):
            for c in store.spawns(order[i]):
                if c.id not in seen:
                    seen.add(c.id)
                    order.append(c.id)
            i += 1
    data = {
        "format": MAGIC.decode(),
        "version": BUNDLE_VERSION,
        "exported_at": to_micros(utcnow()),
        "sessions": [_session_record(store, sid) for sid in order],
    }
    problem = _plain_problem(data)
    if problem:
        raise BundleError(path, f"cannot export: {problem}")
    payload: bytes = msgpack.packb(data, use_bin_type=True)
    _write_whole(Path(path), payload)
    return len(payload)


def _write_whole(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` all or nothing: beside it first, then renamed over it.

    A failed write (a full disk) leaves the file as it was, with no part of the new bundle. A path
    that exists and is no regular file (``/dev/stdout``, a pipe) is written as it is.

    Raises:
        OSError: the file cannot be written.
    """
    if path.exists() and not path.is_file():
        path.write_bytes(payload)
        return
    real = path.resolve()
    part = real.with_name(f".{real.name}.{os.getpid()}.part")
    try:
        part.write_bytes(payload)
        os.replace(part, real)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


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
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError(path, f"bundle version {version!r} is no version this package wrote")
    if version > BUNDLE_VERSION:
        raise BundleError(path, f"bundle version {version!r} is newer than {BUNDLE_VERSION}")
    if not isinstance(data.get("sessions"), list):
        raise BundleError(path, "no sessions")
    problem = _plain_problem(data) or _shape_problem(data)
    if problem:
        raise BundleError(path, problem)
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


def _check_spawn_link(store: BaseStore, path: Path | str, rec: Mapping[str, Any]) -> None:
    """Refuse a session spawned from a node that is not its parent session's.

    The link is checked once every session of the bundle is stored. A parent session neither
    stored nor in the bundle (a sub-agent session exported on its own) leaves the link as it is,
    to a node stored nowhere yet; a node stored in another session, or a parent session without
    that node, is a link no store made.

    Raises:
        BundleError: naming the session, the node and its parent session.
    """
    node, parent = rec["spawned_from"], rec.get("parent_session")
    holder = store.locate([node]).get(node)
    if holder is None and (parent is None or not store.has_session(parent)):
        return
    if holder != parent:
        where = f" (it is in session {holder!r})" if holder else ""
        raise BundleError(
            path,
            f"session {rec['id']!r} is spawned from node {node!r}, which is no node of its "
            f"parent session {parent!r}{where}",
        )


def import_bundle(store: BaseStore, path: Path | str) -> BundleReport:
    """Import a bundle in one transaction: sessions, nodes, heads, markers and rewound stamps.

    Sessions that already exist keep their title and metadata; their missing nodes are added.
    Markers are restored exactly as exported, through :meth:`BaseStore.mark`, so the prefix rule is
    checked again (a bundle is checked like any other write; see the module doc).

    Raises:
        BundleError: the file is not a bundle this version reads, or a session is spawned
            from a node that is not its parent session's (stored or in the bundle).
        GraphError: the store refused a write (a node id held by another session, a marker gap:
            ``MarkerGapError``); nothing was stored.
    """
    data = read_bundle(path)
    report = BundleReport()
    spawned: list[dict[str, Any]] = []
    try:
        with store.atomic():
            for rec in data["sessions"]:
                sid = rec["id"]
                if not store.has_session(sid):
                    if rec.get("spawned_from"):
                        spawned.append(rec)
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
                    # The memory provider's markers are checked with its eligibility (the default
                    # of pending): a gap would hide the unmarked turns above a marked one. Another
                    # provider's eligibility is its own and not in the bundle, so its markers are
                    # restored as exported.
                    eligible = _MARKER_CHECK.get(provider, _NOTHING_ELIGIBLE)
                    report.markers += store.mark(sid, ids, provider, value, eligible)
                report.session_ids.append(sid)
            for rec in spawned:
                _check_spawn_link(store, path, rec)
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        if isinstance(e, GraphError):
            raise
        raise BundleError(path, f"malformed bundle ({type(e).__name__}: {e})") from e
    return report

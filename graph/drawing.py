r"""A picture of one session's DAG: a lane layout drawn as SVG, and the same graph as Graphviz DOT.

The layout reads like ``git log --graph``: one row per node, top to bottom in conversation order, the
head's branch in the leftmost lane and every other branch of a fork in a lane to its right. What the
picture shows on its nodes:

* forks (a node with two or more drawn children), with every branch in its own lane;
* rewound nodes greyed and struck through;
* each compaction summary with a bracket in the gutter spanning the rows it covers;
* spawned sub-agent sessions as a link on the node that started them;
* the head;
* per provider (``(provider, value)`` pairs): the marked prefix (a filled dot) and what is pending at
  the head (a ring);
* artifact forks folded: a child of a fork whose subtree holds no live tip, no rewound node, no
  summary, no spawn and not the head (the bookkeeping branches a runtime makes, such as Claude Code's
  progress entries and parallel tool calls) is not drawn; its fork says how many nodes were folded.

:func:`layout` computes rows and lanes from the session's index and node payloads;
:func:`to_svg` and :func:`to_dot` draw it. Every text taken from a transcript is escaped, and in
the SVG its control and bidirectional formatting characters are shown as escapes (``\x1b``,
``\u202e``, as the command line shows them), so a right-to-left override cannot reorder a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from html import escape

from graph.index import IndexView
from graph.models import Node, Session, ToolCallBlock
from graph.store.base import BaseStore
from graph.terminal import visible

__all__ = [
    "Picture",
    "Row",
    "layout",
    "node_preview",
    "picture",
    "to_dot",
    "to_svg",
]


ROW_HEIGHT = 22
"""Pixels per row of the SVG."""
LANE_WIDTH = 16
"""Pixels per lane of the SVG."""
PREVIEW_CHARS = 72
"""Characters of a node's text shown on its row."""


@dataclass(slots=True)
class Row:
    """One drawn node."""

    node_id: str
    """The node's id."""
    lane: int
    """Its lane, 0 = leftmost."""
    parent_row: int | None
    """The row of its drawn predecessor (None for a root)."""
    kind: str
    """``message``, ``summary`` or ``event``."""
    role: str
    """``user``, ``assistant``, ``system`` or ``tool``."""
    preview: str
    """Its text on one line, cut to :data:`PREVIEW_CHARS` characters."""
    rewound: bool = False
    """Stamped rewound."""
    head: bool = False
    """The session's head."""
    covers: int = 0
    """For a compaction summary: how many nodes it covers."""
    cover_span: tuple[int, int] | None = None
    """For a summary: the first and last drawn rows it covers (None when they are not drawn)."""
    spawned: tuple[Session, ...] = ()
    """Sessions spawned from this node."""
    folded: int = 0
    """Nodes of artifact branches folded below this node."""
    marked: tuple[str, ...] = ()
    """``provider=value`` labels of the given providers whose marker this node carries."""
    pending: tuple[str, ...] = ()
    """``provider=value`` labels of the given providers for which this node is pending at the head."""


@dataclass(slots=True)
class Picture:
    """A laid-out session: its rows in drawing order, the lanes used, and counts for a legend."""

    session: Session
    rows: list[Row]
    lanes: int
    """Lanes used (at least 1 when there is a row)."""
    providers: tuple[tuple[str, str], ...] = ()
    """The ``(provider, value)`` pairs drawn."""
    marked: dict[str, int] = field(default_factory=dict)
    """Per ``provider=value``: nodes marked."""
    pending: dict[str, int] = field(default_factory=dict)
    """Per ``provider=value``: nodes pending at the head."""
    folded: int = 0
    """Nodes folded away in artifact branches."""


def node_preview(node: Node, width: int = PREVIEW_CHARS) -> str:
    """A node's text on one line without control characters, cut to ``width`` characters.

    A node without text (an assistant turn that only calls tools) shows the tools it calls.
    """
    text = node.text
    if not text and not isinstance(node.content, str):
        calls = [b.name for b in node.content if isinstance(b, ToolCallBlock)]
        if calls:
            text = "calls " + ", ".join(calls)
    flat = " ".join(text.split())
    flat = "".join(ch for ch in flat if ch.isprintable())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _subtree_facts(
    idx: IndexView, spawn_points: set[str], live: set[str]
) -> tuple[dict[str, bool], dict[str, int]]:
    """Per node: whether its subtree must be drawn (see the module doc), and its size."""
    matters: dict[str, bool] = {}
    size: dict[str, int] = {}
    head_line: set[str] = set()
    n = idx.head
    while n is not None:
        head_line.add(n)
        n = idx.pred[n]
    kids = idx.children
    for n in reversed(list(idx.pred)):  # children are inserted after their predecessors
        m = (
            (n in live and not idx.is_artifact(n))
            or n in head_line
            or n in spawn_points
            or idx.is_rewound(n)
            or idx.is_summary(n)
        )
        s = 1
        for c in kids.get(n, ()):
            m = m or matters.get(c, False)
            s += size.get(c, 1)
        matters[n], size[n] = m, s
    return matters, size


def layout(
    store: BaseStore,
    session: Session,
    providers: Iterable[tuple[str, str]] = (),
    *,
    fold: bool = True,
) -> Picture:
    """Lay a session out in rows and lanes.

    Args:
        store: The store holding the session.
        session: The session.
        providers: ``(provider, value)`` pairs whose marked prefix and pending turns are drawn.
        fold: Fold artifact branches (see the module doc); False draws every node.

    Returns:
        The picture; its rows are in drawing order (a node's primary child follows it directly).
    """
    idx = store.index(session.id)
    live: set[str] = set(store.tips(session.id))
    spawned: dict[str, list[Session]] = {}
    for child in store.spawns(session.id):
        if child.spawned_from:
            spawned.setdefault(child.spawned_from, []).append(child)
    matters, size = _subtree_facts(idx, set(spawned), live)
    kids = idx.children
    order = {n: i for i, n in enumerate(idx.pred)}

    def drawn(n: str) -> list[str]:
        cs = list(kids.get(n, ()))
        if fold and len(cs) > 1:
            keep = [c for c in cs if matters.get(c, False)]
            cs = keep or [max(cs, key=lambda c: size.get(c, 1))]
        return cs

    # Primary child: the one on the head's line, else the one inserted last (the newest).
    head_line: set[str] = set()
    h = idx.head
    while h is not None:
        head_line.add(h)
        h = idx.pred[h]

    def primary_first(cs: list[str]) -> list[str]:
        on_head = [c for c in cs if c in head_line]
        rest = sorted((c for c in cs if c not in head_line), key=lambda c: order[c])
        return on_head + rest

    ids: list[str] = []
    parent_row: dict[str, int | None] = {}
    folded_at: dict[str, int] = {}
    segments: list[tuple[int, list[str]]] = []  # (start row, nodes of one lane run)
    roots = [n for n, p in idx.pred.items() if p is None]
    roots.sort(key=lambda r: (r not in head_line, order[r]))
    stack: list[tuple[str, int | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        start, prow = stack.pop()
        run: list[str] = []
        seg_start = prow if prow is not None else len(ids)
        n: str | None = start
        p = prow
        side: list[tuple[str, int]] = []
        while n is not None:
            row = len(ids)
            ids.append(n)
            parent_row[n] = p
            run.append(n)
            all_kids = kids.get(n, ())
            cs = primary_first(drawn(n))
            if len(all_kids) > len(cs):
                folded_at[n] = sum(size.get(c, 1) for c in all_kids if c not in cs)
            side.extend((c, row) for c in cs[1:])
            p = row
            n = cs[0] if cs else None
        segments.append((seg_start, run))
        # side branches: the deepest fork's branches are drawn first, right below this run
        stack.extend(sorted(side, key=lambda cr: (cr[1], -order[cr[0]])))

    # Lanes: each run takes the lowest lane free over its rows (interval allocation).
    row_of = {n: i for i, n in enumerate(ids)}
    lane_of: dict[str, int] = {}
    busy: list[list[tuple[int, int]]] = []
    for seg_start, run in segments:
        lo, hi = seg_start, row_of[run[-1]]
        parent = parent_row[run[0]]
        floor = lane_of[ids[parent]] if parent is not None else 0
        lane = floor + 1 if parent is not None else 0
        while True:
            if lane >= len(busy):
                busy.append([])
            if all(hi < a or lo > b for a, b in busy[lane]):
                break
            lane += 1
        busy[lane].append((lo, hi))
        for m in run:
            lane_of[m] = lane

    nodes: dict[str, Node] = {x.id: x for x in store.nodes(session.id, ids)}
    providers = tuple(dict.fromkeys(providers))
    pending_sets = {
        f"{pv}={val}": set(store.pending_ids(session.id, pv, val)) for pv, val in providers
    }
    rows: list[Row] = []
    marked_count = {f"{pv}={val}": 0 for pv, val in providers}
    for n in ids:
        node: Node = nodes[n]
        marks = tuple(f"{pv}={val}" for pv, val in providers if idx.is_written(n, pv, val))
        for m in marks:
            marked_count[m] += 1
        cover_span = None
        if node.covers:
            covered_rows = [row_of[c] for c in node.covers if c in row_of]
            if covered_rows:
                cover_span = (min(covered_rows), max(covered_rows))
        rows.append(
            Row(
                node_id=n,
                lane=lane_of[n],
                parent_row=parent_row[n],
                kind=idx.kind_of(n).value,
                role=node.role.value,
                preview=node_preview(node),
                rewound=idx.is_rewound(n),
                head=n == idx.head,
                covers=len(node.covers),
                cover_span=cover_span,
                spawned=tuple(spawned.get(n, ())),
                folded=folded_at.get(n, 0),
                marked=marks,
                pending=tuple(k for k, s in pending_sets.items() if n in s),
            )
        )
    return Picture(
        session=session,
        rows=rows,
        lanes=(max(lane_of.values()) + 1) if lane_of else 0,
        providers=providers,
        marked=marked_count,
        pending={k: len(s) for k, s in pending_sets.items()},
        folded=sum(folded_at.values()),
    )


def picture(
    store: BaseStore, session: Session, providers: Iterable[tuple[str, str]] = ()
) -> Picture:
    """Lay out ``session`` with the providers found on its nodes plus ``providers``.

    Every ``(provider, value)`` pair that marks at least one node of the session is drawn, so the
    picture shows each consumer's marked prefix without being told who they are.
    """
    found: list[tuple[str, str]] = list(providers)
    found.extend(sorted(store.index(session.id).marks))
    return layout(store, session, found)


def _x(lane: int) -> int:
    return 12 + lane * LANE_WIDTH


def _y(row: int) -> int:
    return 14 + row * ROW_HEIGHT


def to_svg(
    pic: Picture,
    *,
    session_href: Callable[[str], str] | None = None,
    standalone: bool = True,
) -> str:
    """Draw a picture as SVG.

    Each row is a ``<g class="node ...">`` with ``data-node`` set to the node id (the web page opens
    the node when it is clicked); classes say ``rewound``, ``head``, ``summary``, ``event``,
    ``marked`` and ``pending``. Styling comes from CSS classes only (no inline style), with a default
    ``<style>`` block when ``standalone`` (for the CLI's file output).

    Args:
        pic: The picture from :func:`layout`.
        session_href: Maps a session id to a link target for spawned sessions (None: no links).
        standalone: Include the XML prologue and a default stylesheet.

    Returns:
        The SVG document (UTF-8 text).
    """
    gutter = _x(pic.lanes) + 4
    text_x = gutter + 14
    width = text_x + 8 * (PREVIEW_CHARS + 48)
    height = _y(len(pic.rows)) + 4
    out: list[str] = []
    if standalone:
        out.append('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="session-graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{_text(pic.session.title or pic.session.id)}">\n'
    )
    if standalone:
        out.append(f"<style>{STANDALONE_CSS}</style>\n")
    out.append(f"<title>{_text(pic.session.title or pic.session.id)}</title>\n")
    # edges first, so the dots sit on top of them
    out.append('<g class="edges">\n')
    for i, r in enumerate(pic.rows):
        if r.parent_row is None:
            continue
        p = pic.rows[r.parent_row]
        x0, y0, x1, y1 = _x(p.lane), _y(r.parent_row), _x(r.lane), _y(i)
        cls = "edge rewound" if r.rewound else "edge"
        if x0 == x1:
            out.append(f'<path class="{cls}" d="M{x0} {y0} V{y1}"/>\n')
        else:
            ym = y0 + ROW_HEIGHT // 2
            out.append(
                f'<path class="{cls}" d="M{x0} {y0} C{x0} {ym} {x1} {y0} {x1} {ym} V{y1}"/>\n'
            )
    out.append("</g>\n")
    out.append('<g class="covers">\n')
    for i, r in enumerate(pic.rows):
        if r.cover_span is None:
            continue
        a, b = r.cover_span
        ya, yb, ys = _y(a) - 6, _y(b) + 6, _y(i)
        out.append(
            f'<path class="cover" d="M{gutter + 6} {ya} H{gutter} V{yb} H{gutter + 6} '
            f'M{gutter} {yb} V{ys} H{gutter + 8}"><title>covers {r.covers} nodes</title></path>\n'
        )
    out.append("</g>\n")
    for i, r in enumerate(pic.rows):
        classes = ["node", r.kind, r.role]
        if r.rewound:
            classes.append("rewound")
        if r.head:
            classes.append("head")
        if r.marked:
            classes.append("marked")
        if r.pending:
            classes.append("pending")
        y = _y(i)
        out.append(
            f'<g class="{" ".join(classes)}" data-node="{escape(r.node_id)}" tabindex="0">'
            f'<rect class="hit" x="0" y="{y - ROW_HEIGHT // 2}" width="{width}" '
            f'height="{ROW_HEIGHT}"/>'
        )
        out.append(f'<circle class="dot" cx="{_x(r.lane)}" cy="{y}" r="5"/>')
        label = r.role if r.kind == "message" else r.kind
        parts = [
            f'<tspan class="label">{_text(label)}</tspan>',
            f'<tspan class="id"> {_text(_short(r.node_id))}</tspan>',
        ]
        if r.head:
            parts.append('<tspan class="badge head"> ◀ head</tspan>')
        if r.covers:
            parts.append(f'<tspan class="badge covers"> covers {r.covers}</tspan>')
        if r.rewound:
            parts.append('<tspan class="badge rewound"> rewound</tspan>')
        if r.folded:
            parts.append(f'<tspan class="badge folded"> +{r.folded} folded</tspan>')
        for m in r.marked:
            parts.append(f'<tspan class="badge marked"> ✓{_text(_short_marker(m))}</tspan>')
        for m in r.pending:
            parts.append(f'<tspan class="badge pending"> ○{_text(_short_marker(m))}</tspan>')
        for child in r.spawned:
            link = f'<tspan class="spawn-link"> → spawned {_text(_short(child.id))}</tspan>'
            if session_href is not None:
                link = f'<a class="spawn" href="{escape(session_href(child.id))}">{link}</a>'
            parts.append(link)
        parts.append(f'<tspan class="text"> {_text(r.preview)}</tspan>')
        out.append(f'<text x="{text_x}" y="{y + 4}">{"".join(parts)}</text>')
        out.append("</g>\n")
    out.append("</svg>\n")
    return "".join(out)


def _text(text: str) -> str:
    """Transcript text for the SVG: escaped, its control and bidi characters made visible."""
    return escape(visible(text))


def _short_marker(label: str) -> str:
    provider, _, value = label.partition("=")
    return f"{provider}={value[:8]}"


def _short(node_id: str) -> str:
    return node_id if len(node_id) <= 12 else "…" + node_id[-8:]


STANDALONE_CSS = (
    "svg{font:12px ui-monospace,monospace;background:#fff}"
    ".edge{stroke:#8a94a6;stroke-width:1.5;fill:none}.edge.rewound{stroke:#d0d4db;stroke-dasharray:3 3}"
    ".cover{stroke:#a855f7;stroke-width:1.5;fill:none}.hit{fill:transparent}"
    ".dot{fill:#fff;stroke:#334155;stroke-width:1.5}.user .dot{fill:#3b82f6}"
    ".assistant .dot{fill:#10b981}.summary .dot{fill:#a855f7}.event .dot{fill:#cbd5e1}"
    ".marked .dot{stroke:#15803d;stroke-width:3}.pending .dot{stroke:#f59e0b;stroke-width:3}"
    ".rewound .dot{fill:#e5e7eb;stroke:#cbd5e1}.rewound text{fill:#9ca3af;text-decoration:line-through}"
    ".label{font-weight:bold}.id{fill:#64748b}.badge{fill:#7c3aed}.badge.head{fill:#b45309}"
    ".badge.marked{fill:#15803d}.badge.pending{fill:#b45309}.spawn-link{fill:#2563eb}"
)
"""The default styles written into a standalone SVG."""


def _dot_id(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(pic: Picture) -> str:
    """The picture as Graphviz DOT (``dot -Tsvg`` draws it).

    Edges go predecessor -> node; rewound nodes are grey, summaries have a dashed edge to the first
    and last node they cover, the head is bold, spawned sessions are linked by a dotted edge to a
    box for the child session, folded artifact branches are a note on their fork.
    """
    out = [
        f"digraph {_dot_id(pic.session.id)} {{",
        "  rankdir=TB;",
        "  node [shape=box, fontsize=10];",
    ]
    for r in pic.rows:
        label = f"{r.role if r.kind == 'message' else r.kind} {_short(r.node_id)}\n{r.preview[:40]}"
        attrs = [f"label={_dot_id(label)}"]
        if r.rewound:
            attrs.append('color=grey, fontcolor=grey, style="dashed"')
        if r.kind == "summary":
            attrs.append("shape=note")
        if r.head:
            attrs.append("penwidth=3")
        if r.marked:
            attrs.append('xlabel="' + " ".join(r.marked).replace('"', "") + '"')
        out.append(f"  {_dot_id(r.node_id)} [{', '.join(attrs)}];")
    for r in pic.rows:
        if r.parent_row is not None:
            out.append(f"  {_dot_id(pic.rows[r.parent_row].node_id)} -> {_dot_id(r.node_id)};")
        if r.cover_span is not None:
            for c in sorted(set(r.cover_span)):
                out.append(
                    f"  {_dot_id(r.node_id)} -> {_dot_id(pic.rows[c].node_id)} "
                    "[style=dashed, color=purple, constraint=false];"
                )
        for child in r.spawned:
            out.append(f"  {_dot_id('session ' + child.id)} [shape=folder];")
            out.append(
                f"  {_dot_id(r.node_id)} -> {_dot_id('session ' + child.id)} [style=dotted];"
            )
        if r.folded:
            note = f"folded {r.node_id}"
            out.append(
                f"  {_dot_id(note)} [shape=plaintext, label={_dot_id(f'+{r.folded} folded')}];"
            )
            out.append(f"  {_dot_id(r.node_id)} -> {_dot_id(note)} [style=invis];")
    out.append("}")
    return "\n".join(out) + "\n"

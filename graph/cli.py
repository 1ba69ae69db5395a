"""The ``sessiongraph`` command line: the session graph's commands, plus commands other packages add.

Packages extend the CLI through the ``sessiongraph.cli`` entry-point group: each entry point names a
function ``register(app: typer.Typer) -> None`` (the memory package adds ``sessiongraph memory`` this
way, so ``graph`` never imports ``memory``).

The store is ``--db PATH``, else ``$SESSIONGRAPH_DB``, else ``sessiongraph.db`` in the user's data
directory (platformdirs).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import orjson
import platformdirs
import typer
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from graph import backends
from graph.errors import GraphError, UnknownSessionError
from graph.index import KIND_MASK, REWOUND
from graph.models import Node, SearchHit, Session
from graph.store import BaseStore

__all__ = [
    "app",
    "default_db",
    "main",
    "node_json",
    "open_store",
    "parse_since",
    "render_tree",
    "resolve_session",
    "short",
]

app = typer.Typer(
    name="sessiongraph",
    help="Agent conversations as graphs, and what each consumer has not processed yet.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)


def default_db() -> str:
    """Return the store used without ``--db``: ``$SESSIONGRAPH_DB`` or a file in the user data dir.

    Either names a SQLite file or a ``postgresql://`` URL (see :func:`graph.backends.open_store`).
    """
    env = os.environ.get("SESSIONGRAPH_DB")
    if env:
        return env
    return str(Path(platformdirs.user_data_dir("sessiongraph")) / "sessiongraph.db")


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Store: a SQLite file or a postgresql:// URL (default: $SESSIONGRAPH_DB or"
            " a file in the user data dir).",
        ),
    ] = None,
) -> None:
    ctx.obj = {"db": db or default_db()}


def open_store(ctx: typer.Context) -> BaseStore:
    """Open the store the command line names (``--db``: a SQLite file or a PostgreSQL URL)."""
    return backends.open_store(ctx.obj["db"] if ctx.obj else default_db())


def resolve_session(store: BaseStore, ref: str) -> Session:
    """Return the session whose id is ``ref`` or uniquely starts with it (top-level sessions first).

    Raises:
        UnknownSessionError: no session, or several, match.
    """
    try:
        return store.session(ref)
    except UnknownSessionError:
        matches = [s for s in store.sessions() if s.id.startswith(ref)]
        if len(matches) > 1:  # a parent's id prefixes its spawned sessions' ids: prefer the parent
            matches = [s for s in matches if s.parent_session is None] or matches
        if len(matches) == 1:
            return matches[0]
        raise


def _dump(data: Any) -> None:
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def short(node_id: str) -> str:
    """A short form of a node id for display: its last 8 characters (UUIDv7 ids share their start)."""
    return node_id if len(node_id) <= 12 else "…" + node_id[-8:]


def _preview(node: Node, width: int = 70) -> str:
    text = " ".join(node.text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def node_json(node: Node) -> dict[str, Any]:
    """A node as JSON-shaped data (for ``--json`` output)."""
    return node.model_dump(mode="json") | {"text": node.text}


_SINCE = re.compile(r"(\d+)\s*([mhdw])", re.IGNORECASE)
_SINCE_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """Read a ``--since`` value: an ISO 8601 date or time (naive means UTC), or an age.

    An age is a number and a unit, ``m`` (minutes), ``h`` (hours), ``d`` (days) or ``w`` (weeks):
    ``7d`` is seven days before ``now``.

    Raises:
        typer.BadParameter: neither form.
    """
    m = _SINCE.fullmatch(text.strip())
    if m:
        moment = now or datetime.now(UTC)
        return moment - timedelta(seconds=int(m.group(1)) * _SINCE_UNITS[m.group(2).lower()])
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a date (2026-11-30, 2026-11-30T14:00) or an age (90m, 12h, 7d, 2w)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


_Since = Annotated[
    str | None,
    typer.Option(help="Only since this date (2026-11-30, 2026-11-30T14:00 UTC) or age (12h, 7d)."),
]
_Runtime = Annotated[
    str | None, typer.Option(help="Only sessions of this runtime: claude-code, pi or codex.")
]
_Project = Annotated[
    str | None,
    typer.Option(help="Only sessions whose working directory is this folder or lies under it."),
]


def _project(path: str | None) -> str | None:
    return None if path is None else str(Path(path).expanduser().absolute())


@app.command()
def sessions(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    runtime: _Runtime = None,
    project: _Project = None,
    since: _Since = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List sessions, most recently updated first."""
    store = open_store(ctx)
    rows = store.sessions(
        limit,
        runtime=runtime,
        project=_project(project),
        since=None if since is None else parse_since(since),
    )
    if json:
        _dump([s.model_dump(mode="json") | {"nodes": len(store.index(s.id))} for s in rows])
        return
    table = Table("session", "title", "updated", "nodes", "tips", "spawned from")
    for s in rows:
        st = store.stats(s.id)
        table.add_row(
            s.id,
            escape(s.title[:40]),
            s.updated_at.strftime("%Y-%m-%d %H:%M"),
            str(st.nodes),
            str(st.live_tips),
            s.parent_session or "",
        )
    console.print(table)


def _snippet(hit: SearchHit) -> Text:
    text = Text(hit.snippet)
    for start, end in hit.spans:
        text.stylize("bold yellow", start, end)
    return text


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[
        str,
        typer.Argument(
            help='Words that must all occur; "a phrase", prefix* and -exclude are understood.'
        ),
    ],
    session: Annotated[
        str | None,
        typer.Option(help="Only this session (id or unique prefix) and its sub-agents."),
    ] = None,
    since: _Since = None,
    runtime: _Runtime = None,
    project: _Project = None,
    limit: Annotated[int, typer.Option(help="At most this many hits (1..1000).")] = 20,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Search what was said in every imported session, best matches first."""
    store = open_store(ctx)
    sid = None if session is None else resolve_session(store, session).id
    hits = store.search(
        query,
        session=sid,
        since=None if since is None else parse_since(since),
        runtime=runtime,
        project=_project(project),
        limit=limit,
    )
    if json:
        _dump([h.model_dump(mode="json") for h in hits])
        return
    if not hits:
        console.print(f"no match for {query!r}", markup=False, highlight=False)
        return
    for h in hits:
        head = Text(f"{h.created_at:%Y-%m-%d %H:%M}  ", style="dim")
        head.append(h.role.value + (" (rewound)" if h.rewound else ""), style="cyan")
        head.append(f"  {h.session_id}", style="bold")
        head.append(f"  {short(h.node_id)}", style="dim")
        console.print(head)
        console.print(Padding(_snippet(h), (0, 0, 1, 4)))
    console.print(f"{len(hits)} hit(s)", highlight=False)


def render_tree(store: BaseStore, session: Session) -> Tree:
    """Render a session as a rich tree.

    Chains are drawn flat and each fork opens a sub-tree; the head, rewound nodes, summaries (with the
    number of nodes they cover), spawned sessions and markers per provider are shown on their nodes.
    """
    idx = store.index(session.id)
    nodes: dict[str, Node] = {n.id: n for n in store.nodes(session.id, list(idx.pred))}
    st = store.stats(session.id)
    tree = Tree(
        f"[bold]{escape(session.id)}[/] {escape(session.title)}  "
        f"[dim]{st.nodes} nodes, {st.roots} roots, {st.forks} forks, {st.rewound} rewound, "
        f"{st.summaries} summaries, {st.live_tips} live tips, {st.spawned} spawned[/]"
    )
    spawned: dict[str, list[Session]] = {}
    for child in store.spawns(session.id):
        if child.spawned_from:
            spawned.setdefault(child.spawned_from, []).append(child)
    kids = idx.children

    def line(n: str) -> str:
        node = nodes[n]
        b = idx.bits[n]
        kind = ("message", "summary", "event")[b & KIND_MASK]
        label = f"[cyan]{node.role.value}[/]" if kind == "message" else f"[magenta]{kind}[/]"
        text = f"{label} [dim]{short(n)}[/] {escape(_preview(node))}"
        if node.covers:
            text += f" [magenta](covers {len(node.covers)})[/]"
        if b & REWOUND:
            text = f"[strike dim]{text}[/] [red]rewound[/]"
        for provider, value in sorted(node.written.items()):
            text += f" [green]✓{escape(provider)}={escape(value[:8])}[/]"
        for child in spawned.get(n, []):
            text += f" [yellow]→ spawned {escape(short(child.id))}[/]"
        if n == idx.head:
            text += " [bold yellow]◀ head[/]"
        return text

    def chain(branch: Tree, start: str) -> None:
        stack = [(branch, start)]
        while stack:
            at, n = stack.pop()
            while True:
                at.add(line(n))
                below = kids.get(n, [])
                if len(below) == 1:
                    n = below[0]
                    continue
                forks = [(at.add(f"[bold blue]fork[/] [dim]after {short(n)}[/]"), c) for c in below]
                stack.extend(reversed(forks))
                break

    for root in (n for n, p in idx.pred.items() if p is None):
        chain(tree, root)
    return tree


@app.command()
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show a session's tree: forks, rewound nodes, summaries, the head and markers per provider."""
    store = open_store(ctx)
    s = resolve_session(store, session)
    if json:
        idx = store.index(s.id)
        _dump(
            {
                "session": s.model_dump(mode="json"),
                "stats": store.stats(s.id)._asdict(),
                "tips": store.tips(s.id),
                "spawned": [c.id for c in store.spawns(s.id)],
                "nodes": [node_json(n) for n in store.nodes(s.id, list(idx.pred))],
            }
        )
        return
    console.print(render_tree(store, s))


@app.command()
def pending(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    provider: Annotated[str, typer.Option(help="The consumer's name.")] = "memory",
    value: Annotated[
        str, typer.Option(help="The consumer's store id (the marker value).")
    ] = "default",
    head: Annotated[str | None, typer.Option(help="Walk from this node, not the head.")] = None,
    tips: Annotated[bool, typer.Option("--tips", help="Every live tip, the head first.")] = False,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the turns PROVIDER has not written yet (walking back from the head to its newest marker)."""
    store = open_store(ctx)
    s = resolve_session(store, session)
    if tips:
        groups: list[tuple[str | None, list[Node]]] = list(
            store.pending_by_tip(s.id, provider, value)
        )
    else:
        groups = [(head or s.head, store.pending(s.id, provider, value, head=head))]
    if json:
        _dump([{"tip": t, "pending": [node_json(n) for n in ns]} for t, ns in groups])
        return
    for tip, ns in groups:
        table = Table(title=f"pending for {provider}={value} at {tip}", title_justify="left")
        table.add_column("#", justify="right")
        for col in ("node", "role", "text"):
            table.add_column(col)
        for i, n in enumerate(ns, 1):
            table.add_row(str(i), n.id, n.role.value, escape(_preview(n, 80)))
        console.print(table)
        console.print(f"{len(ns)} pending")


@app.command()
def mark(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    nodes: Annotated[list[str] | None, typer.Argument(help="Node ids to mark.")] = None,
    provider: Annotated[str, typer.Option(help="The consumer's name.")] = "memory",
    value: Annotated[
        str, typer.Option(help="The consumer's store id (the marker value).")
    ] = "default",
    all_pending: Annotated[
        bool, typer.Option("--pending", help="Mark everything pending at the head.")
    ] = False,
) -> None:
    """Write PROVIDER's marker on NODES (or on everything pending at the head)."""
    store = open_store(ctx)
    s = resolve_session(store, session)
    ids = list(nodes or [])
    if all_pending:
        ids += store.pending_ids(s.id, provider, value)
    n = store.mark(s.id, ids, provider, value)
    console.print(f"marked {n} node(s) for {provider}={value}")


def main() -> None:
    """Run the command line, with the commands registered through entry points."""
    for ep in entry_points(group="sessiongraph.cli"):
        ep.load()(app)
    try:
        app()
    except GraphError as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()

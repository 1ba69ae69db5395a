"""The ``sessiongraph`` command line: the session graph's commands, plus commands other packages add.

The graph's own commands (``import`` and ``export`` included) are registered directly, so the CLI of a
checkout that is not pip-installed is complete. Other packages extend it through the ``sessiongraph.cli``
entry-point group: each entry point names a function ``register(app: typer.Typer) -> None`` (the memory
package adds ``sessiongraph memory`` this way, so ``graph`` never imports ``memory``), and is named
after the command it adds (a function adding several is listed once under each name): a command line
loads only the entry point of the command it names, ``--help`` loads them all.

The store is ``--db PATH``, else ``$SESSIONGRAPH_DB``, else ``sessiongraph.db`` in the user's data
directory (platformdirs); a leading ``~`` is expanded in both. Ids are printed in their short form
(``…`` and the shortest unique end of the id, at least 8 characters; ``--full`` prints them whole)
and every command takes an id back whole, as a unique prefix or as a unique suffix. ``--json`` always
prints whole ids and times as RFC 3339 in UTC.

Whatever a user gets wrong (an unknown or ambiguous id, a path that cannot be created, a bad option)
ends as one line ``error: WHAT: WHY`` on stderr and a non-zero exit status (2 for a usage mistake),
never a traceback (``SESSIONGRAPH_DEBUG=1`` shows one for an unexpected failure).

The modules a command needs are imported when it runs, so ``sessiongraph --version`` and listing a
small store start quickly.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graph.cli.arguments import RepeatedArgumentsCommand
from graph.cli.quick import (
    content_parts,
    default_db,
    exit_for,
    id_column,
    list_sessions,
    node_json,
    open_target,
    resolve_node,
    resolve_session,
    session_short_forms,
    target_of,
    tool_call_text,
)
from graph.terminal import (
    CommandLineError,
    dump_json,
    error_line,
    json_ready,
    markup,
    say,
    settings,
    short_forms,
    visible,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    from graph.ids import NodeId
    from graph.models import Node, SearchHit, Session
    from graph.store.base import BaseStore

__all__ = [
    "app",
    "content_parts",
    "default_db",
    "id_column",
    "main",
    "node_json",
    "node_preview",
    "open_store",
    "parse_since",
    "pending_table",
    "SessionTree",
    "render_tree",
    "resolve_node",
    "resolve_session",
    "session_short_forms",
    "short",
    "tool_call_text",
]

app = typer.Typer(
    name="sessiongraph",
    help="Agent conversations as graphs, and what each consumer has not processed yet.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON (whole ids, RFC 3339 UTC times).")]
_FULL = Annotated[bool, typer.Option("--full", help="Print whole ids, not their short form.")]
_SESSION = Annotated[str, typer.Argument(help="Session id (or a unique prefix or suffix).")]
_PROVIDER = Annotated[str, typer.Option(help="The consumer's name.")]
_VALUE = Annotated[str, typer.Option(help="The consumer's store id (the marker value).")]


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, emoji=False)


def _show_version(value: bool) -> None:
    from graph.cli.launch import version

    if value:
        print(f"sessiongraph {version()}")
        raise typer.Exit()


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
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress, confirmations or warnings; errors and data stay."
        ),
    ] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    settings.quiet = quiet
    target = target_of(db)
    ctx.obj = {"db": target, "db_arg": db}


def open_store(ctx: typer.Context | None, *, create: bool = True) -> BaseStore:
    """Open the store the command line names (``--db``: a SQLite file or a ``postgresql://`` URL).

    Args:
        ctx: The command's context (its root holds ``--db``).
        create: Make the SQLite file when it is missing; False for a command that only reads
            (or changes what is stored already), which refuses a missing file instead.

    Raises:
        CommandLineError: the file or its folder cannot be created or opened, it is missing and
            ``create`` is False, or the database cannot be reached.
    """
    return open_target(ctx.obj["db"] if ctx and ctx.obj else default_db(), create=create)


def _dump(data: Any) -> None:
    print(dump_json(data))


def short(node_id: str) -> str:
    """A short form of one id on its own: ``…`` and its last 8 characters.

    Where ids are listed together, :func:`graph.terminal.short_forms` gives the shortest form that is
    unique among them; use this only where no such listing exists.
    """
    return short_forms([node_id])[node_id]


def node_preview(node: Node, width: int = 70) -> str:
    """A node's content on one line, cut to ``width`` characters: text, tool calls and images named.

    The result is not yet made safe for a terminal: pass it through :func:`graph.terminal.markup`.
    """
    text = " ".join(" ".join(content_parts(node)).split())
    return text if len(text) <= width else text[: width - 1] + "…"


_SINCE = re.compile(r"(\d+)\s*([mhdw])", re.IGNORECASE)
_SINCE_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """Read a ``--since`` value: an ISO 8601 date or time (naive means UTC), or an age.

    An age is a number and a unit, ``m`` (minutes), ``h`` (hours), ``d`` (days) or ``w`` (weeks):
    ``7d`` is seven days before ``now``.

    Raises:
        typer.BadParameter: neither form, or an age reaching back before the year 1.
    """
    m = _SINCE.fullmatch(text.strip())
    if m:
        moment = now or datetime.now(UTC)
        try:
            return moment - timedelta(seconds=int(m.group(1)) * _SINCE_UNITS[m.group(2).lower()])
        except OverflowError:
            raise typer.BadParameter(f"{text!r} reaches back before the year 1") from None
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


def _runtime(value: str | None) -> str | None:
    """``--runtime``'s value, one of :data:`graph.store.base.RUNTIMES`, checked before a store opens.

    Raises:
        typer.BadParameter: the value names no runtime (it would match no session, silently);
            the message names the closest runtime (``difflib``) and every one.
    """
    from graph.store.base import unknown_runtime

    why = unknown_runtime(value)
    if why is not None:
        raise typer.BadParameter(why)
    return value


_Runtime = Annotated[
    str | None,
    typer.Option(
        help="Only sessions of this runtime: claude-code, pi or codex.", callback=_runtime
    ),
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
    limit: Annotated[int, typer.Option(help="At most this many.", min=1)] = 50,
    runtime: _Runtime = None,
    project: _Project = None,
    since: _Since = None,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """List sessions, most recently updated first: id, title, last update, nodes, spawned from.

    Read with one query per listed session (its node count), never a session's whole graph, so a
    store with million-node sessions lists as quickly as a small one ('show' and 'open' give
    the tips and forks). An empty store says how to fill it.
    """
    list_sessions(
        open_store(ctx, create=False),
        limit=limit,
        runtime=runtime,
        project=_project(project),
        since=None if since is None else parse_since(since),
        full=full,
        json=json,
    )


def _snippet(hit: SearchHit) -> Text:
    from rich.text import Text

    text = Text(visible(hit.snippet))
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
        typer.Option(help="Only this session (id or unique prefix or suffix) and its sub-agents."),
    ] = None,
    since: _Since = None,
    runtime: _Runtime = None,
    project: _Project = None,
    limit: Annotated[int, typer.Option(help="At most this many hits (1..1000).")] = 20,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """Search what was said in every imported session, best matches first."""
    from rich.padding import Padding
    from rich.text import Text

    store = open_store(ctx, create=False)
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
    out = _console()
    from graph.search import parse_query

    for note in parse_query(query).notes:
        say(_console(stderr=True), markup(f"note: {note}"))
    if not hits:
        out.print(visible(f"no match for {query!r}"), markup=False, highlight=False)
        return
    sessions_short = {} if full else session_short_forms(store)
    for h in hits:
        nodes_short = {} if full else short_forms(store.index(h.session_id).pred)
        head = Text(f"{h.created_at:%Y-%m-%d %H:%M}  ", style="dim")
        head.append(h.role.value + (" (rewound)" if h.rewound else ""), style="cyan")
        head.append(f"  {sessions_short.get(h.session_id, h.session_id)}", style="bold")
        head.append(f"  {nodes_short.get(h.node_id, h.node_id)}", style="dim")
        out.print(head)
        out.print(Padding(_snippet(h), (0, 0, 1, 4)))
    out.print(f"{len(hits)} hit(s)", highlight=False)


class SessionTree:
    """A session's tree under its header line (id, title, counts), as a rich renderable.

    The header is drawn on one line, never wrapped or cut by rich (print it with ``crop=False``:
    the terminal wraps a long one), so the session id copies whole at any width; the tree below
    fits the width as rich draws it.

    Attributes:
        header: The header line (rich markup).
        tree: The tree, whose own root line (empty) is not drawn.
    """

    def __init__(self, header: str, tree: Tree) -> None:
        self.header = header
        self.tree = tree

    def __rich_console__(self, console: Console, options: Any) -> Iterator[Any]:
        from rich.segment import Segment
        from rich.text import Text

        head = Text.from_markup(self.header, emoji=False)  # transcript text, shown as written
        wide = options.update(width=max(options.max_width, head.cell_len), no_wrap=True)
        yield from console.render(head, wide)
        for line in console.render_lines(self.tree, options, pad=False)[1:]:
            yield from line
            yield Segment.line()


def render_tree(store: BaseStore, session: Session, *, full: bool = False) -> SessionTree:
    """Render a session as a rich tree under its header line (:class:`SessionTree`).

    Chains are drawn flat and each fork opens a sub-tree per child, in the order the children were
    stored; the head, rewound nodes, summaries (with the number of nodes they cover),
    spawned sessions and markers per provider (with their whole value) are shown on their nodes.
    Nodes are named by their short form among the session's nodes (``full``: whole ids).
    Artifact forks (a runtime's bookkeeping beside the conversation, :data:`graph.index.ARTIFACT`)
    are folded under the node they hang from, so a conversation linear in its runtime reads linear.
    """
    from rich.tree import Tree

    idx = store.index(session.id)
    nodes: dict[str, Node] = {n.id: n for n in store.nodes(session.id)}
    names = {n: n for n in idx.pred} if full else short_forms(idx.pred)
    sessions_short = {} if full else session_short_forms(store)
    st = store.stats(session.id)
    header = (
        f"[bold]{markup(session.id)}[/] {markup(session.title)}  "
        f"[dim]{st.nodes} nodes, {st.roots} roots, {st.forks} forks, {st.rewound} rewound, "
        f"{st.summaries} summaries, {st.live_tips} live tips, {st.spawned} spawned[/]"
    )
    tree = Tree("")
    spawned: dict[str, list[Session]] = {}
    for child in store.spawns(session.id):
        if child.spawned_from:
            spawned.setdefault(child.spawned_from, []).append(child)
    kids = idx.children

    def line(n: str) -> str:
        node = nodes[n]
        kind = idx.kind_of(n).value
        label = f"[cyan]{node.role.value}[/]" if kind == "message" else f"[magenta]{kind}[/]"
        text = f"{label} [dim]{markup(names[n])}[/] {markup(node_preview(node))}"
        if node.covers:
            text += f" [magenta](covers {len(node.covers)})[/]"
        if idx.is_rewound(n):
            text = f"[strike dim]{text}[/] [red]rewound[/]"
        for provider, values in sorted(node.written.items()):
            for value in values:
                text += f" [green]✓{markup(provider)}={markup(value)}[/]"
        for child in spawned.get(n, []):
            text += f" [yellow]→ spawned {markup(sessions_short.get(child.id, child.id))}[/]"
        if n == idx.head:
            text += " [bold yellow]◀ head[/]"
        return text

    def chain(branch: Tree, start: str) -> None:
        stack = [(branch, start)]
        while stack:
            at, n = stack.pop()
            while True:
                item = at.add(line(n))
                below = [c for c in kids.get(n, ()) if not idx.is_artifact(c)]
                # Artifact forks (bookkeeping entries beside the conversation) fold under their node.
                folded = [c for c in kids.get(n, ()) if idx.is_artifact(c)]
                stack.extend((item, c) for c in reversed(folded))
                if len(below) == 1:
                    n = below[0]
                    continue
                forks = [
                    (at.add(f"[bold blue]fork[/] [dim]after {markup(names[n])}[/]"), c)
                    for c in below
                ]
                stack.extend(reversed(forks))
                break

    for root in (n for n, p in idx.pred.items() if p is None):
        chain(tree, root)
    return SessionTree(header, tree)


@app.command()
def show(
    ctx: typer.Context,
    session: _SESSION,
    full: _FULL = False,
    json: _JSON = False,
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="tree (the default), svg (the web page's picture) or dot (Graphviz).",
        ),
    ] = "tree",
) -> None:
    """Show a session's tree: forks, rewound nodes, summaries, the head and markers per provider."""
    store = open_store(ctx, create=False)
    s = resolve_session(store, session)
    if format in ("svg", "dot"):
        from graph import drawing

        pic = drawing.picture(store, s)
        print(drawing.to_svg(pic) if format == "svg" else drawing.to_dot(pic), end="")
        return
    if format != "tree":
        raise typer.BadParameter(f"{format!r} is not one of tree, svg, dot", param_hint="--format")
    if json:
        _dump(
            {
                "session": s.model_dump(mode="json"),
                "stats": store.stats(s.id)._asdict(),
                "tips": store.tips(s.id),
                "spawned": [c.id for c in store.spawns(s.id)],
                "nodes": [node_json(n) for n in store.nodes(s.id)],
            }
        )
        return
    _console().print(render_tree(store, s, full=full), crop=False)


def _not_empty(option: str, value: str) -> str:
    if not value.strip():
        raise CommandLineError(option, "must not be empty")
    return value


@app.command()
def pending(
    ctx: typer.Context,
    session: _SESSION,
    provider: _PROVIDER = "memory",
    value: _VALUE = "default",
    head: Annotated[
        str | None, typer.Option(help="Walk from this node (id, prefix or suffix), not the head.")
    ] = None,
    tips: Annotated[bool, typer.Option("--tips", help="Every live tip, the head first.")] = False,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """Show a consumer's pending turns: those it (--provider, --value) has not written yet.

    They are walked back from the head (or --head, or every live tip with --tips) to the newest
    node carrying the consumer's marker, oldest first.

    Example: sessiongraph pending SESSION --provider memory --value MY-WORKSPACE --tips
    """
    _not_empty("--provider", provider)
    _not_empty("--value", value)
    store = open_store(ctx, create=False)
    s = resolve_session(store, session)
    start = resolve_node(store, s.id, head) if head else None
    # One tip at a time, its nodes read in chunks: memory stays bounded on a 1e6-node session.
    groups: Iterable[tuple[str | None, list[NodeId]]]
    if tips:
        groups = store.pending_ids_by_tip(s.id, provider, value)
    else:
        groups = [(start or s.head, store.pending_ids(s.id, provider, value, head=start))]
    if json:
        import orjson

        stream = sys.stdout
        stream.write("[")
        for g, (tip, ids) in enumerate(groups):
            stream.write(
                ("," if g else "") + '\n{"tip": ' + orjson.dumps(tip).decode() + ', "pending": ['
            )
            for i, n in enumerate(store.iter_nodes(s.id, ids)):
                row = orjson.dumps(json_ready(node_json(n))).decode()
                stream.write(("," if i else "") + "\n" + row)
            stream.write("]}")
        stream.write("\n]\n")
        return
    names = {n: n for n in store.index(s.id).pred} if full else short_forms(store.index(s.id).pred)
    out = _console()
    shown = False
    for tip, ids in groups:
        where = names.get(tip, tip) if tip else "(empty session)"
        if tip is not None and tip == s.head:
            where += " (the head)"
        pending_table(out, provider, value, where, store.iter_nodes(s.id, ids), names, full)
        shown = True
    if not shown:  # --tips yields only the tips that owe something
        out.print(
            f"nothing pending for {markup(provider)}={markup(value)} at any live tip of "
            f"{markup(s.id)}",
            soft_wrap=True,
        )


def pending_table(
    out: Any,
    provider: str,
    value: str,
    where: str,
    nodes: Iterable[Node],
    names: Mapping[str, str],
    full: bool,
) -> None:
    """Print the pending ``nodes`` of one tip as a table and a count, or one line when there are none.

    Args:
        out: A rich console.
        provider: The consumer's provider, for the title.
        value: The consumer's value, for the title.
        where: The tip as shown (its short id, and whether it is the head).
        nodes: The pending nodes, oldest first.
        names: Node id to the form shown (short or whole).
        full: Whole ids (folded, never cut) instead of short ones.
    """
    from rich.table import Table

    rows = list(nodes)
    if not rows:
        out.print(
            f"nothing pending for {markup(provider)}={markup(value)} at {markup(where)}",
            soft_wrap=True,
        )
        return
    # The title is a line of its own: a table title is wrapped and cut to the table's width.
    out.print(f"pending for {markup(provider)}={markup(value)} at {markup(where)}", soft_wrap=True)
    table = Table()
    table.add_column("#", justify="right", no_wrap=True, min_width=len(str(len(rows))))
    id_column(table, "node", [names[n.id] for n in rows], full)
    table.add_column("role", no_wrap=True, min_width=9)
    table.add_column("text", ratio=1, min_width=20)
    for i, n in enumerate(rows, 1):
        table.add_row(str(i), markup(names[n.id]), n.role.value, markup(node_preview(n, 80)))
    out.print(table)
    out.print(f"{len(rows)} pending")


@app.command(cls=RepeatedArgumentsCommand)
def mark(
    ctx: typer.Context,
    session: _SESSION,
    nodes: Annotated[
        list[str] | None,
        typer.Argument(metavar="NODE", help="Node ids (or unique prefixes or suffixes) to mark."),
    ] = None,
    provider: _PROVIDER = "memory",
    value: _VALUE = "default",
    all_pending: Annotated[
        bool, typer.Option("--pending", help="Mark everything pending at the head.")
    ] = False,
) -> None:
    """Write a consumer's marker (--provider, --value) on the NODE ids (or, with --pending, on all pending).

    One transaction; refused, with nothing written, when it would leave an unmarked turn above a
    marked one on a branch.

    Example: sessiongraph mark SESSION --pending --value MY-WORKSPACE
    """
    _not_empty("--provider", provider)
    _not_empty("--value", value)
    if not nodes and not all_pending:
        raise CommandLineError("mark", "no nodes given: name NODE ids, or pass --pending")
    store = open_store(ctx, create=False)
    s = resolve_session(store, session)
    ids = [resolve_node(store, s.id, n) for n in nodes or []]
    if all_pending:
        ids += store.pending_ids(s.id, provider, value)
    if not ids:
        say(
            _console(stderr=True),
            f"nothing pending for {markup(provider)}={markup(value)} in {markup(s.id)}: "
            "nothing to mark",
        )
        return
    n = store.mark(s.id, ids, provider, value)
    say(_console(), f"marked {n} node(s) for {markup(provider)}={markup(value)}")


@app.command()
def rm(
    ctx: typer.Context,
    session: _SESSION,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove a session and the sessions it spawned (nodes, markers, everything), in one transaction.

    Asks first, unless --yes. What a consumer (memory) made of the session is not touched.
    """
    store = open_store(ctx, create=False)
    s = resolve_session(store, session)
    family = [s.id]
    for sid in family:
        family += [c.id for c in store.spawns(sid) if c.id not in family]
    nodes = sum(len(store.index(sid).pred) for sid in family)
    if not yes:
        if not sys.stdin.isatty():
            raise CommandLineError("rm", "confirmation needs a terminal: pass --yes to remove")
        typer.confirm(
            visible(
                f"Remove session {s.id} ({s.title or 'untitled'}), {len(family) - 1} spawned "
                f"session(s) and {nodes} node(s)?"
            ),
            abort=True,
        )
    removed = store.delete_session(s.id)
    say(_console(), f"removed {len(removed)} session(s), {nodes} node(s): {markup(s.id)}")


def _report(message: str) -> None:
    print(error_line(message), file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Run the command line, with the commands registered through entry points.

    Exits with status 0 on success, 1 when a command fails (``error: ...`` on stderr) and 2 on a
    usage mistake (an unknown option, a missing argument).
    """
    args = sys.argv[1:] if argv is None else argv
    from graph.cli.startup import lazy_command

    try:  # typer >= 0.20 raises its own copy of click's exceptions
        from typer._click import exceptions as clicks
    except ImportError:  # pragma: no cover - older typer, click itself
        import click.exceptions as clicks  # type: ignore[no-redef]

    _register_commands(args)
    command = lazy_command(app)
    try:
        code = command.main(args, prog_name="sessiongraph", standalone_mode=False)
    except clicks.NoArgsIsHelpError as e:
        e.show()
        raise SystemExit(e.exit_code) from None
    except clicks.UsageError as e:
        where = e.ctx.command_path if e.ctx else "sessiongraph"
        _report(f"{where}: {e.format_message()} (see '{where} --help')")
        raise SystemExit(2) from None
    except typer.Abort:
        _report("aborted: nothing was changed")
        raise SystemExit(1) from None
    except clicks.ClickException as e:
        _report(e.format_message())
        raise SystemExit(e.exit_code) from None
    except (Exception, KeyboardInterrupt) as e:  # a command's failure: one error line
        exit_for(e)
    if isinstance(code, int) and code:
        raise SystemExit(code)


def _register_commands(args: list[str]) -> None:
    """Add the commands a command line needs: only the one it names, or all for ``--help``.

    ``import`` and ``export`` come from :mod:`graph.cli.importing`; other packages' commands from
    the ``sessiongraph.cli`` entry points, each named after the command it adds (a function that
    adds several commands is listed under each of their names). A command line naming a command
    loads only what adds that command, so ``sessions`` loads no entry point and ``recent`` neither
    the server nor the importers. No command (``sessiongraph --help``), or a name no entry point
    has (an unknown command, a package whose entry point is named otherwise), loads them all, so
    ``--help`` lists every command and click's "No such command" knows them all. Each register
    function adds its commands once, so calling this again adds nothing. A command this
    distribution adds itself is found in its own metadata, without scanning every installed
    distribution's (:func:`graph.cli.entries.load_named`).

    Args:
        args: The command line without the program name (``["--db", "x.db", "recent"]``).
    """
    command = _command_word(args)
    if command is not None:
        if command in _registered():
            return
        if command in _IMPORTING:
            from graph.cli.importing import register  # imports this module: not at import time

            register(app)
            return
        from graph.cli.entries import load_named

        for register_command in load_named("sessiongraph.cli", command):
            register_command(app)
        if command in _registered():
            return
    from importlib.metadata import entry_points

    from graph.cli.importing import register

    register(app)
    for ep in entry_points(group="sessiongraph.cli"):
        ep.load()(app)


_IMPORTING = frozenset({"import", "export"})
"""The commands :mod:`graph.cli.importing` adds (it loads the importers, so only for them)."""


def _registered() -> set[str]:
    """The names of the commands and command groups registered on :data:`app` so far."""
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    return names | {g.name or "" for g in app.registered_groups}


def _command_word(args: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option or ``--db``'s value."""
    for i, a in enumerate(args):
        if a.startswith("-"):
            continue
        if i and args[i - 1] == "--db":
            continue
        return a
    return None


if __name__ == "__main__":
    main()

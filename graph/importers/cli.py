"""``sessiongraph import`` and ``sessiongraph export``: transcripts in, session bundles out.

Registered on the main app by :func:`register` (called from :func:`graph.cli.main`).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from graph.bundle import export_session
from graph.cli import open_store, render_tree, resolve_session, short
from graph.importers import ImportReport, default_locations, import_paths
from graph.importers.watch import DEFAULT_INTERVAL
from graph.importers.watch import watch as watch_paths
from graph.store import BaseStore

__all__ = ["export_command", "import_command", "register"]

console = Console()
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    """Add the ``import`` and ``export`` commands to ``app`` (a second call adds nothing)."""
    if any(c.name == "import" for c in app.registered_commands):
        return
    app.command("import")(import_command)
    app.command("export")(export_command)


def _summary(store: BaseStore, report: ImportReport) -> Table:
    """One row per imported session; narrow enough for an 80-column terminal (full ids: --json)."""
    table = Table(title="imported sessions", title_justify="left", box=None, header_style="bold")
    table.add_column("session", no_wrap=True, min_width=11)
    # The counts never shrink; the title takes what an 80-column terminal leaves.
    table.add_column(
        "title", overflow="ellipsis", no_wrap=True, max_width=max(8, console.width - 76)
    )
    # nodes, nodes added, roots, forks, rewound, summaries, spawned sessions, skipped lines
    for col in ("nodes", "new", "roots", "forks", "rewound", "summ", "spawn", "skip"):
        table.add_column(col, justify="right", no_wrap=True, width=len(col))
    seen: set[str] = set()
    for fr in report.files:
        for i, sid in enumerate(fr.session_ids):
            if sid in seen:
                continue
            seen.add(sid)
            st = report.stats[sid]
            title = store.session(sid).title
            table.add_row(
                escape(f" ↳ …{sid[-8:]}" if i else (sid if len(sid) <= 10 else sid[:9] + "…")),
                escape(title[:60]),
                str(st.nodes),
                str(fr.nodes_added) if i == 0 else "",
                str(st.roots),
                str(st.forks),
                str(st.rewound),
                str(st.summaries),
                str(st.spawned),
                str(len(fr.skipped)) if i == 0 else "",
            )
    return table


def _problems(report: ImportReport) -> None:
    for fr in report.files:
        where = escape(str(fr.path))
        if fr.error:
            err.print(f"[red]failed[/] {where}: {escape(fr.error)} (nothing of it was stored)")
        for line, reason in fr.skipped:
            err.print(f"[yellow]skipped[/] {where}:{line}: {escape(reason)}")
        for line, what in fr.repaired:
            err.print(f"[yellow]repaired[/] {where}:{line}: {escape(what)}")
        for node, parent in fr.dangling:
            err.print(
                f"[yellow]dangling parent[/] {where}: {escape(short(node))} names "
                f"{escape(parent)}, which no file holds; kept as a root"
            )
        for note in fr.notes:
            err.print(f"[dim]note[/] {where}: {escape(note)}")


def import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Transcript files or directories (default: the runtimes' own)."),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Then print each session's tree and pending turns.")
    ] = False,
    provider: Annotated[str, typer.Option(help="Pending for this consumer (--show).")] = "memory",
    value: Annotated[str, typer.Option(help="The consumer's store id (--show).")] = "default",
    json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Keep running: import what is appended as it is written."),
    ] = False,
    interval: Annotated[
        float, typer.Option(help="Seconds between looks at the files (--watch).", min=0.05)
    ] = DEFAULT_INTERVAL,
) -> None:
    """Import Claude Code, pi and Codex transcripts (and session bundles) into the store.

    With no PATH, the runtimes' default directories on this machine (~/.claude/projects,
    ~/.pi/agent/sessions, ~/.codex/sessions). Re-importing changes nothing; grown files add only
    their new entries. With --watch, the import runs again for every file that changes, until
    interrupted (each pass prints the same report; --json prints one JSON line per pass).
    """
    targets = list(paths or default_locations())
    if not targets:
        err.print("no PATH given and no transcript directory found (~/.claude, ~/.pi, ~/.codex)")
        raise typer.Exit(1)
    store = open_store(ctx)
    if watch:
        _watch(store, targets, interval, json=json)
        return
    with Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=json,
    ) as bar:
        task = bar.add_task("", total=None)

        def tick(done: int, total: int, path: Path) -> None:
            bar.update(task, completed=done, total=total, description=escape(path.name))

        report = import_paths(store, targets, progress=tick)
    if json:
        print(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        console.print(_summary(store, report))
        _problems(report)
        console.print(
            f"{len(report.files)} file(s), {report.nodes_added} node(s) added, "
            f"{len(report.failed)} failed"
        )
        if show:
            mains = list(dict.fromkeys(fr.session_ids[0] for fr in report.files if fr.session_ids))
            for sid in mains:
                _show(store, sid, provider, value)
    if report.failed:
        raise typer.Exit(1)


def _watch(store: BaseStore, targets: list[Path], interval: float, *, json: bool) -> None:
    """``import --watch``: a report per pass that found something, until Ctrl-C or SIGTERM."""

    def report_pass(report: ImportReport) -> None:
        if json:
            print(orjson.dumps(report.to_json()).decode(), flush=True)
            return
        if report.nodes_added or not report.files:
            console.print(_summary(store, report))
        _problems(report)
        console.print(
            f"{len(report.files)} file(s), {report.nodes_added} node(s) added, "
            f"{len(report.failed)} failed; watching {len(targets)} path(s)"
        )

    stop = threading.Event()
    signal.signal(
        signal.SIGTERM, lambda *_: stop.set()
    )  # a service manager's stop: finish the pass
    try:
        watch_paths(store, targets, report_pass, interval=interval, stop=stop)
    except KeyboardInterrupt:
        pass
    err.print("stopped watching")


def _show(store: BaseStore, session_id: str, provider: str, value: str) -> None:
    session = store.session(session_id)
    console.print(render_tree(store, session))
    for child in store.spawns(session_id):
        console.print(render_tree(store, child))
    pending = store.pending(session_id, provider, value)
    table = Table(
        title=f"pending for {provider}={value} at the head of {session_id}", title_justify="left"
    )
    table.add_column("#", justify="right")
    for col in ("node", "role", "text"):
        table.add_column(col)
    for i, n in enumerate(pending, 1):
        text = " ".join(n.text.split())
        table.add_row(str(i), escape(short(n.id)), n.role.value, escape(text[:80]))
    console.print(table)
    console.print(f"{len(pending)} pending")


def export_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The bundle file to write.")],
    spawned: Annotated[
        bool, typer.Option("--spawned/--no-spawned", help="Include spawned sessions.")
    ] = True,
) -> None:
    """Write SESSION as a msgpack bundle (nodes, links, markers, metadata) to FILE.

    ``sessiongraph import FILE`` in another store reproduces the same graph and markers.
    """
    store = open_store(ctx)
    s = resolve_session(store, session)
    size = export_session(store, s.id, output, spawned=spawned)
    console.print(f"wrote {escape(str(output))} ({size} bytes, session {escape(s.id)})")

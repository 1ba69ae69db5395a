"""``sessiongraph import`` and ``sessiongraph export``: transcripts in, session bundles out.

Registered on the main app by :func:`register` (called from :func:`graph.cli.commands.main`). The progress
bar counts bytes, so it moves within one large file; after the import, a few sessions get a table
and many get one summary line (``--verbose``: the table, and every note, whatever the number).
Failed files and damaged lines are always reported, on stderr, with their file and line.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graph.cli.arguments import RepeatedArgumentsCommand
from graph.cli.commands import (
    id_column,
    open_store,
    render_tree,
    resolve_session,
    session_short_forms,
)
from graph.importers.watch import DEFAULT_INTERVAL
from graph.terminal import (
    CommandLineError,
    dump_json,
    markup,
    say,
    settings,
    short_forms,
    visible,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console
    from rich.table import Table

    from graph.importers import ImportReport
    from graph.store.base import BaseStore

__all__ = ["export_command", "import_command", "register"]

TABLE_AT_MOST = 5
"""An import touching more sessions than this prints one summary line, not a row per session."""

PROBLEMS_AT_MOST = 20
"""Damaged lines listed on stderr without ``--verbose``; the rest are counted."""


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    # On stderr every report line stays one line whatever the width (grep finds file and reason).
    return Console(stderr=stderr, highlight=False, soft_wrap=stderr, emoji=False)


def register(app: typer.Typer) -> None:
    """Add the ``import`` and ``export`` commands to ``app`` (a second call adds nothing)."""
    if any(c.name == "import" for c in app.registered_commands):
        return
    app.command("import", cls=RepeatedArgumentsCommand)(import_command)
    app.command("export")(export_command)


_SUMMARY_ROWS = 200
"""The most sessions the import summary table shows (``--json`` reports all of them)."""


def _summary(store: BaseStore, report: ImportReport, had: Mapping[str, int] | None = None) -> Table:
    """One row per imported session, spawned ones under their parent, ids in their short form.

    Args:
        store: The store imported into.
        report: What the import did.
        had: Each session's node count before the import, for its own "new" count; without it
            a file's count (its sub-agents' nodes included) is shown on its first session's row.
    """
    from rich.table import Table
    from rich.text import Text

    names = session_short_forms(store)
    shown = [
        (" ↳ " if i else "") + names.get(sid, sid)
        for fr in report.files
        for i, sid in enumerate(fr.session_ids)
    ]
    table = Table(title="imported sessions", title_justify="left", box=None, header_style="bold")
    id_column(table, "session", shown, False)
    table.add_column("title", ratio=1, min_width=8)
    # nodes, nodes added, roots, forks, rewound, summaries, spawned sessions, skipped lines
    for col in ("nodes", "new", "roots", "forks", "rewound", "summ", "spawn", "skip"):
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    seen: set[str] = set()
    for fr in report.files:
        for i, sid in enumerate(fr.session_ids):
            if sid in seen:
                continue
            seen.add(sid)
            if len(seen) > _SUMMARY_ROWS:
                continue
            st = report.stats[sid]
            table.add_row(
                (" ↳ " if i else "") + markup(names.get(sid, sid)),
                # one line, cut with an ellipsis: wrapped into what the counts leave of an
                # 80-column terminal, a title took a line per word
                Text(visible(store.session(sid).title), no_wrap=True, overflow="ellipsis"),
                str(st.nodes),
                str(st.nodes - had.get(sid, 0))
                if had is not None
                else str(fr.nodes_added)
                if i == 0
                else "",
                str(st.roots),
                str(st.forks),
                str(st.rewound),
                str(st.summaries),
                str(st.spawned),
                str(len(fr.skipped)) if i == 0 else "",
            )
    if len(seen) > _SUMMARY_ROWS:
        # A terminal table of 1e5 rows takes minutes to lay out and nobody reads it.
        table.add_row(f"… {len(seen) - _SUMMARY_ROWS} more", "(--json lists every session)")
    return table


def _one_line(report: ImportReport) -> str:
    """What an import of many sessions did, in one line."""
    stats = report.stats.values()
    spawned = sum(1 for fr in report.files for _ in fr.session_ids[1:])
    return (
        f"{len(report.stats)} session(s) ({spawned} spawned): "
        f"{sum(s.nodes for s in stats)} node(s), {sum(s.forks for s in stats)} fork(s), "
        f"{sum(s.rewound for s in stats)} rewound, {sum(s.summaries for s in stats)} "
        "summaries (--verbose: a row per session)"
    )


def _problems(report: ImportReport, verbose: bool) -> None:
    err = _console(stderr=True)
    lines: list[str] = []
    notes: list[str] = []
    for fr in report.files:
        where = markup(str(fr.path))
        if fr.error:
            # On one line: a driver's message (a refused connection) spans several.
            why = " ".join((fr.reason or fr.error).split())
            err.print(
                f"[red]failed[/] {where}: {markup(why)} (nothing of it was stored)",
                soft_wrap=True,
            )
        for line, reason in fr.skipped:
            lines.append(f"[yellow]skipped[/] {where}:{line}: {markup(reason)}")
        for line, what in fr.repaired:
            lines.append(f"[yellow]repaired[/] {where}:{line}: {markup(what)}")
        for node, parent in fr.dangling:
            notes.append(
                f"[yellow]dangling parent[/] {where}: {markup(node)} names "
                f"{markup(parent)}, which no file holds; kept as a root"
            )
        for line, node, what in fr.relinked:
            lines.append(f"[yellow]relinked[/] {where}:{line}: {markup(node)}: {markup(what)}")
        for line, node, why in fr.dropped:
            lines.append(f"[dim]not stored[/] {where}:{line}: {markup(node)}: {markup(why)}")
        notes += [f"[dim]note[/] {where}: {markup(note)}" for note in fr.notes]
    if settings.quiet:
        return
    shown = lines if verbose else lines[:PROBLEMS_AT_MOST]
    for text in shown:
        err.print(text)
    if len(lines) > len(shown):
        err.print(f"... and {len(lines) - len(shown)} more damaged line(s) (--verbose lists all)")
    if verbose or len(notes) <= 3:
        for text in notes:
            err.print(text)
    else:
        err.print(f"{len(notes)} note(s) on dangling parents and joined sessions (--verbose)")


def _check_paths(paths: list[Path]) -> list[Path]:
    """The transcript files under ``paths``; every path must exist and one must hold a transcript."""
    from graph.importers import transcript_files

    for p in paths:
        if not p.exists():
            raise CommandLineError(str(p), "no such file or folder")
    files = transcript_files(paths)
    if not files:
        where = ", ".join(map(str, paths))
        raise CommandLineError(
            where, "no transcripts there (looked for *.jsonl files and session bundles)"
        )
    for p in paths:
        if p.is_dir() and not transcript_files([p]):
            say(_console(stderr=True), f"[yellow]warning[/] {markup(str(p))}: no transcripts there")
    return files


def import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="Transcript files or directories (default: the runtimes' own).",
        ),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Then print each session's tree and pending turns.")
    ] = False,
    provider: Annotated[str, typer.Option(help="Pending for this consumer (--show).")] = "memory",
    value: Annotated[str, typer.Option(help="The consumer's store id (--show).")] = "default",
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="A row per session and every note.")
    ] = False,
    json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Keep running: import what is appended as it is written."),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(help="Seconds between looks at the files (--watch).", min=0.05, max=86_400),
    ] = DEFAULT_INTERVAL,
    langgraph: Annotated[
        str | None,
        typer.Option(
            "--langgraph",
            metavar="URL",
            help="Also import the LangGraph PostgresSaver database at this postgresql:// URL.",
        ),
    ] = None,
) -> None:
    """Import Claude Code, pi and Codex transcripts (and session bundles, LangGraph SqliteSaver databases).

    --langgraph postgresql://... imports a LangGraph PostgresSaver database as well (alone when no
    PATH is given).

    With no PATH, the runtimes' default directories on this machine (~/.claude/projects,
    ~/.pi/agent/sessions, ~/.codex/sessions). Re-importing changes nothing; grown files add only
    their new entries. With --watch, the import runs again for every file that changes, until
    interrupted (each pass prints the same report; --json prints one JSON line per pass).
    """
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from graph.importers import default_locations, import_paths
    from graph.importers.jsonl import reading_progress

    if not provider.strip() or not value.strip():
        raise CommandLineError("--provider/--value", "must not be empty")
    targets = list(paths or ([] if langgraph else default_locations()))
    if langgraph is not None and watch:
        raise CommandLineError("--langgraph", "--watch follows files; import a database without it")
    if not targets and langgraph is None:
        raise CommandLineError(
            "import", "no PATH given and no transcript directory found (~/.claude, ~/.pi, ~/.codex)"
        )
    files = _check_paths(targets) if targets else []
    sizes = {f: _size(f) for f in files}
    store = open_store(ctx)
    if watch:
        _watch(store, targets, interval, json=json)
        return
    # Each session's own count of new nodes (a file's count also holds its sub-agents').
    had: dict[str, int] = {}
    if not (json or settings.quiet):
        had = {x.id: store.node_count(x.id) for x in store.sessions()}
    err = _console(stderr=True)
    with Progress(
        TextColumn("importing"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        # Redirected stderr (a log, a pipe) gets no bar: it would only leave an empty line there.
        disable=json or settings.quiet or not err.is_terminal,
    ) as bar:
        task = bar.add_task("", total=sum(sizes.values()))
        before = {"bytes": 0}

        def within(path: Path, done: int, size: int) -> None:
            bar.update(task, completed=before["bytes"] + done, description=markup(path.name))

        def tick(done: int, total: int, path: Path) -> None:
            before["bytes"] += sizes.get(path, 0)
            bar.update(
                task,
                completed=before["bytes"],
                description=markup(f"{path.name} ({done}/{total} files)"),
            )

        with reading_progress(within):
            report = import_paths(store, targets, progress=tick)
    if langgraph is not None:
        _import_postgres_saver(store, report, langgraph)
    if json:
        print(dump_json(report.to_json()))
    else:
        out = _console()
        if settings.quiet:
            pass
        elif verbose or len(report.stats) <= TABLE_AT_MOST:
            if report.stats:
                out.print(_summary(store, report, had))
        else:
            say(out, _one_line(report))
        _problems(report, verbose)
        say(
            out,
            f"{len(report.files)} file(s), {report.nodes_added} node(s) added, "
            f"{len(report.failed)} failed",
        )
        if show:
            mains = list(dict.fromkeys(fr.session_ids[0] for fr in report.files if fr.session_ids))
            for sid in mains:
                _show(store, sid, provider, value)
    if report.failed:
        raise typer.Exit(1)


def _import_postgres_saver(store: BaseStore, report: ImportReport, url: str) -> None:
    """``--langgraph URL``: the PostgresSaver database joins the report like one more file."""
    from graph.importers.langgraph import FORMAT, import_postgres, postgres_label
    from graph.importers.report import failure
    from graph.store import is_postgres_url

    if not is_postgres_url(url):
        raise CommandLineError("--langgraph", f"{url!r} is not a postgresql:// URL")
    try:
        fr = import_postgres(store, url)
    except Exception as e:  # TranscriptError, GraphError: reported like a failed file
        fr = failure(postgres_label(url), e)
        fr.format = FORMAT
    report.files.append(fr)
    for sid in fr.session_ids:
        report.stats[sid] = store.stats(sid)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _watch(store: BaseStore, targets: list[Path], interval: float, *, json: bool) -> None:
    """``import --watch``: a report per pass that found something, until Ctrl-C or SIGTERM."""
    import orjson

    from graph.importers.watch import watch as watch_paths

    out, err = _console(), _console(stderr=True)

    def report_pass(report: ImportReport) -> None:
        if json:
            print(orjson.dumps(report.to_json()).decode(), flush=True)
            return
        if report.nodes_added or not report.files:
            out.print(_summary(store, report))
        _problems(report, False)
        say(
            out,
            f"{len(report.files)} file(s), {report.nodes_added} node(s) added, "
            f"{len(report.failed)} failed; watching {len(targets)} path(s)",
        )

    stop = threading.Event()
    # A service manager's stop: finish the pass under way, then exit 0.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        watch_paths(store, targets, report_pass, interval=interval, stop=stop)
    except KeyboardInterrupt:
        pass
    say(err, "stopped watching")


def _show(store: BaseStore, session_id: str, provider: str, value: str) -> None:
    from graph.cli.commands import pending_table

    console = _console()
    session = store.session(session_id)
    console.print(render_tree(store, session), crop=False)
    for child in store.spawns(session_id):
        console.print(render_tree(store, child), crop=False)
    pending = store.pending(session_id, provider, value)
    names = short_forms(store.index(session_id).pred)
    where = f"the head of {session_id}"
    pending_table(console, provider, value, where, pending, names, False)


def export_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix or suffix).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The bundle file to write.")],
    spawned: Annotated[
        bool, typer.Option("--spawned/--no-spawned", help="Include spawned sessions.")
    ] = True,
) -> None:
    """Write SESSION as a msgpack bundle (nodes, links, markers, metadata) to the -o file.

    'sessiongraph import FILE' in another store reproduces the same graph and markers. An
    existing -o file is replaced only when it is a bundle.

    Example: sessiongraph export SESSION -o session.sgbundle
    """
    from graph.bundle import ExportTargetError, check_export_target, export_session

    try:
        check_export_target(output)  # before the store opens: the first mistake named is -o's
    except ExportTargetError as e:
        raise CommandLineError(f"-o {output}", e.reason) from None
    store = open_store(ctx, create=False)
    s = resolve_session(store, session)
    try:
        size = export_session(store, s.id, output, spawned=spawned)
    except ExportTargetError as e:  # made meanwhile: export_session checks again
        raise CommandLineError(f"-o {output}", e.reason) from None
    except OSError as e:
        raise CommandLineError(f"-o {output}", e.strerror or str(e)) from None
    say(_console(), f"wrote {markup(str(output))} ({size} bytes, session {markup(s.id)})")

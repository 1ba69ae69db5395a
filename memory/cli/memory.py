"""``sessiongraph memory``: see, search, correct, delete and write memory from the command line.

Added to the ``sessiongraph`` application by :func:`memory.cli.lookup.register` (a person
can see what memory holds, find it with the words they used, correct it and delete it)::

    sessiongraph memory list [--topic T] [--json]      records with their citations' snippets and origins
    sessiongraph memory show RECORD [--json]           one record
    sessiongraph memory search QUERY [--page N] [--per-page N] [--json]
    sessiongraph memory delete RECORD [--grace S]      delete; undoable for S seconds (default 10)
    sessiongraph memory undo RECORD                    take a deletion back inside its grace period
    sessiongraph memory export [-o DIR]                the Markdown views
    sessiongraph memory add TEXT [--cite SESSION/NODE] [--topic T] [--heading H] [--tag T]
                                                       save a statement by hand (cites nothing or turns)
    sessiongraph memory forget SESSION [--yes]         erase what memory holds of a session
    sessiongraph memory log [RECORD] [--json]          revisions, newest first (of one record)
    sessiongraph memory diff REV [REV] [--json]        what changed between revisions (default: now)
    sessiongraph memory restore REV|RECORD@REV         go back, as a new revision
    sessiongraph memory organize [--json]              an organizer pass (exact duplicates merged)
    sessiongraph memory edit [--apply DIR]             edit the topic files in $EDITOR (or apply DIR)
    sessiongraph memory write [SESSION...]             write what sessions owe (default: all pending)
    sessiongraph memory watch [--once] [--idle S] [--poll S]   the idle watcher in the foreground
    sessiongraph memory status [--json]                workspace id, counts, pending turns, last failure
    sessiongraph memory reset [--yes]                  a new workspace id: every session pending again

The workspace is ``--workspace DIR`` (before the command), else ``$SESSIONGRAPH_MEMORY``, else the
settings file's ``memory.store``, else ``memory`` under the user data directory; ``-w`` and the variable
also take a ``postgresql://`` URL (a shared store of record, its views in ``--views DIR``, else
``memory.views``, else a folder per host, database and schema); the session store is the ``sessiongraph --db`` one. ``RECORD`` is a
record id or a unique prefix or suffix of one (the tables show the short form: ``…`` and the shortest
unique end, at least 8 characters; ``--full`` shows whole ids, as ``--json`` always does). Errors print
``error: ...`` on stderr with exit status 1; a refused edit names ``file:line`` and keeps the edited
copy, saying how to apply it again.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graph.cli.arguments import RepeatedArgumentsCommand
from graph.cli.commands import id_column, open_store, resolve_session, session_short_forms
from graph.terminal import dump_json, markup, print_fields, say, settings, short_forms
from memory import caps
from memory.adding import DEFAULT_ADD_TOPIC  # the workspace's modules: every command opens one
from memory.caps import CapExceeded
from memory.cli.quick import memory_errors, memory_settings, open_workspace, show_status, when
from memory.config import WorkspaceLocation, workspace_location
from memory.errors import MemoryLayerError

# Each command imports the modules it runs (the pipeline, the watcher, the organizer...), so that
# ``memory status`` or ``memory list`` loads neither the writers nor the watcher.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from graph.store.base import BaseStore
    from memory.reading import RecordView
    from memory.workspace import MemoryWorkspace

__all__ = ["add_memory_app", "default_workspace", "memory_app"]

memory_app = typer.Typer(
    name="memory",
    help="See, search, correct and delete what memory holds; write and watch sessions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON (whole ids, RFC 3339 UTC times).")]
_FULL = Annotated[bool, typer.Option("--full", help="Print whole ids, not their short form.")]
_RECORD = Annotated[str, typer.Argument(help="Record id, or a unique prefix or suffix of one.")]
_MODEL = Annotated[
    str | None,
    typer.Option(
        help="The writer: digest (offline), openai:MODEL or anthropic:MODEL"
        " (default: memory.model in the settings file)."
    ),
]
_BASE_URL = Annotated[
    str | None,
    typer.Option(help="An OpenAI-compatible server for openai:MODEL (Ollama, vLLM, LM Studio)."),
]


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, emoji=False)


def default_workspace() -> Path:
    """The workspace folder used without ``--workspace``: ``$SESSIONGRAPH_MEMORY`` or the user data dir.

    A ``postgresql://`` URL there (or ``memory.store`` in the settings file) gives the folder of its
    views; :func:`memory.config.workspace_location` says both.
    """
    return workspace_location().folder


def add_memory_app(app: typer.Typer) -> None:
    """Add ``memory`` to ``app`` (once: a second call adds nothing)."""
    if all(g.name != "memory" for g in app.registered_groups):
        app.add_typer(memory_app, name="memory")


@memory_app.callback()
def _memory(
    ctx: typer.Context,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Workspace directory, or a postgresql:// URL of a shared store of record "
            "(default: $SESSIONGRAPH_MEMORY, memory.store, or the user data dir).",
        ),
    ] = None,
    views: Annotated[
        Path | None,
        typer.Option(
            "--views",
            help="Local folder for the Markdown views when -w is a postgresql:// URL "
            "(default: memory.views of the settings file, else memory-<host>-<db>-<schema> "
            "beside the default workspace).",
        ),
    ] = None,
) -> None:
    config, where = memory_settings(workspace, views)
    ctx.obj = {
        **(ctx.obj or {}),
        "workspace": where.folder,
        "workspace_arg": workspace,
        "views_arg": views,
        "store": where.store,
        "config": config,
    }


def _again(ctx: typer.Context, *command: str) -> str:
    """The command line to run ``memory COMMAND`` again on the same store and workspace.

    ``--db`` and ``-w`` are repeated exactly as the user gave them (so ``~`` and relative paths mean
    what they meant), and left out when the user gave none.
    """
    obj = ctx.obj or {}
    words = ["sessiongraph"]
    if obj.get("db_arg") is not None:
        words += ["--db", str(obj["db_arg"])]
    words.append("memory")
    if obj.get("workspace_arg") is not None:
        words += ["-w", str(obj["workspace_arg"])]
    if obj.get("views_arg") is not None and obj.get("store"):
        words += ["--views", str(obj["views_arg"])]
    return shlex.join([*words, *command])


_errors = memory_errors
"""Report the memory layer's refusals as ``error: ...`` with exit status 1."""


def _fail(message: str) -> None:
    import sys

    from graph.terminal import error_line

    print(error_line(message), file=sys.stderr)
    raise typer.Exit(1)


def _ws(ctx: typer.Context) -> MemoryWorkspace:
    ws = open_workspace(WorkspaceLocation(ctx.obj["workspace"], ctx.obj.get("store")))
    ctx.call_on_close(ws.close)
    return ws


def _store(ctx: typer.Context) -> BaseStore:
    store = open_store(ctx)
    ctx.call_on_close(store.close)
    return store


def _dump(data: Any) -> None:
    print(dump_json(data))


def _record_names(ws: MemoryWorkspace, full: bool) -> dict[str, str]:
    """Each record id's name in a table: its short form among every record id, or the whole id."""
    ids = [r.id for r in ws.records()]
    return {i: i for i in ids} if full else short_forms(ids)


def _records_table(views: list[RecordView], names: dict[str, str], full: bool) -> Table:
    from rich import box
    from rich.table import Table

    sessions = short_forms(c.session_id for v in views for c in v.citations)
    nodes = short_forms(c.node_id for v in views for c in v.citations)
    table = Table(box=box.SIMPLE_HEAD)
    id_column(table, "record", [names.get(v.record.id, v.record.id) for v in views], full)
    table.add_column("topic / headings", ratio=1, min_width=8, overflow="fold")
    table.add_column("content", ratio=2, min_width=12)
    table.add_column("citations: snippet (session / node)", ratio=2, min_width=12)
    for v in views:
        r = v.record
        place = markup(" / ".join((r.topic, *r.headings)))
        cites = "\n".join(
            f"[bold]{markup(c.label)}[/]: {markup(c.snippet)}"
            + (
                " [dim]("
                + markup(c.session_id if full else sessions[c.session_id])
                + " / "
                + markup(c.node_id if full else nodes[c.node_id])
                + ")[/]"
                if c.session_id and c.node_id
                else " [dim](no turn cited)[/]"
            )
            for c in v.citations
        )
        table.add_row(markup(names.get(r.id, r.id)), place, markup(r.content), cites)
    return table


@memory_app.command("list")
def list_(
    ctx: typer.Context,
    topic: Annotated[str | None, typer.Option(help="Only this topic path.")] = None,
    full: _FULL = False,
    json: _JSON = False,
) -> None:
    """List the records with their citations' snippets and source session and node."""
    from memory.reading import record_views
    from memory.tombstones import purge_expired

    with _errors():
        ws = _ws(ctx)
        purge_expired(ws)
        views = record_views(ws, topic)
        if json:
            _dump([v.as_json() for v in views])
            return
        console = _console()
        if not views:
            where = f"topic {markup(topic)} of workspace" if topic is not None else "workspace"
            console.print(f"no records in {where} {markup(ws.id)}", soft_wrap=True)
            return
        console.print(_records_table(views, _record_names(ws, full), full))
        console.print(f"{len(views)} record(s) in workspace {markup(ws.id)}", soft_wrap=True)


@memory_app.command()
def show(ctx: typer.Context, record: _RECORD, json: _JSON = False) -> None:
    """Show one record: place, content, tags, times and every citation (whole ids)."""
    from memory.reading import record_view

    with _errors():
        v = record_view(_ws(ctx), record)
        if json:
            _dump(v.as_json())
            return
        r = v.record
        rows = [
            ("record", r.id),
            ("topic", r.topic),
            ("headings", " / ".join(r.headings)),
            ("position", str(v.position)),
            ("tags", ", ".join(r.tags)),
            ("time", r.time or ""),
            ("created", when(r.created_at)),
            ("updated", when(r.updated_at)),
            ("content", r.content),
        ]
        console = _console()
        print_fields(console, [(key, markup(value)) for key, value in rows])
        for n, c in enumerate(v.citations, 1):
            # A hand-saved record's bare snippet citation names no session, node or speaker.
            origin = ", ".join(
                f"{what} {markup(value)}" if what else markup(value)
                for what, value in (
                    ("session", c.session_id),
                    ("node", c.node_id),
                    ("", c.speaker),
                )
                if value
            )
            source = f" {markup(c.source_id)}" if c.source_id else ""
            console.print(
                f"\\[{n}] [bold]{markup(c.label)}[/]{source} ({origin or 'no turn cited'})"
            )
            console.print(f"    {markup(c.snippet)}")


@memory_app.command()
def search(
    ctx: typer.Context,
    query: Annotated[
        str, typer.Argument(help="Words to find (quotes and operators are plain text).")
    ],
    page: Annotated[int, typer.Option(help="1-based page.")] = 1,
    per_page: Annotated[
        int, typer.Option(help=f"Results per page (at most {caps.MAX_RESULTS_PER_PAGE}).")
    ] = caps.DEFAULT_RESULTS_PER_PAGE,
    full: _FULL = False,
    branch: Annotated[
        str | None,
        typer.Option(
            help="'head': only records on their sessions' head branches (not abandoned forks)."
        ),
    ] = None,
    json: _JSON = False,
) -> None:
    """Search the records lexically (FTS5, best first), one page at a time, with the total."""
    from rich import box
    from rich.table import Table

    from memory.reading import search_page

    with _errors():
        ws = _ws(ctx)
        keep = None
        if branch is not None:
            if branch != "head":
                raise ValueError(f"--branch {branch!r}: the only branch filter is 'head'")
            from memory.branches import BranchView

            keep = BranchView(ws, _store(ctx)).on_head_branch
        result = search_page(ws, query, page, per_page, keep=keep)
        if json:
            _dump(
                {
                    "query": result.query,
                    "page": result.page,
                    "per_page": result.per_page,
                    "pages": result.pages,
                    "total": result.total,
                    "hits": [
                        {
                            "record_id": h.record_id,
                            "topic": h.topic,
                            "headings": list(h.headings),
                            "content": h.content,
                            "score": h.score,
                            "sources": [list(s) for s in h.sources],
                        }
                        for h in result.hits
                    ],
                }
            )
            return
        if not result.total:
            _console().print(f"no record matches {markup(repr(result.query))}", soft_wrap=True)
            return
        names = _record_names(ws, full)
        table = Table(box=box.SIMPLE_HEAD)
        table.add_column("#", justify="right", no_wrap=True, min_width=len(str(result.total)))
        id_column(table, "record", [names.get(h.record_id, h.record_id) for h in result.hits], full)
        table.add_column("topic", ratio=1, min_width=8, overflow="fold")
        table.add_column("content", ratio=3, min_width=12)
        first = (result.page - 1) * result.per_page + 1
        for n, h in enumerate(result.hits, first):
            table.add_row(
                str(n),
                markup(names.get(h.record_id, h.record_id)),
                markup(h.topic),
                markup(h.content),
            )
        console = _console()
        console.print(table)
        shown = f"{first}-{first + len(result.hits) - 1}" if result.hits else "none"
        console.print(
            f"{result.total} match(es); page {result.page} of {result.pages} (results {shown})"
        )


@memory_app.command()
def delete(
    ctx: typer.Context,
    record: _RECORD,
    grace: Annotated[
        float | None,
        typer.Option(
            help="Seconds during which 'memory undo' takes it back (0: for good; default 10)."
        ),
    ] = None,
) -> None:
    """Delete a record and its citations (sources stay archived); undoable for --grace seconds.

    The undo hint repeats the --db and -w given, so it runs on the same workspace.
    """
    from memory.tombstones import DEFAULT_GRACE, delete_record

    with _errors():
        grace = DEFAULT_GRACE if grace is None else grace
        if grace < 0:
            raise ValueError(f"--grace {grace}: must be 0 or more seconds")
        stone = delete_record(_ws(ctx), record, grace=grace)
        rid = stone.record.id
        console = _console()
        if stone.expires_at > stone.deleted_at:
            console.print(
                f"deleted {markup(rid)}; undo until {when(stone.expires_at)} UTC with: "
                + markup(_again(ctx, "undo", rid)),
                soft_wrap=True,  # the command to copy: never broken across lines
            )
        else:
            console.print(f"deleted {markup(rid)} for good", soft_wrap=True)


@memory_app.command()
def undo(ctx: typer.Context, record: _RECORD) -> None:
    """Restore a deleted record inside its grace period (same id, timestamps and citations)."""
    from memory.tombstones import undo_delete

    with _errors():
        rec = undo_delete(_ws(ctx), record)
        say(
            _console(),
            f"restored {markup(rec.id)} in {markup(rec.topic)}: {markup(rec.content)}",
        )


@memory_app.command()
def export(
    ctx: typer.Context,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Directory to write (created).")
    ] = Path("memory-export"),
    history: Annotated[
        bool, typer.Option("--history", help="Also write history.jsonl: every revision.")
    ] = False,
) -> None:
    """Export the Markdown views (topics/**/*.md, core.md) to a directory."""
    from memory.history import export_history
    from memory.reading import export_markdown

    with _errors():
        if output.exists() and not output.is_dir():
            raise ValueError(f"-o {output}: is a file; give a folder to write the views into")
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ValueError(f"-o {output}: cannot create the folder: {e.strerror or e}") from None
        ws = _ws(ctx)
        files = export_markdown(ws, output)
        say(_console(), f"wrote {len(files)} file(s) to {markup(str(output))}")
        if history:
            n = export_history(ws.conn, output / "history.jsonl")
            say(_console(), f"wrote {n} revision(s) to {markup(str(output / 'history.jsonl'))}")


@memory_app.command()
def add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The statement to save (one paragraph).")],
    cite: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SESSION/NODE",
            help="A turn it stands on, SESSION/NODE (prefixes or id tails); repeatable.",
        ),
    ] = None,
    topic: Annotated[
        str, typer.Option(help="Topic path ('core' for the core block).")
    ] = DEFAULT_ADD_TOPIC,
    heading: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="Heading path inside the topic, outermost first."),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option(metavar="TAG", help="A tag; repeatable.")] = None,
    json: _JSON = False,
) -> None:
    """Save a statement by hand through the same validated transaction as a writer's changes.

    Cited turns are archived and cited; with no --cite the record keeps a bare snippet citation.
    """
    from memory.adding import add_memory, cited_nodes
    from memory.reading import record_view

    with _errors():
        ws = _ws(ctx)
        nodes = cited_nodes(_store(ctx), cite) if cite else []
        rec = add_memory(
            ws, content, cites=nodes, topic=topic, headings=heading or (), tags=tag or ()
        )
        if json:
            _dump(record_view(ws, rec.id).as_json())
            return
        _console().print(
            f"saved {markup(rec.id)} in {markup(rec.topic)} ({len(nodes)} cited turn(s)); "
            f"revision {ws.revision}",
            soft_wrap=True,  # the id, to copy: never broken across lines
        )


@memory_app.command()
def forget(
    ctx: typer.Context,
    session: Annotated[
        str, typer.Argument(help="Session id, or a unique prefix or suffix of one.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json: _JSON = False,
) -> None:
    """Erase what memory holds of a session: its records, citations and archived turns, for good.

    Records citing only the session are deleted, other records lose its citations, and its archived
    turns are erased (recorded as an erase, without their content). All or nothing; no undo.
    """
    import sys

    from memory.forget import forget_session

    with _errors():
        ws = _ws(ctx)
        if not yes and not sys.stdin.isatty():  # as rm and reset: no prompt nobody can answer
            raise ValueError("forget: confirmation needs a terminal: pass --yes to forget")
        if not yes and not typer.confirm(
            f"erase everything memory holds of session {session}? this cannot be undone"
        ):
            raise ValueError("nothing was erased (confirm, or pass --yes)")
        report = forget_session(ws, session)
        if json:
            _dump(
                {
                    "session_id": report.session_id,
                    "sources": report.sources,
                    "records_deleted": list(report.records_deleted),
                    "records_updated": list(report.records_updated),
                    "tombstones": report.tombstones,
                    "revision": report.revision,
                }
            )
            return
        _console().print(
            f"forgot session {markup(report.session_id)}: {report.sources} archived turn(s) "
            f"erased, {len(report.records_deleted)} record(s) deleted, "
            f"{len(report.records_updated)} record(s) updated; revision {report.revision}",
            soft_wrap=True,  # the session id, to copy: never broken across lines
        )


def _summary(changes: Any) -> str:
    counts: dict[str, int] = {}
    for ch in changes:
        counts[ch.op] = counts.get(ch.op, 0) + 1
    return ", ".join(f"{n} {op}" for op, n in sorted(counts.items())) or "no record changed"


@memory_app.command()
def log(
    ctx: typer.Context,
    record: Annotated[
        str | None, typer.Argument(help="Only this record (an id, prefix or suffix; deleted too).")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many revisions.")] = 50,
    json: _JSON = False,
) -> None:
    """List the revisions, newest first: when, what made them and which records they changed."""
    from memory.history import log as history_log
    from memory.history import resolve_record

    with _errors():
        ws = _ws(ctx)
        rid = resolve_record(ws.conn, record) if record is not None else None
        revs = history_log(ws.conn, rid)[: max(1, limit)]
        if json:
            _dump(
                [
                    {
                        "workspace_id": r.workspace_id,
                        "revision": r.revision,
                        "at": r.at,
                        "kind": r.kind,
                        "changes": [
                            {"record_id": c.record_id, "op": c.op, "record": c.record}
                            for c in r.changes
                        ],
                    }
                    for r in revs
                ]
            )
            return
        if not revs:
            what = f"record {markup(rid)}" if rid is not None else f"workspace {markup(ws.id)}"
            _console().print(f"no revisions of {what} yet", soft_wrap=True)
            return
        from rich.box import SIMPLE_HEAD
        from rich.table import Table

        table = Table(box=SIMPLE_HEAD)
        for col in ("rev", "when (UTC)", "kind", "changes"):
            table.add_column(col)
        for r in revs:
            rev = (
                str(r.revision)
                if r.workspace_id == ws.id
                else f"{r.workspace_id[-8:]}:{r.revision}"
            )
            if rid is not None:
                (ch,) = r.changes
                what = ch.op + (f": {ch.record['content']}" if ch.record else "")
            else:
                what = _summary(r.changes)
            table.add_row(rev, when(r.at), r.kind, markup(what))
        _console().print(table)


@memory_app.command()
def diff(
    ctx: typer.Context,
    old: Annotated[int, typer.Argument(help="The earlier revision.")],
    new: Annotated[int | None, typer.Argument(help="The later revision (default: now).")] = None,
    json: _JSON = False,
) -> None:
    """Show what differs between two revisions, record by record, with content diffs."""
    from memory.history import diff as history_diff

    with _errors():
        ws = _ws(ctx)
        entries = history_diff(ws.conn, old, new)
        if json:
            _dump(
                [
                    {"record_id": rid, "what": what, "before": a, "after": b}
                    for rid, what, a, b, _ in entries
                ]
            )
            return
        if not entries:
            _console().print("no differences")
        for rid, what, a, b, lines in entries:
            where = (b or a or {}).get("topic", "")
            _console().print(f"{what} {rid} ({markup(where)})", soft_wrap=True)
            for line in lines[2:]:
                _console().print("  " + markup(line), highlight=False)


@memory_app.command()
def restore(
    ctx: typer.Context,
    target: Annotated[
        str, typer.Argument(help="REV (every record) or RECORD@REV (one record, deleted ones too).")
    ],
) -> None:
    """Bring memory (or one record) back to a revision, validated, as a new revision."""
    from memory.history import resolve_record

    with _errors():
        ws = _ws(ctx)
        ref, at, rev_text = target.rpartition("@")
        if not (rev_text.isascii() and rev_text.isdigit()) or (at and not ref):
            raise ValueError(f"restore target {target!r}: write REV or RECORD@REV (REV a number)")
        if len(rev_text) > 19:  # past 64 bits (and past int()'s 4,300 digits): no revision
            raise ValueError(
                f"revision {rev_text[:19]}… does not exist (the workspace is at {ws.revision})"
            )
        rid = resolve_record(ws.conn, ref) if at else None
        p = ws.restore_revision(int(rev_text), rid)
        if not p.changed:
            _console().print(f"nothing to restore: already as at revision {rev_text}")
            return
        _console().print(
            f"restored to revision {rev_text}: {len(p.created)} created, {len(p.updated)} updated, "
            f"{len(p.moved)} moved, {len(p.deleted)} deleted; revision {ws.revision}"
        )


@memory_app.command()
def organize(ctx: typer.Context, json: _JSON = False) -> None:
    """Run the offline organizer: merge exact duplicates (never alternatives of exclusive forks)."""
    from memory.branches import alternatives
    from memory.organizer import OfflineOrganizer, reorganize

    with _errors():
        ws = _ws(ctx)
        result = reorganize(ws, OfflineOrganizer(apart=alternatives(ws, _store(ctx))))
        if json:
            _dump(
                {
                    "changed_files": result.changed_files,
                    "updated": list(result.updated),
                    "deleted": list(result.deleted),
                    "moved": list(result.moved),
                    "created": list(result.created),
                    "revision": result.revision,
                }
            )
            return
        if not result.changed_files:
            _console().print("nothing to organize")
            return
        _console().print(
            f"organized: {len(result.deleted)} duplicate(s) merged, {len(result.updated)} record(s) "
            f"updated; changed {', '.join(result.changed_files)}; revision {result.revision}"
        )


@memory_app.command()
def edit(
    ctx: typer.Context,
    apply: Annotated[
        Path | None,
        typer.Option(
            "--apply",
            help="Apply this directory of already edited files instead of opening $EDITOR.",
        ),
    ] = None,
) -> None:
    """Edit the topic files ($EDITOR on a staging copy), then apply them as one validated change.

    A broken edit is refused with the reason and file:line, and nothing changes; the staging copy
    with the edits is kept, and the command to apply it again once fixed is printed.
    """
    import shutil

    from memory.editing import stage_topics

    with _errors():
        ws = _ws(ctx)
        if apply is not None:
            _apply(ws, apply)
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            raise ValueError("set $EDITOR (or use --apply DIR with a directory of edited files)")
        try:
            command = shlex.split(editor)
        except ValueError as e:
            raise ValueError(f"$EDITOR {editor!r}: cannot be read as a command ({e})") from None
        if not command:
            raise ValueError("$EDITOR is empty: set it to an editor (or use --apply DIR)")
        tmp = Path(tempfile.mkdtemp(prefix="sessiongraph-memory-edit-"))
        files = stage_topics(ws, tmp)
        if not files:
            shutil.rmtree(tmp, ignore_errors=True)
            say(_console(), "memory holds no records yet: nothing to edit")
            return
        try:
            status = subprocess.call([*command, *map(str, files)])
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ValueError(
                f"$EDITOR {editor!r}: cannot run {command[0]!r}: {e.strerror or e}; nothing was "
                "applied"
            ) from None
        again = _again(ctx, "edit", "--apply", str(tmp))
        if status != 0:
            raise ValueError(
                f"the editor exited with status {status}; nothing was applied. The files are kept "
                f"in {tmp}; to apply them: {again}"
            )
        try:
            _apply(ws, tmp)
        except (MemoryLayerError, CapExceeded, ValueError) as e:
            raise ValueError(
                f"{e}; nothing was applied; your edits are kept in {tmp}: fix them there, then "
                f"run: {again}"
            ) from None
        shutil.rmtree(tmp, ignore_errors=True)


def _apply(ws: MemoryWorkspace, directory: Path) -> None:
    from memory.editing import apply_edits

    topics, ids = apply_edits(ws, directory)
    console = _console()
    if not topics:
        say(console, "no changes")
        return
    say(
        console,
        f"applied: {len(topics)} topic(s) changed ({markup(', '.join(topics))}); "
        f"{len(ids)} record(s) updated or created; revision {ws.revision}",
    )


def _progress(terminal_only: bool = False) -> Progress:
    """A progress bar on stderr, off with ``--quiet``; ``terminal_only``: off unless it is a terminal.

    Off a terminal rich prints the bar's last frame and then a line break when it stops, an empty
    line once its task is removed (as ``watch`` does after each pass).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = _console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=False,
        disable=settings.quiet or (terminal_only and not console.is_interactive),
    )


@memory_app.command(cls=RepeatedArgumentsCommand)
def write(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None,
        typer.Argument(metavar="SESSION", help="Session ids (default: every session owing turns)."),
    ] = None,
    model: _MODEL = None,
    base_url: _BASE_URL = None,
) -> None:
    """Write what the sessions owe this workspace (every live tip, the head first), with progress."""
    from graph.lineage import is_abandoned
    from graph.models import to_micros
    from memory.completion import writer_for
    from memory.pipeline import WritePipeline, owed_ids

    with _errors():
        writer = writer_for(ctx.obj["config"], model=model, base_url=base_url)
        ws, store = _ws(ctx), _store(ctx)
        if sessions:
            ids = [resolve_session(store, s).id for s in sessions]
        else:
            ids = [  # abandoned sub-agents (spawned from a rewound node) are written only by id
                s.id
                for s in store.sessions(100_000)
                if owed_ids(store, s.id, ws.id) and not is_abandoned(store, s)
            ]
        if not ids:
            say(
                _console(),
                f"nothing pending for workspace {markup(ws.id)}; {len(ws.records())} record(s)",
            )
            return
        names = session_short_forms(store)
        pipeline = WritePipeline(ws, store, writer)
        failed = 0
        with _progress() as bar:
            task = bar.add_task("writing memory", total=len(ids))
            for sid in ids:
                bar.update(task, description=f"writing {markup(names[sid])}")
                owed = len(owed_ids(store, sid, ws.id))
                failure = pipeline.write(sid, force=True)
                stamp = to_micros(store.session(sid).updated_at)
                if failure is None:
                    ws.set_watch_status(sid, stamp, "done", "")
                    if not settings.quiet:
                        bar.console.print(
                            f"{markup(sid)}: wrote {owed} pending turn(s)", soft_wrap=True
                        )
                else:
                    failed += 1
                    if not failure.retryable:
                        ws.set_watch_status(sid, stamp, "failed", failure.reason.value)
                    bar.console.print(
                        f"{markup(sid)}: [red]{failure.reason.value}[/] "
                        f"({'retryable' if failure.retryable else 'not retryable'}): "
                        f"{markup(failure.detail)}",
                        soft_wrap=True,
                    )
                bar.advance(task)
        say(
            _console(),
            f"{len(ids) - failed} of {len(ids)} session(s) written; "
            f"{pipeline.batches_written} batch(es); {len(ws.records())} record(s)",
        )
        if failed:
            raise typer.Exit(1)


@memory_app.command()
def watch(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit.")] = False,
    idle: Annotated[
        float, typer.Option(help="Seconds without new content before a session is written.")
    ] = 30 * 60,
    poll: Annotated[float, typer.Option(help="Seconds between passes.")] = 5 * 60,
    model: _MODEL = None,
    base_url: _BASE_URL = None,
) -> None:
    """Run the idle watcher in the foreground: a progress line per session, a summary per pass."""
    from memory.completion import writer_for
    from memory.pipeline import WritePipeline
    from memory.watcher import IdleWatcher

    with _errors():
        if idle < 0 or poll <= 0:
            raise ValueError("--idle must be 0 or more seconds and --poll more than 0 seconds")
        writer = writer_for(ctx.obj["config"], model=model, base_url=base_url)
        ws, store = _ws(ctx), _store(ctx)
        console = _console()
        pipeline = WritePipeline(ws, store, writer)
        bar = _progress(terminal_only=True)  # (each pass removes its task: nothing to keep)
        state: dict[str, TaskID] = {}

        def event(name: str, payload: dict[str, Any]) -> None:
            if name == "memory.ingest_started":
                sid = str(payload["session_id"])
                bar.update(state["task"], description=f"writing {markup(short_forms([sid])[sid])}")
            else:
                bar.advance(state["task"])

        watcher = IdleWatcher(store, pipeline, ws, idle=idle, poll=poll, on_event=event)
        stop = threading.Event()
        n = 0
        try:
            while not stop.is_set():
                n += 1
                with bar:
                    state["task"] = bar.add_task(f"pass {n}", total=None)
                    outcomes = watcher.poll_once()
                    bar.remove_task(state["task"])
                counts = {
                    k: sum(o.status == k for o in outcomes) for k in ("done", "failed", "retry")
                }
                console.print(
                    f"pass {n}: {len(outcomes)} idle session(s) attempted: {counts['done']} done, "
                    f"{counts['failed']} failed, {counts['retry']} to retry; "
                    f"{len(ws.records())} record(s)"
                )
                for o in outcomes:
                    if o.reason:
                        console.print(
                            f"  {markup(o.session_id)}: {markup(o.status)} {markup(o.reason)}"
                        )
                if once:
                    break
                stop.wait(poll)
        except KeyboardInterrupt:
            console.print("stopped")


@memory_app.command()
def status(ctx: typer.Context, full: _FULL = False, json: _JSON = False) -> None:
    """Show the workspace id, record and source counts, pending turns per session, last failure."""
    with _errors():
        show_status(_ws(ctx), _store(ctx), full=full, json=json)


@memory_app.command()
def reset(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Start a new workspace id: every session becomes pending again for memory.

    The old database is set aside (memory.<old-id>.db), not destroyed; other providers' markers
    are untouched.
    """
    import sys

    with _errors():
        ws = _ws(ctx)
        if not yes:
            if not sys.stdin.isatty():
                raise ValueError("reset: confirmation needs a terminal: pass --yes to reset")
            typer.confirm(
                f"Reset memory workspace {ws.id} ({len(ws.records())} records)? Every session "
                "becomes pending again",
                abort=True,
            )
        old = ws.id
        new = ws.reset()
        say(_console(), f"workspace {old} set aside; new workspace id {new}")

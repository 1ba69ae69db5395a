"""Rough edges of the command line a new user met: each one line on stderr and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph import SessionStore
from tests.clikit import by_launch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store holding one small Claude Code session."""
    from graph.importers import import_paths

    path = tmp_path / "s.db"
    store = SessionStore(path)
    try:
        import_paths(store, [EXAMPLE])
    finally:
        store.close()
    return path


@pytest.mark.parametrize(
    ("args", "closest"),
    [
        (["sessions", "--runtime", "claude"], "claude-code"),
        (["sessions", "--runtime=codx"], "codex"),
        (["sessions", "--runtime", "xyz"], None),
        (["search", "hello", "--runtime", "Claude-Code"], "claude-code"),
    ],
    ids=["sessions-prefix", "sessions-typo", "sessions-unlike", "search-case"],
)
def test_an_unknown_runtime_is_refused_naming_the_known_ones(
    db: Path,
    args: list[str],
    closest: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, err, code = by_launch(["--db", str(db), *args], capsys, monkeypatch)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "known runtimes: claude-code, pi, codex" in err
    assert ("did you mean" in err) == (closest is not None)
    if closest:
        assert f"did you mean {closest}?" in err


def test_a_known_runtime_still_filters(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, err, code = by_launch(
        ["--db", str(db), "sessions", "--runtime", "claude-code", "--json"], capsys, monkeypatch
    )
    assert code == 0 and err == ""
    assert '"runtime":"claude-code"' in out.replace(" ", "")
    out, err, code = by_launch(
        ["--db", str(db), "sessions", "--runtime", "pi"], capsys, monkeypatch
    )
    assert (code, out.strip()) == (0, "no sessions match")


def _with_password(url: str, password: str) -> str:
    """``url`` logging in with ``password`` instead of its own."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    user = parts.username or "postgres"
    return parts._replace(
        netloc=f"{user}:{password}@{parts.hostname}:{parts.port or 5432}"
    ).geturl()


def _unreachable_urls() -> list[tuple[str, str, str]]:
    """``(url, where, reason)``: nothing listening, and (with a test server) a refused login."""
    from tests.conftest import postgres_url

    urls = [("postgresql://nobody:s3cret-pw@127.0.0.1:1/none", "127.0.0.1:1", "Connection refused")]
    server = postgres_url()
    from urllib.parse import urlsplit

    parts = urlsplit(server)
    where = f"{parts.hostname}:{parts.port or 5432}"
    urls.append((_with_password(server, "s3cret-pw"), where, "password authentication failed"))
    unknown = urlsplit(server)._replace(path="/no_such_database_here").geturl()
    urls.append((unknown, where, 'database "no_such_database_here" does not exist'))
    return urls


def test_an_unreachable_postgresql_store_is_named_with_its_reason() -> None:
    pytest.importorskip("psycopg")
    from graph.errors import StoreBusyError, StoreConnectError
    from graph.store.postgres import PostgresSessionStore

    for url, where, reason in _unreachable_urls():
        with pytest.raises(StoreConnectError) as e:
            PostgresSessionStore(url)
        assert not isinstance(e.value, StoreBusyError), url
        assert e.value.where == where and reason in e.value.reason, e.value
        assert "s3cret-pw" not in str(e.value) and "busy" not in str(e.value)


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["sessions", "--json"],
        ["recent"],
        ["memory", "status"],
        ["search", "hello"],
        ["show", "abc"],
        ["import", str(EXAMPLE)],
        ["export", "abc", "-o", "out.jsonl"],
    ],
    ids=[
        "sessions",
        "sessions-json",
        "recent",
        "memory-status",
        "search",
        "show",
        "import",
        "export",
    ],
)
def test_every_command_says_it_cannot_connect_on_one_line(
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    for url, where, reason in _unreachable_urls():
        out, err, code = by_launch(["--db", url, *args], capsys, monkeypatch)
        assert code == 1 and out == "", (url, out)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(f"error: --db: cannot connect to {where}: "), err
        assert reason in lines[0] and "s3cret-pw" not in err and "busy" not in err


def test_export_session_refuses_to_write_over_what_is_not_a_bundle(
    db: Path, tmp_path: Path
) -> None:
    from graph.bundle import BundleError, ExportTargetError, export_session

    store = SessionStore(db)
    try:
        sid = store.sessions()[0].id
        transcript = tmp_path / "t.jsonl"
        transcript.write_text('{"type": "user"}\n')
        for target in (db, transcript, tmp_path):
            before = target.read_bytes() if target.is_file() else None
            with pytest.raises(ExportTargetError) as e:
                export_session(store, sid, target)
            assert isinstance(e.value, BundleError) and e.value.path == target
            assert (target.read_bytes() if target.is_file() else None) == before
        bundle = tmp_path / "s.sgbundle"
        size = export_session(store, sid, bundle)
        assert export_session(store, sid, bundle) == size  # a bundle is written over
    finally:
        store.close()


def test_export_refuses_the_store_itself_on_one_line(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = db.read_bytes()
    out, err, code = by_launch(["--db", str(db), "export", "…", "-o", str(db)], capsys, monkeypatch)
    assert code == 1 and out == ""
    assert err.strip() == f"error: -o {db}: exists and is not a session bundle; it is left as it is"
    assert db.read_bytes() == before


@pytest.mark.parametrize("columns", [20, 33, 48], ids=["20", "33", "48"])
def test_memory_status_keeps_ids_paths_and_counts_whole_when_narrow(
    db: Path, tmp_path: Path, columns: int
) -> None:
    from graph.terminal import short_forms
    from tests.clikit import console

    store = SessionStore(db)
    try:
        sessions = {s.id: s for s in store.sessions()}
    finally:
        store.close()
    ws = tmp_path / "a-workspace-folder-with-a-long-name"
    done = console("--db", str(db), "memory", "-w", str(ws), "status", columns=columns)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(str(ws) in line for line in lines), done.stdout
    header = next(line for line in lines if line.startswith("session"))
    assert header.split() == ["session", "pending", "title"], done.stdout
    for short in short_forms(sessions).values():
        row = next((line for line in lines if line.startswith(short + " ")), None)
        assert row is not None, f"{short} is not whole at the start of a row:\n{done.stdout}"
        assert row.split()[1].isdigit(), row  # its count, whole, beside it
    assert any("pending turn(s) in" in line for line in lines)


def test_a_failed_import_reads_as_a_sentence_and_keeps_its_class_in_json(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import msgpack

    from graph.bundle import export_session

    store = SessionStore(db)
    try:
        sid = store.sessions()[0].id
        export_session(store, sid, tmp_path / "ok.sgbundle", spawned=False)
    finally:
        store.close()
    data = msgpack.unpackb((tmp_path / "ok.sgbundle").read_bytes())
    node = data["sessions"][0]["nodes"][1]
    node["content"] = [{"type": "text", "text": "not what the store holds"}]
    bad = tmp_path / "changed.sgbundle"
    bad.write_bytes(msgpack.packb(data))
    out, err, code = by_launch(["--db", str(db), "import", str(bad)], capsys, monkeypatch)
    failed = [line for line in err.splitlines() if line.startswith("failed")]
    assert failed == [
        f"failed {bad}: node {node['id']!r} already exists in session {sid!r} with a different"
        " content (nothing of it was stored)"
    ], err
    out, err, code = by_launch(["--db", str(db), "import", str(bad), "--json"], capsys, monkeypatch)
    (report,) = json.loads(out)["files"]
    assert report["error"].startswith(f"DuplicateNodeError: node {node['id']!r} already exists")


def test_a_failure_naming_a_node_of_a_transcript_names_its_line(tmp_path: Path) -> None:
    from graph.errors import DuplicateNodeError
    from graph.importers.report import failure

    path = tmp_path / "t.jsonl"
    path.write_text('{"uuid": "u1"}\n{"uuid": "u2"}\n{"uuid": "u3"}\n')
    fr = failure(path, DuplicateNodeError("s/u2", "s", "content"))
    assert fr.error is not None and fr.error.startswith("DuplicateNodeError: ")
    assert fr.reason is not None and fr.reason.startswith("line 2: node 's/u2' already exists")


def test_the_undo_command_after_a_delete_is_whole_on_its_line(db: Path, tmp_path: Path) -> None:
    import json

    from tests.clikit import console

    base = ["--db", str(db), "memory", "-w", str(tmp_path / "ws")]
    assert console(*base, "write").returncode == 0
    listed = console(*base, "list", "--json")
    rid = json.loads(listed.stdout)[0]["id"]
    done = console(*base, "delete", rid, columns=80)
    assert done.returncode == 0, done.stderr
    hint = f"sessiongraph {' '.join(base)} undo {rid}"
    assert any(line.endswith(hint) for line in done.stdout.splitlines()), done.stdout


def test_forget_and_add_print_their_ids_whole(db: Path, tmp_path: Path) -> None:
    from tests.clikit import console

    store = SessionStore(db)
    try:
        agent = next(s for s in store.sessions() if s.parent_session)
        root = store.session(agent.parent_session or "")
        first = next(iter(store.index(root.id).pred))
    finally:
        store.close()
    base = ["--db", str(db), "memory", "-w", str(tmp_path / "ws")]
    assert console(*base, "write").returncode == 0
    added = console(*base, "add", "A fact.", "--cite", f"{root.id}/{first}", columns=40)
    assert added.returncode == 0, added.stderr
    assert any(ln.startswith("saved m-") and " in " in ln for ln in added.stdout.splitlines())
    done = console(*base, "forget", agent.id, "--yes", columns=80)
    assert done.returncode == 0, done.stderr
    assert any(f"forgot session {agent.id}: " in ln for ln in done.stdout.splitlines()), done.stdout

"""``sessiongraph memory`` end to end, in subprocesses, on a fresh temporary store and workspace.

import -> memory write -> search -> edit (--apply and $EDITOR) -> refused edit -> delete -> undo ->
status -> watch --once -> reset, on a hand-written fixture (always) and on a corpus transcript (when
the shared corpus is present).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "claude-code" / "rewind-damaged.jsonl"


class Cli:
    """Runs ``sessiongraph --db DB memory --workspace WS ...`` in a fresh interpreter."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "store.db"
        self.ws = tmp_path / "ws"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")} | {
            "COLUMNS": "200",
            "NO_COLOR": "1",
            "TERM": "dumb",
        }

    def raw(
        self, *args: str, env: dict[str, str] | None = None, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-c",
                "from graph.cli.commands import main; main()",
                "--db",
                str(self.db),
                *args,
            ],
            capture_output=True,
            text=True,
            env=self.env | (env or {}),
            input=stdin,
            timeout=120,
        )

    def memory(self, *args: str, ok: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
        proc = self.raw("memory", "--workspace", str(self.ws), *args, **kw)
        if ok:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.memory(*args, "--json").stdout)


def _scenario(tmp_path: Path, transcript: Path, word: str) -> None:
    cli = Cli(tmp_path)
    imported = cli.raw("import", str(transcript))
    assert imported.returncode == 0, imported.stderr

    status = cli.json("status")
    assert status["records"] == 0 and status["pending"]
    owed = sum(p["pending"] for p in status["pending"])

    wrote = cli.memory("write")
    assert "session(s) written" in wrote.stdout
    status = cli.json("status")
    assert status["pending"] == [] and status["records"] > 0
    assert status["sources"] >= owed

    records = cli.json("list")
    assert len(records) == status["records"]
    assert all(
        c["session_id"] and c["node_id"] and c["snippet"] for r in records for c in r["citations"]
    )
    target = next(r for r in records if word.lower() in r["content"].lower())
    rid = target["id"]

    found = cli.json("search", word)
    assert found["total"] >= 1 and rid in [h["record_id"] for h in found["hits"]]
    shown = cli.memory("search", word).stdout
    assert "match(es); page 1 of 1" in shown

    # Edit through --apply: one record's content changes, its citations stay.
    stage = tmp_path / "stage"
    cli.memory("export", "-o", str(stage))
    topic_file = stage / "topics" / f"{target['topic']}.md"
    lines = topic_file.read_text().split("\n")
    n = next(i for i, line in enumerate(lines) if line.endswith(f"^{rid}"))
    lines[n] = "Okapiwonder " + lines[n]
    topic_file.write_text("\n".join(lines))
    applied = cli.memory("edit", "--apply", str(stage))
    assert "applied: 1 topic(s) changed" in applied.stdout
    assert [h["record_id"] for h in cli.json("search", "okapiwonder")["hits"]] == [rid]
    after = cli.json("show", rid[-8:])
    assert after["citations"] == target["citations"]
    assert after["created_at"] == target["created_at"]

    # A broken edit (removed anchor) is refused at file:line and changes nothing.
    stage2 = tmp_path / "stage2"
    cli.memory("export", "-o", str(stage2))
    broken = stage2 / "topics" / f"{target['topic']}.md"
    text = broken.read_text()
    broken.write_text(text.replace(f" ^{rid}", ""))
    line = next(i for i, x in enumerate(text.split("\n"), 1) if x.endswith(f"^{rid}"))
    db_bytes = (cli.ws / "memory.db").read_bytes()
    refused = cli.memory("edit", "--apply", str(stage2), ok=False)
    assert refused.returncode == 1
    assert f"{broken}:{line}: RECORD_LOST" in " ".join(refused.stderr.split())
    assert (cli.ws / "memory.db").read_bytes() == db_bytes

    # Edit through $EDITOR (a script standing in for a person).
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\n"
        "for f in sys.argv[1:]:\n"
        "    t = open(f).read()\n"
        "    open(f, 'w').write(t.replace('Okapiwonder ', 'Quaggafound ', 1))\n"
    )
    edited = cli.memory("edit", env={"EDITOR": f"{sys.executable} {editor}"})
    assert "applied" in edited.stdout
    assert cli.json("search", "okapiwonder")["total"] == 0
    assert [h["record_id"] for h in cli.json("search", "quaggafound")["hits"]] == [rid]

    # Delete (gone from search at once), undo within the grace period.
    before_delete = cli.json("show", rid)
    deleted = cli.memory("delete", rid[-8:], "--grace", "3600")
    assert f"deleted {rid}" in deleted.stdout
    assert cli.json("search", "quaggafound")["total"] == 0
    assert rid not in [r["id"] for r in cli.json("list")]
    assert cli.json("status")["tombstones"] == 1
    restored = cli.memory("undo", rid[-8:])
    assert f"restored {rid}" in restored.stdout
    back = cli.json("show", rid)
    assert back == before_delete  # same id, timestamps, citations and place
    assert back["citations"] == target["citations"]
    assert [h["record_id"] for h in cli.json("search", "quaggafound")["hits"]] == [rid]

    # Deleted for good: nothing to undo.
    cli.memory("delete", rid, "--grace", "0")
    gone = cli.memory("undo", rid, ok=False)
    assert gone.returncode == 1 and "no deletion to undo" in gone.stderr

    watched = cli.memory("watch", "--once", "--idle", "0")
    assert "pass 1:" in watched.stdout

    # Reset: refused without confirmation, then a new id with every session pending again.
    old = cli.json("status")["workspace_id"]
    no = cli.memory("reset", ok=False, stdin="n\n")
    assert no.returncode == 1 and cli.json("status")["workspace_id"] == old
    cli.memory("reset", "--yes")
    fresh = cli.json("status")
    assert fresh["workspace_id"] != old and fresh["records"] == 0
    assert sum(p["pending"] for p in fresh["pending"]) == owed


def test_cli_end_to_end_on_a_fixture(tmp_path: Path) -> None:
    _scenario(tmp_path, FIXTURE, "Lisbon")


def test_cli_end_to_end_on_a_corpus_transcript(tmp_path: Path, corpus: Path) -> None:
    _scenario(tmp_path, corpus / "claude-code" / "ccl-dag-compact-after-rewind.jsonl", "compaction")


def test_cli_errors_and_caps(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    assert cli.raw("import", str(FIXTURE)).returncode == 0
    cli.memory("write")
    for args, message in [
        (("show", "nope"), "no record matches 'nope'"),
        (("search", "x" * 300), "MAX_QUERY_CHARS"),
        (("search", "x", "--per-page", "51"), "MAX_RESULTS_PER_PAGE"),
        (("undo", "nope"), "no deletion to undo"),
        (("edit",), "set $EDITOR"),
        (("write", "no-such-session"), "no-such-session"),
    ]:
        proc = cli.memory(*args, ok=False, env={"EDITOR": "", "VISUAL": ""})
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert message in " ".join(proc.stderr.split()), (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    page = cli.json("search", "Lisbon trip days", "--per-page", "1", "--page", "2")
    assert page["page"] == 2 and len(page["hits"]) == 1 and page["total"] >= 2


def test_default_workspace_comes_from_the_environment(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    proc = cli.raw(
        "memory", "status", "--json", env={"SESSIONGRAPH_MEMORY": str(tmp_path / "envws")}
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] == str(tmp_path / "envws")


def _written(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    assert cli.raw("import", str(FIXTURE)).returncode == 0
    cli.memory("write")
    return cli


def test_a_refused_edit_keeps_the_staging_copy_and_says_how_to_apply_it(tmp_path: Path) -> None:
    cli = _written(tmp_path)
    before = cli.json("list")
    breaker = tmp_path / "breaker.py"  # removes every record anchor: refused with RECORD_LOST
    breaker.write_text(
        "import re, sys\n"
        "for f in sys.argv[1:]:\n"
        "    t = open(f).read()\n"
        "    open(f, 'w').write(re.sub(r' \\^\\S+$', '', t, flags=re.M).replace('Lisbon', 'Porto'))\n"
    )
    refused = cli.memory("edit", ok=False, env={"EDITOR": f"{sys.executable} {breaker}"})
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    err = " ".join(refused.stderr.split())
    assert "RECORD_LOST" in err and "your edits are kept in" in err
    again = err.split("run: ", 1)[1].split()
    stage = Path(again[again.index("--apply") + 1])
    assert stage.is_dir() and "Porto" in "".join(p.read_text() for p in stage.rglob("*.md"))
    assert again[:2] == ["sessiongraph", "--db"] and again[3:6] == ["memory", "-w", str(cli.ws)]
    assert cli.json("list") == before  # nothing changed
    for f in (stage / "topics").rglob("*.md"):  # the user fixes the file: anchors back
        f.write_text(f.read_text())
    fixed = tmp_path / "fixed"
    cli.memory("export", "-o", str(fixed))
    for src in (fixed / "topics").rglob("*.md"):
        dst = stage / src.relative_to(fixed)
        dst.write_text(src.read_text().replace("Lisbon", "Porto"))
    applied = cli.memory("edit", "--apply", str(stage))
    assert "applied" in applied.stdout
    assert cli.json("search", "Porto")["total"] > 0
    shutil.rmtree(stage)


def test_an_editor_writing_bytes_that_are_not_utf8_gets_file_and_line(tmp_path: Path) -> None:
    cli = _written(tmp_path)
    editor = tmp_path / "latin1.py"
    editor.write_text(
        "import sys\n"
        "for f in sys.argv[1:]:\n"
        "    lines = open(f, 'rb').read().split(b'\\n')\n"
        "    lines[2] += b' caf\\xe9'\n"
        "    open(f, 'wb').write(b'\\n'.join(lines))\n"
    )
    refused = cli.memory("edit", ok=False, env={"EDITOR": f"{sys.executable} {editor}"})
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert re.search(r"\.md:3: MALFORMED: not UTF-8 \(byte 0xe9 at column \d+\)", refused.stderr)
    kept = re.search(r"kept in (\S+):", refused.stderr)
    assert kept and Path(kept.group(1)).is_dir()
    shutil.rmtree(kept.group(1))


def test_edit_apply_on_a_missing_folder_a_file_or_an_empty_folder(tmp_path: Path) -> None:
    cli = _written(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    file = tmp_path / "file.md"
    file.write_text("x")
    for target, why in (
        (tmp_path / "missing", "no such folder"),
        (file, "is a file, not a folder"),
        (empty, "holds no topic files"),
    ):
        p = cli.memory("edit", "--apply", str(target), ok=False)
        assert p.returncode == 1 and "Traceback" not in p.stderr
        assert f"error: {target}: {why}" in p.stderr and "RECORD_LOST" not in p.stderr


def test_the_undo_hint_repeats_db_and_workspace_as_given(tmp_path: Path) -> None:
    cli = _written(tmp_path)
    rid = cli.json("list")[0]["id"]
    deleted = cli.memory("delete", rid, "--grace", "3600")
    hint = deleted.stdout.split("with: ", 1)[1].split()
    assert hint == [
        "sessiongraph",
        "--db",
        str(cli.db),
        "memory",
        "-w",
        str(cli.ws),
        "undo",
        rid,
    ]
    undone = cli.raw(*hint[3:])  # run as printed (raw adds the same --db)
    assert undone.returncode == 0 and f"restored {rid}" in undone.stdout


def test_watch_once_writes_nothing_on_stderr_when_there_is_nothing_to_report(
    tmp_path: Path,
) -> None:
    """Off a terminal rich's progress bar left an empty line on stderr after every pass."""
    cli = Cli(tmp_path)
    empty = cli.memory("watch", "--once")
    assert "pass 1: 0 idle session(s)" in empty.stdout and empty.stderr == ""
    assert cli.raw("import", str(FIXTURE)).returncode == 0
    written = cli.memory("watch", "--once", "--idle", "0")
    assert "1 done" in written.stdout and written.stderr == ""

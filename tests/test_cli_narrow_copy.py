"""What is printed for copying (an id, a path, a URL, a token) is whole on one line at any width.

At ``COLUMNS=20`` rich wrapped ``export``'s bundle path and session id, the ``mcp --http`` URL and
token, ``memory write``'s session ids and ``import``'s failed path across lines, and cut the ids
of ``open``, ``memory status``, ``show``'s header and the ``pending`` and ``read`` titles with an
ellipsis. Those lines are now never wrapped by rich (the terminal wraps them, so a copy is whole).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph import SessionStore
from graph.importers import import_file
from tests.clikit import console
from tests.serverkit import EXAMPLE, SESSION

HEAD = "8418ead5-5ce3-41cc-8973-a8fc2222780d"
AGENT = f"{SESSION}/sidechain-30723333-d18d-40eb-88cd-5a2cf943ade5"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    store.close()
    return tmp_path / "s.db"


def _whole(text: str, *wanted: str) -> None:
    lines = text.splitlines()
    for w in wanted:
        assert any(w in line for line in lines), f"{w!r} is not whole on one line:\n{text}"


def test_ids_and_paths_are_whole_at_twenty_columns(db: Path, tmp_path: Path) -> None:
    base = ["--db", str(db)]
    bundle = tmp_path / "a-folder-with-a-long-name" / "session.sgbundle"
    bundle.parent.mkdir()
    done = console(*base, "export", SESSION, "-o", str(bundle), columns=20)
    assert done.returncode == 0, done.stderr
    _whole(done.stdout, str(bundle), SESSION)
    _whole(console(*base, "open", SESSION, columns=20).stdout, SESSION, HEAD)
    _whole(console(*base, "latest", SESSION, columns=20).stdout, HEAD)
    _whole(console(*base, "read", SESSION, columns=20).stdout, f"{SESSION}:")
    _whole(console(*base, "show", AGENT, "--full", columns=20).stdout, AGENT)
    pending = console(*base, "pending", SESSION, "--value", "my-workspace", columns=20).stdout
    _whole(pending, "pending for memory=my-workspace at …2222780d (the head)")
    ws = tmp_path / "a-workspace-folder-with-a-long-name"
    written = console(*base, "memory", "-w", str(ws), "write", columns=20)
    assert written.returncode == 0, written.stderr
    _whole(written.stdout + written.stderr, f"{AGENT}: wrote 2 pending turn(s)")
    status = console(*base, "memory", "-w", str(ws), "status", columns=20).stdout
    _whole(status, str(ws))
    bad = tmp_path / "another-folder-with-a-long-name" / "notes.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"hello": "world"}\n')
    failed = console(*base, "import", str(bad), columns=20)
    assert failed.returncode != 0
    _whole(failed.stderr, str(bad))


def test_the_mcp_http_url_and_token_are_whole_at_twenty_columns(db: Path, tmp_path: Path) -> None:
    token = "a-token-that-is-much-longer-than-twenty-columns"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from graph.cli.launch import main; main()",
            "--db",
            str(db),
            "mcp",
            "-w",
            str(tmp_path / "ws"),
            "--no-follow",
            "--http",
            "--port",
            "0",
            "--token",
            token,
        ],
        env=env | {"COLUMNS": "20", "NO_COLOR": "1", "TERM": "dumb"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    printed: list[str] = []
    try:
        for line in proc.stderr:  # ends if the command exits before printing its address
            printed.append(line)
            if "Bearer" in line:
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    url = next((ln for ln in printed if "http://" in ln), "")
    assert url.rstrip().endswith(f"/mcp?token={token}"), "".join(printed)
    assert printed[-1].rstrip().endswith(f"Authorization: Bearer {token}"), "".join(printed)

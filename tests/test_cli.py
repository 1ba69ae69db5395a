"""The graph's command line: sessions, show, pending, mark (human and --json output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from builder import build, chain
from typer.testing import CliRunner

from graph import SessionStore
from graph.cli.commands import app

runner = CliRunner()


def make(db: Path) -> str:
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 6), session="sess-1")
    st.mark(sid, ["m1", "m2"], "memory", "ws")
    st.rewind(sid, "m4")
    build(st, "m4-f1-f2", session=sid)
    st.compact(sid, ["m1", "m2"], "summary of the start", layout="inline", id="sum")
    st.close()
    return sid


def test_show_draws_forks_rewound_nodes_summaries_head_and_markers(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make(db)
    r = runner.invoke(app, ["--db", str(db), "show", "sess"], terminal_width=200)
    assert r.exit_code == 0, r.output
    out = r.output
    assert "fork" in out and "rewound" in out and "(covers 2)" in out
    assert [ln for ln in out.splitlines() if "◀ head" in ln] == [
        ln for ln in out.splitlines() if "summary of the start" in ln
    ]
    assert "✓memory=ws" in out
    assert "9 nodes, 1 roots, 1 forks, 2 rewound, 1 summaries" in out


def test_pending_and_mark_json(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = make(db)
    r = runner.invoke(app, ["--db", str(db), "pending", sid, "--value", "ws", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert [n["id"] for n in got[0]["pending"]] == ["m3", "m4", "f1", "f2"]
    r = runner.invoke(app, ["--db", str(db), "mark", sid, "--value", "ws", "--pending"])
    assert r.exit_code == 0 and "marked 4" in r.output
    r = runner.invoke(app, ["--db", str(db), "pending", sid, "--value", "ws", "--json"])
    assert json.loads(r.output)[0]["pending"] == []


def test_sessions_json_lists_most_recent_first(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make(db)
    st = SessionStore(db)
    st.create_session("later", id="sess-2")
    st.close()
    r = runner.invoke(app, ["--db", str(db), "sessions", "--json"])
    assert [s["id"] for s in json.loads(r.output)] == ["sess-2", "sess-1"]


def test_errors_are_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make(db)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "graph.cli.commands",
            "--db",
            str(db),
            "mark",
            "sess-1",
            "f2",
            "--value",
            "ws",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1
    assert "would leave its eligible ancestor" in p.stderr and "Traceback" not in p.stderr

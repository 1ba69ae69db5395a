"""What the command line shows: no terminal controls from transcripts, ids that can be copied back,
tables that stay readable at 80 and 200 columns, tool calls named, one JSON time format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graph import Role, SessionStore
from graph.terminal import short_forms, visible

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = FIXTURES / "claude-code" / "hostile-controls.jsonl"
HOSTILE_ID = "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f"
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture(autouse=True)
def _in_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run in a scratch directory: whatever one writes relative to it lands there."""
    monkeypatch.chdir(tmp_path)


def run(
    db: Path, *args: str, columns: int = 120, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"},
        timeout=120,
    )
    if ok:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_visible_keeps_newline_and_tab_and_shows_every_other_control() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07"
    assert visible("\x9b31m\x7f\r") == "\\x9b31m\\x7f\\x0d"
    assert not CONTROLS.search(
        visible("".join(map(chr, range(0xA0)))).replace("\n", "").replace("\t", "")
    )


def test_short_forms_are_unique_suffixes_of_at_least_eight() -> None:
    ids = ["01a22c91-e86b-7000-8b41-613159f7f74e", "01a22c91-e86b-7000-8b41-623159f7f74e", "m1"]
    got = short_forms(ids)
    assert got["m1"] == "m1"
    assert got[ids[0]] == "…13159f7f74e" and got[ids[1]] == "…23159f7f74e"
    assert len(set(got.values())) == 3


def test_a_hostile_transcript_reaches_no_terminal_as_controls(tmp_path: Path) -> None:
    db, ws = tmp_path / "s.db", str(tmp_path / "ws")
    outputs = [run(db, "import", str(HOSTILE), "--show")]
    for args in (
        ["sessions"],
        ["show", HOSTILE_ID],
        ["pending", HOSTILE_ID],
        ["read", HOSTILE_ID],
        ["recent"],
        ["open", HOSTILE_ID],
        ["latest", HOSTILE_ID],
        ["memory", "-w", ws, "write"],
        ["memory", "-w", ws, "list"],
        ["memory", "-w", ws, "search", "title"],
        ["memory", "-w", ws, "status"],
    ):
        outputs.append(run(db, *args))
    records = json.loads(run(db, "memory", "-w", ws, "list", "--json").stdout)
    assert records, "the memory writer wrote nothing to show"
    outputs.append(run(db, "memory", "-w", ws, "show", records[0]["id"]))
    for p in outputs:
        assert not CONTROLS.search(p.stdout + p.stderr), (p.args, p.stdout + p.stderr)
    shown = outputs[2].stdout
    assert "\\x1b]0;pwned\\x07" in shown and "\\x9b31m" in shown
    assert "[tool call Bash\\x9b2J] printf" in shown  # a tool call names its tool and input
    assert "[tool call Bash\\x9b2J]" in outputs[4].stdout


def _family(db: Path) -> tuple[str, str]:
    """A session with a long title and a sub-agent whose id is 85 characters long."""
    st = SessionStore(db)
    parent = st.create_session("a title long enough to need wrapping at eighty columns, " * 2)
    for i in range(3):
        st.append(parent.id, f"turn {i}", role=Role.USER)
    child_id = f"{parent.id}/agent-{'a1b2c3d4e5' * 4}12"
    assert len(child_id) == 85
    child = st.spawn(parent.id, st.session(parent.id).head or "", id=child_id, title="sub-agent")
    st.append(child.id, "task", role=Role.USER)
    st.close()
    return parent.id, child_id


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("command", ["sessions", "recent", "memory status"])
def test_tables_stay_readable_with_an_85_character_id(
    tmp_path: Path, columns: int, command: str
) -> None:
    db = tmp_path / "s.db"
    parent, child = _family(db)
    args = command.split()
    if args[0] == "memory":
        args[1:1] = ["-w", str(tmp_path / "ws")]
    out = run(db, *args, columns=columns).stdout
    lines = out.splitlines()
    # The workspace's id and folder are printed for copying: whole on their line, never folded.
    assert all(len(ln) <= columns for ln in lines if not ln.startswith(" workspace ")), out
    if args[0] == "memory":
        assert str(tmp_path / "ws") in out
    names = short_forms([parent, child])
    assert any(names[child] in ln for ln in lines), out  # the short form whole, on one line
    assert any(names[parent] in ln for ln in lines), out
    assert "title" in out and "a title long" in out
    wide = run(db, *args, "--full", columns=columns).stdout
    assert all(len(ln) <= columns for ln in wide.splitlines() if " workspace " not in ln), wide
    flat = re.sub(r"\s+", "", wide)
    if columns == 200:
        assert child in wide
    else:  # folded onto lines of its column, every character kept
        assert child[:12] in flat and child[-12:] in flat


def test_every_short_form_printed_is_accepted_back(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    parent, child = _family(db)
    names = short_forms([parent, child])
    listed = run(db, "sessions").stdout
    assert names[child] in listed
    assert child in run(db, "show", names[child]).stdout
    assert parent in run(db, "show", names[parent]).stdout
    assert parent in run(db, "show", parent[:10]).stdout  # a prefix names the parent
    tree = run(db, "show", parent, columns=200).stdout
    nodes = re.findall(r"user (\S+) turn", tree)
    assert len(nodes) == 3
    marked = run(db, "mark", names[parent], nodes[0], "--value", "ws")
    assert "marked 1 node(s)" in marked.stdout
    pend = run(db, "pending", parent, "--value", "ws", "--head", nodes[1], "--json").stdout
    assert [n["text"] for n in json.loads(pend)[0]["pending"]] == ["turn 1"]
    value = "0195a1b2-c3d4-7e5f-8000-00000000beef"
    run(db, "mark", parent, "--pending", "--value", value)
    assert f"✓memory={value}" in run(db, "show", parent, columns=200).stdout  # the whole value


def _times(data: Any, key: str = "") -> list[Any]:
    if isinstance(data, dict):
        return [t for k, v in data.items() for t in _times(v, k)]
    if isinstance(data, list):
        return [t for v in data for t in _times(v, key)]
    return [data] if key.endswith("_at") or key == "at" else []


def test_json_times_are_rfc3339_utc_everywhere(tmp_path: Path) -> None:
    db, ws = tmp_path / "s.db", str(tmp_path / "ws")
    run(db, "import", str(HOSTILE))
    run(db, "memory", "-w", ws, "write")
    seen: list[Any] = []
    for args in (
        ["sessions"],
        ["show", HOSTILE_ID],
        ["pending", HOSTILE_ID],
        ["recent"],
        ["open", HOSTILE_ID],
        ["read", HOSTILE_ID],
        ["latest", HOSTILE_ID],
        ["memory", "-w", ws, "list"],
        ["memory", "-w", ws, "status"],
    ):
        seen += _times(json.loads(run(db, *args, "--json").stdout))
    assert len(seen) > 20
    assert all(isinstance(t, str) and RFC3339.match(t) for t in seen if t is not None), seen

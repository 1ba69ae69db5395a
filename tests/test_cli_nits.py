"""What a new user tripped over: a prefix too short to expand, a hand-saved record's citation, the
import summary's per-session "new" count, and option placeholders in ``--help``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graph import Role, SessionStore
from graph.search import MIN_PREFIX, parse_query

REAL = Path(__file__).parent / "fixtures" / "real" / "claude-code"
PARENT = "258c7280-ae70-4798-800f-63464d01a85d"


def run(db: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    p = subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=env | {"COLUMNS": "160", "TERM": "dumb", "NO_COLOR": "1"},
        timeout=120,
    )
    if ok:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_a_short_prefix_is_read_as_its_word_with_a_note(tmp_path: Path) -> None:
    q = parse_query("re* retr* -xy*")
    assert [t.prefix for t in q.terms] == [False, True, False]
    assert len(q.notes) == 2 and "'re*'" in q.notes[0] and str(MIN_PREFIX) in q.notes[0]
    db = tmp_path / "s.db"
    store = SessionStore(db)
    sid = store.create_session("t").id
    store.append(sid, "re is a word here", role=Role.USER)
    store.append(sid, "retry the upload", role=Role.ASSISTANT)
    assert [h.snippet for h in store.search("re*")] == ["re is a word here"]
    assert len(store.search("ret*")) == 1
    store.close()
    p = run(db, "search", "re*")
    assert "1 hit(s)" in p.stdout
    assert "note: 're*' is read as the word 're'" in p.stderr


def test_a_hand_saved_record_shows_no_empty_citation_brackets(tmp_path: Path) -> None:
    db, ws = tmp_path / "s.db", str(tmp_path / "ws")
    SessionStore(db).close()
    saved = run(db, "memory", "-w", ws, "add", "we deploy on fridays").stdout
    rid = re.search(r"saved (\S+)", saved)
    assert rid
    shown = run(db, "memory", "-w", ws, "show", rid.group(1)).stdout
    listed = run(db, "memory", "-w", ws, "list").stdout
    for out in (shown, listed):
        assert "no turn cited" in out, out
        assert "session ," not in out and "( / )" not in out and ", )" not in out, out
    assert "[1] saved by hand (no turn cited)" in shown


def test_the_import_summary_counts_new_nodes_per_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = run(db, "import", str(REAL / f"{PARENT}.jsonl")).stdout
    data = json.loads(run(db, "sessions", "--json").stdout)
    nodes = {s["id"]: s["nodes"] for s in data}
    assert len(nodes) == 3, data
    rows = [ln.split() for ln in out.splitlines() if "…" in ln]
    parent_row = next(r for r in rows if r[0].startswith("…") and PARENT.endswith(r[0][1:]))
    # session, title words..., nodes, new, roots, forks, rewound, summ, spawn, skip
    assert parent_row[-8] == str(nodes[PARENT]) == parent_row[-7], parent_row
    again = run(db, "import", str(REAL / f"{PARENT}.jsonl")).stdout
    parent_row = next(
        ln.split() for ln in again.splitlines() if "…" in ln and ln.split()[0][1:] in PARENT
    )
    assert parent_row[-7] == "0"


@pytest.mark.parametrize(
    "command",
    [["mcp"], ["import"], ["mark"], ["memory", "add"], ["memory", "write"]],
    ids=" ".join,
)
def test_help_names_option_values_not_python_types(tmp_path: Path, command: list[str]) -> None:
    out = run(tmp_path / "s.db", *command, "--help").stdout
    options = [ln for ln in out.splitlines() if ln.lstrip().startswith("-")]
    assert options and not any("list[" in ln for ln in options), out

"""Option values that named something else than the user meant.

* ``--db ""`` (an unset ``$DB`` in a script) used the default store in the user data dir, so an
  import meant for a scratch file went into the user's own store; it is refused.
* ``~nouser/x`` (a user that does not exist) made ``--db`` end in an internal error and ``-w``
  create a folder literally named ``~nouser`` in the working directory; both are refused.
* ``import --watch --interval 1e400`` (infinite) ended in an internal error; the interval has a
  ceiling of a day.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "claude-code-session.jsonl"


def sessiongraph(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONGRAPH_")}
    env |= {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb", "HOME": str(cwd / "home")}
    return subprocess.run(
        [sys.executable, "-c", "from graph.cli.launch import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def _refused(p: subprocess.CompletedProcess[str], *needles: str, status: int = 1) -> None:
    assert p.returncode == status, (p.returncode, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "internal error" not in lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_an_empty_db_is_refused_and_the_default_store_untouched(tmp_path: Path) -> None:
    for args in (["import", str(EXAMPLE)], ["sessions"], ["recent"]):
        _refused(sessiongraph(tmp_path, "--db", "", *args), "--db", "empty")
    assert not (tmp_path / "home").exists()  # the user data dir lies under HOME


def test_a_home_of_no_user_is_refused(tmp_path: Path) -> None:
    _refused(sessiongraph(tmp_path, "--db", "~no-such-user-x/s.db", "recent"), "~no-such-user-x")
    p = sessiongraph(tmp_path, "memory", "-w", "~no-such-user-x/ws", "status")
    _refused(p, "~no-such-user-x")
    assert not (tmp_path / "~no-such-user-x").exists()


def test_an_infinite_watch_interval_is_a_usage_error(tmp_path: Path) -> None:
    p = sessiongraph(
        tmp_path, "--db", "s.db", "import", "--watch", "--interval", "1e400", str(EXAMPLE)
    )
    _refused(p, "--interval", status=2)

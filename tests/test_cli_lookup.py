"""The look-up commands (``sessiongraph recent|open|read|latest``) through the CLI, on a temporary store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graph import Kind, Role, SessionStore
from graph.cli.commands import app
from memory.cli.lookup import register

T0 = datetime(2026, 3, 1, tzinfo=UTC)
runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> dict[str, object]:
    """A store file with a 42-message session, a 3-message one, and an empty one, updated in that order."""
    register(app)
    path = tmp_path / "cli.db"
    store = SessionStore(path)
    long = store.create_session("long chat", created_at=T0).id
    for i in range(42):
        store.append(
            long,
            f"turn {i}",
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            created_at=T0 + timedelta(minutes=i),
        )
    short = store.create_session("short chat", created_at=T0 + timedelta(days=1)).id
    for i in range(3):
        store.append(
            short, f"hello {i}", role=Role.USER, created_at=T0 + timedelta(days=1, minutes=i)
        )
    store.append(
        short,
        "progress",
        role=Role.SYSTEM,
        kind=Kind.EVENT,
        created_at=T0 + timedelta(days=1, minutes=5),
    )
    empty = store.create_session("empty", created_at=T0 + timedelta(days=2)).id
    store.close()
    return {"path": path, "long": long, "short": short, "empty": empty}


def run(db: dict[str, object], *args: str) -> str:
    result = runner.invoke(app, ["--db", str(db["path"]), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_register_twice_adds_each_command_once() -> None:
    register(app)
    register(app)
    names = [c.name for c in app.registered_commands]
    for name in ("recent", "open", "read", "latest"):
        assert names.count(name) == 1


def test_recent_json_lists_newest_first_with_counts(db: dict[str, object]) -> None:
    rows = json.loads(run(db, "recent", "--json"))
    assert [r["id"] for r in rows] == [db["empty"], db["short"], db["long"]]
    assert [r["messages"] for r in rows] == [0, 3, 42]
    assert [len(r["live_tips"]) for r in rows] == [0, 1, 1]
    assert rows[1]["title"] == "short chat"
    assert json.loads(run(db, "recent", "--json", "--limit", "0"))[0]["id"] == db["empty"]


def test_recent_table(db: dict[str, object]) -> None:
    out = run(db, "recent")
    assert "3 session(s), most recently updated first" in out
    assert "msgs" in out and "42" in out


@pytest.mark.parametrize(
    ("args", "returned", "older"),
    [
        ((), 10, 32),
        (("--count", "0"), 1, 41),
        (("-n", "1"), 1, 41),
        (("--count", "30"), 30, 12),
        (("--count", "31"), 30, 12),
        (("--count", "-4"), 1, 41),
    ],
    ids=["missing", "zero", "one", "thirty", "thirty-one", "negative"],
)
def test_read_json_bounds(
    db: dict[str, object], args: tuple[str, ...], returned: int, older: int
) -> None:
    w = json.loads(run(db, "read", str(db["long"]), "--json", *args))
    # a fresh process reads the window back from the head: the older messages are not counted
    assert (w["returned"], w["total"], w["older"], w["count"]) == (returned, None, None, returned)
    assert w["older_omitted"] is True and "not returned" in w["note"]
    assert [m["text"] for m in w["messages"]] == [f"turn {i}" for i in range(older, 42)]
    assert w["next_before"] == w["messages"][0]["id"]
    assert w["session_id"] == db["long"]


def test_read_short_session_by_unique_prefix(db: dict[str, object]) -> None:
    w = json.loads(run(db, "read", str(db["short"])[:-4], "--json"))
    assert (w["returned"], w["total"], w["older_omitted"]) == (3, 3, False)
    assert "no older messages" in w["note"]


def test_read_table_says_older_messages_were_not_returned_and_pages_back(
    db: dict[str, object],
) -> None:
    out = run(db, "read", str(db["long"]), "--count", "5")
    assert "the newest 5 messages (older ones exist, not counted)" in " ".join(out.split())
    assert "older messages exist and were not returned" in " ".join(out.split())
    assert "turn 41" in out and "turn 36" not in out
    before = out.split("older: --before ")[1].split()[0]
    older = json.loads(run(db, "read", str(db["long"]), "-n", "5", "--before", before, "--json"))
    assert [m["text"] for m in older["messages"]] == [f"turn {i}" for i in range(32, 37)]
    # the short form the table prints (…last 8 characters) is accepted too
    again = json.loads(
        run(db, "read", str(db["long"]), "-n", "5", "--before", "…" + before[-8:], "--json")
    )
    assert again["messages"] == older["messages"]


def test_latest(db: dict[str, object]) -> None:
    node = json.loads(run(db, "latest", str(db["short"]), "--json"))
    assert node["text"] == "hello 2" and node["kind"] == "message"
    assert "turn 41" in run(db, "latest", str(db["long"]))
    assert json.loads(run(db, "latest", str(db["empty"]), "--json")) is None
    assert "has no messages" in run(db, "latest", str(db["empty"]))


def test_open(db: dict[str, object]) -> None:
    info = json.loads(run(db, "open", str(db["long"]), "--json"))
    assert info["title"] == "long chat" and info["messages"] == 42
    assert info["live_tips"] == [info["head"]]
    out = run(db, "open", str(db["short"]))
    assert "short chat" in out and "3 on the head's branch" in out


def test_unknown_session_in_a_subprocess_exits_1_with_the_reason(db: dict[str, object]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SESSIONGRAPH_DB"}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db["path"]),
            "read",
            "no-such-session",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "unknown session 'no-such-session'" in proc.stderr
    ok = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db["path"]),
            "read",
            str(db["short"]),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["total"] == 3

"""``import --langgraph postgresql://...`` names the database as the URL was given, password left out.

A report's path used to be a ``Path``, which folds the URL's ``//`` (``postgresql:/host/db``), and
the label dropped the user and the parameters. The database here is one that refuses the
connection (port 1 on the loopback), so the import fails and the report names it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from graph.importers.langgraph import postgres_label

pytest.importorskip("psycopg", reason="reading a PostgreSQL database needs sessiongraph[postgres]")


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("postgresql://user:secret@host:5433/db", "postgresql://user@host:5433/db"),
        ("postgres://host/db?sslmode=require", "postgres://host/db?sslmode=require"),
        (
            "postgresql://u@h/db?password=secret&sslmode=require",
            "postgresql://u@h/db?sslmode=require",
        ),
        ("postgresql://u:p%40ss@h1:5432,h2:5433/db", "postgresql://u@h1:5432,h2:5433/db"),
        ("postgresql://u:pw@[::1]:5432/db", "postgresql://u@[::1]:5432/db"),
        ("postgresql:///db?host=/run/postgresql", "postgresql:///db?host=/run/postgresql"),
    ],
    ids=["user", "password", "query", "query-password", "multi-host", "ipv6", "socket"],
)
def test_the_label_is_the_url_as_given_without_its_password(url: str, label: str) -> None:
    assert postgres_label(url) == label


def _import(tmp_path: Path, url: str, *more: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from graph.cli.commands import main; main()"]
    cmd += ["--db", str(tmp_path / "s.db"), "import", "--langgraph", url, *more]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_import_report_shows_the_url_as_given(tmp_path: Path) -> None:
    got = _import(tmp_path, "postgresql://user:secret@127.0.0.1:1/db", "--json")
    assert got.returncode == 1
    (file,) = orjson.loads(got.stdout)["files"]
    assert file["path"] == "postgresql://user@127.0.0.1:1/db"
    assert file["error"].startswith("TranscriptError: postgresql://user@127.0.0.1:1/db: ")
    assert "secret" not in got.stdout + got.stderr


def test_the_failed_line_names_the_url_as_given(tmp_path: Path) -> None:
    got = _import(tmp_path, "postgresql://user@127.0.0.1:1/db")
    assert got.returncode == 1
    assert "failed postgresql://user@127.0.0.1:1/db: " in " ".join(got.stderr.split())

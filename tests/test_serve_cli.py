"""`sessiongraph serve` as a process: it prints its URL with the token, serves, and warns off loopback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graph import SessionStore
from graph.importers import import_file
from graph.server.cli import is_loopback
from tests.serverkit import EXAMPLE, SESSION


def start(db: Path, ws: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    env = os.environ | {"SESSIONGRAPH_MEMORY": str(ws)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db),
            "serve",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"(http://\S+)", line)
    if m is None:
        proc.kill()
        raise AssertionError(
            f"no URL in {line!r}; stderr: {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, m.group(1)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    store = SessionStore(tmp_path / "s.db")
    import_file(store, EXAMPLE)
    store.close()
    return tmp_path / "s.db"


@pytest.fixture
def stop() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_serve_prints_a_loopback_url_with_its_token(
    db: Path, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    proc, url = start(db, tmp_path / "ws")
    stop.append(proc)
    assert url.startswith("http://127.0.0.1:") and "?token=" in url
    base, token = url.split("/?token=")
    # The URL is printed once the socket listens: connecting at once is answered, never refused.
    r = httpx.get(f"{base}/api/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=120)
    assert r.status_code == 200 and r.json()[0]["id"] == SESSION
    assert httpx.get(f"{base}/api/sessions").status_code == 401
    with httpx.Client(base_url=base, follow_redirects=True) as browser:
        page = browser.get(f"/memory?token={token}")  # the start URL's cookie, then the page
        assert page.status_code == 200 and "Topics" in page.text
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0


def test_binding_another_interface_warns_and_still_needs_the_token(
    db: Path, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    proc, url = start(db, tmp_path / "ws", "--host", "0.0.0.0")
    stop.append(proc)
    port = url.split(":")[2].split("/")[0]
    r = httpx.get(f"http://127.0.0.1:{port}/api/sessions", timeout=120)
    assert r.status_code == 401
    proc.send_signal(signal.SIGINT)
    proc.wait(10)
    assert proc.stderr is not None
    assert "warning: serving on 0.0.0.0" in proc.stderr.read()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "error: --port 70000"),
        (["--set", "oops"], "error: --set oops"),
        (
            ["--set", "memory.workpsace=/tmp/x"],
            "error: --set memory.workpsace: unknown setting (did you mean memory.workspace?); "
            "known settings: memory.core.inject, memory.recent.limit, memory.views, "
            "memory.workspace",
        ),
    ],
    ids=["port", "set", "unknown-key"],
)
def test_serve_mistakes_are_one_line(db: Path, args: list[str], message: str) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graph.cli.commands import main; main()",
            "--db",
            str(db),
            "serve",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().startswith(message) and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_is_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")

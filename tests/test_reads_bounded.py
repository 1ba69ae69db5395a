"""Bounded reads: ``read -n`` and ``latest`` walk back from the head instead of building the index."""

from __future__ import annotations

from pathlib import Path

import pytest
from builder import build, chain

from graph import NotOnBranchError, SessionStore, UnknownNodeError, UnknownSessionError
from graph.store.sqlite import SessionStore as SqliteStore
from memory.lookup import read_transcript


def _scenario(db: Path) -> tuple[str, list[str]]:
    """Forks, a rewind, both compaction layouts and event nodes on the head's branch."""
    st = SessionStore(db)
    sid = build(st, f"{chain('m', 1, 12)}; m4-f1-f2-f3; m8-g1-g2")
    st.set_head(sid, "m12")
    st.rewind(sid, "m10")
    st.append(sid, "after the rewind", role="user", id="r1")
    st.append(sid, "a progress entry", role="system", kind="event", id="ev1")
    st.append(sid, "and on", role="assistant", id="r2")
    st.compact(sid, ["m1", "m2", "m3"], "summary of m1..m3", id="s1")
    st.append(sid, "later", role="user", id="r3")
    st.compact(sid, ["f2", "f3"], "summary of f2..f3", layout="sibling", id="s2")
    st.append(sid, "on the sibling", role="assistant", id="s2a")
    st.set_head(sid, "r3")
    order = list(st.index(sid).pred)
    st.close()
    return sid, order


def test_the_cold_tail_equals_the_indexed_tail_from_every_head_and_before(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    sid, order = _scenario(db)
    warm = SessionStore(db)
    warm.index(sid)
    for head in [None, "r3", "s2a", "g2", "m12", "f1"]:
        branch = warm.message_ids(sid, head)
        for before in [None, *branch]:
            for count in (0, 1, 3, 30):
                want = warm.message_tail(sid, count, head, before)
                cold = SessionStore(db)
                got = cold.message_tail(sid, count, head, before)
                assert sid not in cold._cache  # answered without building the index
                cold.close()
                assert got.ids == want.ids and got.newer == want.newer
                assert want.older is not None
                if got.older is None:  # not counted: some older messages exist
                    assert want.older > 0
                else:
                    assert got.older == want.older
                end = len(branch) if before is None else branch.index(before)
                assert want.ids == branch[max(0, end - count) : end]


def test_the_tail_refuses_unknown_and_off_branch_nodes_cold(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid, _ = _scenario(db)
    other = SessionStore(db)
    build(other, "x1-x2", session="other")
    other.close()
    for make in (lambda: SessionStore(db), lambda: _warm(db, sid)):
        st = make()
        with pytest.raises(UnknownNodeError):
            st.message_tail(sid, 3, before="nope")
        with pytest.raises(UnknownNodeError):
            st.message_tail(sid, 3, before="x1")  # a node of another session
        with pytest.raises(NotOnBranchError):
            st.message_tail(sid, 3, before="g1")
        with pytest.raises(NotOnBranchError):
            st.message_tail(sid, 3, before="m11")  # rewound: on no branch
        with pytest.raises(UnknownNodeError):
            st.message_tail(sid, 3, head="nope")
        with pytest.raises(UnknownSessionError):
            st.message_tail("nope", 3)
        st.close()


def _warm(db: Path, sid: str) -> SessionStore:
    st = SessionStore(db)
    st.index(sid)
    return st


def test_a_cold_window_of_a_long_session_says_older_messages_were_not_counted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 50))
    st.close()
    cold = SessionStore(db)
    w = read_transcript(cold, sid, 10)
    assert [m.id for m in w.messages] == [f"m{i}" for i in range(41, 51)]
    assert w.total is None and w.older is None and w.older_omitted
    assert w.next_before == "m41"
    assert "older messages exist and were not returned (not counted" in w.note
    back = read_transcript(cold, sid, 30, w.next_before)
    assert [m.id for m in back.messages] == [f"m{i}" for i in range(11, 41)]
    assert back.newer == 10 and back.older is None
    first = read_transcript(cold, sid, 30, back.next_before)
    assert [m.id for m in first.messages] == [f"m{i}" for i in range(1, 11)]
    assert (first.total, first.older, first.newer, first.next_before) == (50, 0, 40, None)
    assert sid not in cold._cache
    warm = _warm(db, sid)
    exact = read_transcript(warm, sid, 10)
    assert (exact.total, exact.older) == (50, 40)
    assert exact.note.startswith("Returned messages 41-50 of 50; 40 older messages")
    short = read_transcript(SessionStore(db), sid, 30, "m20")  # the walk reaches the root
    assert (short.total, short.older, short.newer) == (50, 0, 31)


def test_read_and_latest_build_no_session_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from graph.cli.commands import app
    from memory.cli.lookup import register

    register(app)

    db = tmp_path / "s.db"
    st = SessionStore(db)
    sid = build(st, chain("m", 1, 40))
    st.close()

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the read built a session's index")

    monkeypatch.setattr(SqliteStore, "_index", refuse)
    monkeypatch.setattr(SqliteStore, "index", refuse)
    env = {"COLUMNS": "120"}
    r = CliRunner().invoke(app, ["--db", str(db), "read", sid, "-n", "3"], env=env)
    assert r.exit_code == 0, r.output
    assert "the newest 3 messages (older ones exist, not counted)" in " ".join(r.output.split())
    rows = [ln.replace("│", " ").split()[:2] for ln in r.output.splitlines() if "│ m" in ln]
    assert rows == [["-3", "m38"], ["-2", "m39"], ["-1", "m40"]]
    assert "older: --before m38" in r.output
    r = CliRunner().invoke(
        app, ["--db", str(db), "read", sid, "-n", "2", "--before", "m38"], env=env
    )
    assert r.exit_code == 0, r.output
    rows = [ln.replace("│", " ").split()[:2] for ln in r.output.splitlines() if "│ m" in ln]
    assert rows == [["-5", "m36"], ["-4", "m37"]]
    assert "older: --before m36" in r.output
    r = CliRunner().invoke(app, ["--db", str(db), "read", sid, "-n", "3", "--json"], env=env)
    assert r.exit_code == 0, r.output
    assert '"total": null' in r.output and '"older_omitted": true' in r.output
    r = CliRunner().invoke(app, ["--db", str(db), "latest", sid], env=env)
    assert r.exit_code == 0, r.output
    assert "m40" in r.output

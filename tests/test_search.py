"""Full-text search over what was said: both stores, the query language, filters, the migration."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graph import MemorySessionStore, SessionStore, TextBlock, ToolCallBlock, ToolResultBlock
from graph.errors import UnknownSessionError
from graph.search import parse_query, split_marked, tokens
from graph.store.base import BaseStore
from graph.store.sqlite import SCHEMA_VERSION

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _said(store: BaseStore, sid: str, *texts: str, role: str = "user") -> list[str]:
    ids = []
    for i, text in enumerate(texts):
        n = store.append(sid, text, role=role, created_at=T0 + timedelta(minutes=len(ids) + i))
        ids.append(n.id)
    return ids


def test_words_must_all_occur_and_ranking_prefers_more_matches(store: BaseStore) -> None:
    s = store.create_session("parsing")
    a, b, c = _said(
        store,
        s.id,
        "How do I parse JSON in Python?",
        "json json json: parse it with json.loads",
        "TOML is parsed by tomllib",
    )
    hits = store.search("parse json")
    assert [h.node_id for h in hits] == [b, a]
    assert all(h.session_id == s.id for h in hits)
    assert hits[0].rank <= hits[1].rank
    assert store.search("tomllib")[0].node_id == c
    assert store.search("yaml") == []


def test_phrase_prefix_exclusion_and_accents(store: BaseStore) -> None:
    s = store.create_session()
    a, b, c = _said(
        store, s.id, "use json loads here", "loads of json to use", "Café crème, naïve résumé"
    )
    assert [h.node_id for h in store.search('"json loads"')] == [a]
    assert {h.node_id for h in store.search("loa*")} == {a, b}
    assert [h.node_id for h in store.search("json -here")] == [b]
    assert [h.node_id for h in store.search("CAFE resume")] == [c]
    assert [h.node_id for h in store.search("naïve")] == [c]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "***",
        '"',
        '"unclosed phrase',
        "AND OR NOT",
        "NEAR(a b)",
        "col:umn",
        "(((",
        "a' OR 1=1 --",
        "-only -negatives",
        "^start",
        "\x00\x1b[2m",
    ],
    ids=repr,
)
def test_no_query_is_a_syntax_error(store: BaseStore, query: str) -> None:
    s = store.create_session()
    _said(store, s.id, "and or not near column start only negatives a 1")
    assert isinstance(store.search(query), list)


def test_snippet_is_one_plain_line_with_spans_of_the_matched_words(store: BaseStore) -> None:
    s = store.create_session()
    words = [f"w{i}" for i in range(40)]
    words[25] = "needle"
    _said(store, s.id, "\n".join(words) + "\x1b]0;title\x07")
    (hit,) = store.search("needle")
    assert "\n" not in hit.snippet and "\x1b" not in hit.snippet and "\x07" not in hit.snippet
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["needle"]
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet.split()) <= 14


def test_only_what_was_said_is_indexed(store: BaseStore) -> None:
    s = store.create_session()
    store.append(
        s.id,
        (ToolCallBlock(id="c1", name="grep", arguments={"q": "secretword"}),),
        role="assistant",
    )
    store.append(s.id, (ToolResultBlock(call_id="c1", text="secretword in file"),), role="tool")
    store.append(s.id, "secretword progress", role="system", kind="event")
    said = store.append(s.id, (TextBlock(text="the secretword is said"),), role="assistant")
    assert [h.node_id for h in store.search("secretword")] == [said.id]


def test_summaries_and_rewound_nodes_are_found_and_flagged(store: BaseStore) -> None:
    s = store.create_session()
    a, b = _said(store, s.id, "first question about sockets", "second about sockets")
    store.rewind(s.id, a)
    summary = store.compact(s.id, [a], "A talk about sockets and ports.")
    hits = {h.node_id: h for h in store.search("sockets")}
    assert set(hits) == {a, b, summary.id}
    assert hits[b].rewound and not hits[a].rewound
    assert hits[summary.id].kind.value == "summary"


def test_filters_session_with_its_spawns_since_runtime_project(store: BaseStore) -> None:
    cc = store.create_session(
        metadata={"runtime": "claude-code", "cwd": "/home/ada/proj/"}, created_at=T0
    )
    pi = store.create_session(
        metadata={"runtime": "pi", "header": {"cwd": "/home/ada/other"}}, created_at=T0
    )
    cx = store.create_session(
        metadata={"runtime": "codex", "session_meta": {"cwd": "/srv/proj"}}, created_at=T0
    )
    (root,) = _said(store, cc.id, "deploy the kettle early")
    (late,) = [
        store.append(
            cc.id, "deploy the kettle late", role="user", created_at=T0 + timedelta(days=3)
        ).id
    ]
    child = store.spawn(cc.id, root, created_at=T0)
    (sub,) = _said(store, child.id, "kettle deploy from a sub-agent")
    (p,) = _said(store, pi.id, "kettle deploy on pi")
    (c,) = _said(store, cx.id, "kettle deploy on codex")

    def ids(**kw: object) -> set[str]:
        return {h.node_id for h in store.search("kettle deploy", **kw)}  # type: ignore[arg-type]

    assert ids() == {root, late, sub, p, c}
    assert ids(session=cc.id) == {root, late, sub}
    assert ids(session=child.id) == {sub}
    assert ids(since=T0 + timedelta(days=1)) == {late}
    assert ids(runtime="pi") == {p}
    assert ids(project="/home/ada") == {root, late, sub, p}
    assert ids(project="/home/ada/proj") == {root, late, sub}
    assert ids(project="/home/ada/pro") == set()
    assert ids(project="/srv/proj", runtime="codex") == {c}
    with pytest.raises(UnknownSessionError):
        store.search("kettle", session="nope")
    assert [x.id for x in store.sessions(runtime="codex")] == [cx.id]
    assert {x.id for x in store.sessions(project="/home/ada")} == {cc.id, child.id, pi.id}
    assert {x.id for x in store.sessions(since=T0 + timedelta(days=1))} == {cc.id}


def test_limit_and_offset_page_through_hits(store: BaseStore) -> None:
    s = store.create_session()
    _said(store, s.id, *[f"page {i}" for i in range(25)])
    first = store.search("page", limit=10)
    second = store.search("page", limit=10, offset=10)
    rest = store.search("page", limit=10, offset=20)
    assert len(first) == 10 and len(second) == 10 and len(rest) == 5
    assert len({h.node_id for h in first + second + rest}) == 25
    assert len(store.search("page", limit=0)) == 1


def test_a_rolled_back_append_leaves_no_hit(store: BaseStore) -> None:
    s = store.create_session()
    with pytest.raises(RuntimeError), store.atomic():
        store.append(s.id, "ghost words", role="user")
        raise RuntimeError("abort")
    assert store.search("ghost") == []
    store.append(s.id, "ghost words", role="user")
    assert len(store.search("ghost")) == 1


def test_a_version_2_file_is_migrated_and_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    store = SessionStore(path)
    s = store.create_session(metadata={"runtime": "pi", "header": {"cwd": "/w"}})
    _said(store, s.id, "older words stored before the index")
    store.close()
    conn = sqlite3.connect(path)  # take the file back to the version 2 schema
    conn.executescript(
        "DROP TABLE import_files; DROP TABLE node_text; DROP TABLE node_text_queue; DROP TABLE flagged;"
        " DROP INDEX sessions_by_runtime; DROP INDEX sessions_by_project;"
        " ALTER TABLE sessions DROP COLUMN runtime; ALTER TABLE sessions DROP COLUMN project;"
        " UPDATE meta SET value='2' WHERE key='schema_version';"
    )
    conn.close()
    reopened = SessionStore(path)
    assert reopened.schema_version == SCHEMA_VERSION >= 3
    assert len(reopened.search("older words")) == 1
    assert [x.id for x in reopened.sessions(runtime="pi", project="/w")] == [s.id]


def test_a_file_written_by_version_1_gets_every_said_node_indexed(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "store" / "v1.db", path)
    store = SessionStore(path)
    said = [
        n
        for s in store.sessions()
        for n in store.nodes(s.id)
        if n.kind.value != "event" and any(t for t in tokens(n.text))
    ]
    assert said
    for n in said:
        first = tokens(n.text)[0]
        assert n.id in {h.node_id for h in store.search(first, limit=1000)}


_WORDS = st.sampled_from(["json", "parse", "café", "cafe", "Toml", "x1", "naïve", "ÉTÉ", "été"])
_TEXT = st.lists(
    st.one_of(_WORDS, st.sampled_from([" ", ", ", ".", "\n", "-", "_", "'"])), max_size=12
).map("".join)
_QUERY = st.lists(
    st.one_of(
        _WORDS,
        _WORDS.map(lambda w: w[:2] + "*"),
        _WORDS.map(lambda w: "-" + w),
        st.tuples(_WORDS, _WORDS).map(lambda p: f'"{p[0]} {p[1]}"'),
        st.sampled_from(["AND", "OR", "(", '"', "*", ":"]),
    ),
    max_size=4,
).map(" ".join)


@given(texts=st.lists(_TEXT, min_size=1, max_size=6), query=_QUERY)
def test_both_stores_find_the_same_nodes(texts: list[str], query: str) -> None:
    found = []
    for store in (SessionStore(":memory:"), MemorySessionStore()):
        s = store.create_session(id="s")
        for i, text in enumerate(texts):
            store.append(s.id, text or "-", role="user", id=f"n{i}", created_at=T0)
        found.append({h.node_id for h in store.search(query, limit=100)})
        store.close()
    assert found[0] == found[1]


@given(st.text(max_size=40))
def test_any_query_parses(query: str) -> None:
    parsed = parse_query(query)
    assert all(t.words for t in parsed.terms)


def test_split_marked_collapses_space_and_keeps_spans() -> None:
    plain, spans = split_marked("a\n\n\x02Big\x03  b\x02c\x03")
    assert plain == "a Big bc"
    assert [plain[x:y] for x, y in spans] == ["Big", "c"]

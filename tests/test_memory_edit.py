"""Editing memory as Markdown: the topic-file grammar read back, the round trip, refused edits at file:line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graph import MemorySessionStore, Role
from memory import MemoryWorkspace, Rejection, WritePipeline
from memory.editing import EditError, apply_edits, stage_topics
from memory.records import Citation, Record
from memory.topic_files import parse_topic, render_topic

QUESTIONS = ["configure the zebra parser", "rotate the nightly backups", "pin the numpy version"]
ANSWERS = ["pass --fast to it", "use the cron job at 02:00", "numpy stays below 2.0"]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[MemoryWorkspace]:
    """A workspace holding three records written from one session by the default writer."""
    store = MemorySessionStore()
    sid = store.create_session("chat").id
    for q, a in zip(QUESTIONS, ANSWERS, strict=True):
        store.append(sid, f"How do I {q}?", role=Role.USER)
        store.append(sid, f"You {a}.", role=Role.ASSISTANT)
    w = MemoryWorkspace(tmp_path / "ws")
    assert WritePipeline(w, store).write(sid, force=True) is None
    assert len(w.records()) == 3
    yield w
    w.close()


def _stage(ws: MemoryWorkspace, tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "stage"
    (file,) = stage_topics(ws, root)
    return root, file


def _line_no(text: str, needle: str) -> int:
    """1-based number of the first line containing ``needle``."""
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_round_trip_edit_one_record(ws: MemoryWorkspace, tmp_path: Path) -> None:
    before = {r.id: r for r in ws.records()}
    target = next(r for r in before.values() if "backups" in r.content)
    root, file = _stage(ws, tmp_path)
    text = file.read_text("utf-8")
    lines = text.split("\n")
    n = _line_no(text, "rotate the nightly backups") - 1
    lines[n] = lines[n].replace("rotate the nightly backups", "rotate the hourly snapshots")
    file.write_text("\n".join(lines))

    topics, changed = apply_edits(ws, root)

    assert changed == [target.id]
    assert topics == [target.topic]
    after = {r.id: r for r in ws.records()}
    assert after.keys() == before.keys()
    edited = after[target.id]
    assert "hourly snapshots" in edited.content
    assert edited.citations == target.citations  # the citations are kept, snippets and all
    assert edited.created_at == target.created_at
    assert [h.record_id for h in ws.search("snapshots")] == [target.id]
    assert ws.search("nightly") == []  # the snippet still says it, but snippets are not indexed
    for rid in before.keys() - {target.id}:
        assert after[rid] == before[rid]
    assert "hourly snapshots" in (ws.views_path / "topics" / f"{target.topic}.md").read_text()


def test_unchanged_staging_applies_nothing(ws: MemoryWorkspace, tmp_path: Path) -> None:
    root, _ = _stage(ws, tmp_path)
    revision = ws.revision
    assert apply_edits(ws, root) == ([], [])
    assert ws.revision == revision


def test_edit_adds_a_record_reorders_and_sets_tags(ws: MemoryWorkspace, tmp_path: Path) -> None:
    root, file = _stage(ws, tmp_path)
    lines = file.read_text("utf-8").split("\n")
    first = ws.records()[0]
    source = first.citations[0].source
    blocks = [n for n, line in enumerate(lines) if line.startswith("Asked:")]
    # Swap the first two records (two lines each: the request, the answer), tag the (new) first
    # one, and add a record citing an archived source.
    a, b = lines[blocks[0] : blocks[0] + 2], lines[blocks[1] : blocks[1] + 2]
    lines[blocks[0] : blocks[0] + 2], lines[blocks[1] : blocks[1] + 2] = b, a
    lines.insert(blocks[0], '<!-- record {"tags": ["ops", "a>b"], "time": "2026-01"} -->')
    footer = lines.index(next(x for x in lines if x.startswith("[^")))
    lines[footer:footer] = ["Backups live on the NAS [^new] [^n2]", ""]
    lines.append(f'[^new]: [where \\[1\\]](source:{source} "the \\"NAS\\" box")')
    lines.append(f'[^n2]: [again](source:{first.citations[1].source} "")')
    file.write_text("\n".join(lines))

    apply_edits(ws, root)

    recs = ws.records()
    assert [r.id for r in recs[:2]] == [ws.records()[0].id, first.id]
    assert recs[0].tags == ("ops", "a>b") and recs[0].time == "2026-01"
    new = recs[-1]
    assert new.content == "Backups live on the NAS"
    assert new.citations == (
        Citation(source, "where [1]", 'the "NAS" box'),
        Citation(first.citations[1].source, "again", ""),
    )
    assert [h.record_id for h in ws.search("NAS")] == [new.id]


def _remove_anchor(text: str, rid: str) -> tuple[str, str]:
    return text.replace(f" ^{rid}", ""), f"[^{rid}-2]"


def _remove_block(text: str, rid: str) -> tuple[str, str]:
    lines = text.split("\n")
    n = _line_no(text, f"^{rid}") - 1
    del lines[n - 1 : n + 2]  # the request line, the answer line with the anchor, the blank line
    kept = [x for x in lines if not x.startswith(f"[^{rid}-")]
    nxt = next(k for k in range(n - 1, len(kept)) if kept[k].startswith("Asked:"))
    return "\n".join(kept), kept[nxt + 1][:30]  # the next record's last line (its answer)


def _invent_citation(text: str, rid: str) -> tuple[str, str]:
    line = next(x for x in text.split("\n") if x.startswith(f"[^{rid}-1]:"))
    bad = line.split("source:")[0] + "source:s-00000000000000000000000000000000 " + '"x")'
    return text.replace(line, bad), "s-00000000000000000000000000000000"


def _mangle_footnote(text: str, rid: str) -> tuple[str, str]:
    line = next(x for x in text.split("\n") if x.startswith(f"[^{rid}-2]:"))
    return text.replace(line, line[:-1]), line[:-1]


def _undefined_ref(text: str, rid: str) -> tuple[str, str]:
    return text.replace(f"[^{rid}-2] ^{rid}", f"[^{rid}-2] [^{rid}-9] ^{rid}"), f"^{rid}"


def _unreferenced_note(text: str, rid: str) -> tuple[str, str]:
    return text.replace(f" [^{rid}-2] ^{rid}", f" ^{rid}"), f"[^{rid}-2]:"


def _text_after_anchor(text: str, rid: str) -> tuple[str, str]:
    return text.replace(f"^{rid}\n", f"^{rid}\nan afterthought\n"), "an afterthought"


def _unknown_anchor(text: str, rid: str) -> tuple[str, str]:
    fake = "m-" + "f" * 32
    return text.replace(f"^{rid}\n", f"^{fake}\n"), f"^{fake}"


def _secret(text: str, rid: str) -> tuple[str, str]:
    key = "sk-ant-api03-" + "A1b2C3d4" * 12
    return text.replace(f" [^{rid}-1]", f"\nmy key is {key} [^{rid}-1]"), "my key is"


def _too_long(text: str, rid: str) -> tuple[str, str]:
    # A content error is reported at the record's first line: put the words there.
    asked = "Asked: How do I rotate the nightly backups?"
    return text.replace(asked, f"{asked} {'word ' * 500}"), "word word"


def _dangling_link(text: str, rid: str) -> tuple[str, str]:
    link = "[[sessions/nowhere#^m-" + "0" * 32 + "]]"
    return text.replace(f" [^{rid}-1]", f" see {link} [^{rid}-1]"), "see [[sessions"


def _bad_title(text: str, rid: str) -> tuple[str, str]:
    first = text.split("\n")[0]
    return text.replace(first, "# another/topic"), "# another/topic"


BROKEN: list[tuple[str, Callable[[str, str], tuple[str, str]], Rejection]] = [
    ("removed-anchor", _remove_anchor, Rejection.RECORD_LOST),
    ("removed-block", _remove_block, Rejection.RECORD_LOST),
    ("invented-citation", _invent_citation, Rejection.UNKNOWN_SOURCE),
    ("mangled-footnote", _mangle_footnote, Rejection.MALFORMED),
    ("undefined-footnote-ref", _undefined_ref, Rejection.MALFORMED),
    ("unreferenced-footnote", _unreferenced_note, Rejection.MALFORMED),
    ("text-after-anchor", _text_after_anchor, Rejection.MALFORMED),
    ("unknown-anchor", _unknown_anchor, Rejection.UNKNOWN_RECORD),
    ("secret", _secret, Rejection.SECRET),
    ("over-cap", _too_long, Rejection.OVER_CAP),
    ("dangling-link", _dangling_link, Rejection.DANGLING_LINK),
    ("wrong-title", _bad_title, Rejection.MALFORMED),
]


@pytest.mark.parametrize(("name", "breaker", "reason"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_edit_is_refused_at_its_line_and_nothing_changes(
    ws: MemoryWorkspace,
    tmp_path: Path,
    name: str,
    breaker: Callable[[str, str], tuple[str, str]],
    reason: Rejection,
) -> None:
    rid = next(r.id for r in ws.records() if "backups" in r.content)
    root, file = _stage(ws, tmp_path)
    text, needle = breaker(file.read_text("utf-8"), rid)
    file.write_text(text)
    db_before = ws.db_path.read_bytes()
    views_before = {p: p.read_bytes() for p in ws.views_path.rglob("*") if p.is_file()}

    with pytest.raises(EditError) as info:
        apply_edits(ws, root)

    e = info.value
    assert e.reason is reason, str(e)
    assert e.path == str(file)
    assert e.line == _line_no(text, needle), str(e)
    assert str(e).startswith(f"{file}:{e.line}: {reason.value}: ")
    assert "A1b2C3d4" not in str(e)  # a secret's value never reaches the message
    assert ws.db_path.read_bytes() == db_before
    assert {p: p.read_bytes() for p in ws.views_path.rglob("*") if p.is_file()} == views_before


def test_stale_staging_is_refused(ws: MemoryWorkspace, tmp_path: Path) -> None:
    root, file = _stage(ws, tmp_path)
    (other_root, other) = tmp_path / "other", None
    (other,) = stage_topics(ws, other_root)
    other.write_text(other.read_text().replace("zebra", "okapi"))
    apply_edits(ws, other_root)  # someone else's edit installs first
    file.write_text(file.read_text().replace("numpy", "scipy"))
    with pytest.raises(EditError, match="render them again") as info:
        apply_edits(ws, root)
    assert info.value.path == str(root / "views.json")
    assert ws.search("scipy") == []


def test_removed_file_is_refused(ws: MemoryWorkspace, tmp_path: Path) -> None:
    root, file = _stage(ws, tmp_path)
    file.unlink()
    with pytest.raises(EditError) as info:
        apply_edits(ws, root)
    assert info.value.reason is Rejection.RECORD_LOST
    assert info.value.path == str(file)


def test_parse_reads_back_what_render_writes() -> None:
    """Every escape of the grammar survives a render -> parse round trip."""
    records = [
        Record(
            "m-1",
            "t/x",
            (),
            "plain one\n# not a heading\n[^not] a ref",
            (Citation("s-a", "l", "s"),),
        ),
        Record(
            "m-2",
            "t/x",
            ("Top", "Inner"),
            "<!-- not meta -->\n\\ back slash",
            (Citation("s-a", "lab]el [x]\\", 'quote " and\nnewline'), Citation("s-b", "two", "")),
            ("a>b", "ünï"),
            "2026-03-01 > noon",
        ),
        Record("m-3", "t/x", ("Top",), "back to a parent", (Citation("s-c", "c", "c"),)),
        Record(
            "m-4", "t/x", ("Top", "Inner"), "again inner ^caret [x]", (Citation("s-d", "d", "d"),)
        ),
    ]
    text = render_topic("t/x", records)
    parsed = parse_topic(text, "x.md", "t/x")
    got = parsed.change.records
    assert [r.memory_id for r in got] == ["m-1", "m-2", "m-3", "m-4"]
    for rec, back in zip(records, got, strict=True):
        assert back.content == rec.content
        assert back.headings == rec.headings
        assert back.tags == rec.tags
        assert back.time == rec.time
        assert tuple(Citation(s.source, s.label, s.snippet) for s in back.sources) == rec.citations
    assert parsed.record_lines[0] == _line_no(text, "^m-1")
    assert parsed.footnote_lines[1] == (_line_no(text, "[^m-2-1]:"), _line_no(text, "[^m-2-2]:"))

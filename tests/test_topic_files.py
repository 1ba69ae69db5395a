"""The topic files' grammar: whatever :func:`render_topic` writes, :func:`parse_topic` reads back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.records import Citation, Record
from memory.topic_files import parse_topic, render_topic

# Text a record line may hold: any printable characters (Markdown syntax, brackets, carets, hashes,
# backslashes, quotes and non-ASCII included), no line breaks.
_chars = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
# Pieces of the grammar itself, so lines that look like anchors, references, headings, footnotes and
# record comments are tried, not only random text.
_syntax = st.sampled_from(
    [
        " ^m-0a",
        " [^m-0a-1]",
        "# t",
        "## h",
        '[^x]: [l](source:s "q")',
        "<!-- record {} -->",
        "\\",
        "^",
        "#",
    ]
)
_piece = st.text(_chars, min_size=1, max_size=12) | _syntax
_line = (
    st.lists(_piece, min_size=1, max_size=4)
    .map("".join)
    .filter(lambda s: s.strip() == s and s != "")
)
_content = st.lists(_line, min_size=1, max_size=4).map("\n".join)
_hex = st.text("0123456789abcdef", min_size=32, max_size=32)
_citation = st.builds(
    Citation,
    source=st.text("0123456789abcdef", min_size=0, max_size=16),
    label=st.text(_chars, max_size=12),
    snippet=st.text(_chars, min_size=1, max_size=20),
)
_heading = st.text(_chars, min_size=1, max_size=12).filter(lambda s: s.strip() == s)


@st.composite
def _records(draw: st.DrawFn) -> list[Record]:
    ids = draw(st.lists(_hex, min_size=1, max_size=6, unique=True))
    out = []
    for i, h in enumerate(ids):
        out.append(
            Record(
                id=f"m-{h}",
                topic="projects/demo",
                headings=tuple(draw(st.lists(_heading, max_size=3))),
                content=draw(_content),
                citations=tuple(draw(st.lists(_citation, min_size=1, max_size=3))),
                tags=tuple(draw(st.lists(st.text(_chars, min_size=1, max_size=8), max_size=2))),
                time=draw(st.none() | st.text(_chars, min_size=1, max_size=10)),
                created_at=i,
                updated_at=i,
            )
        )
    return out


@given(_records())
def test_a_rendered_topic_parses_back_to_the_same_records(records: list[Record]) -> None:
    text = render_topic("projects/demo", records)
    parsed = parse_topic(text, "topics/projects/demo.md", "projects/demo").change
    assert parsed.topic_path == "projects/demo"
    assert len(parsed.records) == len(records)
    for rec, back in zip(records, parsed.records, strict=True):
        assert back.memory_id == rec.id
        assert back.content == rec.content
        assert back.headings == rec.headings
        assert back.tags == rec.tags
        assert back.time == rec.time
        assert [(s.source, s.label, s.snippet) for s in back.sources] == [
            (c.source, c.label, c.snippet) for c in rec.citations
        ]

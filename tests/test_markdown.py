"""The Memory page's reading view of Markdown: footnotes, anchors, code, escapes and the sanitizer."""

from __future__ import annotations

import re

import pytest

from memory.markdown import render_markdown, sanitize


def refs(html: str) -> list[str]:
    return re.findall(r'<sup class="footnote-ref"><a href="#fn-(\d+)"', html)


def notes(html: str) -> list[str]:
    section = html.split('<section class="footnotes">', 1)[1]
    return [
        re.sub(r"<[^>]+>|↩", "", li).strip()
        for li in re.findall(r"<li[^>]*>(.*?)</li>", section, re.S)
    ]


def test_named_footnotes_become_sequential_numbers_in_order_of_reference() -> None:
    html = render_markdown(
        "b [^zeta] then a [^alpha] and b again [^zeta]\n\n[^alpha]: first\n[^zeta]: second\n"
    )
    assert refs(html) == ["1", "2", "1"]
    assert notes(html) == ["second", "first"]
    assert "[^zeta]" not in html and "zeta" not in html and "alpha" not in html
    assert 'id="fn-ref-1-2"' in html  # the second reference to 1 has its own anchor


def test_continuation_lines_indented_two_spaces_belong_to_their_footnote() -> None:
    html = render_markdown("text [^n]\n\n[^n]: line one\n  line two\nnot part of it\n")
    assert notes(html) == ["line one\nline two"]
    body = html.split("<section", 1)[0]
    assert "not part of it" in body


def test_inline_footnotes_share_the_numbering() -> None:
    html = render_markdown("one [^a] two^[an inline note] three\n\n[^a]: named\n")
    assert refs(html) == ["1", "2"]
    assert notes(html) == ["named", "an inline note"]


def test_undefined_references_stay_literal() -> None:
    html = render_markdown("see [^missing] here")
    assert "[^missing]" in html and "footnotes" not in html


def test_block_anchors_are_hidden_and_record_comments_dropped() -> None:
    text = (
        '<!-- record {"tags": ["x"]} -->\nA fact [^m-1-1] ^m-0123abcd\n\n^standalone-id\n\n'
        '[^m-1-1]: [label](source:s-0123 "the snippet")\n'
    )
    html = render_markdown(text)
    for hidden in (
        "^m-0123abcd",
        "m-0123abcd",
        "standalone-id",
        "record {",
        "s-0123",
        "m-1-1",
        "source:",
    ):
        assert hidden not in html, hidden
    assert "A fact" in html and "label" in html and 'title="the snippet"' in html
    # an anchor needs Latin letters, digits and hyphens: anything else stays
    assert "^not_an_anchor" in render_markdown("x ^not_an_anchor")


@pytest.mark.parametrize(
    "text",
    [
        "`[^a] ^m-1` in a span\n\n[^a]: n\n",
        "```\n[^a] ^m-1\n```\n\n[^a]: n\n",
        "- item\n\n  ```\n  [^a] ^m-1\n  ```\n\n[^a]: n\n",
        "para\n\n    [^a] ^m-1\n\n[^a]: n\n",
    ],
    ids=["code-span", "fence", "list-fence", "indented"],
)
def test_code_stays_literal(text: str) -> None:
    html = render_markdown(text)
    assert "[^a] ^m-1" in html
    assert "footnote-ref" not in html


def test_escaped_syntax_stays_literal() -> None:
    html = render_markdown("\\[^a] and \\^[not inline]\n\n[^a]: n\n")
    assert "[^a]" in html and "^[not inline]" in html and "footnote-ref" not in html


def test_text_that_looks_like_internal_placeholders_is_just_text() -> None:
    html = render_markdown("footnote_ref fn-1 \x00 <sup>[1]</sup>")
    assert "&lt;sup&gt;[1]&lt;/sup&gt;" in html and "footnote-ref" not in html


def test_raw_html_and_scripts_never_pass() -> None:
    html = render_markdown(
        "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[x](javascript:alert(1))"
    )
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html


def test_the_sanitizer_keeps_the_allowed_and_drops_the_rest() -> None:
    out = sanitize(
        '<p onclick="x()">a <a href="http://e.org" onmouseover="y">l</a><iframe></iframe></p>'
    )
    assert out.startswith("<p>a ") and 'href="http://e.org"' in out
    assert "onclick" not in out and "onmouseover" not in out and "iframe" not in out


def test_two_previews_on_one_page_have_distinct_ids() -> None:
    a = render_markdown("x [^n]\n\n[^n]: y", id_prefix="core")
    b = render_markdown("x [^n]\n\n[^n]: y", id_prefix="preview")
    assert 'id="core-1"' in a and 'id="preview-1"' in b

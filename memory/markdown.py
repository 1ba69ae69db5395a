r"""Reading view of memory Markdown: topic files and the core block as safe HTML.

The topic files (grammar in :mod:`memory.topic_files`) use Obsidian-flavoured Markdown; the reading view
(the Memory page's preview) renders CommonMark through markdown-it with these additions:

* named footnotes ``[^id]`` become sequential superscripts ``[1]``, ``[2]``, ... in the order they are
  first referenced; a footnote referenced twice keeps its number; a reference to a footnote that is not
  defined stays literal text. The definitions are gathered into an ordered list after a rule at the
  end; a definition's continuation lines (indented by two spaces or more) belong to it;
* inline footnotes ``^[text]`` are numbered in the same sequence;
* a block anchor ``^block-id`` (Latin letters, digits and hyphens) at the end of a paragraph, or alone
  on a line, is hidden;
* ``<!-- ... -->`` comment lines (the record metadata) are hidden;
* ``[[topic#^record-id]]`` links show the topic's name only;
* code spans, fenced code and indented code stay literal, and so does backslash-escaped syntax
  (``\[^id]``);
* so no evidence id, record id or source id appears in the reading text: footnote labels are replaced
  by numbers and ``source:`` link targets are dropped by the sanitizer (the label stays, the snippet
  is the link's title).

Raw HTML in the Markdown is never passed through (markdown-it runs with ``html`` off), and the
generated HTML goes through one sanitizer, :func:`sanitize` (nh3, an allow-list of tags, attributes
and URL schemes), before it is returned. The editable text is never changed: this is a view.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.helpers import parseLinkLabel
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from graph.terminal import visible

__all__ = ["ALLOWED_TAGS", "render_markdown", "sanitize"]

ALLOWED_TAGS = frozenset(
    {
        "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "img",
        "li", "ol", "p", "pre", "section", "span", "strong", "sup", "ul",
    }
)  # fmt: skip
"""Tags the sanitizer keeps; every other tag is removed (its text kept, escaped)."""

_ATTRIBUTES = {
    "a": {"href", "title", "id", "class"},
    "sup": {"class", "id"},
    "li": {"id"},
    "section": {"class"},
    "span": {"class", "title"},
    "code": {"class"},
    "ol": {"class"},
    "img": {"src", "alt", "title"},
}

_LABEL = re.compile(r"\[\^([^\]\s]+)\]")
_DEF = re.compile(r"^\[\^([^\]\s]+)\]:[ \t]?(.*)$")
_ANCHOR = re.compile(r"(?:^|[ \t])\^[A-Za-z0-9-]+[ \t]*$")
_ANCHOR_ONLY = re.compile(r"^\^[A-Za-z0-9-]+$")
_COMMENT = re.compile(r"^<!--.*-->[ \t]*$")
_WIKI = re.compile(r"\[\[([^\]\n]+)\]\]")


def sanitize(html: str) -> str:
    r"""The one sanitizer every rendered fragment goes through (nh3: tags, attributes, URL schemes).

    Control and bidirectional formatting characters come out as visible escapes (``\x1b``,
    ``\u202e``: a right-to-left override would reorder the page's text after it); they are never
    markup.
    """
    return visible(
        nh3.clean(
            html,
            tags=set(ALLOWED_TAGS),
            attributes={k: set(v) for k, v in _ATTRIBUTES.items()},
            url_schemes={"http", "https", "mailto"},
            link_rel="noopener noreferrer",
            strip_comments=True,
        )
    )


def _line(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _comment_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.sCount[start] - state.blkIndent >= 4 or not _COMMENT.match(_line(state, start)):
        return False
    if not silent:
        state.line = start + 1
    return True


def _definition_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    m = _DEF.match(_line(state, start))
    if m is None:
        return False
    if silent:
        return True
    parts = [m.group(2)]
    line = start + 1
    while line < end:
        raw = state.src[state.bMarks[line] : state.eMarks[line]]
        if raw.strip() and state.sCount[line] - state.blkIndent >= 2:
            parts.append(raw.strip())
            line += 1
            continue
        break
    defs: dict[str, str] = state.env.setdefault("footnote_defs", {})
    defs.setdefault(m.group(1), "\n".join(parts))
    state.line = line
    return True


def _number(env: MutableMapping[str, Any], key: str) -> tuple[int, int]:
    """The footnote number of ``key`` and how many times it has been referenced before."""
    order: list[str] = env.setdefault("footnote_order", [])
    seen: dict[str, int] = env.setdefault("footnote_seen", {})
    if key not in seen:
        order.append(key)
        seen[key] = 0
    seen[key] += 1
    return order.index(key) + 1, seen[key]


def _ref_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("[^", pos):
        return False
    m = _LABEL.match(src, pos)
    if m is None or m.group(1) not in state.env.get("footnote_defs", {}):
        return False
    if not silent:
        n, k = _number(state.env, "named:" + m.group(1))
        tok = state.push("footnote_ref", "", 0)
        tok.meta = {"n": n, "k": k}
    state.pos = m.end()
    return True


def _inline_note_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("^[", pos):
        return False
    end = parseLinkLabel(state, pos + 1)
    if end < 0:
        return False
    if not silent:
        inline: list[str] = state.env.setdefault("footnote_inline", [])
        inline.append(src[pos + 2 : end])
        key = f"inline:{len(inline) - 1}"
        state.env.setdefault("footnote_defs_inline", {})[key] = src[pos + 2 : end]
        n, k = _number(state.env, key)
        tok = state.push("footnote_ref", "", 0)
        tok.meta = {"n": n, "k": k}
    state.pos = end + 1
    return True


def _wiki_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    m = _WIKI.match(state.src, state.pos)
    if m is None:
        return False
    if not silent:
        target = m.group(1).split("|", 1)
        shown = target[1] if len(target) == 2 else target[0].split("#", 1)[0]
        tok = state.push("wikilink", "", 0)
        tok.content = shown.strip() or "link"
    state.pos = m.end()
    return True


def _anchor_rule(state: StateCore) -> None:
    tokens = state.tokens
    drop: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.type != "inline" or not tok.children:
            continue
        if i == 0 or tokens[i - 1].type != "paragraph_open":
            continue
        last = tok.children[-1]
        if last.type != "text":
            continue
        if len(tok.children) == 1 and _ANCHOR_ONLY.match(last.content.strip()):
            drop.update((i - 1, i, i + 1))
            continue
        last.content = _ANCHOR.sub("", last.content)
    if drop:
        state.tokens = [t for j, t in enumerate(tokens) if j not in drop]


def _escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _make() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.block.ruler.before(
        "paragraph", "memory_comment", _comment_rule, {"alt": ["paragraph", "reference"]}
    )
    md.block.ruler.before(
        "reference", "footnote_def", _definition_rule, {"alt": ["paragraph", "reference"]}
    )
    md.inline.ruler.before("link", "footnote_ref", _ref_rule)
    md.inline.ruler.before("link", "footnote_inline", _inline_note_rule)
    md.inline.ruler.before("link", "wikilink", _wiki_rule)
    md.core.ruler.push("block_anchor", _anchor_rule)

    def footnote_ref(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        n, k = tokens[idx].meta["n"], tokens[idx].meta["k"]
        p = env.get("id_prefix", "fn")
        ref_id = f"{p}-ref-{n}" + (f"-{k}" if k > 1 else "")
        return f'<sup class="footnote-ref"><a href="#{p}-{n}" id="{ref_id}">[{n}]</a></sup>'

    def wikilink(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        return f'<span class="wikilink">{_escape(tokens[idx].content)}</span>'

    md.add_render_rule("footnote_ref", footnote_ref)
    md.add_render_rule("wikilink", wikilink)
    return md


_MD = _make()


def render_markdown(text: str, *, id_prefix: str = "fn") -> str:
    r"""Render memory Markdown to sanitized HTML (the rules are in the module doc).

    Args:
        text: The Markdown (a topic file, the core block, a draft).
        id_prefix: Prefix of the footnotes' element ids, so two previews on one page do not clash
            (Latin letters, digits and hyphens).

    Returns:
        HTML safe to insert into a page: the body, then (when any footnote is referenced)
        ``<section class="footnotes"><hr><ol>...</ol></section>``. Control and bidirectional
        formatting characters (terminal escapes, a right-to-left override) are shown as escapes
        (``\x1b``, ``\u202e``), as the command line shows them, so none reorders the page.
    """
    prefix = re.sub(r"[^A-Za-z0-9-]", "", id_prefix) or "fn"
    env: dict[str, Any] = {"id_prefix": prefix}
    body = _MD.render(text, env)
    order: list[str] = env.get("footnote_order", [])
    if order:
        defs: dict[str, str] = env.get("footnote_defs", {})
        inline: dict[str, str] = env.get("footnote_defs_inline", {})
        seen: dict[str, int] = env.get("footnote_seen", {})
        items = []
        for n, key in enumerate(order, 1):
            kind, _, name = key.partition(":")
            source = defs[name] if kind == "named" else inline[key]
            note_env: dict[str, Any] = {"id_prefix": f"{prefix}-{n}", "footnote_defs": {}}
            note = _MD.renderInline(source, note_env)
            backs = " ".join(
                f'<a href="#{prefix}-ref-{n}{"" if k == 1 else f"-{k}"}" class="footnote-back">↩</a>'
                for k in range(1, seen.get(key, 1) + 1)
            )
            items.append(f'<li id="{prefix}-{n}">{note} {backs}</li>')
        body += f'<section class="footnotes"><hr><ol>{"".join(items)}</ol></section>'
    return sanitize(body)

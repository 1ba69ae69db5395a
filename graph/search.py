"""Full-text search over what was said in the stored transcripts.

The text of a node is what a person or the model said: the text blocks of message and summary nodes
(tool calls, tool results, images and events are not indexed, so a search finds conversation, not
file dumps). Both stores tokenize the same way SQLite's FTS5 ``unicode61`` tokenizer does with
``remove_diacritics 2``: a token is a run of letters and digits, compared without case or accents.

A user's query is never a syntax error. It is read as:

- words, all of which must occur (``parse json``);
- ``"a quoted phrase"``, whose words must occur in that order, side by side;
- ``word*``, any token starting with ``word`` (at least three letters; ``wo*`` is read as ``wo``,
  with a note in :attr:`Query.notes`);
- ``-word``, which must not occur (ignored when nothing else is asked for).

Anything else (FTS5 operators, brackets, colons, stray quotes) is read as plain words. A query with no
words matches nothing.

Functions here are shared by both stores: :func:`parse_query` turns a query into terms,
:func:`fts_query` renders them for FTS5 with every term quoted, and :func:`make_snippet` and
:func:`split_marked` build the plain-text snippet (both stores cut it the same way) with the matched spans of a
:class:`~graph.models.SearchHit`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graph.models import Content, Kind, TextBlock

__all__ = [
    "MARK_END",
    "MARK_START",
    "MIN_PREFIX",
    "RANKED_CANDIDATES",
    "SNIPPET_TOKENS",
    "Query",
    "Term",
    "bm25",
    "doc_freqs",
    "fts_query",
    "indexed_text",
    "make_snippet",
    "matches",
    "parse_query",
    "split_marked",
    "tokens",
]

MARK_START = "\x02"
"""Put before a matched token in FTS5 snippets; never present in indexed text."""
MARK_END = "\x03"
"""Put after a matched token in FTS5 snippets."""

_TOKEN = re.compile(r"[^\W_]+")
_QUERY = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")
RANKED_CANDIDATES = 5_000
"""How many of the newest matching nodes a search ranks (bm25): a word found in most of a million
nodes costs ranking these, not all of them; rarer queries rank every match."""
MIN_PREFIX = 3
"""The fewest characters a ``prefix*`` needs to be expanded: FTS5 merges the match lists of every
word a prefix starts (``b*`` is most of the index), so a shorter one matches only the word itself."""
SNIPPET_TOKENS = 12
"""How many tokens a snippet shows around the match (FTS5's snippet token count)."""


def indexed_text(kind: Kind, content: Content) -> str:
    """Return the text a node contributes to the index: empty for events and non-text blocks.

    Control characters other than newline and tab are replaced by spaces, so indexed text (and every
    snippet cut from it) is safe to print and never holds the snippet markers.

    Args:
        kind: The node's kind; only message and summary nodes are indexed.
        content: The node's content (a string or a tuple of blocks).
    """
    if kind is Kind.EVENT:
        return ""
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(b.text for b in content if isinstance(b, TextBlock) and b.text)
    return _CONTROL.sub(" ", text).strip()


def _fold(token: str) -> str:
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """Return the tokens of ``text``, folded as the index compares them (no case, no accents)."""
    return [_fold(t) for t in _TOKEN.findall(text)]


@dataclass(frozen=True, slots=True)
class Term:
    """One part of a query: a phrase of one or more folded tokens."""

    words: tuple[str, ...]
    """Folded tokens that must occur in this order, side by side."""
    prefix: bool = False
    """The last token matches any token starting with it."""
    negated: bool = False
    """The phrase must not occur."""


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: the terms that must match and those that must not."""

    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()
    """What was read otherwise than written (a prefix too short to expand), for the user."""

    @property
    def positive(self) -> tuple[Term, ...]:
        """The terms that must occur."""
        return tuple(t for t in self.terms if not t.negated)

    @property
    def empty(self) -> bool:
        """True when nothing is asked for: such a query matches nothing."""
        return not self.positive


def parse_query(query: str) -> Query:
    """Read a user's query (see the module docstring); never raises.

    Args:
        query: What the user typed.

    Returns:
        The terms; a bare word holding punctuation (``foo.bar``) becomes a phrase of its tokens.
    """
    terms: list[Term] = []
    notes: list[str] = []
    for m in _QUERY.finditer(query):
        negated_phrase, phrase, word = m.group(1), m.group(2), m.group(3)
        if word is None:
            words = tuple(tokens(phrase or ""))
            if words:
                terms.append(Term(words, negated=bool(negated_phrase)))
            continue
        negated = word.startswith("-") and len(word) > 1
        body = word[1:] if negated else word
        prefix = body.endswith("*")
        words = tuple(tokens(body))
        if words and prefix and len(words[-1]) < MIN_PREFIX:
            prefix = False
            notes.append(
                f"{body!r} is read as the word {words[-1]!r}: a prefix needs at least "
                f"{MIN_PREFIX} letters"
            )
        if words:
            terms.append(Term(words, prefix=prefix, negated=negated))
    return Query(tuple(terms), tuple(notes))


def fts_query(query: Query) -> str:
    """Render ``query`` as an FTS5 MATCH expression with every token quoted.

    Raises:
        ValueError: the query is empty (check :attr:`Query.empty` first).
    """
    if query.empty:
        raise ValueError("an empty query matches nothing")

    def phrase(t: Term) -> str:
        body = '"' + " ".join(t.words) + '"'
        return body + "*" if t.prefix else body

    positive = " AND ".join(phrase(t) for t in query.positive)
    negative = "".join(f" NOT {phrase(t)}" for t in query.terms if t.negated)
    return f"({positive}){negative}" if negative else positive


def _term_at(term: Term, toks: Sequence[str], i: int) -> bool:
    n = len(term.words)
    if i + n > len(toks):
        return False
    for k, w in enumerate(term.words):
        t = toks[i + k]
        last = k == n - 1
        if not (t == w or (last and term.prefix and t.startswith(w))):
            return False
    return True


def _hits(term: Term, toks: Sequence[str]) -> list[int]:
    return [i for i in range(len(toks)) if _term_at(term, toks, i)]


def matches(query: Query, toks: Sequence[str]) -> bool:
    """Whether a node's folded tokens match ``query`` (the in-memory store's MATCH)."""
    if query.empty:
        return False
    if any(not _hits(t, toks) for t in query.positive):
        return False
    return not any(_hits(t, toks) for t in query.terms if t.negated)


def bm25(
    query: Query, toks: Sequence[str], doc_freq: dict[Term, int], docs: int, avg_len: float
) -> float:
    """Return FTS5's bm25 rank of one matching node: negative, and lower is a better match.

    Args:
        query: The parsed query.
        toks: The node's folded tokens.
        doc_freq: For each positive term, how many indexed nodes contain it.
        docs: How many nodes are indexed.
        avg_len: Their mean token count.
    """
    k1, b = 1.2, 0.75
    score = 0.0
    for term in query.positive:
        f = len(_hits(term, toks))
        n = doc_freq.get(term, 0)
        idf = max(math.log((docs - n + 0.5) / (n + 0.5)), 1e-6)
        score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(toks) / max(avg_len, 1.0)))
    return -score


def make_snippet(query: Query, text: str, width: int = SNIPPET_TOKENS) -> str:
    """Return FTS5-style snippet text with matched tokens between the markers.

    The window of ``width`` tokens starts a little before the first match; ``…`` marks cut text.
    The in-memory store uses this; SQLite's ``snippet()`` builds the same shape.
    """
    spans = [(m.start(), m.end(), _fold(m.group())) for m in _TOKEN.finditer(text)]
    folded = [s[2] for s in spans]
    marked: set[int] = set()
    for term in query.positive:
        for i in _hits(term, folded):
            marked.update(range(i, i + len(term.words)))
    first = min(marked, default=0)
    start = max(0, min(first - width // 4, len(spans) - width))
    end = min(len(spans), start + width)
    if not spans:
        return text
    out: list[str] = ["…"] if start > 0 else []
    pos = spans[start][0]
    for i in range(start, end):
        s, e, _ = spans[i]
        out.append(text[pos:s])
        out.append(MARK_START + text[s:e] + MARK_END if i in marked else text[s:e])
        pos = e
    if end < len(spans):
        out.append("…")
    else:
        out.append(text[pos:])
    return "".join(out)


def split_marked(snippet: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Turn a marked snippet into one line of plain text and the ``[start, end)`` spans matched.

    Runs of whitespace (newlines included) become one space.
    """
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    start = -1
    for piece in re.split(f"([{MARK_START}{MARK_END}])", _SPACE.sub(" ", snippet).strip()):
        if piece == MARK_START:
            start = length
        elif piece == MARK_END:
            if start >= 0 and length > start:
                spans.append((start, length))
            start = -1
        else:
            plain.append(piece)
            length += len(piece)
    return "".join(plain), tuple(spans)


def doc_freqs(query: Query, docs: Iterable[Sequence[str]]) -> dict[Term, int]:
    """Count, per positive term, the token lists that contain it."""
    out: dict[Term, int] = {t: 0 for t in query.positive}
    for toks in docs:
        for t in out:
            if _hits(t, toks):
                out[t] += 1
    return out

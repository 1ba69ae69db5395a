"""The caps on every input the memory layer accepts, as named constants, and the checks that enforce them.

Every cap is a cheap guard against a runaway writer or a careless paste: a write that goes over one is
refused whole with :class:`CapExceeded`, which names the cap, its limit, what was given and where. The
figures follow OpenWork's memory bank (content length, tag count
and length, citations per record, snippet length, query length and results per page are all bounded) and
the write pipeline (batches split by a token budget; ``core.md`` rendered under a token budget; session
look-up bounded to 30 sessions and a window of 1..30 messages, 10 by default).

Lengths are counted in characters (Python ``str`` length, i.e. code points), never bytes. Token figures
are model tokens as the memory layer estimates them.

Two budgets here are not input caps and never reject anything: :data:`MAX_BATCH_TOKENS` is where the write
pipeline cuts pending turns into batches, and :data:`CORE_TOKEN_BUDGET` limits what ``core.md`` renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import Final

from memory.errors import MemoryLayerError

__all__ = [
    "CAPS",
    "CORE_TOKEN_BUDGET",
    "DEFAULT_RESULTS_PER_PAGE",
    "LOOKUP_DEFAULT_MESSAGES",
    "LOOKUP_MAX_MESSAGES",
    "LOOKUP_MAX_SESSIONS",
    "MAX_BATCH_TOKENS",
    "MAX_CHANGES_PER_TRANSACTION",
    "MAX_CITATIONS_PER_RECORD",
    "MAX_HEADING_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_RECORD_CHARS",
    "MAX_RESULTS_PER_PAGE",
    "MAX_SNIPPET_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "CapExceeded",
    "check_count",
    "check_len",
    "check_range",
]

MAX_RECORD_CHARS: Final = 2_000
"""A record's content, in characters: one self-contained statement or short paragraph, not a document."""

MAX_HEADING_CHARS: Final = 120
"""A topic's heading (the topic file's title), in characters."""

MAX_TAGS: Final = 16
"""Tags on one record."""

MAX_TAG_CHARS: Final = 48
"""One tag, in characters."""

MAX_CITATIONS_PER_RECORD: Final = 8
"""Citations on one record (each names an archived source and carries a snippet)."""

MAX_SNIPPET_CHARS: Final = 500
"""A citation's snippet, in characters: an excerpt of the source, not a copy of it."""

MAX_QUERY_CHARS: Final = 256
"""A search query, in characters."""

MAX_RESULTS_PER_PAGE: Final = 50
"""Search or list results on one page; the total is reported beside the page."""

DEFAULT_RESULTS_PER_PAGE: Final = 10
"""Results on one page when the caller does not say."""

MAX_CHANGES_PER_TRANSACTION: Final = 200
"""Record changes (adds, updates, moves, deletes) installed by one transaction, a writer's or an edit's."""

MAX_BATCH_TOKENS: Final = 8_000
"""The token budget a write pass splits pending turns by; a budget, never a rejection."""

CORE_TOKEN_BUDGET: Final = 2_000
"""The token budget ``core.md`` is rendered under; it limits rendering, never a write."""

LOOKUP_MAX_SESSIONS: Final = 30
"""Sessions one recent-sessions look-up returns at most, most recently updated first."""

LOOKUP_MAX_MESSAGES: Final = 30
"""Messages one transcript read returns at most; larger counts are clamped to it."""

LOOKUP_DEFAULT_MESSAGES: Final = 10
"""Messages one transcript read returns when no count is given."""

CAPS: Final[Mapping[str, int]] = {
    "MAX_RECORD_CHARS": MAX_RECORD_CHARS,
    "MAX_HEADING_CHARS": MAX_HEADING_CHARS,
    "MAX_TAGS": MAX_TAGS,
    "MAX_TAG_CHARS": MAX_TAG_CHARS,
    "MAX_CITATIONS_PER_RECORD": MAX_CITATIONS_PER_RECORD,
    "MAX_SNIPPET_CHARS": MAX_SNIPPET_CHARS,
    "MAX_QUERY_CHARS": MAX_QUERY_CHARS,
    "MAX_RESULTS_PER_PAGE": MAX_RESULTS_PER_PAGE,
    "MAX_CHANGES_PER_TRANSACTION": MAX_CHANGES_PER_TRANSACTION,
    "MAX_BATCH_TOKENS": MAX_BATCH_TOKENS,
    "CORE_TOKEN_BUDGET": CORE_TOKEN_BUDGET,
    "LOOKUP_MAX_SESSIONS": LOOKUP_MAX_SESSIONS,
    "LOOKUP_MAX_MESSAGES": LOOKUP_MAX_MESSAGES,
    "LOOKUP_DEFAULT_MESSAGES": LOOKUP_DEFAULT_MESSAGES,
}
"""Every cap by its constant's name (what :class:`CapExceeded` reports as ``cap``)."""

_UNITS: Final[Mapping[str, str]] = {
    "MAX_RECORD_CHARS": "characters",
    "MAX_HEADING_CHARS": "characters",
    "MAX_TAG_CHARS": "characters",
    "MAX_SNIPPET_CHARS": "characters",
    "MAX_QUERY_CHARS": "characters",
    "MAX_TAGS": "tags",
    "MAX_CITATIONS_PER_RECORD": "citations",
    "MAX_RESULTS_PER_PAGE": "results",
    "MAX_CHANGES_PER_TRANSACTION": "changes",
    "MAX_BATCH_TOKENS": "tokens",
    "CORE_TOKEN_BUDGET": "tokens",
    "LOOKUP_MAX_SESSIONS": "sessions",
    "LOOKUP_MAX_MESSAGES": "messages",
    "LOOKUP_DEFAULT_MESSAGES": "messages",
}


class CapExceeded(MemoryLayerError, ValueError):
    """An input is over one of the caps; the write or query it belonged to was refused whole.

    Attributes:
        cap: The cap's constant name (``"MAX_RECORD_CHARS"``), a key of :data:`CAPS`.
        limit: The cap's value.
        got: The size given (characters, items or tokens, as the cap counts).
        where: What was measured, in the caller's words (``"record r-12 content"``).
    """

    def __init__(self, cap: str, limit: int, got: int, where: str) -> None:
        size = f"{got} {_UNITS[cap]}" if cap in _UNITS else str(got)
        super().__init__(f"{where}: {size} is over {cap} ({limit})")
        self.cap = cap
        self.limit = limit
        self.got = got
        self.where = where


def _limit(cap_name: str) -> int:
    try:
        return CAPS[cap_name]
    except KeyError:
        raise KeyError(f"no cap named {cap_name!r}; the caps are {sorted(CAPS)}") from None


def check_len(text: str, cap_name: str, where: str) -> str:
    """Refuse ``text`` if it has more characters than the cap allows.

    Args:
        text: The input.
        cap_name: A key of :data:`CAPS` (``"MAX_SNIPPET_CHARS"``).
        where: What the text is, for the error (``"citation 2 snippet"``).

    Returns:
        ``text`` unchanged, so a check reads as an assignment.

    Raises:
        CapExceeded: ``len(text)`` is over the cap.
        KeyError: ``cap_name`` is not a cap.
    """
    check_range(len(text), cap_name, where)
    return text


def check_count(items: Sized, cap_name: str, where: str) -> None:
    """Refuse a collection with more items than the cap allows (tags, citations, changes).

    Raises:
        CapExceeded: ``len(items)`` is over the cap.
        KeyError: ``cap_name`` is not a cap.
    """
    check_range(len(items), cap_name, where)


def check_range(value: int, cap_name: str, where: str) -> int:
    """Refuse a size or count over the cap (for sizes measured elsewhere, such as tokens or page sizes).

    Returns:
        ``value`` unchanged.

    Raises:
        CapExceeded: ``value`` is over the cap.
        KeyError: ``cap_name`` is not a cap.
    """
    limit = _limit(cap_name)
    if value > limit:
        raise CapExceeded(cap_name, limit, value, where)
    return value

"""Input caps (memory.caps): the named constants, CapExceeded's facts, and the check helpers."""

from __future__ import annotations

import pytest

import memory.caps as caps
from memory.caps import CAPS, CapExceeded, check_count, check_len, check_range

NAMES = [
    "MAX_RECORD_CHARS",
    "MAX_HEADING_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_CITATIONS_PER_RECORD",
    "MAX_SNIPPET_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS_PER_PAGE",
    "MAX_CHANGES_PER_TRANSACTION",
    "MAX_BATCH_TOKENS",
    "CORE_TOKEN_BUDGET",
    "LOOKUP_MAX_SESSIONS",
    "LOOKUP_MAX_MESSAGES",
    "LOOKUP_DEFAULT_MESSAGES",
]


def test_every_cap_is_a_positive_int_listed_in_caps_and_exported() -> None:
    for name in NAMES:
        value = getattr(caps, name)
        assert type(value) is int and value > 0, name
        assert CAPS[name] == value
        assert name in caps.__all__
    assert set(CAPS) == set(NAMES)


def test_the_figures_the_spec_fixes() -> None:
    assert caps.MAX_BATCH_TOKENS == 8000
    assert caps.CORE_TOKEN_BUDGET == 2000
    assert caps.LOOKUP_MAX_SESSIONS == 30
    assert caps.LOOKUP_MAX_MESSAGES == 30
    assert caps.LOOKUP_DEFAULT_MESSAGES == 10
    assert caps.DEFAULT_RESULTS_PER_PAGE <= caps.MAX_RESULTS_PER_PAGE
    assert caps.MAX_SNIPPET_CHARS < caps.MAX_RECORD_CHARS


def test_every_cap_is_documented_in_the_source() -> None:
    source = open(caps.__file__, encoding="utf-8").read()
    for name in NAMES:
        after = source.split(f"\n{name}: Final = ", 1)[1].split("\n", 2)
        assert after[1].startswith('"""'), f"{name} has no docstring"


@pytest.mark.parametrize(
    ("cap", "field"),
    [
        ("MAX_RECORD_CHARS", "record content"),
        ("MAX_HEADING_CHARS", "topic heading"),
        ("MAX_TAG_CHARS", "tag 1"),
        ("MAX_SNIPPET_CHARS", "citation 2 snippet"),
        ("MAX_QUERY_CHARS", "query"),
    ],
    ids=lambda v: v if v.startswith("MAX") else "",
)
def test_check_len_at_and_over_each_text_cap(cap: str, field: str) -> None:
    limit = CAPS[cap]
    at = "x" * limit
    assert check_len(at, cap, field) is at
    with pytest.raises(CapExceeded) as e:
        check_len("x" * (limit + 1), cap, field)
    err = e.value
    assert (err.cap, err.limit, err.got, err.where) == (cap, limit, limit + 1, field)
    assert isinstance(err, ValueError)
    assert str(err) == f"{field}: {limit + 1} characters is over {cap} ({limit})"


def test_check_len_counts_characters_not_bytes() -> None:
    text = "記" * caps.MAX_QUERY_CHARS
    assert len(text.encode()) > caps.MAX_QUERY_CHARS
    assert check_len(text, "MAX_QUERY_CHARS", "query") == text


@pytest.mark.parametrize(
    ("cap", "unit"),
    [
        ("MAX_TAGS", "tags"),
        ("MAX_CITATIONS_PER_RECORD", "citations"),
        ("MAX_CHANGES_PER_TRANSACTION", "changes"),
        ("MAX_RESULTS_PER_PAGE", "results"),
    ],
)
def test_check_count_at_and_over_each_count_cap(cap: str, unit: str) -> None:
    limit = CAPS[cap]
    check_count(range(limit), cap, "record r-1")
    with pytest.raises(CapExceeded) as e:
        check_count(list(range(limit + 1)), cap, "record r-1")
    assert (e.value.cap, e.value.limit, e.value.got) == (cap, limit, limit + 1)
    assert f"{limit + 1} {unit} is over {cap}" in str(e.value)


def test_check_range_returns_the_value_and_refuses_over() -> None:
    assert check_range(caps.MAX_BATCH_TOKENS, "MAX_BATCH_TOKENS", "batch") == 8000
    with pytest.raises(CapExceeded, match="8001 tokens is over MAX_BATCH_TOKENS"):
        check_range(8001, "MAX_BATCH_TOKENS", "batch")


def test_unknown_cap_name_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no cap named 'MAX_NOPE'"):
        check_len("x", "MAX_NOPE", "x")

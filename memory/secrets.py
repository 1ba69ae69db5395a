"""Credentials in text: found by kind and position, never repeated.

Memory is stored as plain text (whoever reads the workspace reads it; the one
defence is to never store a secret), so every record's content and every citation's snippet is
scanned before it is written, and a
write that carries a credential is refused naming the kind and where it is, never the value.

:func:`scan` returns :class:`SecretFinding` tuples (kind, start, end); :func:`check` raises
:class:`SecretError` for the first one. Neither ever holds the matched text, so neither can leak it into
a log, an error message or a traceback.

What is detected (the kind names are the :data:`KINDS` constants):

* provider keys by their documented prefixes: OpenAI (``sk-``, ``sk-proj-``), Anthropic (``sk-ant-``),
  AWS access key ids (``AKIA``/``ASIA``...) and AWS secret access keys where an ``aws...secret`` name
  stands before them, GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), GitLab
  (``glpat-``), Slack tokens (``xoxa-``/``xoxb-``/``xoxp-``/``xoxr-``/``xoxs-``) and webhooks, Google
  (``AIza``), Stripe secret and restricted keys (``sk_live_``, ``rk_live_``, and their ``_test_`` forms:
  a test key still opens the account's test mode; publishable ``pk_`` keys are public by design), Hugging
  Face (``hf_``), npm (``npm_``), PyPI (``pypi-``), and JSON Web Tokens (three base64url parts, the first
  two JSON objects);
* ``Bearer`` tokens (``Authorization: Bearer ...``);
* private keys: a ``-----BEGIN ... PRIVATE KEY-----`` armour line, through its ``END`` line when present
  (to the end of the text when not, since the key body follows);
* passwords in URLs (``scheme://user:password@host``);
* values assigned to a credential name (``api_key = ...``, ``"client_secret": "..."``, ``password: ...``)
  when the value looks random (a digit and a letter, at least 8 characters, not a placeholder);
* high-entropy tokens: a run of 32 or more base64/base64url characters with upper case, lower case and
  digits whose Shannon entropy reaches a length-dependent threshold set at about the 1st percentile of
  random base62 strings of that length (4.2 bits per character at 32 characters, rising to 4.8).

False positives, decided:

* Hexadecimal alone is never a high-entropy finding. Git commit ids (40 hex), SHA-256 digests (64 hex),
  content hashes and UUIDs fill agent transcripts and are identifiers, not credentials; a hex string is
  treated as a secret only where a credential name is assigned it (``secret_key = "9f86d08..."``).
  UUIDs and hex never match the high-entropy rule because it requires both letter cases.
* Placeholders are not secrets: ``user:password@host``, ``${DB_PASSWORD}``, ``<token>``, ``xxxx``,
  ``****`` and ``YOUR_API_KEY`` are left alone in URLs, assignments and bearer headers, and so are
  assigned values and bearer tokens without a digit (a password in a URL needs none: ``admin:letmein@``
  is found). Assigned values that are code, paths or URLs (``os.environ[...]``, ``/etc/...``) are left
  alone. AWS's documented example ids (ending in ``EXAMPLE``) are left alone too.
* Runtime ids (``toolu_...``, ``msg_...``, ``call_...``) and Stripe publishable keys (``pk_live_...``)
  are random-looking but not credentials, and are not high-entropy findings.
* Provider keys need a body that looks random (at least one digit and one letter), so prose such as
  ``sk-learn-is-a-python-library`` is not an OpenAI key.

Where patterns overlap, the more specific finding wins (a provider key inside a ``Bearer`` header is
reported once, as the provider key). The library ``detect-secrets`` was considered and not used: its
ad-hoc ``scan_line`` mutates process-wide settings, reports no column, carries the matched value in every
result (and writes it to its debug log when a filter skips it), and its entropy plugins only look inside
quoted strings; it would also bring ``requests`` and ``pyyaml`` along for one function.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Final, NamedTuple

from memory.errors import MemoryLayerError

__all__ = [
    "ANTHROPIC_API_KEY",
    "ASSIGNED_SECRET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "BASIC_AUTH",
    "BEARER_TOKEN",
    "GITHUB_TOKEN",
    "GITLAB_TOKEN",
    "GOOGLE_API_KEY",
    "HIGH_ENTROPY",
    "HUGGINGFACE_TOKEN",
    "JWT",
    "KINDS",
    "NPM_TOKEN",
    "OPENAI_API_KEY",
    "PRIVATE_KEY",
    "PYPI_TOKEN",
    "SLACK_TOKEN",
    "SLACK_WEBHOOK",
    "STRIPE_KEY",
    "URL_PASSWORD",
    "SecretError",
    "SecretFinding",
    "check",
    "entropy",
    "redacted",
    "scan",
]

PRIVATE_KEY: Final = "private_key"
ANTHROPIC_API_KEY: Final = "anthropic_api_key"
OPENAI_API_KEY: Final = "openai_api_key"
AWS_ACCESS_KEY_ID: Final = "aws_access_key_id"
AWS_SECRET_ACCESS_KEY: Final = "aws_secret_access_key"
GITHUB_TOKEN: Final = "github_token"
GITLAB_TOKEN: Final = "gitlab_token"
SLACK_TOKEN: Final = "slack_token"
SLACK_WEBHOOK: Final = "slack_webhook"
GOOGLE_API_KEY: Final = "google_api_key"
STRIPE_KEY: Final = "stripe_key"
HUGGINGFACE_TOKEN: Final = "huggingface_token"
NPM_TOKEN: Final = "npm_token"
PYPI_TOKEN: Final = "pypi_token"
JWT: Final = "jwt"
BEARER_TOKEN: Final = "bearer_token"
BASIC_AUTH: Final = "basic_auth"
URL_PASSWORD: Final = "url_password"
ASSIGNED_SECRET: Final = "assigned_secret"
HIGH_ENTROPY: Final = "high_entropy_token"

KINDS: Final = (
    PRIVATE_KEY,
    ANTHROPIC_API_KEY,
    OPENAI_API_KEY,
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    GITHUB_TOKEN,
    GITLAB_TOKEN,
    SLACK_TOKEN,
    SLACK_WEBHOOK,
    GOOGLE_API_KEY,
    STRIPE_KEY,
    HUGGINGFACE_TOKEN,
    NPM_TOKEN,
    PYPI_TOKEN,
    JWT,
    BEARER_TOKEN,
    BASIC_AUTH,
    URL_PASSWORD,
    ASSIGNED_SECRET,
    HIGH_ENTROPY,
)
"""Every kind :func:`scan` reports, most specific first (the order overlaps are resolved in)."""


class SecretFinding(NamedTuple):
    """Where a credential is in a text. It never holds the credential itself.

    ``text[start:end]`` is the credential (for a private key, the armoured block; for an assignment or a
    URL password, the value alone, not its name).
    """

    kind: str
    """One of :data:`KINDS`."""
    start: int
    """Offset of the first character, in characters (``str`` indices)."""
    end: int
    """Offset just past the last character."""


class SecretError(MemoryLayerError, ValueError):
    """A text to be stored carries a credential; nothing was written. The message never holds the value.

    Attributes:
        kind: The first finding's kind (one of :data:`KINDS`).
        start: Its start offset in the text, in characters.
        end: Its end offset (exclusive).
        line: The 1-based line it starts on.
        column: The 1-based column it starts at.
        where: What the text was (``"record r-12 content"``).
        findings: Every finding in the text, in order (kinds and positions only).
    """

    def __init__(self, where: str, findings: list[SecretFinding], text: str) -> None:
        first = findings[0]
        line = text.count("\n", 0, first.start) + 1
        column = first.start - (text.rfind("\n", 0, first.start) + 1) + 1
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        super().__init__(
            f"{where}: {first.kind.replace('_', ' ')} found at line {line}, column {column} "
            f"(characters {first.start}-{first.end}){more}; secrets are never stored in memory, "
            f"remove it and write again"
        )
        self.kind = first.kind
        self.start = first.start
        self.end = first.end
        self.line = line
        self.column = column
        self.where = where
        self.findings = findings


def entropy(token: str) -> float:
    """Return the Shannon entropy of ``token``'s characters, in bits per character (0.0 when empty)."""
    n = len(token)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values())


_PLACEHOLDER = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?      # ${DB_PASSWORD}, $TOKEN
      | \{\{?[^}]*\}\}?                     # {{ token }}, {password}
      | <[^>]*>                             # <token>
      | %\(?[A-Za-z_]*\)?s                  # %s, %(password)s
      | [xX*•.#_-]+                         # xxxx, ****
      | (?i:(?:your|my|the|some|a|an)?[_-]?(?:api[_-]?)?
            (?:password|passwd|pass|pwd|secret|token|key|credentials?|changeme|example|redacted|placeholder)
            (?:[_-]?here)?)
    )$""",
    re.VERBOSE,
)


def _looks_random(value: str) -> bool:
    """Whether a value could be a generated credential: a digit and a letter, and not a placeholder."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not _PLACEHOLDER.match(value)
    )


def _entropy_threshold(length: int) -> float:
    """Bits per character a run of ``length`` characters needs to count as random (see module doc)."""
    return min(4.2 + (length - 32) * 0.02, 4.8)


def _assigned_literal(value: str) -> bool:
    """Whether an assigned value is a literal that looks random (not code, a path or a placeholder)."""
    return (
        not any(c in value for c in "()[]{}$<>")
        and not value.startswith(("/", "~", "./", "../"))
        and "://" not in value
        and _looks_random(value)
    )


_NOT_SECRET_ID = re.compile(
    r"^(?:(?:toolu|srvtoolu|msg|msgbatch|req|agent_msg|call|resp|fc|rs|file|batch|run|thread|asst"
    r"|step|chatcmpl)[_-][A-Za-z0-9]{16,40}"
    r"|pk_(?:live|test)_[A-Za-z0-9]+)$"
)
"""Ids the model runtimes give tool calls, messages and requests (Anthropic, OpenAI), and Stripe's
publishable keys (public by design): random-looking, but not credentials."""


def _high_entropy(value: str) -> bool:
    return (
        not _NOT_SECRET_ID.match(value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and entropy(value.rstrip("=")) >= _entropy_threshold(len(value.rstrip("=")))
    )


def _basic_credentials(value: str) -> bool:
    """Whether a ``Basic`` header value decodes to ``user:password`` (RFC 7617)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and password) and not _PLACEHOLDER.match(password)


_DATA_URI = re.compile(r"data:[\w/+.-]+(?:;[\w=.-]+)*;base64,(?P<v>[A-Za-z0-9+/]+={0,2})")


def _not_example(value: str) -> bool:
    return not value.endswith("EXAMPLE")


class _Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] | None = None
    """A test on the matched value (group ``v`` when the pattern has one, else the whole match)."""


# Boundaries: a token starts where no token character precedes it and ends where none follows.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"
_CRED_NAME = (
    r"(?:(?i:api[_-]?key|apikey|access[_-]?key|secret[_-]?key(?:[_-]?base)?|private[_-]?key"
    r"|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token|secret|token|password"
    r"|passwd|passphrase|accountkey)"
    # An identifier ending in KEY, PASS or PWD after a separator or a camel-case hump
    # (APP_KEY, ENCRYPTION_KEY, DB_PASS, signingKey): "monkey" and "primary key" are not names.
    r"|[A-Za-z0-9][_-](?i:key|pass|pwd)|[a-z0-9](?:Key|Pass|Pwd))"
)

_RULES: Final = (
    _Rule(
        PRIVATE_KEY,
        re.compile(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
    ),
    _Rule(
        ANTHROPIC_API_KEY, re.compile(_B + r"sk-ant-(?P<v>[A-Za-z0-9_-]{20,})" + _E), _looks_random
    ),
    _Rule(
        OPENAI_API_KEY,
        re.compile(_B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<v>[A-Za-z0-9_-]{20,})" + _E),
        _looks_random,
    ),
    _Rule(
        AWS_ACCESS_KEY_ID,
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
        _not_example,
    ),
    _Rule(
        AWS_SECRET_ACCESS_KEY,
        re.compile(
            r"(?i:aws[A-Za-z0-9_.-]{0,20}secret[A-Za-z0-9_.-]{0,20})[\"']?\s*(?:[:=]|=>|\s)\s*[\"']?"
            r"(?P<v>(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=]))"
        ),
        lambda v: _looks_random(v) and "EXAMPLE" not in v,
    ),
    _Rule(
        GITHUB_TOKEN,
        re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E),
    ),
    _Rule(GITLAB_TOKEN, re.compile(_B + r"gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_-]{20,}" + _E)),
    _Rule(SLACK_TOKEN, re.compile(_B + r"xox[abprs]-(?P<v>[A-Za-z0-9-]{10,})" + _E), _looks_random),
    _Rule(
        SLACK_WEBHOOK,
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}"
        ),
    ),
    _Rule(GOOGLE_API_KEY, re.compile(_B + r"AIza[0-9A-Za-z_-]{35}" + _E)),
    _Rule(STRIPE_KEY, re.compile(_B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _E)),
    _Rule(HUGGINGFACE_TOKEN, re.compile(_B + r"hf_(?P<v>[A-Za-z0-9]{30,})" + _E), _looks_random),
    _Rule(NPM_TOKEN, re.compile(_B + r"npm_[A-Za-z0-9]{36}" + _E)),
    _Rule(PYPI_TOKEN, re.compile(_B + r"pypi-AgE[A-Za-z0-9_-]{50,}" + _E)),
    _Rule(
        JWT,
        re.compile(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}" + _E),
    ),
    _Rule(
        BEARER_TOKEN,
        re.compile(r"(?i:\bbearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])"),
        _looks_random,
    ),
    _Rule(
        BASIC_AUTH,
        re.compile(r"(?i:\bbasic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        _basic_credentials,
    ),
    _Rule(
        URL_PASSWORD,
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\"'<>]{0,256}"
            r":(?P<v>[^\s/?#@\"']{1,256})@[^\s@]"
        ),
        lambda v: not _PLACEHOLDER.match(v),
    ),
    _Rule(
        ASSIGNED_SECRET,
        re.compile(
            _CRED_NAME + r"[\"']?[ \t]*(?::|=|=>|:=)[ \t]*[\"']?"
            r"(?P<v>[^\s\"',;`]{8,})"
        ),
        _assigned_literal,
    ),
    _Rule(
        HIGH_ENTROPY,
        # ``=`` may come before the run (``APP_KEY=...``, ``X=...``), not inside it.
        re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_=-])"),
        _high_entropy,
    ),
)


def _findings(text: str) -> Iterator[SecretFinding]:
    for rule in _RULES:
        for m in rule.pattern.finditer(text):
            has_value = "v" in rule.pattern.groupindex
            if rule.accept is not None and not rule.accept(
                m.group("v") if has_value else m.group()
            ):
                continue
            if rule.kind in (
                URL_PASSWORD,
                ASSIGNED_SECRET,
                AWS_SECRET_ACCESS_KEY,
                BEARER_TOKEN,
                BASIC_AUTH,
            ):
                yield SecretFinding(rule.kind, m.start("v"), m.end("v"))
            else:
                yield SecretFinding(rule.kind, m.start(), m.end())


def scan(text: str) -> list[SecretFinding]:
    """Find the credentials in ``text``.

    Rules run most specific first (the order of :data:`KINDS`); a finding that overlaps one already made
    is dropped, so each credential is reported once, under its most specific kind.

    Args:
        text: Any text (a record's content, a citation's snippet, a query).

    Returns:
        The findings ordered by start offset; empty when the text carries no credential.
    """
    taken: list[SecretFinding] = []
    data = [m.span("v") for m in _DATA_URI.finditer(text)] if "base64," in text else []
    for f in _findings(text):
        if f.kind == HIGH_ENTROPY and any(a <= f.start and f.end <= b for a, b in data):
            continue  # the payload of a data: URI (an image), not a credential
        if not any(f.start < t.end and t.start < f.end for t in taken):
            taken.append(f)
    return sorted(taken, key=lambda f: (f.start, f.end))


def check(text: str, where: str) -> str:
    """Refuse ``text`` if it carries a credential.

    Args:
        text: The text about to be stored.
        where: What it is, for the error (``"record r-12 content"``, ``"citation 1 snippet"``).

    Returns:
        ``text`` unchanged.

    Raises:
        SecretError: naming the first finding's kind, line, column and offsets, never its value.
    """
    found = scan(text)
    if found:
        raise SecretError(where, found, text)
    return text


def redacted(text: str) -> tuple[str, list[SecretFinding]]:
    """Return ``text`` with every credential replaced by ``[redacted <kind>]``, and the findings.

    The findings' offsets are into ``text`` (the original), so they say where each credential was.
    """
    found = scan(text)
    for f in reversed(found):
        text = text[: f.start] + f"[redacted {f.kind}]" + text[f.end :]
    return text, found

"""The secret scanner (memory.secrets): every kind found at its position, near misses left alone, and the
value never in an error.

Fake credentials are assembled at run time from a seeded generator, so no credential-shaped literal sits in
the repository.
"""

from __future__ import annotations

import random
import string

import pytest

from memory import secrets
from memory.secrets import KINDS, SecretError, SecretFinding, check, entropy, scan

_rng = random.Random(20261130)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    """A random string with a character of every class (digit, upper, lower) its alphabet has."""
    classes = [f for f in (str.isdigit, str.isupper, str.islower) if any(f(c) for c in alphabet)]
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        if all(any(f(c) for c in s) for f in classes):
            return s


def b64url(n: int) -> str:
    return rand(n, ALNUM + "-_")


# (kind, text before, the credential, text after)
POSITIVES = [
    (secrets.OPENAI_API_KEY, "key is ", "sk-" + rand(48), " ok"),
    (secrets.OPENAI_API_KEY, "OPENAI ", "sk-proj-" + b64url(100), ""),
    (secrets.ANTHROPIC_API_KEY, "export X=", "sk-ant-api03-" + b64url(93) + "AA", "\n"),
    (secrets.AWS_ACCESS_KEY_ID, "id: ", "AKIA" + rand(16, UPPER_DIGITS), "."),
    (secrets.AWS_ACCESS_KEY_ID, "temp ", "ASIA" + rand(16, UPPER_DIGITS), ""),
    (secrets.AWS_SECRET_ACCESS_KEY, "aws_secret_access_key = ", rand(36) + "/+k9", ""),
    (secrets.AWS_SECRET_ACCESS_KEY, 'AWS_SECRET="', rand(40), '"'),
    (secrets.GITHUB_TOKEN, "token ", "ghp_" + rand(36), " used"),
    (secrets.GITHUB_TOKEN, "", "gho_" + rand(36), ""),
    (secrets.GITHUB_TOKEN, "pat: ", "github_pat_" + rand(22) + "_" + rand(59), ""),
    (secrets.GITLAB_TOKEN, "", "glpat-" + rand(20), ""),
    (
        secrets.SLACK_TOKEN,
        "bot ",
        "xoxb-" + rand(12, string.digits) + "-" + rand(12, string.digits) + "-" + rand(24),
        "",
    ),
    (secrets.SLACK_TOKEN, "", "xoxp-" + rand(40), ""),
    (
        secrets.SLACK_WEBHOOK,
        "post to ",
        "https://hooks.slack.com/services/T"
        + rand(8, UPPER_DIGITS)
        + "/B"
        + rand(8, UPPER_DIGITS)
        + "/"
        + rand(24),
        "",
    ),
    (secrets.GOOGLE_API_KEY, "maps key ", "AIza" + b64url(35), ""),
    (secrets.STRIPE_KEY, "", "sk_live_" + rand(24), ""),
    (secrets.STRIPE_KEY, "restricted ", "rk_live_" + rand(24), ""),
    (secrets.STRIPE_KEY, "", "sk_test_" + rand(24), ""),
    (secrets.HUGGINGFACE_TOKEN, "", "hf_" + rand(34), ""),
    (secrets.NPM_TOKEN, "//registry/:_authToken ", "npm_" + rand(36), ""),
    (secrets.PYPI_TOKEN, "", "pypi-AgEIcHlwaS5vcmc" + b64url(60), ""),
    (secrets.JWT, "cookie ", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + b64url(43), ";"),
    (secrets.BEARER_TOKEN, "Authorization: Bearer ", rand(40) + ".", "\n"),
    (secrets.BEARER_TOKEN, "curl -H 'authorization: bearer ", b64url(24), "'"),
    (secrets.BASIC_AUTH, "Authorization: Basic ", "ZGVwbG95OnMzY3JldC1wYXNz", "\n"),
    (
        secrets.PRIVATE_KEY,
        "key:\n",
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + rand(64)
        + "\n"
        + rand(64)
        + "\n-----END RSA PRIVATE KEY-----",
        "\nthanks",
    ),
    (secrets.PRIVATE_KEY, "", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + rand(70), ""),
    (
        secrets.PRIVATE_KEY,
        "",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + rand(64)
        + "\n-----END PGP PRIVATE KEY BLOCK-----",
        "",
    ),
    (
        secrets.URL_PASSWORD,
        "DATABASE_URL=postgres://app:",
        "s3cr3t-" + rand(6),
        "@db.internal:5432/app",
    ),
    (secrets.URL_PASSWORD, "clone https://bot:", "hunter2", "@git.example.com/x.git"),
    (secrets.URL_PASSWORD, "postgres://admin:", "letmein", "@db/app"),
    (secrets.ASSIGNED_SECRET, "api_key = '", rand(32, "0123456789abcdef"), "'"),
    (secrets.ASSIGNED_SECRET, '{"client_secret": "', rand(20), '"}'),
    (secrets.ASSIGNED_SECRET, "password: ", "Tr0ub4dor&3x", ""),
    (
        secrets.ASSIGNED_SECRET,
        "SECRET_KEY=",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "",
    ),
    (secrets.HIGH_ENTROPY, "the value was ", rand(40), " yesterday"),
    (secrets.HIGH_ENTROPY, "", rand(42, ALNUM + "+/") + "==", ""),
]


def _ids(case: tuple[str, str, str, str]) -> str:
    return case[0]


@pytest.mark.parametrize("case", POSITIVES, ids=[_ids(c) for c in POSITIVES])
def test_each_kind_is_found_where_it_is(case: tuple[str, str, str, str]) -> None:
    kind, before, value, after = case
    text = before + value + after
    found = scan(text)
    assert found == [SecretFinding(kind, len(before), len(before) + len(value))]


@pytest.mark.parametrize("case", POSITIVES, ids=[_ids(c) for c in POSITIVES])
def test_check_refuses_without_repeating_the_value(case: tuple[str, str, str, str]) -> None:
    kind, before, value, after = case
    text = "first line\n" + before + value + after
    with pytest.raises(SecretError) as e:
        check(text, "record r-7 content")
    err = e.value
    assert isinstance(err, ValueError)
    assert (err.kind, err.start, err.end) == (kind, 11 + len(before), 11 + len(before) + len(value))
    assert err.line == 2 + before.count("\n")
    assert err.where == "record r-7 content"
    message = str(err)
    assert kind.replace("_", " ") in message and "record r-7 content" in message
    assert f"line {err.line}, column {err.column}" in message
    for part in (value, value[:12], value[-12:]):
        assert part not in message
        assert part not in repr(err) and all(part not in str(a) for a in err.args)
    assert all(value not in repr(f) for f in err.findings)


def test_every_kind_has_a_positive_case() -> None:
    assert {c[0] for c in POSITIVES} == set(KINDS)


def test_every_kind_name_is_unique_and_exported() -> None:
    assert len(set(KINDS)) == len(KINDS)
    for kind in KINDS:
        assert kind in vars(secrets).values()


NEGATIVES = {
    "prose": "We agreed to move the staging database to Postgres 16 next Tuesday.",
    "git sha": "fixed in commit 3b41381c0a5e4f4cbd1e0f8c2d6b9a7e51f0c2d4 on main",
    "sha256 digest": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "md5": "checksum d41d8cd98f00b204e9800998ecf8427e",
    "uuid": "session 01a22c92-2874-7000-8148-8e4968be9325 and 550E8400-E29B-41D4-A716-446655440000",
    "runtime ids": "tool_use_id toolu_01A09q90qw90lq917835lq9X and msg_01XFDUDYJgAACzvnptvVoYEL",
    "camel case": "ThisIsAVeryLongCamelCaseIdentifierName and getUserAccountSettingsFromCache",
    "path": "/Users/AliceSmith/Projects/MyApp2/Sources/Main/App.swift",
    "url": "https://github.com/different-ai/openwork/blob/3b41381/apps/app/src/memory-view.tsx",
    "url with user only": "ssh://git@github.com/org/repo.git",
    "url placeholder password": "postgres://user:password@localhost/db and redis://:${REDIS_PASSWORD}@cache",
    "sk prose": "sk-learn-is-a-python-library-for-machine-learning",
    "bearer prose": "Bearer tokens go in the Authorization header: Bearer <token> or Bearer YOUR_ACCESS_TOKEN",
    "assigned placeholders": "api_key = os.environ['OPENAI_API_KEY']; password: changeme; token=<token>",
    "assigned code": "secret = get_secret(name2)  token: ${GITHUB_TOKEN2}",
    "max tokens": "max_tokens: 4096 and token_count=1200",
    "aws example id": "AKIAIOSFODNN7EXAMPLE is the documented example id",
    "publishable stripe": "pk_live_" + rand(24),
    "begin public key": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "short mixed token": "ref Ab3dEf9Hij2kLm",
    "hex key without a name": "0123456789abcdef0123456789abcdef0123456789abcdef",
    "chinese": "它存的是一条条明文句子，存在一张普通的 MySQL 表里，检索走的是全文索引的词面匹配。",
}


@pytest.mark.parametrize("text", NEGATIVES.values(), ids=NEGATIVES.keys())
def test_near_misses_are_not_secrets(text: str) -> None:
    assert scan(text) == []
    assert check(text, "snippet") is text


@pytest.mark.parametrize(
    "text",
    ["a" * 100_000, "sk-" * 30_000, "password:" * 10_000, "http://a:" * 10_000, "x-" * 50_000],
    ids=["one letter", "sk- prefixes", "names", "schemes", "dashes"],
)
def test_long_adversarial_inputs_scan_in_one_pass(text: str) -> None:
    # every pattern is anchored at a token start and bounded, so these finish at once; a pattern that
    # backtracks over the run (quadratic) would stall here for minutes
    assert scan(text) == []


def test_a_key_in_a_bearer_header_is_reported_once_as_the_provider_key() -> None:
    key = "sk-proj-" + b64url(60)
    text = f"Authorization: Bearer {key}"
    assert scan(text) == [SecretFinding(secrets.OPENAI_API_KEY, text.index(key), len(text))]


def test_several_secrets_are_all_found_in_order_and_counted_in_the_error() -> None:
    a, b = "ghp_" + rand(36), "AKIA" + rand(16, UPPER_DIGITS)
    text = f"first {a}\nthen {b}"
    found = scan(text)
    assert [f.kind for f in found] == [secrets.GITHUB_TOKEN, secrets.AWS_ACCESS_KEY_ID]
    assert [text[f.start : f.end] for f in found] == [a, b]
    with pytest.raises(SecretError, match=r"\(and 1 more\)") as e:
        check(text, "snippet")
    assert len(e.value.findings) == 2
    assert a not in str(e.value) and b not in str(e.value)


def test_anthropic_key_is_not_also_an_openai_key() -> None:
    text = "sk-ant-api03-" + b64url(95)
    assert [f.kind for f in scan(text)] == [secrets.ANTHROPIC_API_KEY]


def test_entropy() -> None:
    assert entropy("") == 0.0
    assert entropy("aaaa") == 0.0
    assert entropy("abcd") == pytest.approx(2.0)
    assert entropy(string.ascii_letters + string.digits + "+/") == pytest.approx(6.0)


def test_random_tokens_are_flagged_at_every_length_from_32() -> None:
    misses = sum(not scan(rand(n)) for n in range(32, 200) for _ in range(5))
    assert misses <= 8  # the threshold sits near the 1st percentile of random strings

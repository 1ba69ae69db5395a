"""Realistic credential forms, made from random values at import time (no real credential is stored).

:data:`FORMS` maps a form's name to ``(text, value)``: a line as it appears in a transcript (a ``.env``
line, a shell command, a config file, a header) and the credential inside it, which must never be
stored. :data:`ORDINARY` holds text that looks random but is not a credential.
"""

from __future__ import annotations

import base64
import json
import random
import string

__all__ = ["FORMS", "ORDINARY"]

_rng = random.Random(20251201)
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    """A random string with a digit, and both letter cases where the alphabet has them."""
    wanted = [
        group
        for group in (string.digits, string.ascii_uppercase, string.ascii_lowercase)
        if any(c in alphabet for c in group)
    ]
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        if all(any(c in group for c in s) for group in wanted):
            return s


def _hex(n: int) -> str:
    return "".join(_rng.choice("0123456789abcdef") for _ in range(n))


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _pw() -> str:
    return _r(6) + "!" + _r(5) + "*9"


_jwt = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': '1234567890', 'exp': 1767225600})}.{_r(43, _URLSAFE)}"
_pem_body = "\n".join(_r(64, _B64) for _ in range(6))
_sg = f"SG.{_r(22, _URLSAFE)}.{_r(43, _URLSAFE)}"
_azure = _r(86, _B64) + "=="
_basic = base64.b64encode(f"deploy:{_pw()}".encode()).decode()

_values: dict[str, tuple[str, str]] = {}


def _add(name: str, template: str, value: str) -> None:
    _values[name] = (template.format(v=value), value)


_add("laravel-app-key-base64", "APP_KEY=base64:{v}", _r(43, _B64) + "=")
_add("app-key-plain", "APP_KEY={v}", _r(32))
_add("rails-secret-key-base", "SECRET_KEY_BASE={v}", _hex(128))
_add("django-secret-key", "DJANGO_SECRET_KEY='{v}'", _r(20) + "%^&" + _r(27))
_add(
    "aws-access-key-id", "AWS_ACCESS_KEY_ID={v}", "AKIA" + _r(16, string.ascii_uppercase + "234567")
)
_add("aws-secret-access-key", "aws_secret_access_key = {v}", _r(40, _B64))
_add("aws-credentials-file", "[default]\naws_secret_access_key={v}", _r(40, _B64))
_add(
    "github-classic-token", "git clone https://github.com/acme/app.git # token {v}", "ghp_" + _r(36)
)
_add("github-fine-grained", "GH_TOKEN={v}", "github_pat_" + _r(22) + "_" + _r(59))
_add("github-oauth", "oauth: {v}", "gho_" + _r(36))
_add("gitlab-token", "export GITLAB_TOKEN={v}", "glpat-" + _r(20, _URLSAFE))
_add(
    "slack-bot-token",
    "SLACK_BOT_TOKEN={v}",
    f"xoxb-{_rng.randrange(10**11, 10**12)}-{_rng.randrange(10**12, 10**13)}-{_r(24)}",
)
_add(
    "slack-webhook",
    "curl -X POST {v} -d '{{}}'",
    f"https://hooks.slack.com/services/T{_r(8, string.ascii_uppercase + string.digits)}/B{_r(8, string.ascii_uppercase + string.digits)}/{_r(24)}",
)
_add("stripe-live-secret", "stripe.api_key = '{v}'", "sk_live_" + _r(24))
_add("stripe-restricted", "STRIPE_KEY={v}", "rk_live_" + _r(24))
_add("stripe-test-secret", "STRIPE_SECRET={v}", "sk_test_" + _r(24))
_add("jwt", "the session cookie was {v}", _jwt)
_add(
    "rsa-private-key",
    "{v}",
    f"-----BEGIN RSA PRIVATE KEY-----\n{_pem_body}\n-----END RSA PRIVATE KEY-----",
)
_add(
    "openssh-private-key",
    "{v}",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_pem_body}\n-----END OPENSSH PRIVATE KEY-----",
)
_add(
    "ec-private-key-unterminated",
    "cat key.pem\n{v}",
    f"-----BEGIN EC PRIVATE KEY-----\n{_pem_body}",
)
_add("postgres-url", "DATABASE_URL=postgres://app:{v}@db.internal:5432/app", _pw())
_add("mysql-url", "mysql://root:{v}@localhost/shop", _pw())
_add("redis-url-no-user", "REDIS_URL=redis://:{v}@cache:6379/0", _pw())
_add("amqp-url", "broker = amqp://guest:{v}@rabbit//", _pw())
_add("bearer-header", "Authorization: Bearer {v}", _r(40, _URLSAFE))
_add("curl-bearer", 'curl -H "Authorization: Bearer {v}" https://api.example.com/v1/me', _r(48))
_add("basic-auth-header", "Authorization: Basic {v}", _basic)
_add("env-database-password", "DATABASE_PASSWORD={v}", _pw())
_add("env-db-pass", "DB_PASS={v}", _pw())
_add("openai-project-key", "export OPENAI_API_KEY={v}", "sk-proj-" + _r(48, _URLSAFE))
_add("anthropic-key", "ANTHROPIC_API_KEY={v}", "sk-ant-api03-" + _r(93, _URLSAFE) + "AA")
_add("google-api-key", "maps key {v}", "AIza" + _r(35, _URLSAFE))
_add("huggingface-token", "HF_TOKEN={v}", "hf_" + _r(34))
_add("npm-token", "//registry.npmjs.org/:_authToken={v}", "npm_" + _r(36))
_add("pypi-token", "password = {v}", "pypi-AgEIcHlwaS5vcmc" + _r(60, _URLSAFE))
_add("json-client-secret", '{{"client_id": "web", "client_secret": "{v}"}}', _r(40, _URLSAFE))
_add("yaml-password", "db:\n  password: {v}\n", _pw())
_add("hex-api-key", 'api_key = "{v}"', _hex(32))
_add("encryption-key-hex", "ENCRYPTION_KEY={v}", _hex(64))
_add("access-token-query", "GET https://api.example.com/v1/items?access_token={v}&page=2", _r(40))
_add("mailgun-key", "MAILGUN_API_KEY={v}", "key-" + _hex(32))
_add("sendgrid-key", "SENDGRID_API_KEY={v}", _sg)
_add("twilio-auth-token", "TWILIO_AUTH_TOKEN={v}", _hex(32))
_add(
    "azure-connection-string",
    "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net",
    _azure,
)
_add(
    "gcp-service-account",
    '{{"type": "service_account", "private_key": "{v}"}}',
    "-----BEGIN PRIVATE KEY-----\\n" + _r(64, _B64) + "\\n-----END PRIVATE KEY-----\\n",
)
_add("random-after-equals", "the generated value was X={v}", _r(40))

FORMS: dict[str, tuple[str, str]] = _values
"""name -> (text as it appears in a transcript, the credential in it)."""

_png = base64.b64encode(bytes(_rng.randrange(256) for _ in range(300))).decode()

ORDINARY: dict[str, str] = {
    "uuid": "session 5f0c2b7e-9d43-4a8e-b1f2-7c3d9e0a1b2c resumed",
    "uuid-v7-list": "ids: 01937a2b-8c4d-7e5f-9a0b-1c2d3e4f5a6b, 01937a2b-8c4d-7e5f-9a0b-1c2d3e4f5a6c",
    "git-log": "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Ann <ann@example.com>",
    "git-short-hashes": "a1b2c3d fix parser\n9e8f7a6 bump version",
    "sha256": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "base64-png": f"![chart](data:image/png;base64,{_png})",
    "python-assign": "self.api_key = api_key\npassword = os.environ['DB_PASSWORD']",
    "placeholder-env": "API_KEY=your-api-key-here\nDB_PASSWORD=${DB_PASSWORD}\nTOKEN=<token>",
    "url-no-password": "see https://user@example.com/path?x=1 and postgres://localhost/app",
    "tool-ids": "toolu_01AbCdEfGhIjKlMnOpQrStUv and msg_01XyZaBcDeFgHiJkLmNoPq",
    "prose": "The password policy needs 12 characters; rotate the API key every 90 days.",
    "stripe-publishable": "pk_live_" + _r(24),
    "aws-example": "AKIAIOSFODNN7EXAMPLE",
    "path": "/home/ann/.config/app/settings.json",
}
"""name -> text that looks random in places but holds no credential (nothing is redacted)."""

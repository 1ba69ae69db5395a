r"""What the command line prints: text made safe for a terminal, short ids, and one JSON time format.

Three things every command shares, so that they hold everywhere at once:

* :func:`visible` turns C0 and C1 control characters (other than newline and tab) into visible
  ``\x1b``-style escapes. Transcripts carry whatever a tool printed, including sequences that set
  the window title (``ESC ] 0 ; ... BEL``), dim the screen (``ESC [ 2 m``) or move the cursor (the
  8-bit CSI ``0x9b``); none of them reaches the terminal as a control. :func:`markup` does the same
  and escapes rich markup, for text handed to a rich console.
* :func:`short_forms` gives each id its short form: the shortest suffix of at least 8 characters
  that no other id in the same listing ends with, written ``…`` + suffix (UUIDv7 ids made within one
  millisecond share their first 12 characters; their ends are random). :func:`resolve_ref` accepts
  an id back whole, as a unique prefix, or as a unique suffix with or without the ``…``.
* :func:`json_ready` writes every time as RFC 3339 in UTC with microseconds
  (``2026-03-01T12:00:00.000000Z``), whether it was a ``datetime``, an ISO string or integer
  microseconds since the epoch (the memory workspace's times).

The module imports nothing heavy: ``sessiongraph --version`` loads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from graph.errors import GraphError, NotFoundError

__all__ = [
    "AmbiguousReferenceError",
    "CommandLineError",
    "ELLIPSIS",
    "SHORT_MIN",
    "dump_json",
    "error_line",
    "json_ready",
    "markup",
    "print_fields",
    "resolve_ref",
    "rfc3339",
    "short_forms",
    "say",
    "settings",
    "visible",
]

SHORT_MIN = 8
"""Characters of an id's end a short form keeps at least (32 random bits of a UUIDv7 or v4)."""

ELLIPSIS = "…"
"""Written before a short form, to say that the start of the id is left out."""

_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))}
del _CONTROLS[ord("\n")], _CONTROLS[ord("\t")]
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""The bidirectional formatting characters: marks, embeddings, overrides and isolates, which
reorder how the rest of a terminal line reads (a right-to-left override shows ``txt.exe`` as
``exe.txt``)."""
_CONTROLS |= {c: f"\\u{c:04x}" for c in _BIDI}
_CONTROL_TABLE = str.maketrans(_CONTROLS)


def visible(text: str) -> str:
    r"""Return ``text`` with every C0/C1 control character except newline and tab made visible.

    ``"\x1b]0;pwned\x07"`` becomes the eight printable characters ``\x1b]0;pwned\x07``;
    DEL and the 8-bit controls 0x80-0x9f are treated the same way, and the bidirectional
    formatting characters (U+202E, the right-to-left override, becomes ``\u202e``), which would
    reorder the rest of the line. Printable text is unchanged.
    """
    return text.translate(_CONTROL_TABLE)


def error_line(message: str) -> str:
    """Return ``error: <message>`` on one line, with control characters made :func:`visible`.

    Whitespace runs (a driver's line breaks and indentation) become one space. The command line prints every failure a user can cause as this one line on stderr.
    """
    return "error: " + visible(" ".join(message.split()))


def markup(text: str) -> str:
    """Return ``text`` made :func:`visible` and with rich markup escaped (for ``console.print``)."""
    from rich.markup import escape

    return escape(visible(text))


def short_forms(ids: Iterable[str], minimum: int = SHORT_MIN) -> dict[str, str]:
    """Return each id's short form among ``ids``: ``…`` + its shortest unique suffix (``minimum``+).

    An id no longer than ``minimum + 2`` characters, or one whose unique suffix would be all of it,
    is its own short form. Every short form given back to :func:`resolve_ref` with the same ``ids``
    names its id.

    Args:
        ids: The ids listed together (a session's nodes; every session of the store).
        minimum: Characters kept at least.

    Returns:
        ``{id: short form}`` for every distinct id.
    """
    rev = sorted({i[::-1] for i in ids})

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    out: dict[str, str] = {}
    for k, r in enumerate(rev):
        shared = max(
            common(r, rev[k - 1]) if k else 0,
            common(r, rev[k + 1]) if k + 1 < len(rev) else 0,
        )
        keep = max(minimum, shared + 1)
        i = r[::-1]
        out[i] = i if keep >= len(i) - 2 or len(i) <= minimum + 2 else ELLIPSIS + i[-keep:]
    return out


class AmbiguousReferenceError(NotFoundError):
    """A shortened id matches several ids (so none is found).

    Attributes:
        what: What was looked for (``"session"``, ``"node"``).
        ref: The reference as given.
        matches: The ids it matches, sorted.
    """

    def __init__(self, what: str, ref: str, matches: Iterable[str]) -> None:
        self.what, self.ref, self.matches = what, ref, tuple(sorted(matches))
        shown = ", ".join(self.matches[:10])
        more = f" and {len(self.matches) - 10} more" if len(self.matches) > 10 else ""
        super().__init__(
            f"{what} {ref!r} is ambiguous: {len(self.matches)} {what}s match ({shown}{more}); "
            "give more of the id"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class CommandLineError(GraphError, ValueError):
    """A command line mistake: printed as ``error: WHAT: WHY`` with exit status 1.

    Attributes:
        what: What is wrong (an option, an argument, a path).
        why: Why it cannot be used.
    """

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")
        self.what, self.why = what, why


class _Settings:
    """Options of the whole command line, set once by the root command."""

    quiet: bool = False
    """``--quiet``: no progress bars, confirmations or warnings; errors and the data asked for stay."""


settings = _Settings()
"""The command line's settings (:class:`_Settings`)."""


def say(console: Any, text: str) -> None:
    """Print an informational line on a rich console, unless ``--quiet`` was given.

    The line is not wrapped by rich (the terminal wraps it), so an id, a path or a URL in it is
    never broken or cut, whatever the width.
    """
    if not settings.quiet:
        console.print(text, soft_wrap=True)


def print_fields(console: Any, rows: Iterable[tuple[str, str]]) -> None:
    """Print ``key  value`` lines (rich markup), the keys padded to one width.

    Values are never wrapped or cut by rich (the terminal wraps a long one), so the ids, paths and
    URLs they hold copy whole at any width; a value of several lines continues under its first.
    Rows with an empty value are left out.
    """
    shown = [(k, v) for k, v in rows if v]
    width = max((len(k) for k, _ in shown), default=0)
    for key, value in shown:
        first, *more = value.split("\n")
        console.print(f" [bold]{key}[/]{' ' * (width - len(key))}  {first}", soft_wrap=True)
        for line in more:
            console.print(" " * (width + 3) + line, soft_wrap=True)


def resolve_ref(ref: str, ids: Iterable[str], what: str = "id") -> str | None:
    """Return the one id of ``ids`` that ``ref`` names, or None when none does.

    ``ref`` names an id when it is the id, a prefix of it, or a suffix of it (a leading ``…`` or
    ``...`` is dropped first, so the short forms :func:`short_forms` prints are accepted back).

    Raises:
        AmbiguousReferenceError: several ids match.
    """
    pool = ids if isinstance(ids, set | frozenset | Mapping) else set(ids)
    if ref in pool:
        return ref
    part = ref.removeprefix(ELLIPSIS).removeprefix("...")
    if not part:
        return None
    matches = {i for i in pool if i.startswith(part) or i.endswith(part)}
    if len(matches) > 1:
        raise AmbiguousReferenceError(what, ref, matches)
    return next(iter(matches), None)


def rfc3339(value: datetime | int) -> str:
    """A time as RFC 3339 in UTC with microseconds: ``2026-03-01T12:00:00.000000Z``.

    Args:
        value: An aware ``datetime`` (a naive one is taken as UTC) or integer microseconds since
            the Unix epoch.
    """
    if isinstance(value, int):
        seconds, micros = divmod(value, 1_000_000)
        moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)
    else:
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _is_time_key(key: object) -> bool:
    return isinstance(key, str) and (key.endswith("_at") or key == "at")


def json_ready(data: Any, _time: bool = False) -> Any:
    """Return ``data`` with every time written by :func:`rfc3339`.

    Times are ``datetime`` values anywhere, and ISO strings or integer microseconds under a key
    ending in ``_at`` (or the key ``at``). Everything else is returned as it is.
    """
    if isinstance(data, datetime):
        return rfc3339(data)
    if isinstance(data, Mapping):
        return {k: json_ready(v, _is_time_key(k)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_ready(v) for v in data]
    if _time and isinstance(data, int) and not isinstance(data, bool):
        return rfc3339(data)
    if _time and isinstance(data, str):
        try:
            return rfc3339(datetime.fromisoformat(data))
        except ValueError:
            return data
    return data


def dump_json(data: Any) -> str:
    """``data`` as indented JSON, times as RFC 3339 UTC (:func:`json_ready`)."""
    import orjson

    return orjson.dumps(json_ready(data), option=orjson.OPT_INDENT_2).decode()

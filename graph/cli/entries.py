"""The command line's entry points, read from this distribution's own metadata when it has them.

``importlib.metadata`` answers "which entry points does group G have" by importing its own machinery
(the ``email``, ``zipfile`` and ``csv`` modules among it) and reading the metadata of every installed
distribution: about 25-45 ms of CPU, more than the rest of a quick command's start beside pydantic.
A command of this distribution's own needs one file: the ``entry_points.txt`` of the
``sessiongraph`` metadata folder, found the way ``importlib.metadata`` finds it (the first
``sessiongraph-*.dist-info`` or ``sessiongraph*.egg-info`` along ``sys.path``, in path order),
listed and read afresh by each process, so installing, upgrading or removing any distribution is
seen by the next command (nothing is cached between runs). Only a name this distribution does not list (another
package's command) costs ``importlib.metadata``'s full scan.

:func:`load_named` is that look-up; :func:`own_entry_points` reads one group of the own metadata.
"""

from __future__ import annotations

import os
import sys
from functools import cache, reduce
from importlib import import_module
from typing import Any

__all__ = ["DISTRIBUTION", "load", "load_named", "own_entry_points"]

DISTRIBUTION = "sessiongraph"
"""The distribution whose metadata is read directly (normalized: lower case, ``_`` for ``-._``)."""

_SUFFIXES = (".dist-info", ".egg-info")


def _normalized(name: str) -> str:
    """A distribution name as ``importlib.metadata`` compares them: runs of ``-_.`` as one ``_``."""
    out: list[str] = []
    for ch in name.lower():
        if ch in "-_.":
            if not out or out[-1] != "_":
                out.append("_")
        else:
            out.append(ch)
    return "".join(out)


def _own_metadata() -> str | None:
    """The folder of this distribution's metadata: the first along ``sys.path``, else None.

    A folder's name is ``NAME-VERSION.dist-info`` (or ``.egg-info``): its distribution is the part
    before the first ``-``, as ``importlib.metadata`` reads it. A path entry that is no readable
    directory (a zip file) is passed over: this distribution is never installed inside one.
    """
    for root in sys.path:
        try:
            children = os.listdir(root or ".")
        except OSError:
            continue
        for child in children:
            low = child.lower()
            if low.endswith(_SUFFIXES):
                name = low.rpartition(".")[0].partition("-")[0]
                if _normalized(name) == DISTRIBUTION:
                    return os.path.join(root or ".", child)
    return None


@cache
def _own_groups() -> dict[str, dict[str, str]] | None:
    """Every group of this distribution's ``entry_points.txt`` (read once a process), or None."""
    folder = _own_metadata()
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError):
        return None
    groups: dict[str, dict[str, str]] = {}
    section: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = groups.setdefault(line[1:-1].strip(), {})
        elif section is not None:
            name, eq, value = line.partition("=")
            if eq:
                section.setdefault(name.strip(), value.strip())
    return groups


def own_entry_points(group: str) -> dict[str, str] | None:
    """This distribution's entry points of ``group``: name to ``module:attribute``.

    Read from its ``entry_points.txt`` as ``importlib.metadata`` reads it (``[group]`` sections of
    ``name = value`` lines; blank lines and lines starting with ``#`` skipped); the first entry of
    a name is kept.

    Returns:
        The group's entry points (empty when the metadata has none of that group), or None when
        the metadata cannot be found or read (a checkout that is not installed): ask
        ``importlib.metadata`` then.
    """
    groups = _own_groups()
    return None if groups is None else dict(groups.get(group, {}))


def load(value: str) -> Any:
    """The object an entry point's value names: ``module``, ``module:attribute`` or ``module:a.b``.

    Extras (``module:attribute [extra]``) are ignored, as ``importlib.metadata`` ignores them.

    Raises:
        ImportError: the module cannot be imported.
        AttributeError: the module has no such attribute.
    """
    target = value.partition("[")[0].strip()
    module, _, attribute = target.partition(":")
    found: Any = import_module(module.strip())
    return reduce(getattr, filter(None, attribute.strip().split(".")), found)


def load_named(group: str, name: str) -> list[Any]:
    """The objects the entry points ``name`` of ``group`` name, loaded.

    This distribution's own entry point when its metadata lists one (read without
    ``importlib.metadata``); otherwise every installed distribution's entry point of that name, in
    ``importlib.metadata``'s order (none: an empty list).

    Raises:
        ImportError: an entry point's module cannot be imported.
        AttributeError: its module lacks the attribute it names.
    """
    own = own_entry_points(group)
    if own is not None and name in own:
        return [load(own[name])]
    from importlib.metadata import entry_points

    return [ep.load() for ep in entry_points(group=group) if ep.name == name]

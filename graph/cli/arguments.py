"""Help text for arguments that take several values: ``NODE...``, not ``NODE <list[str]>``.

Typer prints every argument's Python type after its name; for a repeated positional argument that is
``<list[str]>`` or ``<list[Path]>``, which tells a person nothing a shell user can act on. A command
registered with ``cls=RepeatedArgumentsCommand`` shows those arguments as their metavar followed by
``...`` (``SESSION...``, ``PATH...``), as the usage line already does.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand

__all__ = ["RepeatedArgumentsCommand"]


class _RepeatedArgument(TyperArgument):
    """A positional argument taking any number of values, named ``NAME...`` in the help."""

    def _rich_display_name(self) -> str:
        return self.display_name_raw + "..."

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class RepeatedArgumentsCommand(TyperCommand):
    """A command whose repeated positional arguments read ``NAME...`` in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            if type(p) is TyperArgument and p.nargs == -1:
                p.__class__ = _RepeatedArgument

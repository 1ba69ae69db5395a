"""What keeps the command line quick to start: commands built when named, plain values without pydantic.

Typer turns every command of an application into a click command before it parses a word, and converts
every value of the command it runs through a pydantic ``TypeAdapter`` it builds for each parameter;
importing pydantic's validators and building those adapters cost more than listing a small store. So
:func:`lazy_command` builds the root group with its own options only: its commands (and those of its
sub-groups) are listed by name and built on first use, so ``sessiongraph sessions`` builds one command
and ``sessiongraph --help`` (which lists them all) builds every one, with the same help as typer's own
group. And each parameter whose type is ``str``, ``bool``, ``int``, ``float``, ``Path`` or a list of
them converts the plain forms itself (``"12"`` for an ``int``, ``"1.5"`` for a ``float``); anything
else (an odd form such as ``"1_000"``, a value out of range, a type of another kind) is handed to
typer's own conversion, so what is accepted and every error message are typer's.

Both depend on two internals of typer (the group's ``commands`` mapping and a parameter's
``_runtime_param``); with a typer that lacks them, :func:`plain_values` leaves typer's conversion in
place and the command line works as before, only slower to start.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
import typer.main
from typer.core import TyperGroup

try:  # typer >= 0.25: the vendored click and the per-parameter conversion layer
    from typer._click import Command, Context
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_path
except ImportError:  # pragma: no cover - an older typer converts through click's own types
    RuntimeParam = None  # type: ignore[assignment,misc]
    from click import Command, Context  # type: ignore[assignment]

__all__ = ["LazyCommands", "lazy_command", "plain_values"]

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_PLAIN = (str, bool, int, float, Path)


class _Typer:
    """The marker of a value :func:`_convert` leaves to typer's own conversion."""


_TYPER = _Typer()


class LazyCommands(MutableMapping[str, Command]):
    """A group's commands by name, each built by its builder the first time it is looked up.

    Iteration gives every name in the order the commands were registered, without building any, so
    click's "No such command" and typer's "Did you mean" know them all.

    Args:
        builders: Command name to a function returning the built command.
    """

    def __init__(self, builders: dict[str, Callable[[], Command]]) -> None:
        self._builders = dict(builders)
        self._built: dict[str, Command] = {}

    def built(self) -> dict[str, Command]:
        """The commands built so far, by name."""
        return dict(self._built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = self._builders[name]()
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._builders[name] = lambda: command
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._builders[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._builders))

    def __len__(self) -> int:
        return len(self._builders)


def lazy_command(app: typer.Typer) -> Command:
    """The click command of ``app`` (what ``typer.main.get_command`` returns), its commands built on use.

    Args:
        app: A typer application with a callback (so it is a group).

    Returns:
        The root group, its parameters converted by :func:`plain_values`; an application typer makes
        a single command of is built whole.
    """
    bare = _without_commands(app)
    root = typer.main.get_command(bare)
    if not isinstance(root, TyperGroup):
        return plain_values(typer.main.get_command(app))
    settings = {
        "pretty_exceptions_short": app.pretty_exceptions_short,
        "rich_markup_mode": app.rich_markup_mode,
    }
    root.commands = LazyCommands(
        _builders(app, settings | {"suggest_commands": app.suggest_commands})
    )
    return plain_values(root)


def _without_commands(app: typer.Typer) -> typer.Typer:
    bare = copy.copy(app)
    bare.registered_commands = []
    bare.registered_groups = []
    return bare


def _builders(app: typer.Typer, settings: dict[str, Any]) -> dict[str, Callable[[], Command]]:
    """Name to builder for each command and sub-group of ``app``, in typer's order."""
    command_settings = {k: settings[k] for k in ("pretty_exceptions_short", "rich_markup_mode")}
    builders: dict[str, Callable[[], Command]] = {}
    for info in app.registered_commands:
        assert info.callback is not None, "a command must have a callback function"
        name = info.name or typer.main.get_command_name(info.callback.__name__)

        def build(info: Any = info) -> Command:
            return plain_values(typer.main.get_command_from_info(info, **command_settings))

        builders[name] = build
    for group_info in app.registered_groups:
        sub = group_info.typer_instance
        assert sub is not None, "a sub-group needs a typer application"
        shell_info = copy.copy(group_info)
        shell_info.typer_instance = _without_commands(sub)
        # The group itself (its name, help and options) is cheap: only its commands wait.
        group = typer.main.get_group_from_info(shell_info, **settings)
        inner = _builders(sub, settings)
        if group.name:
            group.commands = LazyCommands(inner)
            plain_values(group)

            def built(group: TyperGroup = group) -> Command:
                return group

            builders[group.name] = built
        else:  # typer merges an unnamed sub-group's commands into its parent
            builders |= inner
    return builders


def plain_values(command: Command) -> Command:
    """Have ``command``'s parameters convert plain values without pydantic; returns ``command``.

    A group's commands built so far are done too (a :class:`LazyCommands` does the rest as it builds
    them). A parameter whose type or options are not plain keeps typer's conversion.
    """
    if RuntimeParam is None:  # pragma: no cover - older typer
        return command
    for param in command.params:
        _plain_value(param)
    # Click makes ``--help`` when a command first parses (its names come from the context).
    made_help = command.get_help_option

    def get_help_option(ctx: Context) -> Any:
        option = made_help(ctx)
        if option is not None:
            _plain_value(option)
        return option

    command.get_help_option = get_help_option  # type: ignore[method-assign]
    commands = getattr(command, "commands", None)
    if isinstance(commands, LazyCommands):
        commands = commands.built()
    for sub in (commands or {}).values():
        plain_values(sub)
    return command


def _plain_value(param: Any) -> None:
    descriptor = getattr(param, "type_descriptor", None)
    if (
        isinstance(descriptor, TypeDescriptor)
        and getattr(param, "_runtime_param", 0) is None
        and _is_plain(descriptor)
    ):
        info, annotation = descriptor.parameter_info, descriptor.annotation
        param._runtime_param = _PlainValue(info, annotation, descriptor)


def _is_plain(descriptor: TypeDescriptor) -> bool:
    info = descriptor.parameter_info
    annotation: Any = descriptor.annotation
    if descriptor.file_annotation is not None or info.parser is not None or info.clamp:
        return False
    if info.path_type is not None:  # a path handed over as str or bytes
        return False
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    return annotation in _PLAIN


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainValue(RuntimeParam):
        """A parameter's conversion: plain forms here, anything else by typer's own conversion."""

        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Context) -> Any:
            annotation: Any = self.annotation
            if get_origin(annotation) is list:
                (item_type,) = get_args(annotation)
                items = (
                    [self._convert(item_type, v, param, ctx) for v in value]
                    if isinstance(value, (list, tuple))
                    else [_TYPER]
                )
                converted: Any = _TYPER if any(i is _TYPER for i in items) else items
            else:
                converted = self._convert(annotation, value, param, ctx)
            if converted is _TYPER:
                typer_own = build_runtime_param(self.descriptor)
                return typer_own._coerce_value(value, param=param, ctx=ctx)
            return converted

        def _convert(self, annotation: Any, value: Any, param: Any, ctx: Context) -> Any:
            info = self.parameter_info
            if annotation is str or annotation is bool:
                return value if type(value) is annotation else _TYPER
            if annotation is Path:
                if type(value) is str and value:
                    value = Path(value)
                if not isinstance(value, Path):
                    return _TYPER
                return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
            number: int | float
            if annotation is int:
                if type(value) is int:
                    number = value
                elif type(value) is str and _INT.match(value):
                    number = int(value)
                else:
                    return _TYPER
            elif type(value) in (int, float):
                number = float(value)
            elif type(value) is str and _FLOAT.match(value):
                number = float(value)
            else:
                return _TYPER
            if (info.min is not None and not number >= info.min) or (
                info.max is not None and not number <= info.max
            ):
                return _TYPER  # typer words the range error
            return number

"""A plain-text table for the quick listings (``sessiongraph sessions``), drawn without rich's layout.

rich's table engine costs more to import than the whole listing takes to run, so the commands a
person runs most often draw their table here: one header line, a rule under it, and a row per item,
columns two spaces apart, no line wider than the terminal. Three kinds of column:

* ``fixed``: kept whole on one line (short ids, times, counts);
* ``wrap``: words wrapped onto further lines when the terminal is narrow (titles);
* ``fold``: cut every ``width`` characters onto further lines, every character kept (whole ids);
  kept on one line while it takes at most half the terminal.

Widths are measured in terminal cells (a CJK character takes two). Cells must already be made
visible (:func:`graph.terminal.visible`): control characters would break the alignment.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from graph.terminal import ELLIPSIS

__all__ = ["Column", "render", "terminal_width"]

GAP = 2
"""Spaces between two columns."""


@dataclass(frozen=True)
class Column:
    """One column of a plain table.

    Attributes:
        header: The column's title.
        mode: ``fixed`` (never broken), ``wrap`` (words wrapped) or ``fold`` (cut into pieces).
        minimum: The fewest cells a ``wrap`` or ``fold`` column is given before the others grow.
        right: Right-aligned (numbers).
    """

    header: str
    mode: Literal["fixed", "wrap", "fold"] = "fixed"
    minimum: int = 10
    right: bool = False


def terminal_width() -> int:
    """The terminal's width in columns: ``$COLUMNS``, else the terminal's size, else 80."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return shutil.get_terminal_size((80, 24)).columns


_ONE_CELL = frozenset(map(chr, range(0x20, 0x7F))) | {ELLIPSIS, "─"}
"""Characters one cell wide in every terminal: printable ASCII, the short forms' ``…``, the rule."""


def _cells(text: str) -> int:
    # rich's width tables cost more to load than drawing the table: they measure other text only.
    if _ONE_CELL.issuperset(text):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _fold(text: str, width: int) -> list[str]:
    lines, line, used = [], "", 0
    for ch in text:
        w = _cells(ch)
        if used + w > width and line:
            lines.append(line)
            line, used = "", 0
        line += ch
        used += w
    return [*lines, line] if line or not lines else lines


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if _cells(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        pieces = _fold(word, width)
        lines.extend(pieces[:-1])
        line = pieces[-1]
    return [*lines, line]


def _widths(columns: Sequence[Column], natural: list[int], width: int) -> list[int]:
    """Each column's width: fixed ones their natural width, the others share what is left.

    A ``fold`` column (whole ids) stays on one line while it takes at most half the terminal.
    """
    half = max(0, width // 2 - 4)
    widths = [
        n
        if c.mode == "fixed"
        else min(n, max(c.minimum, half))
        if c.mode == "fold"
        else min(n, c.minimum)
        for c, n in zip(columns, natural, strict=True)
    ]
    left = width - sum(widths) - GAP * (len(columns) - 1)
    growing = [i for i, c in enumerate(columns) if c.mode != "fixed"]
    while left < 0:  # too wide: the widest column above its minimum gives a cell back
        shrinkable = [i for i in growing if widths[i] > min(columns[i].minimum, natural[i])]
        if not shrinkable:
            break
        widths[max(shrinkable, key=lambda i: widths[i])] -= 1
        left += 1
    # Water-filling: the narrowest column that still wants room gets the next cell.
    while left > 0:
        wanting = [i for i in growing if widths[i] < natural[i]]
        if not wanting:
            break
        narrowest = min(widths[i] for i in wanting)
        for i in (i for i in wanting if widths[i] == narrowest):
            if left == 0:
                break
            widths[i] += 1
            left -= 1
    return widths


def render(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> str:
    """Draw ``rows`` under ``columns`` in at most ``width`` cells per line (when the fixed columns fit).

    Args:
        columns: The columns, left to right.
        rows: One sequence of cells per row, as many as ``columns``, already made visible.
        width: The terminal's width in cells.

    Returns:
        The table's lines joined by newlines, with no trailing spaces.
    """
    natural = [
        max([_cells(c.header), *(_cells(r[i]) for r in rows)]) for i, c in enumerate(columns)
    ]
    widths = _widths(columns, natural, width)

    def pad(text: str, i: int) -> str:
        room = " " * (widths[i] - _cells(text))
        return room + text if columns[i].right else text + room

    def lines_of(cells: Sequence[str]) -> list[str]:
        split = [
            _fold(cell, widths[i])
            if c.mode == "fold"
            else _wrap(cell, widths[i])
            if c.mode == "wrap"
            else [cell]
            for i, (c, cell) in enumerate(zip(columns, cells, strict=True))
        ]
        height = max(len(s) for s in split)
        gap = " " * GAP
        return [
            gap.join(pad(s[k] if k < len(s) else "", i) for i, s in enumerate(split)).rstrip()
            for k in range(height)
        ]

    out = lines_of([c.header for c in columns])
    out.append((" " * GAP).join("─" * w for w in widths))
    for row in rows:
        out += lines_of(row)
    return "\n".join(out)

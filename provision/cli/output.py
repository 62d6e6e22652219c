"""Rendering helpers shared by every command: JSON, plain (TSV) and Rich tables, one-line events.

Data is never Rich markup: a cell is a `Text` (see `cells`), so a value like `[/tmp]` or `[x]` prints as it
is. A read command prints a table on a terminal and tab-separated lines when piped (`--output` overrides;
`--json` is `--output json`). A table printed into a pipe is as wide as its content, never cut at 80 columns.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

_UNBOUNDED = 100_000  # columns a renderable may take when measured for a pipe
console = Console()
err_console = Console(stderr=True)


class Format(StrEnum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"


OutputOpt = Annotated[
    Format | None,
    typer.Option("--output", "-o", help="table (default on a terminal), plain (tab-separated; default when piped) "
                                        "or json (same as --json)"),
]


class _Quiet:
    """-q: nothing but results and errors (progress events and notes are dropped)."""

    on = False


quiet = _Quiet()


def choose(output: Format | None, as_json: bool = False) -> Format:
    """--json wins (it is `--output json`), then --output, then table on a terminal, plain in a pipe."""
    if as_json:
        return Format.JSON
    if output is not None:
        return output
    return Format.TABLE if to_terminal() else Format.PLAIN


def to_terminal() -> bool:
    """stdout is a terminal: the file itself, not Rich's guess (FORCE_COLOR in CI makes Rich call a pipe a
    terminal, and cut its tables at 80 columns)."""
    isatty = getattr(console.file, "isatty", None)
    return bool(isatty and isatty())


def to_jsonable(obj: Any) -> Any:
    """Turn models (and lists/dicts of them) into plain JSON-able data."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    return obj


def emit_json(obj: Any) -> None:
    """Print obj as indented JSON on stdout, nothing else."""
    print(json.dumps(to_jsonable(obj), indent=2, sort_keys=False))


def new_table(*columns: str, title: str | None = None, **kwargs: Any) -> Table:
    """A Rich table whose title is plain text (a title made of data, e.g. a path, is never markup)."""
    return Table(*columns, title=Text(title) if title else None, **kwargs)


def cell(value: object, style: str = "") -> Text:
    """One table cell from a data value, never parsed as markup (None is `-`)."""
    if isinstance(value, Text):
        return value
    return Text("-" if value is None else str(value), style=style)


def add_row(table: Table, *values: object) -> None:
    """A row of data values: each one a Text, so brackets in the data print as they are."""
    table.add_row(*(cell(v) for v in values))


def _plain(value: object) -> str:
    text = value.plain if isinstance(value, Text) else str(value)
    return " ".join(text.replace("\t", " ").split())


def table_lines(table: Table) -> list[str]:
    """The table as tab-separated lines: the column headers, then one line per row (no title, no colour)."""
    columns = table.columns
    lines = ["\t".join(_plain(c.header) for c in columns)]
    rows = zip(*(list(c.cells) for c in columns), strict=True) if columns else iter(())
    lines.extend("\t".join(_plain(v) for v in row) for row in rows)
    return lines


def show(table: Table, fmt: Format) -> None:
    """Print a table as `fmt` asks (JSON is the command's own business, rendered before this)."""
    if fmt is Format.PLAIN:
        sys.stdout.write("".join(line + "\n" for line in table_lines(table)))
        sys.stdout.flush()
        return
    print_wide(table)


def print_wide(renderable: Any) -> None:
    """console.print, except that into a pipe or file the width is the content's own, not 80 columns."""
    if to_terminal():
        console.print(renderable)
        return
    width = max(console.measure(renderable, options=console.options.update_width(_UNBOUNDED)).maximum, 1)
    Console(file=console.file, width=width).print(renderable)  # print(width=) is capped at the console's


def wide_console() -> Console:
    """The console to hand a renderer that prints many things: stdout's own on a terminal; into a pipe, one
    whose width never cuts a table (Rich pads nothing but tables, so lines stay as long as they are)."""
    return console if to_terminal() else Console(file=console.file, width=_UNBOUNDED)


def note(message: str) -> None:
    """A line about the work (not its result) on stderr; -q drops it. Plain text, never markup."""
    if not quiet.on:
        err_console.print(Text(message), highlight=False, soft_wrap=True)


def flags_take_no_value() -> None:
    """Typer's help prints the type of a flag (`--insecure <bool>`, `--help <bool>`, `-v <int>`) as if it took a
    value; a flag and a counter show none. Applied once, as the command line is built (typer has no setting)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "flags_take_no_value", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.flags_take_no_value = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]

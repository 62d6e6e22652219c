"""A pydantic ValidationError as one line: `key.path: message (got value)`, plus a count of the rest."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import ValidationError

Loc = tuple[int | str, ...]


def as_given(loc: Loc) -> list[str]:
    """A location's parts as pydantic gives them (a list item by its index)."""
    return [str(part) for part in loc]


def describe(exc: ValidationError, prefix: str = "", name_loc: Callable[[Loc], Sequence[str]] = as_given) -> str:
    """The first error under `prefix` (the key the validated mapping sits under), its location's parts as
    `name_loc` names them (a list item by its name rather than its index, where the caller knows it)."""
    errors = exc.errors()
    first = errors[0]
    parts = ([prefix] if prefix else []) + list(name_loc(first["loc"]))
    # A key may hold any character (even a newline); repr-escape it so the error stays one line.
    path = ".".join(repr(p)[1:-1] for p in parts) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif first["type"] != "missing" and "input" in first and not isinstance(first["input"], dict | list):
        msg += f" (got {first['input']!r})"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{path}: {msg}{more}"

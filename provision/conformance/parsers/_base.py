"""What every parser shares: the frozen model base, the error boundary and value helpers.

Each parser is a pure function `text -> model`. It raises `ParseError(tool, reason)` on
empty, garbage or truncated input; the `tool_parser` decorator is the safety net that turns
any stray ValueError/IndexError/KeyError (and friends) into a ParseError naming the tool,
so nothing else ever escapes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Concatenate, NoReturn, ParamSpec, TypeVar
from xml.etree.ElementTree import ParseError as XmlParseError

from pydantic import BaseModel, ConfigDict

from provision.errors import ParseError

P = ParamSpec("P")
R = TypeVar("R")

# Exceptions a parser bug or a hostile input could raise; all become ParseError at the boundary.
_STRAY = (
    ValueError,  # includes pydantic.ValidationError, json.JSONDecodeError, UnicodeError
    IndexError,
    KeyError,
    TypeError,
    AttributeError,
    ArithmeticError,
    RecursionError,
    XmlParseError,
)

# Values the tools print when a field does not apply or cannot be read.
NOT_AVAILABLE = frozenset(
    {
        "",
        "N/A",
        "[N/A]",
        "n/a",
        "Not Available",
        "Not Supported",
        "[Not Supported]",
        "Unknown",
        "Not Specified",
        "Not Provided",
        "-",
        "--",
        "Requested functionality has been deprecated",
        "[Requested functionality has been deprecated]",
        "[Unknown Error]",
        "[Insufficient Permissions]",
    }
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")


class Model(BaseModel):
    """Base of every parsed value: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def fail(tool: str, reason: str) -> NoReturn:
    """Raise the one error a parser raises."""
    raise ParseError(tool, reason)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def tool_parser(
    tool: str,
) -> Callable[[Callable[Concatenate[str, P], R]], Callable[Concatenate[str, P], R]]:
    """Decorate `fn(text, ...)`: reject empty/non-text input and map stray errors to ParseError."""

    def decorate(fn: Callable[Concatenate[str, P], R]) -> Callable[Concatenate[str, P], R]:
        @functools.wraps(fn)
        def wrapper(text: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
            if not isinstance(text, str):
                fail(tool, f"expected text, got {type(text).__name__}")
            if not text.strip():
                fail(tool, "empty output")
            if "\x00" in text:
                fail(tool, "output contains NUL bytes (binary data?)")
            try:
                return fn(text, *args, **kwargs)
            except ParseError:
                raise
            except _STRAY as exc:
                raise ParseError(tool, _one_line(f"malformed output ({type(exc).__name__}: {exc})")) from exc

        wrapper.tool = tool  # type: ignore[attr-defined]
        return wrapper

    return decorate


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (nvidia-smi topo -m underlines its header)."""
    return _ANSI.sub("", text)


def present(value: str | None) -> str | None:
    """The value, stripped, or None when the tool says it is not available."""
    if value is None:
        return None
    value = value.strip()
    return None if value in NOT_AVAILABLE else value


def to_int(tool: str, what: str, value: str | None, *, base: int = 10) -> int | None:
    """Parse an integer; None for N/A; ParseError naming `what` for anything else."""
    text = present(value)
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        fail(tool, f"{what}: expected an integer, got {text!r}")


def to_float(tool: str, what: str, value: str | None) -> float | None:
    """Parse a decimal number; None for N/A."""
    text = present(value)
    if text is None:
        return None
    if not _NUMBER.match(text):
        fail(tool, f"{what}: expected a number, got {text!r}")
    return float(text)


def with_unit(tool: str, what: str, value: str | None, units: tuple[str, ...]) -> str | None:
    """Strip one of `units` from the end of value ("81559 MiB" -> "81559"); None for N/A."""
    text = present(value)
    if text is None:
        return None
    for unit in units:
        if text.endswith(unit):
            return text[: -len(unit)].strip()
    fail(tool, f"{what}: expected a value in {'/'.join(u.strip() for u in units)}, got {text!r}")


def unit_int(tool: str, what: str, value: str | None, *units: str) -> int | None:
    """An integer with a unit suffix ("29 C", "16x")."""
    return to_int(tool, what, with_unit(tool, what, value, units))


def unit_float(tool: str, what: str, value: str | None, *units: str) -> float | None:
    """A number with a unit suffix ("700.00 W", "26.562 GB/s")."""
    return to_float(tool, what, with_unit(tool, what, value, units))


_FLAGS = {
    "enabled": True,
    "disabled": False,
    "on": True,
    "off": False,
    "yes": True,
    "no": False,
    "active": True,
    "not active": False,
}


def to_flag(tool: str, what: str, value: str | None) -> bool | None:
    """Enabled/Disabled, On/Off, Yes/No -> bool; N/A -> None; anything else is an error."""
    text = present(value)
    if text is None:
        return None
    flag = _FLAGS.get(text.lower())
    if flag is None:
        fail(tool, f"{what}: expected Enabled/Disabled, got {text!r}")
    return flag


def lines_of(text: str) -> list[str]:
    """Lines without trailing whitespace or carriage returns."""
    return [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]

"""Reading JSON tool output with typed, named failures instead of KeyError/TypeError."""

from __future__ import annotations

import json

from provision.conformance.parsers._base import fail

JsonObject = dict[str, object]


def load_object(tool: str, text: str) -> JsonObject:
    """Decode text that must be one JSON object."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(tool, f"invalid JSON (truncated output?): {exc.msg} at line {exc.lineno} column {exc.colno}")
    except RecursionError:
        fail(tool, "JSON nested too deeply")
    if not isinstance(data, dict):
        fail(tool, f"expected a JSON object, got {type(data).__name__}")
    return data


def opt_int(tool: str, obj: JsonObject, key: str, what: str) -> int | None:
    """An integer member, or None when absent/null."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        fail(tool, f"{what}: '{key}' should be an integer, got {value!r:.60}")
    return value


def opt_count(tool: str, obj: JsonObject, key: str, what: str) -> int | None:
    """A counter that may be an integer or a decimal string (nvme-cli 2.x prints 128-bit
    SMART counters such as media_errors and power_on_hours as strings)."""
    value = obj.get(key)
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            fail(tool, f"{what}: '{key}' should be a count, got {value!r:.60}")
        return int(text)
    return opt_int(tool, obj, key, what)


def req_count(tool: str, obj: JsonObject, key: str, what: str) -> int:
    """A counter (integer or decimal string) that must be there."""
    value = opt_count(tool, obj, key, what)
    if value is None:
        fail(tool, f"{what}: missing '{key}'")
    return value


def req_int(tool: str, obj: JsonObject, key: str, what: str) -> int:
    """An integer member that must be there."""
    value = opt_int(tool, obj, key, what)
    if value is None:
        fail(tool, f"{what}: missing '{key}'")
    return value


def opt_str(tool: str, obj: JsonObject, key: str, what: str) -> str | None:
    """A string member (stripped; tools pad serials and models), or None."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        fail(tool, f"{what}: '{key}' should be a string, got {value!r:.60}")
    return value.strip()


def req_str(tool: str, obj: JsonObject, key: str, what: str) -> str:
    """A string member that must be there."""
    value = opt_str(tool, obj, key, what)
    if value is None:
        fail(tool, f"{what}: missing '{key}'")
    return value


def opt_bool(tool: str, obj: JsonObject, key: str, what: str) -> bool | None:
    """A boolean member, or None."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        fail(tool, f"{what}: '{key}' should be true/false, got {value!r:.60}")
    return value


def opt_obj(tool: str, obj: JsonObject, key: str, what: str) -> JsonObject | None:
    """An object member, or None."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        fail(tool, f"{what}: '{key}' should be an object")
    return value


def req_list(tool: str, obj: JsonObject, key: str, what: str) -> list[JsonObject]:
    """A list-of-objects member that must be there."""
    value = obj.get(key)
    if not isinstance(value, list):
        fail(tool, f"{what}: '{key}' should be a list")
    for item in value:
        if not isinstance(item, dict):
            fail(tool, f"{what}: '{key}' should hold objects, found {item!r:.60}")
    return value

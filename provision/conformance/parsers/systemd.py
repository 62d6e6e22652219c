"""`systemctl show UNIT [-p PROP,...]`: `Key=Value` lines -> unit state.

Used for nvidia-fabricmanager (and any other unit a check cares about).
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "systemctl show"

_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)=(?P<value>.*)$")


class UnitState(Model):
    """The properties asked for, with the common ones typed."""

    properties: dict[str, str]
    load_state: str | None
    active_state: str | None
    sub_state: str | None
    unit_file_state: str | None
    result: str | None
    main_pid: int | None
    exec_main_status: int | None
    n_restarts: int | None

    @property
    def running(self) -> bool:
        """ActiveState=active and SubState=running."""
        return self.active_state == "active" and self.sub_state == "running"


def _int(props: dict[str, str], key: str) -> int | None:
    value = props.get(key)
    if value is None or value == "":
        return None
    if not value.isdigit():
        fail(TOOL, f"{key}={value!r} is not a number")
    return int(value)


@tool_parser(TOOL)
def parse_systemctl_show(text: str) -> UnitState:
    """Parse `systemctl show` output (every non-blank line must be Key=Value)."""
    props: dict[str, str] = {}
    for line in lines_of(text):
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            fail(TOOL, f"line {line[:120]!r} is not Key=Value")
        props[match["key"]] = match["value"]
    return UnitState(
        properties=props,
        load_state=props.get("LoadState") or None,
        active_state=props.get("ActiveState") or None,
        sub_state=props.get("SubState") or None,
        unit_file_state=props.get("UnitFileState") or None,
        result=props.get("Result") or None,
        main_pid=_int(props, "MainPID"),
        exec_main_status=_int(props, "ExecMainStatus"),
        n_restarts=_int(props, "NRestarts"),
    )

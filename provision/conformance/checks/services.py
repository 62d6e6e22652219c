"""Services that must run, read with ONE `systemctl show` for every unit."""

from __future__ import annotations

import shlex

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.checks.names import required_units
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.spec.model import NodeSpec

AREA = "services"
SECTION = "systemctl_show"
TOOL = "systemctl show"
PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState")


class UnitState(Model):
    """One unit as `systemctl show -p Id,LoadState,ActiveState,SubState` prints it."""

    id: str
    load_state: str
    active_state: str
    sub_state: str

    @property
    def running(self) -> bool:
        return self.load_state == "loaded" and self.active_state == "active"

    def describe(self) -> str:
        return f"{self.active_state} ({self.sub_state})" if self.load_state == "loaded" else self.load_state


@tool_parser(TOOL)
def parse_systemctl_show(text: str) -> dict[str, UnitState]:
    """Blocks of key=value lines separated by blank lines, one per unit."""
    units: dict[str, UnitState] = {}
    for block in text.strip().split("\n\n"):
        values = dict(line.split("=", 1) for line in block.strip().splitlines() if "=" in line)
        missing = [p for p in PROPERTIES if p not in values]
        if missing:
            fail(TOOL, f"block without {', '.join(missing)}: {block[:80]!r}")
        units[values["Id"]] = UnitState(
            id=values["Id"],
            load_state=values["LoadState"],
            active_state=values["ActiveState"],
            sub_state=values["SubState"],
        )
    return units


def units_probe(spec: NodeSpec) -> Probe:
    names = " ".join(shlex.quote(u.unit) for u in required_units(spec))
    return Probe(name=SECTION, command=f"systemctl show -p {','.join(PROPERTIES)} {names}")


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    return [units_probe(spec)]


def unit_state(ctx: Context, unit: str) -> UnitState | None:
    """The state of one unit; raises Unreadable when systemctl could not be read."""
    return ctx.parsed(SECTION, parse_systemctl_show).get(unit)


def evaluate(ctx: Context) -> None:
    for required in required_units(ctx.spec):
        cid = f"services.{required.unit.removesuffix('.service')}"
        desc = f"{required.unit} active ({required.reason})"
        try:
            state = unit_state(ctx, required.unit)
        except Unreadable as why:
            ctx.unreadable(cid, AREA, desc, "active", why.reason)
            continue
        found = state.describe() if state else "absent"
        ctx.record(cid, AREA, desc, "active", found, bool(state and state.running))

"""`provision power NODE on|off|graceful|cycle|status [--plan]`: waits for the PowerState."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from pydantic import BaseModel

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, NodeArg, load_host
from provision.cli.output import Format, OutputOpt, choose, console, emit_json
from provision.redfish.ops import power as power_ops
from provision.redfish.ops import session
from provision.redfish.ops.power import PowerAction
from provision.redfish.ops.session import open_node
from provision.redfish.ops.waiting import Clock
from provision.spec import HostEntry


class Action(StrEnum):
    ON = "on"
    OFF = "off"
    GRACEFUL = "graceful"
    CYCLE = "cycle"
    STATUS = "status"


class PowerAnswer(BaseModel):
    """What `power` read and did (`--output json`): the state it found, the resets planned or sent, the state
    reached (None: nothing was sent)."""

    node: str
    power_state: str | None
    actions: list[PowerAction] = []
    planned: bool = False
    now: str | None = None

    def line(self) -> str:
        steps = ", ".join(f"{a.reset_type} -> {a.expect}" for a in self.actions)
        if self.planned:
            return f"{self.node}: {self.power_state}; would send {steps}"
        if self.now is None:
            return f"{self.node}: {self.power_state}"
        if not self.actions:
            return f"{self.node}: already {self.power_state}; nothing to do"
        return f"{self.node}: {steps}; now {self.now}"


def power_command(
    node: NodeArg,
    action: Annotated[Action, typer.Argument(help="on, off, graceful, cycle or status")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    plan_only: Annotated[bool, typer.Option("--plan", help="Show the resets, change nothing")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the PowerState")] = 300,
    insecure: InsecureOpt = False,
    output: OutputOpt = None,
) -> None:
    """Power a node on/off/cycle through its BMC and wait until the PowerState says so."""
    fmt = choose(output)
    answer = _power(load_host(inventory, node), action, plan_only, timeout, insecure)
    if fmt is Format.JSON:
        emit_json(answer)
    else:  # one line, table or plain
        console.print(answer.line(), markup=False, highlight=False, soft_wrap=True)


def _power(entry: HostEntry, action: Action, plan_only: bool, timeout: float, insecure: bool) -> PowerAnswer:
    with open_node(session.options_for(entry.name, entry.bmc, insecure), whole_command=True) as facts:
        state = facts.system.power_state
        if action is Action.STATUS:
            return PowerAnswer(node=entry.name, power_state=state)
        actions = power_ops.plan(action.value, state, power_ops.reset_types(facts),  # type: ignore[arg-type]
                                 facts.conn.opts.where)
        if not actions or plan_only:
            return PowerAnswer(node=entry.name, power_state=state, actions=actions, planned=bool(actions),
                               now=None if actions else state)
        final = power_ops.apply(facts, actions, Clock(poll_s=1.0), timeout)
    return PowerAnswer(node=entry.name, power_state=state, actions=actions, now=str(final))

"""`provision power NODE on|off|graceful|cycle|status [--plan]`: waits for the PowerState."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, NodeArg, load_host
from provision.cli.output import console
from provision.redfish.ops import power as power_ops
from provision.redfish.ops import session
from provision.redfish.ops.session import open_node
from provision.redfish.ops.waiting import Clock


class Action(StrEnum):
    ON = "on"
    OFF = "off"
    GRACEFUL = "graceful"
    CYCLE = "cycle"
    STATUS = "status"


def power_command(
    node: NodeArg,
    action: Annotated[Action, typer.Argument(help="on, off, graceful, cycle or status")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    plan_only: Annotated[bool, typer.Option("--plan", help="Show the resets, change nothing")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the PowerState")] = 300,
    insecure: InsecureOpt = False,
) -> None:
    """Power a node on/off/cycle through its BMC and wait until the PowerState says so."""
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        state = facts.system.power_state
        if action is Action.STATUS:
            console.print(f"{node}: {state}", markup=False)
            return
        actions = power_ops.plan(action.value, state, power_ops.reset_types(facts),  # type: ignore[arg-type]
                                 facts.conn.opts.where)
        if not actions:
            console.print(f"{node}: already {state}; nothing to do", markup=False)
            return
        steps = ", ".join(f"{a.reset_type} -> {a.expect}" for a in actions)
        if plan_only:
            console.print(f"{node}: {state}; would send {steps}", markup=False)
            return
        final = power_ops.apply(facts, actions, Clock(poll_s=1.0), timeout)
    console.print(f"{node}: {steps}; now {final}", markup=False)

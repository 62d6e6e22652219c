"""`provision bios diff|apply NODE`: spec vs current BIOS; apply stages values, resets once, verifies.

Exit 0: converged (or the plan printed); 1: differences found (diff) or the BMC failed; 2: bad input
(including values the attribute registry refuses).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, JsonOpt, load_host
from provision.cli.output import console, emit_json
from provision.errors import CheckFailed
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import converge
from provision.redfish.ops.session import open_host
from provision.redfish.ops.waiting import Clock

app = typer.Typer(help="BIOS settings: vendor-neutral spec keys vs the BMC's attributes.", no_args_is_help=True)
NodeArg = Annotated[str, typer.Argument(help="Inventory host name")]
PlanOpt = Annotated[bool, typer.Option("--plan", help="Show what would change; change nothing")]
NoResetOpt = Annotated[bool, typer.Option("--no-reset", help="Stage only; do not reset the host")]


def render(node: str, plan: bios_ops.BiosPlan) -> None:
    table = Table("key", "attribute", "current", "target", "state",
                  title=f"{node} BIOS ({plan.vendor}, registry: {plan.registry or 'none'})")
    for c in plan.changes:
        table.add_row(c.key, c.attribute, repr(c.current), repr(c.target), "pending reset" if c.pending else "change")
    console.print(table if plan.changes else f"{node}: BIOS matches the spec")
    for line in plan.invalid:
        console.print(f"[red]refused:[/red] {line}", highlight=False)
    if plan.unmapped:
        console.print(f"[yellow]no attribute on this BIOS for:[/yellow] {', '.join(plan.unmapped)}")


@app.command("diff")
def diff(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False,
         insecure: InsecureOpt = False) -> None:
    """Show the attributes whose current value differs from the spec."""
    with open_host(load_host(inventory, node), insecure) as (host, facts):
        plan = bios_ops.plan(host.spec.bios, bios_ops.observe(facts), facts.vendor)
    if as_json:
        emit_json({"node": node, "plan": plan})
    else:
        render(node, plan)
    if plan.changes or plan.invalid:
        raise CheckFailed(f"{node}: {len(plan.changes) + len(plan.invalid)} BIOS setting(s) differ from the spec")


@app.command("apply")
def apply(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, plan_only: PlanOpt = False,
          no_reset: NoResetOpt = False, as_json: JsonOpt = False, insecure: InsecureOpt = False) -> None:
    """Validate against the registry, write the pending values, reset the host once, verify."""
    opts = converge.ConvergeOptions(firmware=False, reset=not no_reset)
    with open_host(load_host(inventory, node), insecure) as (host, facts):
        cplan = converge.make_plan(facts, host.spec, opts=opts)
        assert cplan.bios is not None
        if plan_only or (not cplan.bios.changes and not cplan.bios.invalid):
            if as_json:
                emit_json({"node": node, "plan": cplan.bios, "applied": False})
            else:
                render(node, cplan.bios)
            return
        result = converge.apply(facts, host.spec, cplan, opts, Clock(poll_s=1.0))
    if as_json:
        emit_json({"node": node, "plan": cplan.bios, "applied": True, "result": result})
    else:
        render(node, cplan.bios)
        console.print(f"{node}: wrote {len(result.bios_written)} attribute(s); host resets {result.host_resets}; "
                      + ("verified" if result.host_resets else "staged (applies at the next host reset)"))

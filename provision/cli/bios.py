"""`provision bios diff|apply NODE`: spec vs current BIOS; apply stages values, resets once, verifies.

Exit 0: converged (or the plan printed); 1: differences found (diff) or the BMC failed; 2: bad input
(including values the attribute registry refuses); 3: a spec key could not be checked (no attribute
on this BIOS and no other evidence; one error line each), never reported as matching; 3 too when `diff`
could not read the node's BMC (no credentials given, no answer, credentials or TLS refused).
"""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer
from rich.text import Text

from provision.cli.firmware import read_identity
from provision.cli.options import (
    DEFAULT_INVENTORY,
    InsecureOpt,
    InventoryOpt,
    JsonOpt,
    NodeArg,
    load_host,
    reading,
)
from provision.cli.output import Format, OutputOpt, add_row, choose, console, emit_json, new_table, show
from provision.errors import CheckFailed, ChecksIncomplete
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import converge, session
from provision.redfish.ops.session import open_node
from provision.redfish.ops.waiting import Clock

app = typer.Typer(help="BIOS settings: vendor-neutral spec keys vs the BMC's attributes.", no_args_is_help=True)
PlanOpt = Annotated[bool, typer.Option("--plan", help="Show what would change; change nothing")]
NoResetOpt = Annotated[bool, typer.Option("--no-reset", help="Stage only; do not reset the host")]


def render(node: str, plan: bios_ops.BiosPlan, fmt: Format = Format.TABLE) -> None:
    """The changes as a table (tab-separated lines with `--output plain`), then what else the plan says."""
    table = new_table("key", "attribute", "current", "target", "state",
                  title=f"{node} BIOS ({plan.vendor}, registry: {plan.registry or 'none'})")
    for c in plan.changes:
        add_row(table, c.key, c.attribute, repr(c.current), repr(c.target), "pending reset" if c.pending else "change")
    if plan.changes:
        show(table, fmt)
    elif not plan.differs and not plan.unmapped:
        console.print(f"{node}: BIOS matches the spec", markup=False)
    for line in plan.found:
        console.print(Text.assemble(("found:", "cyan"), f" {line}"), highlight=False)
    for line in plan.invalid:
        console.print(Text.assemble(("refused:", "red"), f" {line}"), highlight=False)
    for line in plan.forced:
        console.print(Text.assemble(("no write:", "green"), f" {line}"), highlight=False)
    for proof in plan.proven:
        verdict = ("holds", "green") if proof.holds else ("differs", "red")
        console.print(Text.assemble(f"{proof.key}: ", verdict, f" (no BIOS attribute; {proof.evidence})"),
                      highlight=False)
    for line in plan.problems():
        console.print(Text.assemble(("error:", "magenta"), f" {node}: {line}"), highlight=False)


def raise_unchecked(node: str, plan: bios_ops.BiosPlan) -> None:
    """ChecksIncomplete (exit 3) when a spec key could not be checked."""
    if plan.unmapped:
        raise ChecksIncomplete(f"{node}: {len(plan.unmapped)} BIOS key(s) could not be checked: "
                               f"{', '.join(plan.unmapped)}")


@app.command("diff")
def diff(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False,
         insecure: InsecureOpt = False, output: OutputOpt = None) -> None:
    """Show the attributes whose current value differs from the spec."""
    fmt = choose(output, as_json)
    as_json = fmt is Format.JSON
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with reading(), open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        plan = bios_ops.plan(entry.spec.bios, bios_ops.observe(facts), facts.vendor)
    if as_json:
        emit_json({"node": node, "plan": plan})
    else:
        render(node, plan, fmt)
    if plan.differs:
        count = len(plan.changes) + len(plan.invalid) + len(plan.unmet)
        raise CheckFailed(f"{node}: {count} BIOS setting(s) differ from the spec"
                          + (f" ({len(plan.unmapped)} more could not be checked)" if plan.unmapped else ""))
    raise_unchecked(node, plan)


@app.command("apply")
def apply(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, plan_only: PlanOpt = False,
          no_reset: NoResetOpt = False, as_json: JsonOpt = False, insecure: InsecureOpt = False) -> None:
    """Validate against the registry, write the pending values, reset the host once, verify."""
    opts = converge.ConvergeOptions(firmware=False, reset=not no_reset)
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with (reading() if plan_only else contextlib.nullcontext(),
          open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts):
        known = read_identity(facts, inventory, node, "bios apply")
        cplan = converge.make_plan(facts, entry.spec, opts=opts, known=known)
        assert cplan.bios is not None
        if plan_only or (not cplan.bios.changes and not cplan.bios.invalid):
            if as_json:
                emit_json({"node": node, "plan": cplan.bios, "applied": False})
            else:
                render(node, cplan.bios)
            raise_unchecked(node, cplan.bios)
            return
        result = converge.apply(facts, entry.spec, cplan, opts, Clock(poll_s=1.0))
    if as_json:
        emit_json({"node": node, "plan": cplan.bios, "applied": True, "result": result})
    else:
        render(node, cplan.bios)
        console.print(f"{node}: wrote {len(result.bios_written)} attribute(s); host resets {result.host_resets}; "
                      + ("verified" if result.host_resets else "staged (applies at the next host reset)"))
    raise_unchecked(node, cplan.bios)

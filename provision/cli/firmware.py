"""`provision firmware status|plan|update NODE`: FirmwareInventory vs the spec's baseline.

`update` sends BMC (and other immediate) images first and waits the BMC reset out, stages the
host-reset images and the BIOS values, resets the host ONCE, then verifies everything.
Exit 0: at baseline / done (or the plan printed); 1: not at baseline (status) or an update failed;
2: bad input, or a node its profile (or an image) does not describe (one line naming node and platform);
3: a baseline component could not be checked (absent from FirmwareInventory, its version unreadable, or not
comparable with the baseline's: one error line each, naming both versions), never reported as at baseline,
newer or older; `status`, `plan` and `update --plan` exit 3 too when the node's BMC could not be read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from provision.cli.options import (
    DEFAULT_INVENTORY,
    InsecureOpt,
    InventoryOpt,
    JsonOpt,
    NodeArg,
    journal_at,
    keep_identity,
    load_host,
    reading,
)
from provision.cli.output import Format, OutputOpt, add_row, choose, console, emit_json, new_table, show
from provision.errors import CheckFailed, ChecksIncomplete
from provision.redfish.ops import converge, session
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops.session import Node, open_node
from provision.redfish.ops.waiting import Clock
from provision.spec.platforms import PlatformIdentity

app = typer.Typer(help="Firmware baseline: status, plan and update through the BMC.", no_args_is_help=True)
DowngradeOpt = Annotated[bool, typer.Option("--allow-downgrade", help="Allow installing older versions")]
BindOpt = Annotated[str, typer.Option("--image-bind", help="Address the SimpleUpdate image server binds to")]
AdvertiseOpt = Annotated[str | None, typer.Option("--image-advertise",
                                                  help="Address the BMC should fetch images from")]


@app.command("status")
def status(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False,
           insecure: InsecureOpt = False, output: OutputOpt = None) -> None:
    """Running firmware vs the baseline, per component."""
    fmt = choose(output, as_json)
    as_json = fmt is Format.JSON
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with reading(), open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        known = read_identity(facts, inventory, node, "firmware status")
        platform_identity.check(facts.conn, entry.spec, known)  # a node its profile does not describe: refused
        rows = fw.status(entry.spec.firmware, fw.observe(facts.conn, known), facts.vendor)
    if as_json:
        emit_json({"node": node, "components": [dict(r.model_dump(mode="json"), verdict=r.verdict) for r in rows]})
    else:
        table = new_table("component", "baseline", "running", "entries", "verdict", title=f"{node} firmware")
        for r in rows:
            running = ", ".join(sorted({e.version or "?" for e in r.entries})) or "-"
            add_row(table, r.component, r.target, running, len(r.entries), r.verdict)
        show(table, fmt)
    unchecked = [r for r in rows if r.verdict in fw.UNCHECKED]
    if not as_json:
        for line in (_unchecked_line(r) for r in unchecked):
            console.print(Text.assemble(("error:", "magenta"), f" {node}: {line}"), highlight=False, soft_wrap=True)
    off = [r.component for r in rows if r.verdict not in ("ok", *fw.UNCHECKED)]
    more = f" ({len(unchecked)} more could not be checked)" if unchecked else ""
    if off:
        raise CheckFailed(f"{node}: firmware not at baseline: {', '.join(off)}{more}")
    if unchecked:
        raise ChecksIncomplete(f"{node}: firmware could not be checked: {', '.join(r.component for r in unchecked)}")


def _unchecked_line(row: fw.ComponentStatus) -> str:
    """Why a component could not be checked: absent, unreadable, or a version not ordered against the baseline."""
    if row.verdict == "incomparable":
        return "; ".join(e.problem for e in row.entries if e.verdict == "incomparable")
    return f"firmware {row.component}: {_unchecked_why(row)}: could not check"


def _unchecked_why(row: fw.ComponentStatus) -> str:
    """Why a component could not be checked: not listed, listed Absent (with the version it carries), or listed
    with a version that cannot be read."""
    if row.verdict != "absent":
        return "running version unreadable"
    if not row.entries:
        return "not in FirmwareInventory"
    listed = ", ".join(f"{e.id} version {e.raw_version} (Status.State {e.state})" for e in row.entries)
    return f"listed Absent in FirmwareInventory: {listed}"


def read_identity(facts: Node, inventory: Path, node: str, source: str) -> PlatformIdentity:
    """The node's identity, read from its BMC and kept in the journal where one exists."""
    found = platform_identity.of_node(facts)
    keep_identity(journal_at(None, inventory), node, found, source)
    return found


def raise_unchecked(node: str, cplan: converge.ConvergePlan) -> None:
    """ChecksIncomplete (exit 3) when a baseline component or BIOS key could not be checked (absent, or its
    running version cannot be compared with the baseline's)."""
    missing = cplan.firmware.absent + list(cplan.firmware.incomparable) + (cplan.bios.unmapped if cplan.bios else [])
    if missing:
        raise ChecksIncomplete(f"{node}: could not be checked: {', '.join(missing)}")


def render(node: str, cplan: converge.ConvergePlan, fmt: Format = Format.TABLE) -> None:
    """The steps as a table (tab-separated lines with `--output plain`), then what else the plan says."""
    table = new_table("#", "component", "to", "method", "apply", "host reset", "entries", title=f"{node} update plan")
    for n, s in enumerate(cplan.firmware.steps, 1):
        add_row(table, n, s.component + (" (downgrade)" if s.downgrade else ""), s.version, s.method,
                      s.apply_time, "yes" if s.needs_host_reset else "no", ", ".join(s.entries[:3])
                      + (" ..." if len(s.entries) > 3 else ""))
    if cplan.firmware.steps:
        show(table, fmt)
    elif not (cplan.firmware.refused or cplan.firmware.skipped or cplan.firmware.problems()):
        console.print(f"{node}: firmware at baseline", markup=False)
    for line in cplan.firmware.refused:
        console.print(Text.assemble(("refused:", "red"), f" {line}"), highlight=False)
    for line in cplan.firmware.skipped:
        console.print(Text.assemble(("skipped:", "yellow"), f" {line}"), highlight=False)
    for line in cplan.firmware.problems() + (cplan.bios.problems() if cplan.bios else []):
        console.print(Text.assemble(("error:", "magenta"), f" {node}: {line}"), highlight=False)
    if cplan.bios and cplan.bios.changes:
        console.print(f"BIOS: {len(cplan.bios.changes)} attribute(s) staged for the same host reset")
    console.print(f"host resets: {1 if cplan.host_reset else 0}")


def _plan(node: str, inventory: Path, insecure: bool,
          opts: converge.ConvergeOptions) -> tuple[str, converge.ConvergePlan]:
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        known = read_identity(facts, inventory, node, "firmware plan")
        return node, converge.make_plan(facts, entry.spec, opts=opts, known=known)


@app.command("plan")
def plan(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, allow_downgrade: DowngradeOpt = False,
         no_bios: Annotated[bool, typer.Option("--no-bios", help="Leave BIOS settings out")] = False,
         as_json: JsonOpt = False, insecure: InsecureOpt = False, output: OutputOpt = None) -> None:
    """What `update` would do (changes nothing)."""
    fmt = choose(output, as_json)
    opts = converge.ConvergeOptions(allow_downgrade=allow_downgrade, bios=not no_bios)
    with reading():
        node, cplan = _plan(node, inventory, insecure, opts)
    if fmt is Format.JSON:
        emit_json({"node": node, "plan": cplan, "host_reset": cplan.host_reset})
    else:
        render(node, cplan, fmt)
    raise_unchecked(node, cplan)


@app.command("update")
def update(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY,
           plan_only: Annotated[bool, typer.Option("--plan", help="Show the plan; change nothing")] = False,
           allow_downgrade: DowngradeOpt = False,
           no_bios: Annotated[bool, typer.Option("--no-bios", help="Do not stage BIOS settings")] = False,
           no_reset: Annotated[bool, typer.Option("--no-reset", help="Stage only; no host reset")] = False,
           image_bind: BindOpt = "127.0.0.1", image_advertise: AdvertiseOpt = None,
           as_json: JsonOpt = False, insecure: InsecureOpt = False) -> None:
    """Bring firmware (and BIOS) to the baseline with one host reset; a converged node plans nothing."""
    opts = converge.ConvergeOptions(allow_downgrade=allow_downgrade, bios=not no_bios, reset=not no_reset,
                                    image_bind=image_bind, image_advertise=image_advertise)
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with (reading() if plan_only else contextlib.nullcontext(),
          open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts):
        known = read_identity(facts, inventory, node, "firmware update")
        cplan = converge.make_plan(facts, entry.spec, opts=opts, known=known)
        if plan_only or (cplan.empty and not cplan.firmware.refused):
            if as_json:
                emit_json({"node": node, "plan": cplan, "applied": False})
            else:
                render(node, cplan)
            raise_unchecked(node, cplan)
            return
        if not as_json:
            render(node, cplan)
        result = converge.apply(facts, entry.spec, cplan, opts, Clock(poll_s=1.0))
    if as_json:
        emit_json({"node": node, "plan": cplan, "applied": True, "result": result})
    else:
        console.print(f"{node}: sent {', '.join(result.firmware_sent) or 'no firmware'}; BIOS attributes "
                      f"{len(result.bios_written)}; host resets {result.host_resets}; "
                      + ("verified" if result.verified else "staged"))
    raise_unchecked(node, cplan)

"""`provision bmc inventory NODE`, `provision bmc boot-once NODE TARGET`, `provision bmc media NODE`,
`provision bmc setup NODE...` (day zero: the BMC taken over as its `bmc:` section says).

Exit 0: ok (no drift); 1: drift found or the BMC failed; 2: bad input.
"""

from __future__ import annotations

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
    NodesArg,
    journal_at,
    keep_identity,
    load_host,
    load_hosts,
)
from provision.cli.output import Format, OutputOpt, add_row, cell, choose, console, emit_json, new_table, show
from provision.errors import CheckFailed, InputError
from provision.redfish.ops import drift as drift_ops
from provision.redfish.ops import inventory as inv_ops
from provision.redfish.ops import power as power_ops
from provision.redfish.ops import session
from provision.redfish.ops.session import open_node
from provision.spec.platforms import Board, PlatformIdentity, refuse_profile

app = typer.Typer(help="BMC inventory, drift against the spec, boot override and virtual media.",
                  no_args_is_help=True)
PlanOpt = Annotated[bool, typer.Option("--plan", help="Show what would change; change nothing")]


@app.command("inventory")
def inventory(node: NodeArg, inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False,
              insecure: InsecureOpt = False, output: OutputOpt = None) -> None:
    """Read the node's hardware from its BMC and report drift against its spec."""
    fmt = choose(output, as_json)
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    with open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        inv = inv_ops.observe(facts.conn)
    report = drift_ops.drift(entry.spec, inv)
    kept = keep_identity(journal_at(None, inventory), node, inv.identity, "bmc inventory")
    fits = entry.spec.described_platforms.fits(inv.identity)
    if fmt is Format.JSON:
        emit_json({"node": node, "vendor": inv.vendor, "requests": inv.requests, "identity": inv.identity,
                   "profile_fits": fits, "inventory": summary(inv),
                   "drift": report.items, "drifted": len(report.drifted), "unreadable": inv.unreadable})
    else:
        render(node, inv, report, fmt)
        if kept:
            console.print(f"  {kept}", markup=False, highlight=False)
    refuse_profile(node, entry.spec.profile, entry.spec.described_platforms, inv.identity)
    problems = []
    if report.drifted:
        problems.append(f"{len(report.drifted)} figure(s) differ from the spec: "
                        + ", ".join(i.key for i in report.drifted))
    if inv.unreadable:  # an inventory with holes is not a clean one
        problems.append(f"{len(inv.unreadable)} URI(s) could not be read: "
                        + ", ".join(f"{u.uri} ({u.reason})" for u in inv.unreadable))
    if problems:
        raise CheckFailed(f"{node}: " + "; ".join(problems))


def summary(inv: inv_ops.NodeInventory) -> dict[str, object]:
    return {
        "system": {"manufacturer": inv.system.manufacturer, "model": inv.system.model,
                   "serial": inv.system.serial_number, "bios_version": inv.system.bios_version,
                   "power_state": inv.system.power_state},
        "cpus": [{"model": c.model, "identity": c.identity, "cores": c.total_cores, "threads": c.total_threads,
                  "socket": c.socket} for c in inv.cpus],
        "gpus": inv.gpus,
        "memory": [{"slot": m.device_locator or m.id, "mib": m.capacity_mib, "type": m.memory_device_type,
                    "speed_mhz": m.operating_speed_mhz,
                    "location": m.memory_location.model_dump() if m.memory_location else None}
                   for m in inv.memory if m.populated],
        "drives": [{"id": d.id, "uri": d.uri, "model": d.model, "bytes": d.capacity_bytes,
                    "protocol": d.protocol or "unknown", "serial": d.serial_number} for d in inv.drives],
        "network_adapters": [{"id": a.adapter.id, "model": a.adapter.model, "technology": a.technology,
                              "speed_gbps": a.speed_gbps, "firmware": a.adapter.firmware_version,
                              "ports": a.port_tally.model_dump()} for a in inv.adapters],
        "nic_ports": inv.ports.model_dump(),
        "power_supplies": [{"name": p.name, "serial": p.serial_number, "watts": p.power_capacity_watts,
                            "state": p.status.get("State")}
                           for pw in inv.power for p in pw.power_supplies],
        "firmware": [{"id": f.id, "name": f.name, "version": f.version,
                      "state": f.status.state if f.status else None} for f in inv.firmware],
        "missing_uris": len(inv.missing),
    }


def render(node: str, inv: inv_ops.NodeInventory, report: drift_ops.DriftReport, fmt: Format = Format.TABLE) -> None:
    """On a terminal: the system, counts, the drift table and unreadable URIs; plain: the drift rows only."""
    s = inv.system
    table = new_table("figure", "compared", "spec", "BMC reports", "verdict", title="drift against the spec")
    colour = {"ok": "green", "drift": "red", "unknown": "yellow"}
    for i in report.items:
        add_row(table, i.key, i.kind.value, i.expected, i.observed, cell(i.verdict, colour[i.verdict]))
    if fmt is Format.PLAIN:
        show(table, fmt)
        return
    console.print(Text.assemble((node, "bold"), f": {s.manufacturer} {s.model} (serial {s.serial_number}), "
                                f"vendor plugin {inv.vendor}, power {s.power_state}, {inv.requests} requests"),
                  soft_wrap=True)
    if inv.identity is not None:
        console.print(identity_line(inv.identity), markup=False, highlight=False, soft_wrap=True)
    console.print(f"  CPUs {len(inv.cpus)}, GPUs {len(inv.gpus)}, DIMMs {len([m for m in inv.memory if m.populated])}, "
                  f"drives {len(inv.drives)}, adapters {len(inv.adapters)}, NIC ports ({inv.ports.shown()}), "
                  f"firmware entries {len(inv.firmware)}")
    show(table, fmt)
    for u in inv.unreadable:
        console.print(Text.assemble("  ", ("unreadable", "red"), f" {u.uri}: {u.reason}"), highlight=False)


def identity_line(ident: PlatformIdentity) -> str:
    """`  platform: Supermicro SYS-821GE-TNHR, SKU ..., part ..., serial ..., UUID ...; chassis ...; BMC ...`."""
    def board(b: Board) -> str:
        return ", ".join(f"{k} {v}" for k, v in (("SKU", b.sku), ("part", b.part_number),
                                                ("serial", b.serial_number), ("UUID", b.uuid)) if v)
    parts = [f"  platform: {ident.described}" + (f" ({board(ident.system)})" if board(ident.system) else "")]
    if ident.chassis is not None:
        parts.append(f"chassis {ident.chassis.manufacturer or '?'} {ident.chassis.model or '?'}"
                     + (f" ({board(ident.chassis)})" if board(ident.chassis) else ""))
    if ident.bmc is not None:
        parts.append(f"BMC {ident.bmc.model or '?'} firmware {ident.bmc.firmware_version or '?'}")
    return "; ".join(parts)


@app.command("setup")
def setup(nodes: NodesArg, inventory: InventoryOpt = DEFAULT_INVENTORY, plan_only: PlanOpt = False,
          journal: Annotated[Path | None, typer.Option("--journal", help="Journal database")] = None,
          insecure: InsecureOpt = False, as_json: JsonOpt = False) -> None:
    """Take BMCs over: the initial account's password rotated, the site's accounts made, NTP, host name, DNS and
    protocols set, the HTTPS certificate issued by the site CA (the bmc-password, bmc-accounts and bmc stages of
    bring-up). Each change is journaled; a converged BMC plans nothing. A factory BMC's self-signed certificate
    cannot be verified: its first run needs --insecure."""
    from provision.bringup.engine import run_bringup
    from provision.bringup.options import BringupOptions
    from provision.bringup.stages import bmc_setup_stages
    from provision.bringup.stages.bmc_accounts import check_inputs
    from provision.journal import Journal

    where = journal_at(journal, inventory)
    hosts = load_hosts(inventory, nodes)
    missing = [h.name for h in hosts if h.spec.bmc is None]
    if missing:
        raise InputError(f"{inventory}: {', '.join(missing)}: no bmc: section in the profile (nor "
                         "provision_bmc_setup): nothing to set up")
    for host in hosts:  # every password source and the CA key, before anything is sent
        check_inputs(host)
    stages = bmc_setup_stages(BringupOptions(inventory=inventory, insecure=insecure))
    with Journal(where) as jr:
        result = run_bringup(hosts, stages, journal=jr, plan_only=plan_only)
    ran = [(n.node, s) for n in result.nodes for s in n.stages]
    if as_json:
        emit_json({"run_id": result.run_id, "plan_only": result.plan_only, "ok": result.ok, "stages": [
            {"node": node, "stage": s.stage, "outcome": s.outcome.value, "error": s.error, "note": s.plan.note,
             "actions": [a.describe() for a in s.plan.actions]} for node, s in ran]})
    else:
        for node, s in ran:  # what it did (or would do), then the stage's note: which password worked, ...
            what = s.error or "; ".join([a.describe() for a in s.plan.actions] + ([s.plan.note] if s.plan.note else []))
            console.print(f"{node} {s.stage}: {s.outcome.value}" + (f": {what}" if what else ""),
                          markup=False, highlight=False, soft_wrap=True)
    if not result.ok:
        raise CheckFailed("; ".join(f"{n.node}: failed at {n.failed_stage}" for n in result.nodes if not n.ok))


@app.command("boot-once")
def boot_once(node: NodeArg, target: Annotated[str, typer.Argument(help="Pxe, Cd, Hdd, Usb, BiosSetup, ...")],
              mode: Annotated[str | None, typer.Option("--mode", help="UEFI or Legacy")] = None,
              inventory: InventoryOpt = DEFAULT_INVENTORY, plan_only: PlanOpt = False,
              insecure: InsecureOpt = False) -> None:
    """Set a one-time boot override."""
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    if plan_only:
        console.print(f"{node}: would set a one-time boot from {target} (--plan: nothing changed)", markup=False)
        return
    with open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        power_ops.boot_once(facts, target, mode)
    console.print(f"{node}: next boot from {target} (once)", markup=False)


@app.command("media")
def media(node: NodeArg,
          insert: Annotated[str | None, typer.Option("--insert", help="Image URL to insert")] = None,
          eject: Annotated[bool, typer.Option("--eject", help="Eject the virtual CD")] = False,
          inventory: InventoryOpt = DEFAULT_INVENTORY, plan_only: PlanOpt = False,
          insecure: InsecureOpt = False) -> None:
    """Insert or eject virtual media (CD/DVD)."""
    if bool(insert) == eject:
        raise InputError("give exactly one of --insert URL or --eject")
    entry = load_host(inventory, node)
    node = entry.name  # the pattern's one host
    if plan_only:
        console.print(f"{node}: would {'eject the virtual CD' if eject else f'insert {insert}'} (--plan)", markup=False)
        return
    with open_node(session.options_for(node, entry.bmc, insecure), whole_command=True) as facts:
        uri = power_ops.virtual_media(facts, None if eject else insert)
    console.print(f"{node}: {'ejected' if eject else 'inserted'} ({uri})", markup=False)

"""`provision lab up|down|status|fault`: the built-in lab (BMC simulator + node twins)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from provision.cli.options import JsonOpt
from provision.cli.output import (
    Format,
    OutputOpt,
    add_row,
    choose,
    console,
    emit_json,
    err_console,
    new_table,
    note,
    show,
)
from provision.lab import manager
from provision.lab.bmcsim.faults import BMC_FAULT_KINDS
from provision.lab.state import LabState, default_lab_dir

app = typer.Typer(help="The built-in lab: simulated BMCs (and node twins) on this machine.", no_args_is_help=True)

LabDirOpt = Annotated[
    Path | None,
    typer.Option("--lab-dir", help="Lab directory. Env: PROVISION_LAB_DIR; default ./.lab", show_default=False),
]


def _lab(lab_dir: Path | None) -> Path:
    return lab_dir if lab_dir is not None else default_lab_dir()


@app.command("up")
def up(
    nodes: Annotated[int | None, typer.Option(
        "--nodes", help="How many lab nodes (node01..nodeNN). Default: one per --bmc-tree given, else 2.",
        show_default=False)] = None,
    profile: Annotated[str, typer.Option("--profile", help="Spec profile of the nodes.")] = "ml_prod_v4",
    bmc_tree: Annotated[str | None, typer.Option(
        "--bmc-tree", help="Seed the BMCs from this mockup dir (redfish/v1/.../index.json), or a built-in "
        "tree name: supermicro, dell, public-rackmount1. Several, comma-separated, with --bmc-only: node01 "
        "serves the first, node02 the second, ... (their number is the number of nodes).")] = None,
    as_captured: Annotated[bool, typer.Option(
        "--as-captured", help="Serve the capture as captured: no parts from the spec, missing resources 404, "
        "a malformed captured file is served as its bytes (with a warning).")] = False,
    bmc_only: Annotated[bool, typer.Option("--bmc-only", help="Simulated BMCs only, no node twins.")] = False,
    factory: Annotated[bool, typer.Option(
        "--factory", help="Every BMC as from the factory: its one account (the inventory's user and password) "
        "must change its password first (PasswordChangeRequired), and HTTPS serves a self-signed certificate of "
        "its own (<lab>/factory-certs/NODE.pem, host_vars provision_lab_bmc_factory_cert_file), not the lab "
        "CA's.")] = False,
    vm: Annotated[bool, typer.Option(
        "--vm", help="The node's host is a qemu VM its BMC drives (blank drives, UEFI, off; no twin), with its "
        "installer CD served and named in the inventory: `provision bringup node01 --only os` installs it. "
        "One node at most (one VM under plain emulation keeps two cores busy). Needs qemu, OVMF, xorriso: "
        "PROVISION_TEST_VM=1 scripts/bootstrap.sh.")] = False,
    speed: Annotated[float, typer.Option("--speed", help="Simulated clock speed factor.")] = 10.0,
    from_inventory: Annotated[Path, typer.Option(
        "--from-inventory", help="Project inventory whose specs the lab copies.")] = Path("inventory/hosts.yml"),
    lab_dir: LabDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the lab in the background and write its inventory."""
    state = manager.up(manager.UpOptions(
        lab_dir=_lab(lab_dir), nodes=nodes, profile=profile,
        bmc_tree=manager.parse_trees(bmc_tree) if bmc_tree is not None else None, as_captured=as_captured,
        factory=factory, bmc_only=bmc_only, vm=vm, speed=speed, source_inventory=from_inventory,
    ))
    if as_json:
        emit_json(manager.status(state.lab_dir))
        return
    console.print(f"lab up in {state.lab_dir}: {len(state.nodes)} node(s), BMC tree {_tree_names(state)}"
                  f"{' (as captured)' if state.as_captured else ''}{_hosts(state)}",
                  markup=False)
    console.print(f"inventory: {state.inventory}  (use: -i {state.inventory})", markup=False)
    for line in state.warnings:
        err_console.print(f"warning: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)


def _tree_names(state: LabState) -> str:
    names = [Path(n.tree).name for n in state.nodes if n.tree]
    return ",".join(names) if len(set(names)) > 1 else Path(state.tree).name


def _hosts(state: LabState) -> str:
    return ", VM hosts (off)" if state.vm else ", twins" if state.twins else ", BMCs only"


@app.command("status")
def status(lab_dir: LabDirOpt = None, as_json: JsonOpt = False, output: OutputOpt = None) -> None:
    """Say whether the lab is up, where its inventory is, and each node's BMC."""
    fmt = choose(output, as_json)
    info = manager.status(_lab(lab_dir))
    if fmt is Format.JSON:
        emit_json(info)
        return
    say = note if fmt is Format.PLAIN else (lambda line: console.print(line, markup=False, soft_wrap=True))
    say(f"lab {info['state']} ({info['lab_dir']})")
    if info["state"] != "up":
        return
    say(f"inventory: {info['inventory']}")
    table = new_table("node", "BMC", "power", "faults", "ssh")
    for n in info["nodes"]:
        ssh = n.get("ssh") or {}
        faults = ", ".join(n.get("faults") or {}) or "-"
        where = (n.get("vm") or {}).get("ssh") or ssh.get("address", "-")
        add_row(table, n["name"], n["bmc"] or n["bmc_http"], n.get("power"), faults, where)
    show(table, fmt)


@app.command("down")
def down(lab_dir: LabDirOpt = None, as_json: JsonOpt = False) -> None:
    """Stop everything the lab started and remove its secrets."""
    info = manager.down(_lab(lab_dir))
    if as_json:
        emit_json(info)
        return
    said = f"lab down ({info['lab_dir']})" if info["stopped"] else f"no lab was up in {info['lab_dir']}"
    console.print(said, markup=False)


@app.command("fault")
def fault(
    node: Annotated[str, typer.Argument(help="Lab node, e.g. node01")],
    kind: Annotated[str, typer.Argument(help="BMC fault: " + ", ".join(sorted(BMC_FAULT_KINDS))
                                        + "; or a twin fault kind (passed to the twins)")],
    clear: Annotated[bool, typer.Option("--clear", help="Remove the fault instead.")] = False,
    value: Annotated[float | None, typer.Option("--value", help="Fault parameter (ms, seconds, percent).")] = None,
    lab_dir: LabDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Inject (or clear) a fault on one lab node, live."""
    info = manager.fault(_lab(lab_dir), node, kind, clear, value)
    if as_json:
        emit_json(info)
        return
    console.print(f"{node}: {kind} {'cleared' if clear else 'injected'}", markup=False)

"""`provision inventory list`: hosts, their profile and BMC address."""

from __future__ import annotations

import typer

from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt
from provision.cli.output import Format, OutputOpt, add_row, choose, emit_json, new_table, show
from provision.spec import load_fleet

app = typer.Typer(help="Inspect the inventory.", no_args_is_help=True)


@app.command("list")
def list_hosts(inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False,
               output: OutputOpt = None) -> None:
    """List every host with its profile, groups and BMC address (a table, or tab-separated when piped)."""
    fmt = choose(output, as_json)
    fleet = load_fleet(inventory)
    hosts = list(fleet.hosts.values())
    if fmt is Format.JSON:
        emit_json(
            [
                {
                    "host": h.name,
                    "profile": h.profile,
                    "groups": list(h.groups),
                    "bmc": h.bmc.address,
                    "ssh": h.ssh.host if h.ssh else None,
                }
                for h in hosts
            ]
        )
        return
    table = new_table("host", "profile", "groups", "bmc", "ssh", title=str(inventory))
    for h in hosts:
        add_row(table, h.name, h.profile, ",".join(h.groups), h.bmc.address, h.ssh.host if h.ssh else "-")
    show(table, fmt)

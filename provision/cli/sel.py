"""`provision sel NODE [--clear] [--limit N] [--json]`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, JsonOpt, load_host
from provision.cli.output import console, emit_json
from provision.redfish.ops import sel as sel_ops
from provision.redfish.ops.session import open_host


def sel_command(
    node: Annotated[str, typer.Argument(help="Inventory host name")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    clear: Annotated[bool, typer.Option("--clear", help="Clear the SEL after printing it")] = False,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the last N entries")] = None,
    plan_only: Annotated[bool, typer.Option("--plan", help="With --clear: say what would be cleared")] = False,
    as_json: JsonOpt = False,
    insecure: InsecureOpt = False,
) -> None:
    """Read (and optionally clear) the node's system event log."""
    with open_host(load_host(inventory, node), insecure) as (_, facts):  # within the command's deadline
        rows = sel_ops.read(facts, limit)
        cleared = sel_ops.clear(facts) if clear and not plan_only else None
    if clear and plan_only:
        console.print(f"{node}: --clear would remove {len(rows)} SEL entries (--plan: nothing cleared)")
    if as_json:
        emit_json({"node": node, "entries": rows, "cleared": cleared is not None})
        return
    table = Table("id", "created", "severity", "message", title=f"{node} SEL ({len(rows)} entries)")
    for e in rows:
        table.add_row(e.id, e.created or "", e.severity or "", e.message or "")
    console.print(table)
    if cleared:
        console.print(f"{node}: SEL cleared ({cleared})")

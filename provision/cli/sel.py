"""`provision sel NODE [--clear] [--last N] [--json]`.

`--limit` is a host pattern on every command; the SEL's entry count, once `--limit N`, is `--last N`
(a number given to --limit is refused with one line naming --last)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, JsonOpt, LimitOpt, NodeArg, one_host
from provision.cli.output import console, emit_json
from provision.errors import InputError
from provision.redfish.ops import sel as sel_ops
from provision.redfish.ops.session import open_host
from provision.spec import load_fleet


def sel_command(
    node: NodeArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    clear: Annotated[bool, typer.Option("--clear", help="Clear the SEL after printing it")] = False,
    last: Annotated[int | None, typer.Option("--last", min=1, help="Only the last N entries")] = None,
    limit: LimitOpt = None,
    plan_only: Annotated[bool, typer.Option("--plan", help="With --clear: say what would be cleared")] = False,
    as_json: JsonOpt = False,
    insecure: InsecureOpt = False,
) -> None:
    """Read (and optionally clear) the node's system event log."""
    if limit is not None and limit.strip().isdigit():
        raise InputError(f"--limit {limit}: --limit is a host pattern on every command; for the last {limit.strip()} "
                         f"SEL entries use --last {limit.strip()}")
    hosts = load_fleet(inventory).select([node], limit)
    node = one_host(str(inventory), node, [h.name for h in hosts])
    with open_host(hosts[0], insecure) as (_, facts):
        with facts.conn.deadline():
            rows = sel_ops.read(facts, last)
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

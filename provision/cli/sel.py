"""`provision sel NODE [--clear] [--last N] [--json]`.

`--limit` is a host pattern on every command; the SEL's entry count, once `--limit N`, is `--last N`
(a number given to --limit is refused with one line naming --last)."""

from __future__ import annotations

from typing import Annotated

import typer

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, JsonOpt, LimitOpt, NodeArg, one_host
from provision.cli.output import Format, OutputOpt, add_row, choose, emit_json, new_table, note, show
from provision.errors import InputError
from provision.redfish.ops import sel as sel_ops
from provision.redfish.ops import session
from provision.redfish.ops.session import open_node
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
    output: OutputOpt = None,
) -> None:
    """Read (and optionally clear) the node's system event log."""
    fmt = choose(output, as_json)
    if limit is not None and limit.strip().isdigit():
        raise InputError(f"--limit {limit}: --limit is a host pattern on every command; for the last {limit.strip()} "
                         f"SEL entries use --last {limit.strip()}")
    hosts = load_fleet(inventory).select([node], limit)
    node = one_host(str(inventory), node, [h.name for h in hosts])
    bmc = session.options_for(hosts[0].name, hosts[0].bmc, insecure)
    with open_node(bmc, whole_command=True) as facts:  # within the command's deadline
        rows = sel_ops.read(facts, last)
        cleared = sel_ops.clear(facts) if clear and not plan_only else None
    if clear and plan_only:
        note(f"{node}: --clear would remove {len(rows)} SEL entries (--plan: nothing cleared)")
    if fmt is Format.JSON:
        emit_json({"node": node, "entries": rows, "cleared": cleared is not None})
        return
    table = new_table("id", "created", "severity", "message", title=f"{node} SEL ({len(rows)} entries)")
    for e in rows:
        add_row(table, e.id, e.created or "", e.severity or "", e.message or "")
    show(table, fmt)
    if cleared:
        note(f"{node}: SEL cleared ({cleared})")

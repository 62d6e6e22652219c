"""`provision exec` and `provision collect`: SSH work outside Ansible, over Fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from provision.cli.options import (
    DEFAULT_INVENTORY,
    PATTERN_HELP,
    InventoryOpt,
    JsonOpt,
    LimitOpt,
    NodeArg,
    load_host,
    load_hosts,
)
from provision.cli.output import Format, OutputOpt, choose, console, emit_json
from provision.remote.collect import collect
from provision.remote.parallel import run_many


def exec_command(
    target: Annotated[str, typer.Argument(help=PATTERN_HELP, metavar="PATTERN")],
    command: Annotated[list[str], typer.Argument(help="The command, after --")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    limit: LimitOpt = None,
    concurrency: Annotated[int, typer.Option(help="Nodes at once")] = 16,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Run a command on every node PATTERN selects, in parallel: provision exec 'gpu:!node03' -- CMD.

    Each node's exit status and output (free text: table and plain print the same blocks; json a list of
    {node, command, exit_code, stdout, stderr, seconds, ok})."""
    fmt = choose(output, as_json)
    hosts = load_hosts(inventory, [target], limit)
    results = run_many(hosts, " ".join(command), concurrency=concurrency)
    if fmt is Format.JSON:
        emit_json([dict(r.model_dump(mode="json"), ok=r.ok) for r in results])
    else:
        for res in results:
            colour = "green" if res.ok else "red"
            console.print(Text.assemble((res.node, colour), f" exit {res.exit_code}"), highlight=False)
            text = (res.stdout + res.stderr).rstrip()
            if text:
                console.print(escape(text), highlight=False)
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def collect_command(
    node: NodeArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    out: Annotated[Path, typer.Option("--out", help="Directory for the bundle")] = Path("bundles"),
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Collect logs and diagnostics (nvidia-bug-report, nvidia-smi, ibstat, mdstat, zpool, journal); prints the
    bundle's path (json: {node, bundle})."""
    fmt = choose(output, as_json)
    host = load_host(inventory, node)
    bundle = collect(host, out)
    if fmt is Format.JSON:
        emit_json({"node": host.name, "bundle": str(bundle)})
    else:
        console.print(str(bundle), markup=False, highlight=False, soft_wrap=True)  # a long path is not folded

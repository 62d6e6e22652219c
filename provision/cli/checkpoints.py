"""`provision checkpoints PATTERN...`: each node's scratch-pool snapshots (name, period, age) and its last scrub.

Read-only: one SSH round trip per node gathers the same probes as verify's checkpoints area
(provision/conformance/checks/checkpoints.py). A node without checkpoint protection in its spec (or
without a scratch set) is listed as such; a node that cannot be read makes the command exit 1 after the
others are shown."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import typer

from provision.cli.options import DEFAULT_INVENTORY, PATTERN_HELP, InventoryOpt, JsonOpt, LimitOpt, load_hosts
from provision.cli.output import Format, OutputOpt, add_row, choose, emit_json, new_table, show
from provision.conformance.checks.checkpoints import CheckpointSummary, summarize, summary_probes
from provision.conformance.facts import GatherError, gather
from provision.conformance.model import Level
from provision.conformance.runner import ssh_runner_for
from provision.errors import InventoryError, ProvisionError
from provision.spec.fleet import HostEntry
from provision.spec.storage import scratch_zfs


class CheckpointsUnreadable(ProvisionError):
    """One or more nodes' snapshots or scrub state could not be read."""


def _one(host: HostEntry) -> CheckpointSummary | None:
    probes = summary_probes(host.spec)
    if not probes:
        return None
    z = scratch_zfs(host.spec)
    pool = z.pool if z else "-"
    try:
        facts = gather(host.name, probes, ssh_runner_for(Level.FULL)(host))
    except (GatherError, InventoryError) as exc:
        return CheckpointSummary(node=host.name, pool=pool, snapshots=(), scrub=None, error=str(exc))
    return summarize(host.name, host.spec, facts)


def _age(seconds: int) -> str:
    days, rest = divmod(max(0, seconds), 86400)
    return f"{days}d{rest // 3600:02d}h" if days else f"{rest // 3600}h{rest % 3600 // 60:02d}m"


def checkpoints_command(
    nodes: Annotated[list[str] | None, typer.Argument(help=PATTERN_HELP, metavar="PATTERN...")] = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """List each node's scratch-pool snapshots (name, period, age) and its last scrub."""
    fmt = choose(output, as_json)
    hosts = load_hosts(inventory, nodes, limit)
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(hosts)))) as pool:
        found = dict(zip([h.name for h in hosts], pool.map(_one, hosts), strict=True))
    if fmt is Format.JSON:
        emit_json({"nodes": [s if s else {"node": n, "protected": False} for n, s in found.items()]})
    else:
        _tables(found, fmt)
    bad = [s for s in found.values() if s and s.error]
    if bad:
        raise CheckpointsUnreadable("; ".join(s.error if s.error.startswith(s.node) else f"{s.node}: {s.error}"
                                             for s in bad if s.error))


def _tables(found: dict[str, CheckpointSummary | None], fmt: Format) -> None:
    snaps = new_table("node", "snapshot", "period", "age", "created", title="Snapshots (newest first)")
    scrubs = new_table("node", "pool", "last scan", "at", "errors", title="Scrubs")
    for node, s in found.items():
        if s is None:
            add_row(scrubs, node, "-", "no checkpoint protection in the spec", "", "")
            continue
        if s.error:
            add_row(scrubs, node, s.pool, f"unreadable: {s.error}", "", "")
            continue
        for row in s.snapshots:
            add_row(snaps, node, row.name, row.period or "manual", _age(row.age_s),
                    row.created.strftime("%Y-%m-%d %H:%M:%S UTC"))
        scan = s.scrub
        if scan is None:
            add_row(scrubs, node, s.pool, "no scrub schedule in the spec", "", "")
        else:
            at = scan.at.strftime("%Y-%m-%d %H:%M:%S UTC") if scan.at else ""
            add_row(scrubs, node, s.pool, f"{scan.kind} {scan.state}", at, "" if scan.errors is None else scan.errors)
    show(snaps, fmt)
    show(scrubs, fmt)

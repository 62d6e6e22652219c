"""`provision bringup`: staged, resumable, concurrent bring-up from bare BMC to verified node."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from provision.bringup.display import Progress
from provision.bringup.engine import run_bringup, select_stages
from provision.bringup.model import BringupResult, Outcome, StageName
from provision.bringup.options import BringupOptions
from provision.bringup.shared import SharedBringup, ShareSummary
from provision.bringup.stages import default_stages
from provision.cli.events import StageEvents, tee
from provision.cli.firmware import AdvertiseOpt, BindOpt
from provision.cli.options import (
    DEFAULT_INVENTORY,
    PATTERN_HELP,
    InsecureOpt,
    InventoryOpt,
    JsonOpt,
    LimitOpt,
    StrategyOpt,
    journal_at,
    load_hosts,
    strategy_of,
)
from provision.cli.output import Format, OutputOpt, add_row, cell, choose, console, emit_json, new_table, show
from provision.cli.paths import check_paths
from provision.conformance.model import Level
from provision.errors import InputError
from provision.journal import Journal
from provision.journal.location import ENV_URL, Backend, Location
from provision.journal.locks import LEASE_TTL_S

MAX_CONCURRENCY = 256
STYLE = {Outcome.APPLIED: "yellow", Outcome.CONVERGED: "green", Outcome.PLANNED: "cyan", Outcome.FAILED: "red",
         Outcome.SKIPPED: "dim"}


def bringup_command(
    nodes: Annotated[list[str] | None, typer.Argument(help=PATTERN_HELP, metavar="[PATTERN]...")] = None,
    limit: LimitOpt = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    plan: Annotated[bool, typer.Option("--plan", help="Show what every stage would do; change nothing")] = False,
    start: Annotated[StageName | None, typer.Option("--from", help="Start at this stage")] = None,
    only: Annotated[StageName | None, typer.Option("--only", help="Run only this stage")] = None,
    end: Annotated[StageName | None, typer.Option("--to", help="Stop after this stage (e.g. reset: the BMC stages)")]
    = None,
    share: Annotated[str | None, typer.Option(
        "--share", metavar="NAME",
        help="Split the nodes with every controller running this shared bring-up (a PostgreSQL journal): each "
             "takes nodes no other holds; a dead controller's nodes are finished by the others")] = None,
    lease_seconds: Annotated[float, typer.Option(
        "--lease-seconds", min=1.0, help="--share: a dead controller's node leases expire this long after it died")]
    = LEASE_TTL_S,
    retry_failed: Annotated[bool, typer.Option(
        "--retry-failed", help="--share: take again the nodes that failed in it before this controller started")]
    = False,
    wait_seconds: Annotated[float | None, typer.Option(
        "--wait-seconds", min=0.0, metavar="N",
        help="--share: wait at most N s (from the start) on nodes another live controller holds, then exit 4 "
             "naming them and their holders")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Nodes at once")] = 4,
    journal: Annotated[Path | None, typer.Option("--journal", help="Journal database")] = None,
    log_dir: Annotated[Path, typer.Option("--log-dir", help="One log file per node")] = Path("logs/bringup"),
    os_image: Annotated[str | None, typer.Option("--os-image", help="Installer URL for nodes without an OS")] = None,
    image_bind: BindOpt = "127.0.0.1",
    image_advertise: AdvertiseOpt = None,
    netboot_dir: Annotated[Path | None, typer.Option(
        "--netboot-dir", help="os, network installs: provision netboot's directory (env PROVISION_NETBOOT_DIR)")]
    = None,
    level: Annotated[Level, typer.Option("--level", help="Conformance level of the verify stage")] = Level.FULL,
    poll: Annotated[float, typer.Option("--poll-seconds", min=0.05, max=60.0, help="BMC polling interval")] = 1.0,
    recheck: Annotated[bool, typer.Option(
        "--recheck", help="configure: run site.yml in check mode even where the journal's record of the last "
                          "apply and a node probe say the node is unchanged")] = False,
    strategy: StrategyOpt = "linear",
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Bring nodes from bare BMC to verified: bmc-password, bmc-accounts, preflight, bmc, firmware, bios, reset,
    os, configure, verify (the bmc stages: day zero, as the profile's bmc: section says).

    Every option is checked before anything is written (the journal, the log directory, a BMC)."""
    if not nodes and not limit:
        raise InputError("select nodes: a host pattern (PATTERN...), --limit PATTERN, or both")
    if only is not None and (start is not None or end is not None):
        raise InputError("--only excludes --from and --to: --from runs a stage and those after it (up to --to), "
                         "--only one")
    chosen = strategy_of(strategy)
    where = journal_at(journal, inventory)
    if share is not None:
        _check_share(share, plan, where)
    elif retry_failed or wait_seconds is not None:
        flag = "--retry-failed" if retry_failed else "--wait-seconds"
        raise InputError(f"{flag} goes with --share (a bring-up without it takes every node it is given)")
    check_paths(journal=where.path, log_dir=log_dir, os_image=os_image)
    hosts = load_hosts(inventory, nodes, limit)
    opts = BringupOptions(inventory=inventory, insecure=insecure, os_image=os_image, verify_level=level,
                          poll_s=poll, recheck=recheck, strategy=chosen, image_bind=image_bind,
                          image_advertise=image_advertise, **({"netboot_dir": netboot_dir} if netboot_dir else {}))
    stages = select_stages(default_stages(opts), start.value if start else None, only.value if only else None,
                           end.value if end else None)
    fmt = choose(output, as_json)  # the summary: a table on a terminal, tab-separated lines in a pipe or a log
    live = fmt is Format.TABLE and sys.stdout.isatty()  # a terminal: the live table; else a line per stage
    with Journal(where) as jr, Progress([h.name for h in hosts], log_dir, console, live) as progress:
        say = progress if live else tee(progress, StageEvents())  # on stderr, as each stage ends
        if share is None:
            result, summary = run_bringup(hosts, stages, journal=jr, plan_only=plan, concurrency=concurrency,
                                          progress=say), None
        else:
            result, summary = SharedBringup(hosts, stages, jr, share, concurrency=concurrency, progress=say,
                                            ttl_s=lease_seconds, poll_s=poll, retry_failed=retry_failed,
                                            wait_s=wait_seconds).run()
    if fmt is Format.JSON:
        emit_json(_summary(result) | ({"share": summary.model_dump()} if summary is not None else {}))
    else:
        _render(result, fmt)
        if summary is not None:
            _render_share(summary)
    if not result.ok or (summary is not None and not summary.ok):
        raise typer.Exit(1)


def _check_share(share: str, plan: bool, where: Location) -> None:
    """--share before anything is opened: a shared journal, a bring-up that changes nodes, a usable name."""
    if plan:
        raise InputError("--share splits a bring-up that changes nodes; --plan changes nothing (drop one)")
    if not share.strip() or len(share) > 200 or any(c.isspace() for c in share):
        raise InputError(f"--share {share!r}: a name without spaces, at most 200 characters")
    if where.backend is Backend.SQLITE:  # refused before the file is opened (or created)
        raise InputError(f"journal {where.shown}: --share needs a journal shared by the controllers (PostgreSQL: "
                         f"set {ENV_URL}=postgresql://user@host/database or the inventory's provision_journal_url); "
                         "a SQLite journal serves one controller")


def _render_share(summary: ShareSummary) -> None:
    console.print(Text(f"share {summary.share}: {len(summary.done)} of {summary.nodes} node(s) done, "
                       f"{len(summary.failed)} failed; this controller ran {len(summary.mine)}",
                       style="green" if summary.ok else "red"), soft_wrap=True)
    for node, stage in sorted(summary.failed.items()):
        console.print(Text(f"{node}: failed at {stage}", style="red"), soft_wrap=True)


def _summary(result: BringupResult) -> dict[str, object]:
    return {
        "run_id": result.run_id,
        "plan_only": result.plan_only,
        "ok": result.ok,
        "nodes": [
            {"node": n.node, "ok": n.ok, "changed": n.changed, "failed_stage": n.failed_stage,
             "stages": [{"stage": s.stage, "outcome": s.outcome.value, "seconds": s.seconds, "error": s.error,
                         "note": s.plan.note, "actions": [a.describe() for a in s.plan.actions]}
                        for s in n.stages]}
            for n in result.nodes
        ],
    }


def _render(result: BringupResult, fmt: Format) -> None:
    """One row per node and stage (a table, or tab-separated lines: header, then rows), then a line per node."""
    title = "bring-up plan" if result.plan_only else f"bring-up run {result.run_id}"
    table = new_table("node", "stage", "outcome", "s", "what", title=title)
    for node in result.nodes:
        for s in node.stages:
            what = s.error or "; ".join(a.describe() for a in s.plan.actions) or s.plan.note
            colour = STYLE[s.outcome]
            add_row(table, node.node, s.stage, cell(s.outcome.value, colour), f"{s.seconds:.1f}", what)
    show(table, fmt)
    for node in result.nodes:
        if not node.ok:
            console.print(Text(f"{node.node}: failed at {node.failed_stage}", style="red"), soft_wrap=True)
        elif not node.changed and not result.plan_only:
            console.print(Text(f"{node.node}: already converged, nothing to do", style="green"), soft_wrap=True)
        elif not result.plan_only:
            console.print(Text(f"{node.node}: done", style="green"), soft_wrap=True)
        verified = next((s for s in node.stages if s.stage == "verify" and s.outcome is Outcome.CONVERGED), None)
        if verified is not None:
            console.print(Text(f"{node.node} conformance: {verified.plan.note}"), soft_wrap=True)

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
from provision.bringup.stages import default_stages
from provision.cli.events import StageEvents, tee
from provision.cli.options import (
    DEFAULT_INVENTORY,
    PATTERN_HELP,
    InsecureOpt,
    InventoryOpt,
    JsonOpt,
    LimitOpt,
    journal_at,
    load_hosts,
)
from provision.cli.output import add_row, cell, console, emit_json, new_table, print_wide
from provision.cli.paths import check_paths
from provision.conformance.model import Level
from provision.errors import InputError
from provision.journal import Journal

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
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Nodes at once")] = 4,
    journal: Annotated[Path | None, typer.Option("--journal", help="Journal database")] = None,
    log_dir: Annotated[Path, typer.Option("--log-dir", help="One log file per node")] = Path("logs/bringup"),
    os_image: Annotated[str | None, typer.Option("--os-image", help="Installer URL for nodes without an OS")] = None,
    level: Annotated[Level, typer.Option("--level", help="Conformance level of the verify stage")] = Level.FULL,
    poll: Annotated[float, typer.Option("--poll-seconds", min=0.05, max=60.0, help="BMC polling interval")] = 1.0,
    recheck: Annotated[bool, typer.Option(
        "--recheck", help="configure: run site.yml in check mode even where the journal's record of the last "
                          "apply and a node probe say the node is unchanged")] = False,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Bring nodes from bare BMC to verified: preflight, firmware, bios, reset, os, configure, verify.

    Every option is checked before anything is written (the journal, the log directory, a BMC)."""
    if not nodes and not limit:
        raise InputError("select nodes: a host pattern (PATTERN...), --limit PATTERN, or both")
    if start is not None and only is not None:
        raise InputError("--from and --only exclude each other: --from runs a stage and those after it, --only one")
    where = journal_at(journal, inventory)
    check_paths(journal=where.path, log_dir=log_dir, os_image=os_image)
    hosts = load_hosts(inventory, nodes, limit)
    opts = BringupOptions(inventory=inventory, insecure=insecure, os_image=os_image, verify_level=level,
                          poll_s=poll, recheck=recheck)
    stages = select_stages(default_stages(opts), start.value if start else None, only.value if only else None)
    live = not as_json and sys.stdout.isatty()  # a terminal: the live table; otherwise one line per stage
    with Journal(where) as jr, Progress([h.name for h in hosts], log_dir, console, live) as progress:
        say = progress if live else tee(progress, StageEvents())  # on stderr, as each stage ends
        result = run_bringup(hosts, stages, journal=jr, plan_only=plan, concurrency=concurrency, progress=say)
    if as_json:
        emit_json(_summary(result))
    else:
        _render(result)
    if not result.ok:
        raise typer.Exit(1)


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


def _render(result: BringupResult) -> None:
    title = "bring-up plan" if result.plan_only else f"bring-up run {result.run_id}"
    table = new_table("node", "stage", "outcome", "s", "what", title=title)
    for node in result.nodes:
        for s in node.stages:
            what = s.error or "; ".join(a.describe() for a in s.plan.actions) or s.plan.note
            colour = STYLE[s.outcome]
            add_row(table, node.node, s.stage, cell(s.outcome.value, colour), f"{s.seconds:.1f}", what)
    print_wide(table)
    for node in result.nodes:
        if not node.ok:
            console.print(Text(f"{node.node}: failed at {node.failed_stage}", style="red"))
        elif not node.changed and not result.plan_only:
            console.print(Text(f"{node.node}: already converged, nothing to do", style="green"))
        elif not result.plan_only:
            console.print(Text(f"{node.node}: done", style="green"))
        verified = next((s for s in node.stages if s.stage == "verify" and s.outcome is Outcome.CONVERGED), None)
        if verified is not None:
            console.print(Text(f"{node.node} conformance: {verified.plan.note}"), soft_wrap=True)

"""`provision clean`, `provision retire`, `provision unretire`: a node back to a verified blank state, or out
of the fleet (provision.clean)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from provision.bringup.model import BringupResult, Outcome
from provision.bringup.options import BringupOptions
from provision.clean import records
from provision.clean.model import CleanLevel
from provision.clean.options import CleanOptions
from provision.clean.run import run_clean, run_retire
from provision.cli.events import StageEvents
from provision.cli.options import (
    DEFAULT_INVENTORY,
    PATTERN_HELP,
    InsecureOpt,
    InventoryOpt,
    JsonOpt,
    journal_at,
    load_hosts,
    select_names,
)
from provision.cli.output import add_row, cell, console, emit_json, new_table, print_wide
from provision.cli.paths import check_paths
from provision.errors import InputError
from provision.journal import Journal
from provision.spec import HostEntry

STYLE = {Outcome.APPLIED: "yellow", Outcome.CONVERGED: "green", Outcome.PLANNED: "cyan", Outcome.FAILED: "red",
         Outcome.SKIPPED: "dim"}
NodesArg = Annotated[list[str], typer.Argument(help=PATTERN_HELP, metavar="PATTERN...")]
PlanOpt = Annotated[bool, typer.Option("--plan", help="Name every node, drive and step it would touch; change nothing")]
YesOpt = Annotated[bool, typer.Option("--yes", help="Do not ask (without it: asks once on a terminal, refuses "
                                                    "without one)")]
LevelOpt = Annotated[CleanLevel, typer.Option("--level", help="metadata: pools, arrays and labels only; erase: "
                                              "format with secure erase; sanitize: NVMe sanitize where listed")]
BootOpt = Annotated[bool, typer.Option("--include-boot", help="Erase the boot drives too (last): the node needs an "
                                       "OS install after it")]
JournalOpt = Annotated[Path | None, typer.Option("--journal", help="Journal database")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, max=256, help="Nodes at once")]


def clean_command(nodes: NodesArg, inventory: InventoryOpt = DEFAULT_INVENTORY, plan: PlanOpt = False,
                  level: LevelOpt = CleanLevel.SANITIZE, include_boot: BootOpt = False, yes: YesOpt = False,
                  journal: JournalOpt = None, concurrency: ConcurrencyOpt = 4, insecure: InsecureOpt = False,
                  as_json: JsonOpt = False) -> None:
    """Clean nodes to a verified blank state: data drives erased with evidence, BIOS reset and re-applied, boot
    override, virtual media and SEL cleared (the SEL saved first). Resumes an interrupted clean."""
    where = journal_at(journal, inventory)
    check_paths(journal=where.path)
    hosts = load_hosts(inventory, nodes)
    opts = CleanOptions(bringup=BringupOptions(inventory=inventory, insecure=insecure), level=level,
                        include_boot=include_boot, by=records.operator())
    _confirm_possible(plan, yes, "clean")
    with Journal(where) as jr:
        if not plan and not yes:
            shown = run_clean(hosts, opts, jr, plan_only=True, concurrency=concurrency)
            _render(shown, "clean plan")
            _ask(shown, hosts, f"clean ({level.value}{', boot drives too' if include_boot else ''})")
        result = run_clean(hosts, opts, jr, plan_only=plan, concurrency=concurrency, progress=StageEvents())
    _finish(result, "clean", as_json)


def retire_command(nodes: NodesArg, inventory: InventoryOpt = DEFAULT_INVENTORY, plan: PlanOpt = False,
                   clean: Annotated[bool, typer.Option("--clean", help="Clean it first (--level sanitize)")] = False,
                   level: LevelOpt = CleanLevel.SANITIZE, yes: YesOpt = False, journal: JournalOpt = None,
                   concurrency: ConcurrencyOpt = 4, insecure: InsecureOpt = False, as_json: JsonOpt = False) -> None:
    """Retire nodes: drained and out of their Slurm partitions, optionally cleaned, powered off, and marked retired
    in the journal with their serial and UUID (campaigns list them retired and never flash them)."""
    where = journal_at(journal, inventory)
    check_paths(journal=where.path)
    hosts = load_hosts(inventory, nodes)
    bringup = BringupOptions(inventory=inventory, insecure=insecure)
    opts = CleanOptions(bringup=bringup, level=level, by=records.operator()) if clean else None
    _confirm_possible(plan, yes, "retire")
    with Journal(where) as jr:
        if not plan and not yes:
            shown = run_retire(hosts, bringup, opts, jr, plan_only=True, concurrency=concurrency)
            _render(shown, "retire plan")
            _ask(shown, hosts, "retire" + (" (cleaned first)" if clean else ""))
        result = run_retire(hosts, bringup, opts, jr, plan_only=plan, concurrency=concurrency,
                            progress=StageEvents())
    _finish(result, "retire", as_json)


def unretire_command(nodes: NodesArg, inventory: InventoryOpt = DEFAULT_INVENTORY,
                     journal: JournalOpt = None) -> None:
    """Reverse the journal's retired mark (only the mark: power, Slurm and the BMC are left as they are)."""
    where = journal_at(journal, inventory)
    with Journal(where) as jr:
        marked = records.retired(jr)
        names = select_names(inventory, nodes, sorted(marked))
        for name in names:
            if name not in marked:
                console.print(Text(f"{name}: not retired; nothing to do"))
                continue
            records.mark(jr, name, False)
            console.print(Text(f"{name}: retired mark removed (retired {records.describe_time(marked[name].at)} "
                               f"by {marked[name].by})", style="green"))


def _confirm_possible(plan: bool, yes: bool, what: str) -> None:
    if not plan and not yes and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(f"{what} changes nodes for good: no terminal to confirm on; pass --yes (or --plan to look)")


def _ask(shown: BringupResult, hosts: list[HostEntry], what: str) -> None:
    if not shown.ok:
        _finish(shown, what.split(" ")[0], False)
    names = ", ".join(h.name for h in hosts)
    if not typer.confirm(f"{what} {len(hosts)} node(s): {names}?", default=False):
        raise InputError(f"{what}: not confirmed; nothing done")


def _render(result: BringupResult, title: str) -> None:
    table = new_table("node", "stage", "outcome", "s", "what", title=title)
    for node in result.nodes:
        for s in node.stages:
            what = s.error or "; ".join([a.describe() for a in s.plan.actions] + ([s.plan.note] if s.plan.note else []))
            add_row(table, node.node, s.stage, cell(s.outcome.value, STYLE[s.outcome]), f"{s.seconds:.1f}", what)
    print_wide(table)


def _finish(result: BringupResult, verb: str, as_json: bool) -> None:
    if as_json:
        emit_json({"run_id": result.run_id, "plan_only": result.plan_only, "ok": result.ok, "nodes": [
            {"node": n.node, "ok": n.ok, "failed_stage": n.failed_stage,
             "stages": [{"stage": s.stage, "outcome": s.outcome.value, "seconds": s.seconds, "error": s.error,
                         "note": s.plan.note, "actions": [a.describe() for a in s.plan.actions]} for s in n.stages]}
            for n in result.nodes]})
    else:
        _render(result, f"{verb} plan" if result.plan_only else f"{verb} run {result.run_id}")
        for node in result.nodes:
            if not node.ok:
                console.print(Text(f"{node.node}: {verb} failed at {node.failed_stage}", style="red"))
            elif not result.plan_only:
                console.print(Text(f"{node.node}: {'cleaned' if verb == 'clean' else 'retired'}", style="green"))
    if not result.ok:
        raise typer.Exit(1)

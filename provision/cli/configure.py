"""`provision configure NODE...`: run the project's playbooks on nodes; --plan shows what would change."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from provision.ansible.hosts import select_nodes
from provision.ansible.models import PlayResult, ProgressEvent, RunOptions
from provision.ansible.runner import PlayFailed, run_playbook
from provision.cli import events
from provision.cli.options import (
    DEFAULT_INVENTORY,
    InventoryOpt,
    JsonOpt,
    LimitOpt,
    NodesArg,
    StrategyOpt,
    strategy_of,
)
from provision.cli.output import (
    Format,
    OutputOpt,
    add_row,
    choose,
    console,
    emit_json,
    err_console,
    show,
    to_terminal,
)


def app(
    nodes: NodesArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    limit: LimitOpt = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Check mode with diff: print what would change, change nothing.")
    ] = False,
    tags: Annotated[
        list[str] | None, typer.Option("--tags", help="Only these concerns (repeatable): base, storage, gpu, ...")
    ] = None,
    playbook: Annotated[str, typer.Option("--playbook", help="Playbook under playbooks/.")] = "site",
    strategy: StrategyOpt = "linear",
    forks: Annotated[int, typer.Option("--forks", min=1, max=256, help="Hosts configured in parallel.")] = 8,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Configure the nodes PATTERN... selects with Ansible (site.yml by default); exit 1 if any node fails."""
    chosen = strategy_of(strategy)
    fmt = choose(output, json_out)  # the recap: a table on a terminal, tab-separated lines in a pipe
    names = select_nodes(inventory, nodes, limit)  # resolved here: Ansible gets the names, never a pattern
    options = RunOptions(
        playbook=playbook,
        inventory=Path(inventory),
        limit=tuple(names),
        tags=tuple(t for tag in tags or [] for t in tag.split(",") if t),
        check=plan,
        diff=plan,
        forks=forks,
        strategy=chosen,
    )
    try:
        result = _run(options, live=to_terminal() and fmt is not Format.JSON)
    except PlayFailed as exc:
        _render(exc.result, plan, fmt)
        raise
    _render(result, plan, fmt)


def _run(options: RunOptions, live: bool) -> PlayResult:
    if not live:
        return _run_with_events(options)
    with err_console.status("starting ansible", spinner="dots") as status:

        def on_event(event: ProgressEvent) -> None:
            if event.kind in ("play", "task"):
                status.update(f"{event.kind}: {event.name}")
            elif event.kind in ("changed", "failed", "unreachable") and not options.check:
                err_console.print(f"  {event.host}  {event.kind:<11} {event.name}", highlight=False, markup=False)

        return run_playbook(options, on_event=on_event)


def _run_with_events(options: RunOptions) -> PlayResult:
    """Not on a terminal: a line on stderr per task that changed or failed a host as it happens, and one per
    host when the run ends (`node01 configure ok 41.2s: 3 changed, 52 ok`)."""
    started = time.monotonic()

    def on_event(event: ProgressEvent) -> None:
        if event.host and event.kind in ("changed", "failed", "unreachable"):
            events.emit(event.host, "configure", event.kind, None, event.name)

    try:
        result = run_playbook(options, on_event=on_event)
    except PlayFailed as exc:
        _host_events(exc.result, time.monotonic() - started)
        raise
    _host_events(result, time.monotonic() - started)
    return result


def _host_events(result: PlayResult, seconds: float) -> None:
    changed = "would change" if result.check else "changed"
    for host, stats in result.hosts.items():
        outcome = "unreachable" if stats.unreachable else "failed" if stats.failed else "ok"
        events.emit(host, "configure", outcome, seconds, f"{stats.changed} {changed}, {stats.ok} ok")


def _render(result: PlayResult, plan: bool, fmt: Format) -> None:
    if fmt is Format.JSON:
        emit_json(result)
        return
    if plan:
        _render_plan(result)
    show(_recap(result), fmt)


def _render_plan(result: PlayResult) -> None:
    if not result.changes:
        console.print("plan: nothing to change (converged)")
        return
    console.print(f"plan: {len(result.changes)} change(s) would be made")
    for change in result.changes:
        console.print(Text.assemble(("  ~", "yellow"), f" {change.host}: {change.task}"), highlight=False)
        for line in change.diff.splitlines():
            console.print(f"      {line}", highlight=False, markup=False)


def _recap(result: PlayResult) -> Table:
    title = "would change" if result.check else "changed"
    table = Table(title=f"ansible {result.status} (rc {result.rc})", title_justify="left")
    for column in ("host", "ok", title, "failed", "unreachable", "skipped"):
        table.add_column(column, justify="left" if column == "host" else "right")
    for host, stats in result.hosts.items():
        add_row(table, host, stats.ok, stats.changed, stats.failed, stats.unreachable, stats.skipped)
    return table

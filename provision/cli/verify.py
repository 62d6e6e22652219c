"""`provision verify NODE...`: conformance of nodes against their spec.

Exit codes: 0 every check passed, warned or was waived; 1 a check failed; 3 no check failed but some
could not be made (BMC or node unreachable, credentials refused, TLS, unreadable output, tool missing).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt
from provision.cli.output import console, emit_json
from provision.conformance.checks._base import Context
from provision.conformance.model import EXIT_FAILED, EXIT_INCOMPLETE, Level, RunReport
from provision.errors import CheckFailed, ChecksIncomplete, InputError
from provision.spec import load_fleet
from provision.spec.model import HostEntry

LevelOpt = Annotated[
    Level, typer.Option("--level", help="quick: seconds; full: every spec property + BMC; burnin: adds stress tests")
]


def _bmc_hook(since: datetime | None, insecure: bool) -> Callable[[Context, HostEntry], None]:
    """One BMC session per node, opened by the check itself (TLS per the host's CA file, or --insecure)."""
    from provision.conformance.checks.bmc import run_bmc_checks
    from provision.conformance.since import last_bringup

    def hook(ctx: Context, host: HostEntry) -> None:
        run_bmc_checks(ctx, host, since or last_bringup(host.name), insecure=insecure)

    return hook


def _output_path(value: Path | None, flag: str) -> Path | None:
    if value is not None and not value.parent.exists():
        raise InputError(f"{flag} {value}: directory {value.parent} does not exist")
    return value


def verify_command(
    nodes: Annotated[list[str], typer.Argument(help="Inventory host names (e.g. node01 node02)")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    level: LevelOpt = Level.FULL,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here")] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the JSON report here ('-' for stdout, no table)")
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here")] = None,
    no_bmc: Annotated[bool, typer.Option("--no-bmc", help="Waive the BMC-side checks (reported as waived)")] = False,
    sel_since: Annotated[
        datetime | None,
        typer.Option("--sel-since", help="Count SEL entries from then on (default: last bring-up in the journal)"),
    ] = None,
    show_all: Annotated[bool, typer.Option("--all", help="List every check, not only failed ones")] = False,
    insecure: InsecureOpt = False,
) -> None:
    """Check NODE... against their spec over one multiplexed SSH connection each (and their BMCs).

    Exit codes: 0 every check passed, warned or was waived; 1 a check failed; 3 no check failed but
    some could not be made (unreachable, credentials refused, TLS, unreadable, tool missing).
    """
    from provision.conformance.checks.bmc import waive_all
    from provision.conformance.report import render_terminal, to_json, write_html, write_json, write_junit
    from provision.conformance.runner import verify

    stdout_json = json_file == Path("-")
    for value, flag in ((junit, "--junit"), (None if stdout_json else json_file, "--json"), (html, "--html")):
        _output_path(value, flag)
    hosts = load_fleet(inventory).select(nodes)
    no_ssh = [h.name for h in hosts if h.ssh is None]
    if no_ssh:
        raise InputError(f"{inventory}: no SSH endpoint (ansible_host) for {', '.join(no_ssh)}")

    def no_bmc_hook(ctx: Context, host: HostEntry) -> None:
        waive_all(ctx, "BMC checks turned off (--no-bmc)")

    bmc_hook = no_bmc_hook if no_bmc else _bmc_hook(sel_since, insecure)

    def hook(ctx: Context, host: HostEntry) -> None:
        from provision.conformance.wear import keep_wear

        bmc_hook(ctx, host)
        keep_wear(ctx)  # NVMe endurance projection from the journal's readings (after the pure evaluation)

    run = verify(hosts, level, bmc=hook)
    if junit:
        write_junit(run, junit)
    if json_file and not stdout_json:
        write_json(run, json_file)
    if html:
        write_html(run, html)
    if stdout_json:
        emit_json(to_json(run))
    else:
        render_terminal(run, console, show_all=show_all)
    raise_for(run)


def raise_for(run: RunReport) -> None:
    """CheckFailed (exit 1) when a check failed, ChecksIncomplete (exit 3) when some could not be made."""
    code = run.exit_code
    if code == EXIT_FAILED:
        failed = [n.node for n in run.nodes if n.failed]
        raise CheckFailed(f"{len(failed)} of {len(run.nodes)} node(s) not conformant: {', '.join(failed)}")
    if code == EXIT_INCOMPLETE:
        unsure = [n.node for n in run.nodes if not n.ok]
        raise ChecksIncomplete(f"{len(unsure)} of {len(run.nodes)} node(s) could not be fully checked: "
                               f"{', '.join(unsure)} (no check failed)")

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

from provision.cli import events
from provision.cli.options import (
    DEFAULT_INVENTORY,
    PATTERN_HELP,
    InsecureOpt,
    InventoryOpt,
    LimitOpt,
    journal_at,
    load_hosts,
)
from provision.cli.output import (
    Format,
    OutputOpt,
    add_row,
    choose,
    emit_json,
    err_console,
    new_table,
    show,
    to_terminal,
    wide_console,
)
from provision.conformance.model import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    SEVERITY,
    Level,
    NodeReport,
    Outcome,
    RunReport,
)
from provision.errors import CheckFailed, ChecksIncomplete, InputError, ProvisionError
from provision.journal.location import Location
from provision.spec.fleet import HostEntry

LevelOpt = Annotated[
    Level, typer.Option("--level", help="quick: seconds; full: every spec property + BMC; burnin: adds stress tests")
]


def _output_path(value: Path | None, flag: str) -> Path | None:
    if value is not None and not value.parent.exists():
        raise InputError(f"{flag} {value}: directory {value.parent} does not exist")
    return value


def verify_command(
    ctx: typer.Context,
    nodes: Annotated[list[str] | None, typer.Argument(
        help=PATTERN_HELP + "; with --local: this node's name (default: hostname -s)", metavar="PATTERN...")] = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    limit: LimitOpt = None,
    level: LevelOpt = Level.FULL,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here")] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the JSON report here ('-' for stdout, no table)")
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here")] = None,
    prom: Annotated[Path | None, typer.Option(
        "--prom", help="Write Prometheus metrics here (node_exporter textfile format, atomic, 0644)")] = None,
    no_bmc: Annotated[bool, typer.Option("--no-bmc", help="Waive the BMC-side checks (reported as waived)")] = False,
    sel_since: Annotated[
        datetime | None,
        typer.Option("--sel-since", help="Count SEL entries from then on (default: last bring-up in the journal)"),
    ] = None,
    show_all: Annotated[bool, typer.Option("--all", help="List every check, not only failed ones")] = False,
    insecure: InsecureOpt = False,
    local: Annotated[bool, typer.Option(
        "--local", help="Check THIS node, no SSH (Slurm HealthCheckProgram; exit 0 healthy, else unhealthy)")] = False,
    spec_file: Annotated[Path | None, typer.Option(
        "--spec-file", help="With --local: the node's spec from `provision spec export NODE` (no inventory)")] = None,
    drain: Annotated[bool, typer.Option(
        "--drain", help="With --local: drain this node in Slurm when unhealthy, resume it when provision drained it")
    ] = False,
    scontrol: Annotated[str | None, typer.Option("--scontrol", help="With --drain: the scontrol command")] = None,
    output: OutputOpt = None,
) -> None:
    """Check the nodes PATTERN... selects against their spec over one multiplexed SSH connection each (and their BMCs).

    With --local: check this node here, no SSH (Slurm's HealthCheckProgram; --drain tells Slurm).

    Exit codes: 0 every check passed, warned or was waived; 1 a check failed; 3 no check failed but
    some could not be made (unreachable, credentials refused, TLS, unreadable, tool missing).
    """
    from provision.conformance.provenance import command_line, provenance
    from provision.conformance.report import render_terminal, to_json, write_html, write_json, write_junit

    stdout_json = json_file == Path("-")
    if stdout_json and output not in (None, Format.JSON):
        raise InputError(f"--json - prints the JSON report on stdout, --output {output.value} a summary: drop one")
    fmt = Format.JSON if stdout_json else choose(output)
    for value, flag in ((junit, "--junit"), (None if stdout_json else json_file, "--json"), (html, "--html"),
                        (prom, "--prom")):
        _output_path(value, flag)
    untold: list[str] = []  # nodes whose Slurm state provision_slurm could not set
    if local:
        from provision.cli.verify_local import local_target, run_local

        run = run_local(local_target(nodes, inventory, spec_file), level, drain, scontrol)
    else:
        if spec_file is not None or drain:
            raise InputError("--spec-file and --drain go with --local (controller runs drain via provision_slurm)")
        if not nodes:
            raise InputError("give the nodes to verify (or --local on the node itself)")
        hosts = load_hosts(inventory, nodes, limit)
        heard = node_event if fmt is not Format.TABLE or not to_terminal() else None  # a terminal: the table
        run = _controller_run(hosts, inventory, level, no_bmc, sel_since, insecure, heard,
                              journal_at(None, inventory))
        untold = _tell_slurm(hosts, run)
    command = command_line(ctx.command_path, ctx.command.params, ctx.params)
    run = run.model_copy(update={"provenance": provenance(inventory, run.nodes, command)})
    if prom:
        from provision.metrics import verify as verify_metrics
        from provision.metrics import write_textfile

        write_textfile(prom, verify_metrics.families(run))
    if junit:
        write_junit(run, junit)
    if json_file and not stdout_json:
        write_json(run, json_file)
    if html:
        write_html(run, html)
    if fmt is Format.JSON:
        emit_json(to_json(run))
    elif fmt is Format.PLAIN:
        _plain(run, show_all)
    else:
        render_terminal(run, wide_console(), show_all=show_all)
    raise_for(run)
    if untold:
        raise ProvisionError(f"conformant, but Slurm could not be told about {', '.join(untold)}")


def _plain(run: RunReport, show_all: bool) -> None:
    """Two tab-separated tables: a line per node (its counts and verdict), then a line per check the table shows
    (failed, could not be made, warned or waived; every check with --all)."""
    from provision.conformance.report.terminal import COLUMNS, SHOWN

    nodes = new_table("node", "profile", "checks", *(o.value for o in COLUMNS), "gather_s", "result", "notice")
    checks = new_table("node", "check", "expected", "found", "result", "detail")
    for node in run.nodes:
        counts = node.counts()
        verdict = "unreachable" if node.error else (Outcome.PASS if node.verdict is Outcome.WAIVED else node.verdict)
        add_row(nodes, node.node, node.profile, len(node.results), *(counts[o] for o in COLUMNS),
                f"{node.gather_seconds:.2f}", verdict, node.notice)
        if node.error:
            add_row(checks, node.node, "gather facts", "reachable", node.error, Outcome.ERROR, "")
        for r in node.results:
            if show_all or r.outcome in SHOWN or r.outcome is Outcome.WAIVED:
                add_row(checks, node.node, r.id, r.expected, r.found, r.outcome, r.detail)
    show(nodes, Format.PLAIN)
    show(checks, Format.PLAIN)


def _tell_slurm(hosts: list[HostEntry], run: RunReport) -> list[str]:
    """provision_slurm's hook: drain failing nodes, resume passing ones provision drained; the untold ones."""
    from provision.scheduler.hooks import tell_slurm

    untold = []
    for host, report in zip(hosts, run.nodes, strict=True):
        note = tell_slurm(host, report)
        if note.text:
            err_console.print(note.text, markup=False, highlight=False)
        if note.failed:
            untold.append(host.name)
    return untold


def _controller_run(hosts: list[HostEntry], inventory: Path, level: Level, no_bmc: bool,
                    sel_since: datetime | None, insecure: bool,
                    on_node: Callable[[NodeReport, float], None] | None, journal: Location) -> RunReport:
    from provision.conformance.bmc_source import NoBmc, OwnSession
    from provision.conformance.node import Reach, verify

    no_ssh = [h.name for h in hosts if h.ssh is None]
    if no_ssh:
        raise InputError(f"{inventory}: no SSH endpoint (ansible_host) for {', '.join(no_ssh)}")
    source = NoBmc("BMC checks turned off (--no-bmc)") if no_bmc else OwnSession(insecure=insecure)
    return verify(hosts, level, Reach(bmc=source, sel_since=sel_since, journal=journal), on_node=on_node)


def node_event(node: NodeReport, seconds: float) -> None:
    """`node01 verify fail 3.2s: 1 fail, 40 pass, 2 waived` on stderr as each node is done."""
    counts = ", ".join(f"{n} {o.value}" for o, n in sorted(node.counts().items(), key=lambda kv: SEVERITY.index(kv[0]))
                       if n)
    outcome = "unreachable" if node.error else node.verdict.value
    events.emit(node.node, "verify", outcome, seconds, node.error or counts)


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

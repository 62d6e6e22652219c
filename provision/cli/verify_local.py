"""`provision verify --local`: the node judges itself, for Slurm's HealthCheckProgram (NHC's exit codes).

Exit 0 healthy (every check passed, warned or was waived), non-zero unhealthy: 1 a check failed, 3 some
could not be made, 2 bad input. With `--drain` the node also tells Slurm, as NHC does: drained with
`provision: <check ids>` as the reason when unhealthy, resumed when healthy and drained by provision.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from provision.cli.output import console, err_console
from provision.conformance.model import Level, RunReport
from provision.errors import InputError
from provision.scheduler.local import LocalTarget, short_hostname, verify_local
from provision.spec.slurm import SlurmSettings


def local_target(nodes: list[str] | None, inventory: Path, spec_file: Path | None) -> LocalTarget:
    """This node: from `--spec-file` (what `provision spec export` wrote), else from the inventory by name
    (NODE, default: the short host name)."""
    if nodes and len(nodes) > 1:
        raise InputError(f"--local checks this node only: give at most one NODE (got {', '.join(nodes)})")
    if spec_file is not None:
        from provision.scheduler.specfile import read_spec_file

        doc = read_spec_file(spec_file)
        if nodes and nodes[0] != doc.host:
            raise InputError(f"{spec_file}: the spec file is node {doc.host}'s, not {nodes[0]}'s")
        return LocalTarget(name=doc.host, profile=doc.profile, spec=doc.spec, lab=doc.lab, slurm=doc.slurm)
    from provision.spec import load_fleet

    name = nodes[0] if nodes else short_hostname()
    host = load_fleet(inventory).select([name])[0]
    return LocalTarget(name=host.name, profile=host.profile, spec=host.spec, lab=host.lab, slurm=host.slurm)


def run_local(target: LocalTarget, level: Level, drain: bool, scontrol: str | None) -> RunReport:
    """Verify this node; with `drain`, tell Slurm (its scontrol from --scontrol, the spec, else PATH)."""
    started = datetime.now().astimezone()
    report = verify_local(target, level)
    run = RunReport(level=level, started=started, seconds=report.gather_seconds, nodes=(report,))
    if drain:
        from provision.scheduler.slurm import SlurmError, sync

        base = target.slurm or SlurmSettings()
        settings = base.model_copy(update={"drain_on_fail": True, "scontrol": scontrol or base.scontrol})
        node = settings.node_name or short_hostname()
        try:
            action = sync(report, settings, node=node)
        except SlurmError as exc:
            err_console.print(f"provision: slurm: {exc}", markup=False, highlight=False)
            if report.ok:  # healthy but could not resume: say so with a non-zero exit, as NHC does
                raise
        else:
            console.print(f"slurm: {node}: {action.kind.value} ({action.why})", markup=False, highlight=False)
    return run

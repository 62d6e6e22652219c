"""The controller-side hook of bring-up and `provision verify`: tell Slurm a node's verdict.

Configured per host or group with `provision_slurm: {drain_on_fail: true}` (SlurmSettings); scontrol runs
on the controller, where slurmctld is reachable. A node failing verify is drained with its failing check
ids as the reason; a node that passes is resumed when provision drained it. A campaign gets the same
through its gate: `gate.full_verify: "provision verify {node} --level quick"` runs this hook per node.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from provision.conformance.model import NodeReport
from provision.scheduler.slurm import ActionKind, Scontrol, SlurmAction, SlurmError, apply_checked, plan
from provision.spec.fleet import HostEntry

# How a caller records the side effect (bring-up journals it): (action, do) -> None, calling do() once.
Recorder = Callable[[SlurmAction, Callable[[], None]], None]


class SlurmNote(BaseModel):
    """What the hook did, for the stage's note or error; `failed` when Slurm could not be told."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    failed: bool = False


def _direct(action: SlurmAction, do: Callable[[], None]) -> None:
    do()


def tell_slurm(host: HostEntry, report: NodeReport, record: Recorder = _direct,
               scontrol: Scontrol | None = None) -> SlurmNote:
    """Drain or resume `host` per its provision_slurm settings; nothing when drain_on_fail is off."""
    settings = host.slurm
    if settings is None or not settings.drain_on_fail:
        return SlurmNote()
    name = settings.node_name or host.name
    tool = scontrol or Scontrol(settings.scontrol, settings.timeout_s)
    try:
        action = plan(report, tool.show(name), settings)
        if action.kind is not ActionKind.NONE:
            record(action, lambda: apply_checked(tool, action))
    except SlurmError as exc:
        return SlurmNote(text=f"slurm: {name} could not be told: {exc}", failed=True)
    return SlurmNote(text=f"slurm: {name} {action.kind.value} ({action.why})")

"""Node-side check modules, one per area, evaluated locally from one gather round trip.

Each module has `probes(spec, level) -> list[Probe]` and `evaluate(ctx) -> None`. The BMC-side
checks (`bmc`) and the burn-in tier (`burnin`) have their own entry points (see the runner).
"""

from __future__ import annotations

from typing import Protocol

from provision.conformance.checks import (
    checkpoints,
    containers,
    cpu,
    ethernet,
    fabric,
    gpu,
    infiniband,
    kernel,
    memory,
    nfs,
    nvme,
    packages,
    raid,
    services,
    zfs,
)
from provision.conformance.checks._base import Context
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.spec.model import NodeSpec


class CheckModule(Protocol):
    AREA: str

    def probes(self, spec: NodeSpec, level: Level) -> list[Probe]: ...

    def evaluate(self, ctx: Context) -> None: ...


NODE_AREAS: tuple[CheckModule, ...] = (
    cpu,
    memory,
    gpu,
    fabric,
    packages,
    kernel,
    infiniband,
    ethernet,
    raid,
    zfs,
    checkpoints,
    nvme,
    services,
    containers,
    nfs,
)

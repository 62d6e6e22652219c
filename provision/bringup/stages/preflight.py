"""Preflight: the BMC answers, the node is the platform its profile describes, its hardware matches the spec."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provision.bringup.model import StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.errors import CheckFailed
from provision.journal.identities import record_identity
from provision.redfish.ops import drift as drift_ops
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops import inventory as inv_ops
from provision.spec import HostEntry
from provision.spec.platforms import PlatformIdentity, refuse_profile


class PreflightObserved(BaseModel):
    """What preflight read: the node's identity and the drift of its hardware against the spec."""

    model_config = ConfigDict(frozen=True)

    identity: PlatformIdentity | None
    drift: drift_ops.DriftReport | None
    """None: not read (the node is not a platform its profile describes)."""


class PreflightStage(BmcStage):
    """BMC reachable, credentials good, the node the platform its profile describes, hardware matches the
    spec; else stop (before anything is written) and say why."""

    name = "preflight"
    judges_changes = True  # in --plan, judged only when no account change comes before it (its login)

    def observe(self, ctx: StageContext) -> PreflightObserved:
        """The identity first (a few GETs): a node of another platform is not inventoried against a spec that
        does not describe it."""
        with bmc(ctx, self.opts) as node:
            found = platform_identity.of_node(node)
            if ctx.journal is not None:  # each reading is kept (journal.identities)
                record_identity(ctx.journal, ctx.host.name, found, "preflight")
            if not ctx.host.spec.described_platforms.fits(found):
                return PreflightObserved(identity=found, drift=None)
            inv = inv_ops.observe(node.conn)
        return PreflightObserved(identity=found, drift=drift_ops.drift(ctx.host.spec, inv))

    def plan(self, host: HostEntry, observed: PreflightObserved) -> StagePlan:
        spec = host.spec
        refuse_profile(host.name, spec.profile, spec.described_platforms, observed.identity)
        bad = observed.drift.drifted if observed.drift is not None else []
        if bad:
            shown = "; ".join(f"{i.key}: expected {i.expected}, found {i.observed}" for i in bad[:6])
            raise CheckFailed(f"{host.name}: hardware does not match the spec: {shown}")
        return StagePlan(stage=self.name, node=host.name, note="hardware matches the spec")

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:  # preflight never changes anything
        return None

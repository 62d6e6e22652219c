"""Typed values of a bring-up: planned actions, stage plans and outcomes."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class StageName(StrEnum):
    """The bring-up stages, in the order they run."""

    BMC_PASSWORD = "bmc-password"
    BMC_ACCOUNTS = "bmc-accounts"
    PREFLIGHT = "preflight"
    BMC = "bmc"
    FIRMWARE = "firmware"
    BIOS = "bios"
    RESET = "reset"
    OS = "os"
    CONFIGURE = "configure"
    VERIFY = "verify"


STAGES: tuple[str, ...] = tuple(s.value for s in StageName)


class Action(BaseModel):
    """One change a stage would make, e.g. firmware bmc 11.01.01 -> 11.02.05."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    target: str
    before: str = ""
    after: str = ""
    needs_host_reset: bool = False
    changes_node: bool = True
    """False for bookkeeping (e.g. recording evidence in the journal): a plan of only those is converged."""

    def describe(self) -> str:
        if not self.after:
            return f"{self.kind} {self.target}"
        if self.target.endswith(f" {self.after}"):  # firmware: "gpu 96.00.9F.00.04"
            return f"{self.kind} {self.target.removesuffix(' ' + self.after)} {self.before or '-'} -> {self.after}"
        if not self.before:  # nothing to compare with: say what it does ("host-reset host: applies ...")
            return f"{self.kind} {self.target}: {self.after}"
        return f"{self.kind} {self.target} {self.before} -> {self.after}"


class StagePlan(BaseModel):
    """What one stage would do on one node; no action that changes the node means converged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str
    node: str
    actions: tuple[Action, ...] = ()
    note: str = ""

    @property
    def converged(self) -> bool:
        return not any(a.changes_node for a in self.actions)


class Outcome(StrEnum):
    CONVERGED = "converged"  # nothing to do
    APPLIED = "applied"
    PLANNED = "planned"  # --plan: shown, not applied
    FAILED = "failed"
    SKIPPED = "skipped"


class StageResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str
    outcome: Outcome
    plan: StagePlan
    seconds: float = 0.0
    error: str = ""


class NodeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: str
    stages: list[StageResult] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.outcome is not Outcome.FAILED for s in self.stages)

    @property
    def failed_stage(self) -> str | None:
        return next((s.stage for s in self.stages if s.outcome is Outcome.FAILED), None)

    @property
    def changed(self) -> bool:
        return any(s.outcome is Outcome.APPLIED for s in self.stages)


class BringupResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: int | None
    plan_only: bool
    nodes: list[NodeResult]

    @property
    def ok(self) -> bool:
        return all(n.ok for n in self.nodes)

"""Typed results of a conformance run: one CheckResult per spec property, grouped per node."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Level(StrEnum):
    """How deep a run goes: quick (seconds), full (every spec property), burnin (adds stress tests)."""

    QUICK = "quick"
    FULL = "full"
    BURNIN = "burnin"


class Outcome(StrEnum):
    """PASS and FAIL are verdicts; SKIP means the check could not run (never counted as passed)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


class CheckResult(BaseModel):
    """One property of one node compared with its spec."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    id: str = Field(description="Stable identifier, e.g. gpu.0.nvlink_active")
    area: str
    description: str
    expected: str
    found: str
    passed: bool
    skipped: bool = False
    detail: str = ""

    @property
    def outcome(self) -> Outcome:
        if self.skipped:
            return Outcome.SKIP
        return Outcome.PASS if self.passed else Outcome.FAIL


class NodeReport(BaseModel):
    """Every check of one node, plus how the facts were gathered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    profile: str
    lab: bool = Field(default=False, description="The node is a lab twin: its tools are LAB STAND-INs")
    standins: tuple[str, ...] = Field(default=(), description="Tools found to be LAB STAND-INs")
    gather_seconds: float = 0.0
    error: str | None = Field(default=None, description="Why no facts could be gathered at all")
    results: tuple[CheckResult, ...] = ()

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.outcome is Outcome.FAIL)

    @property
    def skipped(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.outcome is Outcome.SKIP)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failed


class RunReport(BaseModel):
    """One `provision verify` run over one or more nodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Level
    started: datetime = Field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0
    nodes: tuple[NodeReport, ...] = ()

    @property
    def ok(self) -> bool:
        return all(n.ok for n in self.nodes)

    def counts(self) -> dict[Outcome, int]:
        """How many checks passed, failed and were skipped over the whole run."""
        totals = dict.fromkeys(Outcome, 0)
        for node in self.nodes:
            for result in node.results:
                totals[result.outcome] += 1
        return totals

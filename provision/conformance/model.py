"""Typed results of a conformance run: one CheckResult per spec property, grouped per node.

A verdict is evidence. Each check ends in one Outcome:

- PASS: the fact was read and meets the spec.
- WARN: the fact was read and crosses a threshold's warning tier, not its failure tier.
- WAIVED: not run because the spec, the inventory or the operator says so (the reason is kept).
- ERROR: the fact could not be gathered or read (unreachable, auth, TLS, parse, tool missing,
  key unmapped, component absent): never a pass.
- FAIL: the fact was read and does not meet the spec.

Exit codes of `provision verify` follow from the outcomes (see `exit_code`): 0 when every check
passed, warned or was waived; 1 when a check failed; 3 when none failed but some could not be made.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Level(StrEnum):
    """How deep a run goes: quick (seconds), full (every spec property), burnin (adds stress tests)."""

    QUICK = "quick"
    FULL = "full"
    BURNIN = "burnin"


class Outcome(StrEnum):
    """What one check ended in (see the module docstring)."""

    PASS = "pass"
    WARN = "warn"
    WAIVED = "waived"
    ERROR = "error"
    FAIL = "fail"


# Worst first: a node's (and a run's) verdict is the worst outcome among its checks.
SEVERITY: tuple[Outcome, ...] = (Outcome.FAIL, Outcome.ERROR, Outcome.WARN, Outcome.WAIVED, Outcome.PASS)
# What counts as conformant: a warning or a waiver never fails the exit code.
ACCEPTED: frozenset[Outcome] = frozenset({Outcome.PASS, Outcome.WARN, Outcome.WAIVED})

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INCOMPLETE = 3


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """The most severe outcome of `outcomes` (PASS for none)."""
    seen = set(outcomes)
    return next((o for o in SEVERITY if o in seen), Outcome.PASS)


def exit_code(outcome: Outcome) -> int:
    """0 passed, warned or waived; 1 failed; 3 could not be checked."""
    if outcome is Outcome.FAIL:
        return EXIT_FAILED
    if outcome is Outcome.ERROR:
        return EXIT_INCOMPLETE
    return EXIT_OK


class Threshold(BaseModel):
    """Tiers of one measured value: beyond `warn` it warns, beyond `fail` it fails (the limits themselves pass).

    `above=True` (the default) means larger is worse (temperature, wear, power draw): a spec's
    `max_percentage_used: 80` allows 80. `above=False` means smaller is worse (available spare, which
    NVMe flags when it falls below its threshold). `warn=None` has a single (fail) tier.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fail: float
    warn: float | None = None
    above: bool = True
    unit: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Threshold:
        if self.warn is not None and (self.warn > self.fail if self.above else self.warn < self.fail):
            side = "above" if self.above else "below"
            raise ValueError(f"warning tier {self.warn:g} lies {side} the failure tier {self.fail:g}")
        return self

    def _crosses(self, value: float, limit: float) -> bool:
        return value > limit if self.above else value < limit

    def judge(self, value: float) -> Outcome:
        """FAIL, WARN or PASS for one reading."""
        if self._crosses(value, self.fail):
            return Outcome.FAIL
        if self.warn is not None and self._crosses(value, self.warn):
            return Outcome.WARN
        return Outcome.PASS

    def describe(self) -> str:
        """The expectation as a report shows it, e.g. '<= 90 C (warn above 80 C)'."""
        op, side = ("<=", "above") if self.above else (">=", "below")
        unit = f" {self.unit}" if self.unit and self.unit != "%" else self.unit
        text = f"{op} {self.fail:g}{unit}"
        return text + (f" (warn {side} {self.warn:g}{unit})" if self.warn is not None else "")


class CheckResult(BaseModel):
    """One property of one node compared with its spec."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    id: str = Field(description="Stable identifier, e.g. gpu.0.nvlink_active")
    area: str
    description: str
    expected: str
    found: str
    outcome: Outcome
    detail: str = Field(default="", description="Evidence or reason: why it errored, was waived, warned")

    @property
    def passed(self) -> bool:
        """The outcome is PASS (a warning, waiver or error is not)."""
        return self.outcome is Outcome.PASS

    @property
    def accepted(self) -> bool:
        """Passed, warned or waived: does not fail the node."""
        return self.outcome in ACCEPTED


class NodeReport(BaseModel):
    """Every check of one node, plus how the facts were gathered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    profile: str
    lab: bool = Field(default=False, description="The inventory declares the node a lab twin (provision_lab)")
    standins: tuple[str, ...] = Field(default=(), description="Its stand-in tools, as the inventory declares them")
    notice: str = Field(default="", description="What the inventory declares to show beside its results "
                                               "(provision_lab_notice); never changes a verdict")
    spec_digest: str = Field(default="", description="sha256 of the node's spec as judged (see provenance.spec_digest)")
    gather_seconds: float = 0.0
    error: str | None = Field(default=None, description="Why no facts could be gathered at all")
    results: tuple[CheckResult, ...] = ()

    def having(self, outcome: Outcome) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.outcome is outcome)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return self.having(Outcome.FAIL)

    @property
    def errors(self) -> tuple[CheckResult, ...]:
        return self.having(Outcome.ERROR)

    @property
    def warnings(self) -> tuple[CheckResult, ...]:
        return self.having(Outcome.WARN)

    @property
    def waived(self) -> tuple[CheckResult, ...]:
        return self.having(Outcome.WAIVED)

    @property
    def verdict(self) -> Outcome:
        """The worst outcome; a node whose facts could not be gathered at all is an ERROR."""
        if self.error is not None:
            return worst((Outcome.ERROR, *(r.outcome for r in self.results)))
        return worst(r.outcome for r in self.results)

    @property
    def ok(self) -> bool:
        """Every check passed, warned or was waived (and facts were gathered)."""
        return self.verdict in ACCEPTED

    def counts(self) -> dict[Outcome, int]:
        totals = dict.fromkeys(Outcome, 0)
        for result in self.results:
            totals[result.outcome] += 1
        return totals


class Provenance(BaseModel):
    """What produced a report: the tool, the inventory, the spec, the command (secrets never), the time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provision_version: str
    inventory: str = Field(description="The inventory path as given on the command line")
    spec_digest: str = Field(description="sha256 over every judged node's (profile, spec digest), sorted")
    command: str = Field(description="The command line rebuilt from its parsed options (no secret among them)")
    host: str = Field(default="", description="The controller that ran it")


class RunReport(BaseModel):
    """One `provision verify` run over one or more nodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Level
    provenance: Provenance | None = None
    started: datetime = Field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0
    nodes: tuple[NodeReport, ...] = ()

    @property
    def verdict(self) -> Outcome:
        return worst(n.verdict for n in self.nodes)

    @property
    def ok(self) -> bool:
        return self.verdict in ACCEPTED

    @property
    def exit_code(self) -> int:
        """0 every check passed, warned or was waived; 1 a check failed; 3 none failed, some could not be made."""
        return exit_code(self.verdict)

    def counts(self) -> dict[Outcome, int]:
        """How many checks ended in each outcome over the whole run."""
        totals = dict.fromkeys(Outcome, 0)
        for node in self.nodes:
            for outcome, count in node.counts().items():
                totals[outcome] += count
        return totals

"""What every check module shares: the context a check reads and the way it reports.

A check module exposes `probes(spec, level) -> list[Probe]` (the commands it needs run on the
node) and `evaluate(ctx) -> None` (compares the parsed output with the spec, recording one
CheckResult per property through `ctx.record`). A section that cannot be read (tool missing,
non-zero exit, ParseError) makes the checks that needed it ERROR with the reason as `found`: never a
silent pass. A check not run because the spec, inventory or operator says so is WAIVED with the
reason; a reading judged on tiers goes through `ctx.tiered` (PASS, WARN or FAIL).

Lab twins are declared by the inventory (`provision_lab`, with `provision_lab_waivers`): a check the
declaration lists becomes WAIVED with its reason after evaluation (runner.apply_waivers); no check
decides anything from being in the lab, and the checks never see the declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from provision.conformance.facts import NodeFacts, Section
from provision.conformance.model import CheckResult, Level, Outcome, Threshold
from provision.errors import ParseError
from provision.spec.model import NodeSpec

T = TypeVar("T")

class Unreadable(Exception):
    """A section the checks need is missing, failed or did not parse."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def section_problem(section: Section | None, name: str) -> str | None:
    """Why a section cannot be used, or None when it is fine."""
    if section is None:
        return f"{name}: not gathered"
    if section.rc == 127:
        return f"{name}: command not found on the node"
    if section.rc != 0:
        why = _last_line(section.stderr) or _last_line(section.stdout)
        return f"{name}: exit {section.rc}" + (f" ({why})" if why else "")
    return None


@dataclass
class Context:
    """One node's spec and facts, and the results recorded so far."""

    node: str
    spec: NodeSpec
    facts: NodeFacts
    level: Level
    results: list[CheckResult] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict)

    def parsed(self, name: str, parser: Callable[[str], T], *, allow_rc: tuple[int, ...] = (0,)) -> T:
        """The section `name` through `parser`; raises Unreadable with the reason."""
        key = f"{name}|{getattr(parser, '__qualname__', parser)}"
        if key in self._cache:
            cached = self._cache[key]
            if isinstance(cached, Unreadable):
                raise cached
            return cached
        section = self.facts.section(name)
        problem = None if section is not None and section.rc in allow_rc else section_problem(section, name)
        try:
            if problem is not None:
                raise Unreadable(problem)
            assert section is not None
            value: Any = parser(section.stdout)
        except ParseError as exc:
            value = Unreadable(str(exc))
        except Unreadable as exc:
            value = exc
        self._cache[key] = value
        if isinstance(value, Unreadable):
            raise value
        return value

    def result(
        self, check_id: str, area: str, description: str, expected: object, found: object, outcome: Outcome,
        detail: str = "",
    ) -> None:
        """Record one check with an explicit outcome (the helpers below are the usual way)."""
        self.results.append(
            CheckResult(
                node=self.node,
                id=check_id,
                area=area,
                description=description,
                expected=_show(expected),
                found=_show(found),
                outcome=outcome,
                detail=detail,
            )
        )

    def record(
        self,
        check_id: str,
        area: str,
        description: str,
        expected: object,
        found: object,
        passed: bool,
        detail: str = "",
    ) -> None:
        """Record a verdict on facts that were read: PASS or FAIL."""
        self.result(check_id, area, description, expected, found, Outcome.PASS if passed else Outcome.FAIL, detail)

    def equal(self, check_id: str, area: str, description: str, expected: object, found: object) -> None:
        """Record a check that passes when found == expected."""
        self.record(check_id, area, description, expected, found, found == expected)

    def tiered(
        self, check_id: str, area: str, description: str, value: float, threshold: Threshold, detail: str = "",
    ) -> None:
        """Record a reading judged on a threshold's tiers: PASS, WARN or FAIL."""
        unit = f" {threshold.unit}" if threshold.unit and threshold.unit != "%" else threshold.unit
        self.result(check_id, area, description, threshold.describe(), f"{value:g}{unit}", threshold.judge(value),
                    detail)

    def error(self, check_id: str, area: str, description: str, expected: object, why: str) -> None:
        """Record a check whose facts could not be gathered or read (ERROR, never a pass)."""
        self.result(check_id, area, description, expected, f"could not check: {why}", Outcome.ERROR, why)

    def unreadable(self, check_id: str, area: str, description: str, expected: object, why: str) -> None:
        """Record a check whose section could not be read (tool missing, exit, parse): an ERROR."""
        self.result(check_id, area, description, expected, f"unreadable: {why}", Outcome.ERROR, why)

    def waive(self, check_id: str, area: str, description: str, expected: object, why: str) -> None:
        """Record a check not run because the spec, inventory or operator says so (WAIVED, with why)."""
        self.result(check_id, area, description, expected, "waived", Outcome.WAIVED, why)



def _show(value: object) -> str:
    if value is None:
        return "absent"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple | list | set | frozenset):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)

"""The fleet view of a run: per check id, which nodes it failed, could not be made, warned, was waived or passed on.

Pure (no I/O): every renderer (HTML, JSON, metrics) takes the same rows. Rows are ordered worst first: the
checks failing on most nodes, then those that could not be made on most, then warnings, waivers, passes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from provision.conformance.model import SEVERITY, Outcome, RunReport, worst


class CheckSummary(BaseModel):
    """One check id across the fleet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    area: str
    description: str
    nodes: dict[Outcome, tuple[str, ...]] = Field(description="Node names per outcome (every outcome present)")

    @property
    def worst(self) -> Outcome:
        return worst(o for o, names in self.nodes.items() if names)

    def count(self, outcome: Outcome) -> int:
        return len(self.nodes[outcome])

    @property
    def all_passed(self) -> bool:
        """Passed on every node that ran it (a fold candidate)."""
        return self.worst is Outcome.PASS


def by_check(run: RunReport) -> list[CheckSummary]:
    """One row per check id in the run, worst first (see the module docstring)."""
    seen: dict[str, tuple[str, str, dict[Outcome, list[str]]]] = {}
    for node in run.nodes:
        for r in node.results:
            _, _, names = seen.setdefault(r.id, (r.area, r.description, {o: [] for o in Outcome}))
            names[r.outcome].append(node.node)
    rows = [CheckSummary(id=cid, area=area, description=desc, nodes={o: tuple(v) for o, v in names.items()})
            for cid, (area, desc, names) in seen.items()]
    return sorted(rows, key=_rank)


def _rank(row: CheckSummary) -> tuple[int, tuple[int, ...], str]:
    """Worst outcome first, then most nodes with each severity in turn, then the id."""
    return SEVERITY.index(row.worst), tuple(-row.count(o) for o in SEVERITY), row.id


def unreachable(run: RunReport) -> list[str]:
    """Nodes whose facts could not be gathered at all (no check was judged on them)."""
    return [n.node for n in run.nodes if n.error]

"""Metric families of one `provision verify` run (see docs/metrics.md for each series).

Every family is a gauge: a run's file replaces the previous one, so a count is the count of that run
(a counter would have to survive across runs). Every outcome is written for every (node, area), zeros
included, so a series does not vanish when its count drops to 0.
"""

from __future__ import annotations

from provision.conformance.model import Outcome, RunReport
from provision.metrics.textfile import Family

PREFIX = "provision_verify"
FAILING = (Outcome.FAIL, Outcome.ERROR)


def _run_families(run: RunReport) -> list[Family]:
    p = run.provenance
    info = Family(f"{PREFIX}_info", "The verify run that wrote this file (value 1): level, version, spec digest.")
    info.add(1, level=run.level.value, provision_version=p.provision_version if p else "",
             spec_digest=p.spec_digest if p else "", inventory=p.inventory if p else "")
    return [
        info,
        Family(f"{PREFIX}_run_timestamp_seconds", "When the run started, in seconds since the epoch.")
        .add(run.started.timestamp()),
        Family(f"{PREFIX}_run_duration_seconds", "How long the run took, in seconds.").add(run.seconds),
        Family(f"{PREFIX}_exit_code", "The run's exit code: 0 conformant, 1 a check failed, 3 some could not be made.")
        .add(run.exit_code),
        Family(f"{PREFIX}_nodes", "Nodes in the run.").add(len(run.nodes)),
    ]


def families(run: RunReport) -> list[Family]:
    """Every series of the run: run-level info and timing, then per node and per check area."""
    node_info = Family(f"{PREFIX}_node_info", "A node of the run (value 1): its profile and spec digest.")
    reachable = Family(f"{PREFIX}_node_reachable", "1 when the node's facts were gathered, 0 when it could not "
                       "be reached (no check was judged).")
    ok = Family(f"{PREFIX}_node_ok", "1 when every check of the node passed, warned or was waived, else 0.")
    gather = Family(f"{PREFIX}_node_gather_seconds", "How long gathering the node's facts took, in seconds.")
    checks = Family(f"{PREFIX}_checks", "Checks of the node and area that ended in each outcome "
                    "(pass, warn, waived, error: could not be made, fail).")
    failing = Family(f"{PREFIX}_check_failing", "One series (value 1) per check that failed (outcome fail) or "
                     "could not be made (outcome error) on the node.")
    for node in run.nodes:
        node_info.add(1, node=node.node, profile=node.profile, spec_digest=node.spec_digest,
                      lab=str(node.lab).lower())
        reachable.add(0 if node.error else 1, node=node.node)
        ok.add(1 if node.ok else 0, node=node.node)
        gather.add(node.gather_seconds, node=node.node)
        areas: dict[str, dict[Outcome, int]] = {}
        for r in node.results:
            areas.setdefault(r.area, dict.fromkeys(Outcome, 0))[r.outcome] += 1
            if r.outcome in FAILING:
                failing.add(1, node=node.node, area=r.area, check=r.id, outcome=r.outcome.value)
        for area, counts in sorted(areas.items()):
            for outcome, count in counts.items():
                checks.add(count, node=node.node, area=area, outcome=outcome.value)
    return [*_run_families(run), node_info, reachable, ok, gather, checks, failing]

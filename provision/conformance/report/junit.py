"""JUnit XML: one testsuite per node, one testcase per check.

fail -> <failure>; error (could not check) -> <error>; waived -> <skipped> with the reason;
warn -> a pass whose <system-out> starts with WARN (JUnit has no warning element) and a property.

Valid against the Jenkins xunit plugin's junit-10.xsd (tests/fixtures/junit/junit-10.xsd, checked with xmllint):
that schema allows no `skipped` on <testsuites> and <properties> only inside a <testsuite>, so the run's
provenance (version, inventory, spec digest, command) is repeated as properties of every suite.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from provision.conformance.model import NodeReport, Outcome, Provenance, RunReport
from provision.private import write_private


def _provenance(props: ET.Element, run: RunReport) -> None:
    ET.SubElement(props, "property", {"name": "level", "value": run.level.value})
    p: Provenance | None = run.provenance
    if p is None:
        return
    for name, value in (("provision_version", p.provision_version), ("inventory", p.inventory),
                        ("run_spec_digest", p.spec_digest), ("command", p.command), ("controller", p.host)):
        ET.SubElement(props, "property", {"name": name, "value": value})


def _suite(node: NodeReport, run: RunReport, timestamp: str) -> ET.Element:
    results = node.results
    suite = ET.Element("testsuite", {
        "name": node.node,
        "tests": str(len(results) or 1),
        "failures": str(len(node.failed)),
        "errors": str(len(node.errors) + (1 if node.error else 0)),
        "skipped": str(len(node.waived)),
        "time": f"{node.gather_seconds:.3f}",
        "timestamp": timestamp,
    })
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "profile", "value": node.profile})
    ET.SubElement(props, "property", {"name": "spec_digest", "value": node.spec_digest})
    ET.SubElement(props, "property", {"name": "lab", "value": str(node.lab).lower()})
    ET.SubElement(props, "property", {"name": "warnings", "value": str(len(node.warnings))})
    if node.standins:
        ET.SubElement(props, "property", {"name": "lab_standins", "value": ",".join(node.standins)})
    _provenance(props, run)
    if node.error:
        case = ET.SubElement(suite, "testcase", {"classname": f"{node.node}.gather", "name": "gather facts"})
        ET.SubElement(case, "error", {"message": node.error, "type": "GatherError"}).text = node.error
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": f"{node.node}.{r.area}", "name": r.id, "time": "0"})
        message = f"{r.description}: expected {r.expected}, found {r.found}"
        if r.outcome is Outcome.FAIL:
            ET.SubElement(case, "failure", {"message": message, "type": "CheckFailed"}).text = r.detail or message
        elif r.outcome is Outcome.ERROR:
            ET.SubElement(case, "error", {"message": message, "type": "CouldNotCheck"}).text = r.detail or message
        elif r.outcome is Outcome.WAIVED:
            ET.SubElement(case, "skipped", {"message": f"waived: {r.detail}" if r.detail else "waived"})
        prefix = "WARN: " if r.outcome is Outcome.WARN else ""
        ET.SubElement(case, "system-out").text = prefix + message + (f" ({r.detail})" if r.detail else "")
    return suite


def render_junit(run: RunReport) -> str:
    counts = run.counts()
    root = ET.Element("testsuites", {
        "name": f"provision verify --level {run.level.value}",
        "tests": str(sum(len(n.results) or 1 for n in run.nodes)),
        "failures": str(counts[Outcome.FAIL]),
        "errors": str(counts[Outcome.ERROR] + sum(1 for n in run.nodes if n.error)),
        "time": f"{run.seconds:.3f}",
    })
    stamp = run.started.isoformat(timespec="seconds")
    for node in run.nodes:
        root.append(_suite(node, run, stamp))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(run: RunReport, path: Path) -> None:
    write_private(path, render_junit(run))

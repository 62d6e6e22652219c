"""Shared helpers of the conformance unit tests: the ML-PROD-V4 spec, variants, facts from captures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts, Probe, Section, build_script
from provision.conformance.model import CheckResult, Level
from provision.conformance.runner import evaluate
from provision.spec.fleet import LabDeclaration
from provision.spec.model import NodeSpec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
PROFILE = ROOT / "inventory" / "group_vars" / "all" / "profile_ml_prod_v4.yml"


def base_spec_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(PROFILE.read_text())["provision_profile_ml_prod_v4"]
    return data


def spec(**changes: Any) -> NodeSpec:
    """ML-PROD-V4 with dotted-path changes, e.g. spec(**{"gpu.count": 4})."""
    data = base_spec_data()
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return NodeSpec.model_validate(data)


def fixture(rel: str) -> str:
    return (FIXTURES / rel).read_text(encoding="utf-8")


def facts(sections: dict[str, str | tuple[int, str, str]], node: str = "n1") -> NodeFacts:
    """NodeFacts from {name: stdout} or {name: (rc, stdout, stderr)}."""
    out = {}
    for name, value in sections.items():
        rc, stdout, stderr = (0, value, "") if isinstance(value, str) else value
        out[name] = Section(name=name, rc=rc, stdout=stdout, stderr=stderr)
    return NodeFacts(node=node, sections=out)


def run(
    node_spec: NodeSpec,
    sections: dict[str, str | tuple[int, str, str]],
    level: Level = Level.FULL,
    lab: LabDeclaration | None = None,
) -> Context:
    return evaluate("n1", node_spec, facts(sections), level, lab)


def by_id(ctx: Context) -> dict[str, CheckResult]:
    return {r.id: r for r in ctx.results}


def area(ctx: Context, name: str) -> dict[str, CheckResult]:
    return {r.id: r for r in ctx.results if r.area == name}


def framed(sections: dict[str, tuple[int, str, str]]) -> bytes:
    """What the gather script prints for these sections (to feed a fake Runner)."""
    out = b""
    for name, (rc, stdout, stderr) in sections.items():
        o, e = stdout.encode(), stderr.encode()
        out += f"@@PROVISION {name} {rc} {len(o)} {len(e)}\n".encode() + o + e
    return out


__all__ = ["Probe", "build_script"]

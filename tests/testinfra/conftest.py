"""The conformance checks as plain pytest-testinfra tests, usable by any CI.

    pytest tests/testinfra --hosts=ssh://node01,ssh://node02 --ssh-config=ssh_config \
        --spec-inventory=inventory/hosts.yml [--verify-level quick|full|burnin]
    pytest tests/testinfra --hosts='ansible://all' --ansible-inventory=inventory/hosts.yml \
        --spec-inventory=inventory/hosts.yml

Each probe the checks need is run through testinfra's `host.run` (one command per call, as
testinfra does); the verdicts come from the very same check code as `provision verify`, one
test per (host, area). The testinfra host name must be the inventory host name. BMC-side
checks are not part of this suite (they need Redfish, not SSH): use `provision verify`.
Not collected unless --spec-inventory is given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts, Probe, Section
from provision.conformance.model import Level
from provision.conformance.runner import evaluate, node_probes
from provision.spec import load_fleet
from provision.spec.fleet import Fleet

_CACHE: dict[str, Context] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("provision")
    group.addoption("--spec-inventory", default=None, help="Ansible inventory holding the node specs")
    group.addoption("--verify-level", default="full", choices=[level.value for level in Level])


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name == "test_conformance.py" and not config.getoption("--spec-inventory", default=None):
        return True
    return None


@pytest.fixture(scope="session")
def fleet(request: pytest.FixtureRequest) -> Fleet:
    return load_fleet(Path(request.config.getoption("--spec-inventory")))


@pytest.fixture(scope="session")
def level(request: pytest.FixtureRequest) -> Level:
    return Level(request.config.getoption("--verify-level"))


def _run(host: object, name: str, command: str, arg: str = "") -> Section:
    out = host.run("sh -c %s sh %s", command, arg)  # type: ignore[attr-defined]
    return Section(name=name, rc=out.rc, stdout=out.stdout, stderr=out.stderr)


def _matches(host: object, glob: str) -> list[str]:
    listing = host.run("sh -c %s", f'for m in {glob}; do [ -e "$m" ] && echo "$m"; done; true')  # type: ignore[attr-defined]
    return [line for line in listing.stdout.splitlines() if line.strip()]


def gather_with_testinfra(host: object, probes: list[Probe]) -> dict[str, Section]:
    sections: dict[str, Section] = {}
    for probe in probes:
        if probe.each is None:
            sections[probe.name] = _run(host, probe.name, probe.command)
            continue
        for match in _matches(host, probe.each):
            name = f"{probe.name}:{match}"
            sections[name] = _run(host, name, probe.command, match)
    return sections


@pytest.fixture
def conformance(host: object, fleet: Fleet, level: Level) -> Context:
    """The evaluated checks of the testinfra host (facts gathered once per host and session)."""
    name = host.backend.get_hostname()  # type: ignore[attr-defined]
    if name not in _CACHE:
        entry = fleet.select([name])[0]
        sections = gather_with_testinfra(host, node_probes(entry.spec, level))
        _CACHE[name] = evaluate(name, entry.spec, NodeFacts(node=name, sections=sections), level, entry.lab)
    return _CACHE[name]

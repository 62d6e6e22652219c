"""The BMC checks over each whole capture (tests/fixtures/redfish/full), read as verify reads them (bmc_source over
the loopback BMC): which sensor is the inlet and which the internal ambient, the PSUs, fans, power reading and
memory population. Expected readings were read from the capture files (Chassis/*/Thermal, Power, Systems/*/Memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from full_captures import full_tree
from rf_fakebmc import FakeBmc, Served
from rf_support import connect

from provision.conformance.bmc_source import read_connected
from provision.conformance.checks._base import Context
from provision.conformance.checks.bmc import evaluate_bmc
from provision.conformance.checks.bmc_facts import BmcFacts
from provision.conformance.facts import NodeFacts
from provision.conformance.model import CheckResult, Level, Outcome
from provision.spec import load_fleet
from provision.spec.model import NodeSpec

ROOT = Path(__file__).resolve().parents[3]
P, W, F, E = Outcome.PASS, Outcome.WARN, Outcome.FAIL, Outcome.ERROR


@pytest.fixture(scope="module")
def spec() -> NodeSpec:
    return load_fleet(ROOT / "inventory" / "hosts.yml").hosts["node01"].spec


@pytest.fixture(scope="module")
def facts(spec: NodeSpec) -> dict[str, BmcFacts]:
    out = {}
    for name in ("hpe", "lenovo", "nvidia_gh200", "supermicro"):
        with Served(FakeBmc(tree=full_tree(name))) as srv:
            out[name] = read_connected(connect(srv), spec)
    return out


def judge(spec: NodeSpec, facts: BmcFacts, **memory: int) -> dict[str, CheckResult]:
    if memory:
        spec = spec.model_copy(update={"memory": spec.memory.model_copy(update=memory)})
    ctx = Context(node="n1", spec=spec, facts=NodeFacts(node="n1", sections={}), level=Level.FULL)
    evaluate_bmc(ctx, facts)
    return {r.id: r for r in ctx.results}


# capture: inlet sensors, internal ambient sensors, then (check id -> outcome, found) under ML-PROD-V4's spec
# (inlet <= 35 C, ambient warns above 35 and fails above 40, components <= 90 C, peak 5500 W, 6 fans N+1)
EXPECTED: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, tuple[Outcome, str | None]]]] = {
    # HPE's intake sensor is '01-Inlet Ambient' (PhysicalContext Intake); it has no internal ambient sensor
    "hpe": (("01-Inlet Ambient",), (), {
        "bmc.inlet": (P, "01-Inlet Ambient 20 C"), "bmc.internal_ambient": (E, None),
        "bmc.temperatures": (P, "52 sensors within limits"), "bmc.psu": (P, "2 healthy of 2 present"),
        "bmc.psu_redundancy": (P, "2 healthy PSUs; Failover OK"), "bmc.fans": (P, "6 of 6"),
        "bmc.fan_redundancy": (P, None), "bmc.power_draw": (P, "620 W")}),
    # Lenovo XCC's 'Ambient Temp' is the front-panel intake (PhysicalContext Intake), not an internal ambient
    "lenovo": (("Ambient Temp",), (), {
        "bmc.inlet": (P, "Ambient Temp 19 C"), "bmc.internal_ambient": (E, None), "bmc.psu": (P, "4 healthy of 4 present"),
        "bmc.psu_redundancy": (P, "4 healthy PSUs; N+m OK"), "bmc.fans": (P, "10 of 10"), "bmc.power_draw": (P, "708 W")}),
    # GH200: the 'InletSensor_N' are the GPU subsystem's (PhysicalContext GPUSubsystem); no PSU, no fan listed
    "nvidia_gh200": ((), (), {
        "bmc.inlet": (E, None), "bmc.internal_ambient": (E, None), "bmc.psu": (E, None), "bmc.fans": (E, None),
        "bmc.fan_redundancy": (E, None), "bmc.power_draw": (E, None), "bmc.temperatures": (P, "42 sensors within limits")}),
    # Supermicro: 'Inlet Temp' (SystemBoard) by name, 'System Temp' (the plugin's override) 37 C warns
    "supermicro": (("Inlet Temp",), ("System Temp",), {
        "bmc.inlet": (P, "Inlet Temp 21 C"), "bmc.internal_ambient": (W, "System Temp 37 C (warn above 35)"),
        "bmc.temperatures": (P, "34 sensors within limits"), "bmc.psu": (P, "8 healthy of 8 present"),
        "bmc.psu_redundancy": (P, "8 healthy PSUs; Failover OK"), "bmc.fans": (P, "6 of 6"),
        "bmc.power_draw": (P, "2165 W")}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_power_and_thermal_of_each_capture(spec: NodeSpec, facts: dict[str, BmcFacts], name: str) -> None:
    inlet, ambient, rows = EXPECTED[name]
    f = facts[name]
    assert (f.inlet, f.ambient) == (inlet, ambient)
    got = judge(spec, f)
    for cid, (outcome, found) in rows.items():
        assert got[cid].outcome is outcome, (cid, got[cid])
        if found is not None:
            assert got[cid].found == found, (cid, got[cid])


# capture: spec (channels per socket, DIMMs per channel) -> outcome, summary or the start of the detail
MEMORY: list[tuple[str, int, int, Outcome, str]] = [
    ("supermicro", 8, 2, P, "2 socket(s) x 8 channel(s) x 2 DIMM(s)"),  # 32 x 64 GiB, MemoryLocation Socket 0-1
    ("supermicro", 8, 1, F, "socket 0 MC0/Channel0: 2 DIMM(s) (P1-DIMMA1, P1-DIMMA2), spec 1"),
    ("hpe", 8, 1, P, "2 socket(s) x 8 channel(s) x 1 DIMM(s)"),  # 16 of 32 slots populated, Socket 1-2
    ("hpe", 8, 2, F, "socket 0 MC1/Channel1: 1 DIMM(s) (PROC 1 DIMM 10), spec 2"),
    ("lenovo", 8, 1, P, "2 socket(s) x 8 channel(s) x 1 DIMM(s)"),
    ("lenovo", 4, 1, F, "socket 0: 8 populated channel(s), spec 4"),
    ("nvidia_gh200", 1, 1, E, "no MemoryLocation (Socket, Channel) for DIMM Slot, DIMM Slot"),  # Grace LPDDR5X
]


@pytest.mark.parametrize(("name", "channels", "per_channel", "outcome", "text"), MEMORY)
def test_memory_population_of_each_capture(spec: NodeSpec, facts: dict[str, BmcFacts], name: str, channels: int,
                                           per_channel: int, outcome: Outcome, text: str) -> None:
    row = judge(spec, facts[name], channels_per_socket=channels, dimms_per_channel=per_channel)["bmc.memory_population"]
    assert row.outcome is outcome, row
    assert (row.found == text) if outcome is P else row.detail.startswith(text), row


def test_a_missing_dimm_in_the_capture_fails_naming_its_channel(spec: NodeSpec) -> None:
    tree: dict[str, Any] = full_tree("supermicro")
    uri = "/redfish/v1/Systems/1/Memory/7"
    dimm = json.loads(json.dumps(tree[uri]))
    dimm.update(CapacityMiB=0, Status={"State": "Absent", "Health": "OK"})
    tree[uri] = dimm
    with Served(FakeBmc(tree=tree)) as srv:
        f = read_connected(connect(srv), spec)
    row = judge(spec, f)["bmc.memory_population"]
    assert row.outcome is F and row.detail == "socket 0 MC1/Channel3: 1 DIMM(s) (P1-DIMMD2), spec 2", row


# ---- bmc.gpu_count: made for every profile; one without a gpu section expects none -------------------------
@pytest.fixture(scope="module")
def profiles() -> dict[str, NodeSpec]:
    return load_fleet(ROOT / "inventory" / "hosts.yml").profiles


# (profile, capture, outcome, found, detail): the captures as verify reads them. Supermicro SYS-821GE-TNHR
# lists 8 H100, Lenovo SR670 V2 8 L40, HPE DL385 none; ML-PROD-V4 wants 8 H100, the catalogue profiles none.
@pytest.mark.parametrize(("profile", "capture", "outcome", "found", "detail"), [
    ("catalogue_epyc_9454p", "supermicro", F, "8 x H100 80GB HBM3", "expected 0, found 8"),
    ("catalogue_i9_9900k", "lenovo", F, "8 x NVIDIA L40", "expected 0, found 8"),
    ("catalogue_ryzen9_7950x", "hpe", P, "0", ""),
    ("ml_prod_v4", "supermicro", P, "8 x H100 80GB HBM3", ""),
    ("ml_prod_v4", "hpe", F, "0", "expected 8, found 0"),
    ("catalogue_i5_13500_ws", "supermicro", F, "8 x H100 80GB HBM3", "expected 1, found 8"),
])
def test_gpu_count_against_the_bmc(profiles: dict[str, NodeSpec], profile: str, capture: str, outcome: Outcome,
                                   found: str, detail: str) -> None:
    spec = profiles[profile]
    with Served(FakeBmc(tree=full_tree(capture))) as srv:
        facts = read_connected(connect(srv), spec)
    row = judge(spec, facts)["bmc.gpu_count"]
    want = str(spec.gpu.count) if spec.gpu else "0 (no gpu section)"
    assert (row.outcome, row.expected, row.found, row.detail) == (outcome, want, found, detail)


def test_gpu_count_is_planned_without_a_gpu_section(profiles: dict[str, NodeSpec]) -> None:
    """An unreadable BMC makes the GPU count an ERROR on a GPU-less profile too (it is a check, not a skip)."""
    from provision.conformance.checks.bmc import planned

    rows = {cid: expected for cid, _desc, expected in planned(profiles["catalogue_epyc_9454p"])}
    assert rows["bmc.gpu_count"] == "0 (no gpu section)"
    relaxed = NodeSpec.model_validate({**profiles["ml_prod_v4"].model_dump(mode="json"),
                                       "comparisons": {"gpu.count": "minimum"}})
    assert {cid: e for cid, _d, e in planned(relaxed)}["bmc.gpu_count"] == ">= 8"

"""The runner (fake SSH runner fed with framed captures), the BMC checks as tables, and CLI input errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from provision.conformance import bmc_source
from provision.conformance.bmc_source import NoBmc, OwnSession, check_bmc
from provision.conformance.checks.bmc import BiosSetting, BmcFacts, FirmwareSeen, error_all, evaluate_bmc, waive_all
from provision.conformance.facts import GatherError
from provision.conformance.model import Level, NodeReport, Outcome, RunReport
from provision.conformance.node import Reach, verify
from provision.errors import ProvisionError
from provision.redfish.errors import RedfishAuthError, RedfishError, RedfishTimeout, RedfishTlsError, RedfishUnavailable
from provision.redfish.resources import LogEntry, Memory, Power, Thermal
from provision.redfish.vendors import GpuView
from provision.spec.fleet import BmcEndpoint, HostEntry, SshEndpoint
from provision.spec.platforms import Board, DeviceKind, PlatformIdentity
from tests.unit.conformance.helpers import ROOT, area, framed, run, spec
from tests.unit.parsers._fixtures import H100_590, section


def host(name: str, **spec_changes: object) -> HostEntry:
    return HostEntry(name=name, profile="ml_prod_v4", groups=("ml_prod_v4",), spec=spec(**spec_changes),
                     bmc=BmcEndpoint(address="https://127.0.0.1:1", username="u", password="p"),
                     ssh=SshEndpoint(host="127.0.0.1"))


FULL_SMC = ROOT / "tests/fixtures/redfish/full/supermicro/redfish/v1"
GPU_590 = {"gpu.count": 1, "software.nvidia_driver.branch": "590", "software.nvidia_driver.version": "590.48.01",
           "software.fabric_manager.version": "590.48.01"}


def test_verify_runs_nodes_through_framing_and_isolates_failures() -> None:
    sections = {"nvidia_smi_q": (0, section(H100_590, "nvidia-smi -q", exact=True), ""),
                "lab_standins": (0, "/usr/bin/nvidia-smi\n", "")}
    seen_scripts: list[str] = []

    def runner_for(h: HostEntry):  # type: ignore[no-untyped-def]
        def runner(node: str, script: str) -> bytes:
            seen_scripts.append(script)
            if node == "down02":
                raise GatherError(f"{node}: ssh root@127.0.0.1:22 failed: Connection refused")
            return framed(sections)
        return runner

    report = verify([host("up01", **GPU_590), host("down02")], Level.QUICK, Reach(runner_for=runner_for))
    up, down = report.nodes
    assert [n.node for n in report.nodes] == ["up01", "down02"]
    # A stand-in's marker on the node means nothing: only the inventory declares a lab node (and its
    # stand-ins); this one is judged as real and lists none.
    assert not up.lab and up.standins == () and up.error is None
    ids = {r.id: r for r in up.results}
    assert ids["gpu.count"].passed and ids["gpu.0.model"].passed
    assert ids["cpu.model"].outcome is Outcome.ERROR and ids["cpu.model"].found.startswith("unreadable")
    assert down.error and "Connection refused" in down.error and down.results == ()
    assert down.verdict is Outcome.ERROR  # an unreachable node could not be checked: never a pass
    assert not report.ok and len(seen_scripts) == 2 and "nvidia-smi -q" in seen_scripts[0]


def test_bmc_source_is_read_after_node_checks_but_not_at_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def observe(self: OwnSession, h: HostEntry) -> BmcFacts:
        calls.append(h.name)
        raise ProvisionError("no BMC in this test")

    monkeypatch.setattr(OwnSession, "read", observe)
    runner_for = lambda h: (lambda node, script: framed({}))  # noqa: E731
    verify([host("n1")], Level.FULL, Reach(runner_for=runner_for, bmc=OwnSession()))
    verify([host("n1")], Level.QUICK, Reach(runner_for=runner_for, bmc=OwnSession()))
    assert calls == ["n1"]
    full = verify([host("n1")], Level.FULL, Reach(runner_for=runner_for, bmc=NoBmc("no BMC in this test")))
    bmc = [r for r in full.nodes[0].results if r.area == "bmc"]
    assert bmc and all(r.outcome is Outcome.WAIVED and r.detail == "no BMC in this test" for r in bmc)


# ---- BMC checks as tables ------------------------------------------------------------------------------
def bmc_facts(**over: object) -> BmcFacts:
    s = spec()
    bios = tuple(BiosSetting(key=k, attribute=f"Attr_{k}", wanted=str(v).title(), current=str(v).title())
                 for k, v in s.bios.settings.items())
    firmware = tuple(FirmwareSeen(component=f.component, versions=(f.version,)) for f in s.firmware)
    power = (Power.parse({"PowerSupplies": [{"Status": {"State": "Enabled", "Health": "OK"}}] * 2,
                          "Redundancy": [{"Mode": "N+m", "Status": {"Health": "OK"}}],
                          "PowerControl": [{"PowerConsumedWatts": 2161, "PowerMetrics": {"MaxConsumedWatts": 2165}}]}),)
    thermal = (Thermal.parse({
        "Fans": [{"Name": f"FAN{i}", "Status": {"State": "Enabled", "Health": "OK"}} for i in range(8)],
        "Temperatures": [{"Name": "Inlet Temp", "ReadingCelsius": 24, "PhysicalContext": "Intake"},
                         {"Name": "System Temp", "ReadingCelsius": 30, "PhysicalContext": "SystemBoard"},
                         {"Name": "GPU1 Temp", "ReadingCelsius": 61, "UpperThresholdCritical": 87}]}),)
    base = {"vendor": "supermicro", "bios": bios, "firmware": firmware, "power": power, "thermal": thermal,
            "sel": (LogEntry.parse({"Severity": "OK", "Message": "boot", "Created": "2026-11-30T10:00:00Z"}),),
            "inlet": ("Inlet Temp",), "ambient": ("System Temp",), "memory": capture_memory("supermicro"),
            "gpus": tuple(GpuView(uri=f"/g{i}", model="NVIDIA H100 80GB HBM3", serial_number=None,
                                  firmware_version=None, memory_gib=80, source="pcie") for i in range(8)),
            "identity": PlatformIdentity(system=Board(manufacturer="Supermicro", model="SYS-821GE-TNHR"))}
    return BmcFacts.model_validate(base | over)


def capture_memory(vendor: str) -> tuple[Memory, ...]:
    """The Systems/*/Memory members of one whole capture (tests/fixtures/redfish/full/VENDOR)."""
    root = ROOT / "tests/fixtures/redfish/full" / vendor / "redfish/v1/Systems"
    return tuple(Memory.parse(json.loads(p.read_text())) for p in sorted(root.glob("*/Memory/*/index.json")))


def bmc_run(facts: BmcFacts, since=None):  # type: ignore[no-untyped-def]
    ctx = run(spec(), {}, Level.QUICK)
    ctx.results.clear()
    evaluate_bmc(ctx, facts, since)
    return area(ctx, "bmc")


def test_bmc_all_good() -> None:
    checks = bmc_run(bmc_facts())
    assert [r.id for r in checks.values() if not r.passed] == []
    bmc_side = [f for f in spec().firmware if f.updated_by == "bmc"]  # in-band firmware is checked on the node
    assert len(checks) == len(spec().bios.settings) + len(bmc_side) + 12
    assert checks["bmc.platform"].found == "Supermicro SYS-821GE-TNHR"


@pytest.mark.parametrize(("identity", "outcome", "found"), [
    (PlatformIdentity(system=Board(manufacturer="Supermicro", model="SYS-821GE-TNHR")), "pass",
     "Supermicro SYS-821GE-TNHR"),
    (PlatformIdentity(system=Board(manufacturer="HPE", model="ProLiant DL385 Gen10 Plus v2")), "fail",
     "HPE ProLiant DL385 Gen10 Plus v2"),
    (PlatformIdentity(system=Board(manufacturer="Supermicro", model="SYS-421GE-TNRT")), "fail",
     "Supermicro SYS-421GE-TNRT"),
    (PlatformIdentity(system=Board(manufacturer="NVIDIA", model="BlueField-3"), kind=DeviceKind.DPU), "fail",
     "NVIDIA BlueField-3, a DPU with no host CPUs"),
    (None, "error", "could not check: the BMC's platform identity was not read"),
])
def test_bmc_platform_is_judged_against_the_profile(identity: PlatformIdentity | None, outcome: str,
                                                    found: str) -> None:
    """Every other figure can match on the wrong board: the platform the BMC reports is a check of its own,
    and an identity not read is an error, never a pass."""
    got = bmc_run(bmc_facts(identity=identity))["bmc.platform"]
    assert (got.outcome.value, got.found) == (outcome, found)
    if outcome == "fail":
        assert "profile ML-PROD-V4 describes " in got.detail and got.detail.endswith("Supermicro SYS-821GE-TNHR")


def test_bmc_faults_fail_their_checks() -> None:
    f = bmc_facts()
    bios = list(f.bios)
    bios[0] = bios[0].model_copy(update={"current": "Disabled"})
    fw = tuple(x if x.component != "bios" else FirmwareSeen(component="bios", versions=("1.4",)) for x in f.firmware)
    one_psu = (Power.parse({"PowerSupplies": [{"Status": {"State": "Enabled", "Health": "OK"}},
                                              {"Status": {"State": "Enabled", "Health": "Critical"}}],
                            "Redundancy": [{"Mode": "N+m", "Status": {"Health": "Critical"}}],
                            "PowerControl": [{"PowerConsumedWatts": 7100}]}),)
    hot = (Thermal.parse({"Fans": [{"Status": {"Health": "OK"}}] * 5,
                          "Temperatures": [{"Name": "Inlet Temp", "ReadingCelsius": 41, "PhysicalContext": "Intake"}]}),)
    sel = (LogEntry.parse({"Severity": "Critical", "Message": "PSU2 AC lost", "Created": "2026-11-30T12:00:00Z"}),)
    checks = bmc_run(f.model_copy(update={"bios": tuple(bios), "firmware": fw, "power": one_psu, "thermal": hot,
                                          "sel": sel}))
    failed = {r.id for r in checks.values() if not r.passed}
    assert failed == {f"bmc.bios.{bios[0].key}", "bmc.firmware.bios", "bmc.psu", "bmc.psu_redundancy", "bmc.fans",
                      "bmc.fan_redundancy", "bmc.inlet", "bmc.internal_ambient", "bmc.temperatures", "bmc.sel",
                      "bmc.power_draw"}
    assert {r.id for r in checks.values() if r.outcome is Outcome.ERROR} == {"bmc.internal_ambient",
                                                                             "bmc.temperatures"}
    assert {r.outcome for r in checks.values() if not r.passed} == {Outcome.FAIL, Outcome.ERROR}
    assert checks["bmc.firmware.bios"].found == "1.4" and "Inlet Temp 41 C" in checks["bmc.inlet"].found


def test_sel_since_last_bringup_and_no_sel_service() -> None:
    from datetime import UTC, datetime

    old = (LogEntry.parse({"Severity": "Critical", "Message": "old", "Created": "2026-01-01T00:00:00Z"}),)
    assert bmc_run(bmc_facts(sel=old), since=datetime(2026, 6, 1, tzinfo=UTC))["bmc.sel"].passed
    assert not bmc_run(bmc_facts(sel=old))["bmc.sel"].passed
    none = bmc_run(bmc_facts(sel=(), sel_read=False))["bmc.sel"]
    assert none.outcome is Outcome.ERROR and "no SEL" in none.detail


def test_unmapped_bios_key_and_absent_component_are_errors_naming_them() -> None:
    f = bmc_facts()
    bios = (f.bios[0].model_copy(update={"attribute": None, "wanted": None, "current": None}), *f.bios[1:])
    fw = tuple(x for x in f.firmware if x.component != "bios")
    checks = bmc_run(f.model_copy(update={"bios": bios, "firmware": fw}))
    unmapped, absent = checks[f"bmc.bios.{bios[0].key}"], checks["bmc.firmware.bios"]
    assert unmapped.outcome is Outcome.ERROR and bios[0].key in unmapped.detail
    assert absent.outcome is Outcome.ERROR and "bios not in FirmwareInventory" in absent.detail
    assert {r.id for r in checks.values() if r.outcome is not Outcome.PASS} == {unmapped.id, absent.id}
    unreadable = (FirmwareSeen(component="bios", versions=(), entries=1), *fw)
    row = bmc_run(f.model_copy(update={"firmware": unreadable}))["bmc.firmware.bios"]
    assert row.outcome is Outcome.ERROR and row.detail == "bios running version unreadable"


def test_error_all_and_waive_all_cover_what_evaluate_records() -> None:
    good = bmc_run(bmc_facts())
    for fill, outcome in ((error_all, Outcome.ERROR), (waive_all, Outcome.WAIVED)):
        ctx = run(spec(), {}, Level.QUICK)
        ctx.results.clear()
        fill(ctx, "why")
        assert {r.id for r in ctx.results} == set(good) and {r.outcome for r in ctx.results} == {outcome}


@pytest.mark.parametrize(
    ("exc", "label"),
    [
        (RedfishUnavailable("https://10.0.0.9: connection refused"), "BMC not reachable"),
        (RedfishAuthError("https://10.0.0.9: login as admin refused (401)"), "BMC refused the credentials"),
        (RedfishTlsError("https://10.0.0.9: certificate verify failed"), "BMC TLS verification failed"),
        (RedfishTimeout("https://10.0.0.9: no answer in 15 s"), "BMC did not answer in time"),
        (RedfishError("https://10.0.0.9: /redfish/v1/Systems answered 500"), "BMC could not be read"),
        (ProvisionError("node01: no BMC credentials"), "BMC could not be read"),
    ],
)
def test_each_bmc_error_kind_makes_error_rows(exc: ProvisionError, label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def observe(_host: HostEntry, insecure: bool = False) -> BmcFacts:
        raise exc

    monkeypatch.setattr(bmc_source, "read_bmc", observe)
    ctx = run(spec(), {}, Level.QUICK)
    ctx.results.clear()
    check_bmc(ctx, host("n1"), OwnSession())
    assert ctx.results and {r.outcome for r in ctx.results} == {Outcome.ERROR}
    assert all(r.detail == f"{label}: {exc}" for r in ctx.results)


def test_unreachable_bmc_is_an_error_never_passed() -> None:
    ctx = run(spec(), {}, Level.QUICK)
    ctx.results.clear()
    check_bmc(ctx, host("n1").model_copy(update={"bmc": BmcEndpoint(address="http://127.0.0.1:9",
                                                                      username="u", password="s3cret-h7-pw",
                                                                      insecure_http=True)}), OwnSession())
    assert ctx.results and all(r.outcome is Outcome.ERROR for r in ctx.results)
    assert "BMC not reachable" in ctx.results[0].detail
    assert not any("s3cret-h7-pw" in r.model_dump_json() for r in ctx.results)


# ---- threshold tiers on BMC readings ------------------------------------------------------------------------
def capture_thermal() -> tuple[Thermal, ...]:
    """Chassis/1/Thermal of the whole Supermicro HGX H100 capture: its 'System Temp' (internal ambient) is 37 C."""
    data = json.loads((FULL_SMC / "Chassis/1/Thermal/index.json").read_text())
    return (Thermal.parse(data),)


def test_capture_internal_ambient_above_35_c_is_a_warning_and_exits_0() -> None:
    from provision.redfish.vendors import by_name

    thermal = capture_thermal()
    inlet, ambient = by_name("supermicro").temperature_roles(thermal[0].temperatures)
    assert (inlet, ambient) == (("Inlet Temp",), ("System Temp",))
    checks = bmc_run(bmc_facts(thermal=thermal, inlet=inlet, ambient=ambient))
    temps = checks["bmc.internal_ambient"]
    assert temps.outcome is Outcome.WARN and temps.found == "System Temp 37 C (warn above 35)"
    assert checks["bmc.inlet"].outcome is Outcome.PASS and checks["bmc.inlet"].found == "Inlet Temp 21 C"
    # 'GPU Inlet Temp' (PhysicalContext GPU) is a component's sensor, judged with the others against 90 C
    assert checks["bmc.temperatures"].outcome is Outcome.PASS
    node = NodeReport(node="n1", profile="ml_prod_v4", results=(temps,))
    assert node.ok and RunReport(level=Level.FULL, nodes=(node,)).exit_code == 0


def test_no_inlet_or_ambient_sensor_is_an_error_never_a_pass() -> None:
    thermal = capture_thermal()
    checks = bmc_run(bmc_facts(thermal=thermal, inlet=(), ambient=()))
    for cid, needle in (("bmc.inlet", "no inlet reading"), ("bmc.internal_ambient", "no internal ambient")):
        assert checks[cid].outcome is Outcome.ERROR and needle in checks[cid].detail, checks[cid]
    # the named sensors exist but read nothing (Lenovo's 'BoardAverageTemp' ReadingCelsius null): still an error
    blank = (Thermal.parse({"Temperatures": [{"Name": "Inlet Temp", "ReadingCelsius": None},
                                             {"Name": "System Temp", "ReadingCelsius": None},
                                             {"Name": "CPU1 Temp", "ReadingCelsius": 40}]}),)
    checks = bmc_run(bmc_facts(thermal=blank))
    assert {checks[c].outcome for c in ("bmc.inlet", "bmc.internal_ambient")} == {Outcome.ERROR}


ROLES = [  # (vendor plugin, sensors as (Name, PhysicalContext), inlet, internal ambient)
    ("hpe", [("01-Inlet Ambient", "Intake"), ("15-Board Inlet", "SystemBoard"), ("24-BMC Zone", "SystemBoard")],
     ("01-Inlet Ambient",), ()),
    ("lenovo", [("Ambient Temp", "Intake"), ("Exhaust Temp", "Back"), ("BoardAverageTemp", "SystemBoard")],
     ("Ambient Temp",), ()),
    ("supermicro", [("Inlet Temp", "SystemBoard"), ("System Temp", "SystemBoard"), ("GPU Inlet Temp", "GPU")],
     ("Inlet Temp",), ("System Temp",)),
    ("nvidia_hgx", [("InletSensor_0", "GPUSubsystem"), ("HMC_TEMP", None)], (), ()),
    # the DMTF mockups' names: an 'Ambient' that is not the intake is the internal ambient
    ("generic", [("Intake", "Intake"), ("Chassis Ambient", "Chassis")], ("Intake",), ("Chassis Ambient",)),
    # a generic BMC's 'System Temp' is no ambient (only the Supermicro plugin says so)
    ("generic", [("Inlet Temp", None), ("System Temp", "SystemBoard")], ("Inlet Temp",), ()),
]


@pytest.mark.parametrize(("vendor", "sensors", "inlet", "ambient"), ROLES)
def test_temperature_roles_by_physical_context_and_vendor(vendor: str, sensors: list, inlet: tuple,
                                                          ambient: tuple) -> None:
    from provision.redfish.resources.power import Temperature
    from provision.redfish.vendors import by_name

    temps = [Temperature.parse({"Name": n, "PhysicalContext": c, "ReadingCelsius": 30}) for n, c in sensors]
    assert by_name(vendor).temperature_roles(temps) == (inlet, ambient)


@pytest.mark.parametrize(
    ("sensor", "cid", "outcome", "found"),
    [
        ({"Name": "Inlet Temp", "ReadingCelsius": 35, "PhysicalContext": "Intake"}, "bmc.inlet", Outcome.PASS,
         "Inlet Temp 35 C"),
        ({"Name": "Inlet Temp", "ReadingCelsius": 36, "PhysicalContext": "Intake"}, "bmc.inlet", Outcome.FAIL,
         "Inlet Temp 36 C (limit 35)"),
        # the sensor's own UpperThresholdNonCritical is a warning tier, its UpperThresholdCritical lowers the failure
        ({"Name": "CPU1 Temp", "ReadingCelsius": 43, "UpperThresholdNonCritical": 42, "UpperThresholdCritical": 45},
         "bmc.temperatures", Outcome.WARN, "CPU1 Temp 43 C (warn above 42)"),
        ({"Name": "CPU1 Temp", "ReadingCelsius": 46, "UpperThresholdNonCritical": 42, "UpperThresholdCritical": 45},
         "bmc.temperatures", Outcome.FAIL, "CPU1 Temp 46 C (limit 45)"),
        ({"Name": "CPU1 Temp", "ReadingCelsius": 91}, "bmc.temperatures", Outcome.FAIL, "CPU1 Temp 91 C (limit 90)"),
        # Dell's inlet: UpperThresholdNonCritical 38 lies above the spec's 35 C limit: no warning tier, fails at 35
        ({"Name": "System Board Inlet Temp", "ReadingCelsius": 37, "UpperThresholdNonCritical": 38,
          "UpperThresholdCritical": 42}, "bmc.inlet", Outcome.FAIL, "System Board Inlet Temp 37 C (limit 35)"),
        # the internal ambient: 35 C passes, above warns (seed 5.2), above fail_internal_ambient_c (40) fails
        ({"Name": "System Temp", "ReadingCelsius": 35}, "bmc.internal_ambient", Outcome.PASS, "System Temp 35 C"),
        ({"Name": "System Temp", "ReadingCelsius": 36}, "bmc.internal_ambient", Outcome.WARN,
         "System Temp 36 C (warn above 35)"),
        ({"Name": "System Temp", "ReadingCelsius": 40}, "bmc.internal_ambient", Outcome.WARN,
         "System Temp 40 C (warn above 35)"),
        ({"Name": "System Temp", "ReadingCelsius": 41}, "bmc.internal_ambient", Outcome.FAIL,
         "System Temp 41 C (limit 40)"),
    ],
)
def test_temperature_tiers(sensor: dict, cid: str, outcome: Outcome, found: str) -> None:
    others = [{"Name": "Inlet Temp", "ReadingCelsius": 20}, {"Name": "System Temp", "ReadingCelsius": 25},
              {"Name": "GPU1 Temp", "ReadingCelsius": 50}]
    temps = [sensor, *(o for o in others if o["Name"] != sensor["Name"])]
    inlet = (sensor["Name"],) if cid == "bmc.inlet" else ("Inlet Temp",)
    ambient = (sensor["Name"],) if cid == "bmc.internal_ambient" else ("System Temp",)
    row = bmc_run(bmc_facts(thermal=(Thermal.parse({"Temperatures": temps, "Fans": [{"Name": "F"}] * 6}),),
                            inlet=inlet, ambient=ambient))[cid]
    assert (row.outcome, row.found) == (outcome, found if outcome is not Outcome.PASS or cid != "bmc.temperatures"
                                        else row.found)


def test_ambient_fail_tier_defaults_to_the_component_limit() -> None:
    ctx = run(spec(**{"cooling.fail_internal_ambient_c": None}), {}, Level.QUICK)
    ctx.results.clear()
    thermal = (Thermal.parse({"Temperatures": [{"Name": "Inlet Temp", "ReadingCelsius": 20},
                                               {"Name": "System Temp", "ReadingCelsius": 60}]}),)
    evaluate_bmc(ctx, bmc_facts(thermal=thermal))
    row = next(r for r in ctx.results if r.id == "bmc.internal_ambient")
    assert (row.outcome, row.expected) == (Outcome.WARN, "<= 90 C (warn above 35 C)")


def test_no_temperature_or_power_reading_is_an_error() -> None:
    checks = bmc_run(bmc_facts(thermal=(Thermal.parse({"Fans": []}),), power=(Power.parse({}),)))
    assert checks["bmc.temperatures"].outcome is Outcome.ERROR and "no temperature" in checks["bmc.temperatures"].detail
    assert checks["bmc.power_draw"].outcome is Outcome.ERROR and "no power reading" in checks["bmc.power_draw"].detail
    for cid in ("bmc.fans", "bmc.fan_redundancy", "bmc.psu", "bmc.psu_redundancy"):
        assert checks[cid].outcome is Outcome.ERROR, checks[cid]


@pytest.mark.parametrize(
    ("control", "outcome", "found"),
    [
        ({"PowerConsumedWatts": 2161, "PowerMetrics": {"MaxConsumedWatts": 2165}}, Outcome.PASS, "2165 W"),
        ({"PowerConsumedWatts": 4950}, Outcome.PASS, "4950 W"),            # 90% of the spec's 5500 W peak
        ({"PowerConsumedWatts": 4951}, Outcome.WARN, "4951 W"),            # near the peak: the headroom is gone
        ({"PowerConsumedWatts": 5500}, Outcome.WARN, "5500 W"),
        ({"PowerConsumedWatts": 5501}, Outcome.FAIL, "5501 W"),            # above the peak the rack was budgeted for
        ({"PowerConsumedWatts": 5000, "PowerMetrics": {"MaxConsumedWatts": 5900}}, Outcome.FAIL, "5900 W"),
    ],
)
def test_power_draw_tiers(control: dict, outcome: Outcome, found: str) -> None:
    power = (Power.parse({"PowerSupplies": [{"Status": {"State": "Enabled", "Health": "OK"}}] * 2,
                          "PowerControl": [control]}),)
    draw = bmc_run(bmc_facts(power=power))["bmc.power_draw"]
    assert (draw.outcome, draw.found, draw.expected) == (outcome, found, "<= 5500 W (warn above 4950 W)")


def test_power_draw_of_the_capture_passes() -> None:
    data = json.loads((FULL_SMC / "Chassis/1/Power/index.json").read_text())
    draw = bmc_run(bmc_facts(power=(Power.parse(data),)))["bmc.power_draw"]
    assert draw.outcome is Outcome.PASS and draw.detail == "now 2161 W, interval max 2165 W"


def _smc_power(lost: int | None = None, state: str = "UnavailableOffline", health: str = "Critical",
               group: str = "OK") -> tuple[Power, ...]:
    """The Supermicro capture's Power (8 PSUs, Redundancy Failover) with PSU `lost` (0-based) changed."""
    data = json.loads((FULL_SMC / "Chassis/1/Power/index.json").read_text())
    if lost is not None:
        data["PowerSupplies"][lost]["Status"] = {"State": state, "Health": health}
    data["Redundancy"][0]["Status"]["Health"] = group
    return (Power.parse(data),)


@pytest.mark.parametrize(
    ("power", "redundancy", "psu", "redundant", "detail"),
    [
        (_smc_power(), "N+1", Outcome.PASS, Outcome.PASS, ""),
        # a PSU offline while the BMC's group still says OK: the spare is spent, N+1 fails
        (_smc_power(7), "N+1", Outcome.FAIL, Outcome.FAIL, "Power Supply Bay 8 lost"),
        (_smc_power(7, state="Enabled", health="Warning"), "N+1", Outcome.FAIL, Outcome.FAIL,
         "Power Supply Bay 8 lost"),
        (_smc_power(7, state="Absent", health="OK"), "N+1", Outcome.FAIL, Outcome.FAIL, "7 of 8 PSUs present"),
        (_smc_power(group="Critical"), "N+1", Outcome.PASS, Outcome.FAIL, "PowerSupply Redundancy Group 1 not OK"),
        (_smc_power(7), "none", Outcome.FAIL, None, ""),
    ],
)
def test_psu_redundancy_table(power: tuple[Power, ...], redundancy: str, psu: Outcome, redundant: Outcome | None,
                              detail: str) -> None:
    ctx = run(spec(**{"power.psu_count": 8, "power.redundancy": redundancy}), {}, Level.QUICK)
    ctx.results.clear()
    evaluate_bmc(ctx, bmc_facts(power=power))
    rows = {r.id: r for r in ctx.results}
    assert rows["bmc.psu"].outcome is psu
    if redundant is None:
        assert "bmc.psu_redundancy" not in rows
    else:
        assert rows["bmc.psu_redundancy"].outcome is redundant and rows["bmc.psu_redundancy"].detail == detail


def _fans(n: int, failed: int = 0, group: str | None = None) -> tuple[Thermal, ...]:
    fans = [{"Name": f"FAN{i + 1}", "Status": {"State": "Enabled", "Health": "Critical" if i < failed else "OK"}}
            for i in range(n)]
    temps = [{"Name": "Inlet Temp", "ReadingCelsius": 22}, {"Name": "System Temp", "ReadingCelsius": 30}]
    red = [{"Name": "Fan Redundancy", "Mode": "N+m", "Status": {"Health": group}}] if group else []
    return (Thermal.parse({"Fans": fans, "Temperatures": temps, "Redundancy": red}),)


@pytest.mark.parametrize(
    ("thermal", "fans", "redundant", "detail"),
    [
        (_fans(6), Outcome.PASS, Outcome.PASS, ""),
        (_fans(7, failed=1), Outcome.PASS, Outcome.FAIL, "failed: FAN1"),          # 6 left, but the spare is spent
        (_fans(6, failed=1), Outcome.FAIL, Outcome.FAIL, "failed: FAN1; 5 healthy, 6 needed (N+1: 5 + 1 spare)"),
        (_fans(5), Outcome.FAIL, Outcome.FAIL, "5 healthy, 6 needed (N+1: 5 + 1 spare)"),
        (_fans(6, group="Critical"), Outcome.PASS, Outcome.FAIL, "Fan Redundancy not OK"),
        (_fans(6, group="OK"), Outcome.PASS, Outcome.PASS, ""),
    ],
)
def test_fan_redundancy_table(thermal: tuple[Thermal, ...], fans: Outcome, redundant: Outcome, detail: str) -> None:
    rows = bmc_run(bmc_facts(thermal=thermal))
    assert rows["bmc.fans"].outcome is fans
    assert (rows["bmc.fan_redundancy"].outcome, rows["bmc.fan_redundancy"].detail) == (redundant, detail)


# ---- CLI: bad input is one line and exit 2 -----------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", "verify", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["node01", "-i", "/nonexistent/hosts.yml"], "/nonexistent"),
        (["nosuchnode", "-i", "inventory/hosts.yml"], "nosuchnode"),
        (["node01", "-i", "inventory/hosts.yml", "--html", "/nonexistent-dir/r.html"], "--html"),
        (["node01", "-i", "inventory/hosts.yml", "--level", "extreme"], "extreme"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_last_bringup_from_the_journal(tmp_path: Path) -> None:
    from provision.conformance.since import last_bringup
    from provision.journal.store import Journal

    path = tmp_path / "j.db"
    assert last_bringup("node01", path) is None and not path.exists()  # read-only: no journal created
    with Journal(path) as j:
        old = j.start_run("bringup", "node01", {})
        j.stage_started(old, "node01", "firmware")
        j.start_run("campaign", "x", {})
        new = j.start_run("bringup", "node01,node02", {})
        first = j.stage_started(new, "node01", "firmware")
        j.stage_started(new, "node01", "bios")
        started = j.stages("node01")[-2].started_at
        assert j.stages("node01")[-2].id == first
    got = last_bringup("node01", path)
    assert got is not None and abs(got.timestamp() - started) < 1e-3
    assert last_bringup("node09", path) is None


def test_thermal_subsystem_fan_redundancy_group_is_judged() -> None:
    """ThermalSubsystem.FanRedundancy (Redfish 2020.4 RedundantGroup): its Health fails bmc.fan_redundancy."""
    from provision.redfish.resources.power import thermal_from_subsystem

    fans = [{"Name": f"Fan{i}", "Status": {"State": "Enabled", "Health": "OK"}} for i in range(6)]
    metrics = {"TemperatureReadingsCelsius": [{"DeviceName": "Inlet", "Reading": 22, "PhysicalContext": "Intake"}]}
    for health, outcome in (("OK", Outcome.PASS), ("Critical", Outcome.FAIL)):
        group = [{"RedundancyType": "NPlusM", "MinNeededInGroup": 5, "Status": {"Health": health}}]
        thermal = (thermal_from_subsystem("/redfish/v1/Chassis/1/ThermalSubsystem", metrics, fans, group),)
        assert thermal[0].redundancy[0].min_num_needed == 5
        row = bmc_run(bmc_facts(thermal=thermal))["bmc.fan_redundancy"]
        assert row.outcome is outcome and "NPlusM " + health in row.found, row


@pytest.mark.parametrize("running", ["buildbrain-gcid-38635631", "2023-08-04"])
def test_a_version_not_comparable_with_the_baseline_is_an_error_naming_both(running: str) -> None:
    """Never "at or above the baseline" (nor below): a build id or a date against the dotted baseline 2.1."""
    f = bmc_facts()
    fw = tuple(x if x.component != "bios" else FirmwareSeen(component="bios", versions=(running,)) for x in f.firmware)
    row = bmc_run(f.model_copy(update={"firmware": fw}))["bmc.firmware.bios"]
    want = next(c.version for c in spec().firmware if c.component == "bios")
    assert row.outcome is Outcome.ERROR
    assert f"cannot compare {running!r} with baseline {want!r}" in row.detail

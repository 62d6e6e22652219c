"""GPU health checks as tables on real nvidia-smi captures: the healthy capture passes, each fault fails
naming its GPU, the temperature warning tier warns (spec gpu.health thresholds; see GpuHealth)."""

from __future__ import annotations

import re

import pytest

from provision.conformance.model import CheckResult, Level, Outcome
from tests.unit.conformance.helpers import area, fixture, run, spec
from tests.unit.parsers._fixtures import H100_590, section

Q = section(H100_590, "nvidia-smi -q", exact=True)
NVLINK = section(H100_590, "nvidia-smi nvlink -s", phase="capabilities")
BUS = "00000000:00:09.0"
LOG = "[    0.000000] Linux version 6.1.0-28-amd64\n[    9.902113] NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
HEALTH = ("pcie_gen", "row_remap", "ecc_errors", "clocks", "temperature", "memory_temperature", "xid",
          "nvlink_errors")
P, W, F, E = Outcome.PASS, Outcome.WARN, Outcome.FAIL, Outcome.ERROR


def nvlink_e(replay: int = 0, crc: int = 0) -> str:
    """`nvidia-smi nvlink -e` for the capture's GPU and links (documented layout), link 7 with the counts."""
    head, *links = [line for line in NVLINK.splitlines() if line.strip()]
    out = [head]
    for n in range(len(links)):
        counts = {"Replay": replay if n == 7 else 0, "Recovery": 0, "CRC": crc if n == 7 else 0}
        out += [f"\t Link {n}: {name} Errors: {count}" for name, count in counts.items()]
    return "\n".join(out) + "\n"


def spec_590(**more: object):  # type: ignore[no-untyped-def]
    return spec(**{"gpu.count": 1, "software.nvidia_driver.branch": "590", "software.nvidia_driver.version": "590.48.01",
                   "software.fabric_manager.version": "590.48.01", **more})


def health(q: str = Q, log: str | tuple[int, str, str] = LOG, errors: str | None = None,
           **spec_changes: object) -> dict[str, CheckResult]:
    sections = {"nvidia_smi_q": q, "nvidia_smi_nvlink": NVLINK, "kernel_log": log,
                "nvidia_smi_nvlink_errors": errors or nvlink_e()}
    return area(run(spec_590(**spec_changes), sections), "gpu")


def sub(pattern: str, new: str, text: str = Q) -> str:
    out, n = re.subn(pattern, new, text, count=1, flags=re.M)
    assert n == 1, f"capture drift: {pattern!r}"
    return out


def test_healthy_capture_passes_every_health_check() -> None:
    gpu = health()
    assert {f"gpu.0.{c}": gpu[f"gpu.0.{c}"].outcome for c in HEALTH} == {f"gpu.0.{c}": P for c in HEALTH}
    assert "gpu.xid" not in gpu and gpu["gpu.0.pcie_gen"].found == "Gen5 (max Gen5)"
    assert gpu["gpu.0.temperature"].found == "41 C" and gpu["gpu.0.memory_temperature"].found == "48 C"


CASES = [
    ("row remap pending", {"q": sub(r"^(        Pending\s+: )No$", r"\1Yes")}, "row_remap", F, "pending"),
    ("row remap failure", {"q": sub(r"^(        Remapping Failure Occurred\s+: )No$", r"\1Yes")}, "row_remap", F,
     "failure"),
    ("too many uncorrectable rows", {"q": sub(r"^(        Uncorrectable Error\s+: )0$", r"\g<1>513")}, "row_remap",
     F, "513 rows"),
    ("ECC volatile uncorrectable", {"q": sub(r"^(            DRAM Uncorrectable\s+: )0$", r"\g<1>2")}, "ecc_errors",
     F, "2"),
    ("HW thermal slowdown", {"q": sub(r"^(            HW Thermal Slowdown\s+: )Not Active$", r"\1Active")}, "clocks",
     F, "HW Thermal Slowdown active"),
    ("SW thermal slowdown", {"q": sub(r"^(        SW Thermal Slowdown\s+: )Not Active$", r"\1Active")}, "clocks",
     F, "SW Thermal Slowdown active"),
    ("SW power cap is normal", {"q": sub(r"^(        SW Power Cap\s+: )Not Active$", r"\1Active")}, "clocks", P,
     "none"),
    ("PCIe trained down to Gen4", {"q": sub(r"^(                Current\s+: )5$", r"\g<1>4")}, "pcie_gen", F,
     "Gen4 (max Gen5)"),
    ("PCIe Gen4 while power-saving", {"q": sub(r"^(    Performance State\s+: )P0$", r"\1P8",
                                               sub(r"^(                Current\s+: )5$", r"\g<1>4"))},
     "pcie_gen", W, "Gen4"),
    ("GPU temperature warn tier", {"q": sub(r"^(        GPU Current Temp\s+: )41 C$", r"\g<1>82 C")}, "temperature",
     W, "82 C"),
    ("GPU temperature fail tier", {"q": sub(r"^(        GPU Current Temp\s+: )41 C$", r"\g<1>88 C")}, "temperature",
     F, "88 C"),
    ("memory temperature warn tier", {"q": sub(r"^(        Memory Current Temp\s+: )48 C$", r"\g<1>90 C")},
     "memory_temperature", W, "90 C"),
    ("spec tiers are used", {"**": {"gpu.health": {"gpu_temperature": {"warn_c": 35, "fail_c": 40}}}},
     "temperature", F, "41 C"),
    ("failing Xid", {"log": LOG + "[  812.4] NVRM: Xid (PCI:0000:00:09): 79, pid=1, GPU has fallen off the bus.\n"},
     "xid", F, "Xid 79"),
    ("other Xid warns", {"log": LOG + "[  271.0] NVRM: Xid (PCI:0000:00:09): 13, pid=4, Graphics Exception\n"},
     "xid", W, "Xid 13"),
    ("NVLink CRC errors", {"errors": nvlink_e(crc=3)}, "nvlink_errors", F, "CRC Errors 3"),
    ("NVLink replays warn", {"errors": nvlink_e(replay=5)}, "nvlink_errors", W, "Replay Errors 5"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "check", "outcome", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_fault_gives_its_outcome_naming_the_gpu(changes: dict, check: str, outcome: Outcome, shown: str) -> None:
    kwargs = {k: v for k, v in changes.items() if k != "**"}
    gpu = health(**kwargs, **changes.get("**", {}))
    result = gpu[f"gpu.0.{check}"]
    assert result.outcome is outcome, result
    assert shown in result.found and f"GPU 0 ({BUS})" in result.description
    others = {i: r.outcome for i, r in gpu.items() if i != result.id and i.split(".")[-1] in HEALTH}
    assert set(others.values()) == {P}, others  # one fault, one verdict


def test_xid_of_a_gpu_nvidia_smi_no_longer_lists_fails_the_node() -> None:
    gpu = health(log=LOG + "[  812.4] NVRM: Xid (PCI:0000:19:00): 79, pid=1, GPU has fallen off the bus.\n")
    assert gpu["gpu.xid"].outcome is F and "0000:19:00" in gpu["gpu.xid"].description
    assert gpu["gpu.0.xid"].outcome is P


def test_unreadable_sources_are_errors_never_passes() -> None:
    gpu = health(log=(1, "", "dmesg: read kernel buffer failed: Operation not permitted"),
                 q=Q.replace("Remapped Rows", "Remapped Rowz"))
    assert gpu["gpu.xid"].outcome is E and "gpu.0.xid" not in gpu
    assert gpu["gpu.0.row_remap"].outcome is E


def test_real_capture_gpu_2_power_braked_and_sw_thermal_fails_naming_it() -> None:
    s = spec(**{"software.nvidia_driver.branch": "535", "software.nvidia_driver.version": "535.183.01",
                "software.fabric_manager.version": "535.183.01"})
    ctx = run(s, {"nvidia_smi_q": fixture("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt"), "kernel_log": LOG},
              Level.FULL)
    clocks = {i: r for i, r in area(ctx, "gpu").items() if i.endswith(".clocks")}
    assert [i for i, r in clocks.items() if r.outcome is F] == ["gpu.2.clocks"]
    assert "GPU 2 (00000000:75:00.0)" in clocks["gpu.2.clocks"].description
    assert clocks["gpu.2.clocks"].found == "HW Power Brake Slowdown, SW Thermal Slowdown active"


def test_real_capture_with_power_brake_on_every_gpu_fails_all_eight() -> None:
    s = spec(**{"software.nvidia_driver.branch": "535", "software.nvidia_driver.version": "535.161.08",
                "software.fabric_manager.version": "535.161.08"})
    ctx = run(s, {"nvidia_smi_q": fixture("nvidia-smi/gpud/nvidia-smi-q.535.161.08.h100x8.txt"), "kernel_log": LOG})
    failed = {i for i, r in area(ctx, "gpu").items() if i.endswith(".clocks") and r.outcome is F}
    assert failed == {f"gpu.{i}.clocks" for i in range(8)}

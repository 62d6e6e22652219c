"""GPU and fabric checks on real nvidia-smi captures (tests/fixtures/nvidia-smi, see PROVENANCE.md)."""

from __future__ import annotations

import re

from provision.conformance.checks.names import FABRIC_MANAGER_UNIT, fabric_manager_package
from provision.conformance.model import Level
from tests.unit.conformance.helpers import area, fixture, run, spec
from tests.unit.parsers._fixtures import H100_590, section

Q_590 = section(H100_590, "nvidia-smi -q", exact=True)
NVLINK_590 = section(H100_590, "nvidia-smi nvlink -s", phase="capabilities")
Q_535X8 = fixture("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt")
TRUNCATED = fixture("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100.truncated-invalid.txt")
PER_GPU = ("model", "memory", "persistence", "ecc", "mig", "pcie_gen", "pcie_width", "power_limit", "nvlink",
           "row_remap", "ecc_errors", "clocks", "temperature", "memory_temperature", "xid", "nvlink_errors")
LOG = "[    0.000000] Linux version 6.1.0-28-amd64\n"


def nvlink_e() -> str:
    head, *links = [line for line in NVLINK_590.splitlines() if line.strip()]
    return head + "\n" + "".join(f"\t Link {n}: CRC Errors: 0\n" for n in range(len(links)))


def healthy(**sections: str) -> dict[str, str]:
    """The 590 capture's GPU sections, with a kernel log and NVLink error counters (no errors)."""
    return {"nvidia_smi_q": Q_590, "nvidia_smi_nvlink": NVLINK_590, "kernel_log": LOG,
            "nvidia_smi_nvlink_errors": nvlink_e(), **sections}


def spec_590(**more: object):  # type: ignore[no-untyped-def]
    """ML-PROD-V4, but one GPU on driver 590.48.01 (what the 590 capture holds)."""
    return spec(**{
        "gpu.count": 1,
        "software.nvidia_driver.branch": "590",
        "software.nvidia_driver.version": "590.48.01",
        "software.fabric_manager.version": "590.48.01",
        **more,
    })


def fabric_sections(s, active: str = "active", fm_version: str = "590.48.01-1") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        "systemctl_show": f"Id={FABRIC_MANAGER_UNIT}\nLoadState=loaded\nActiveState={active}\nSubState=running\n",
        "dpkg_query": f"{fabric_manager_package(s)}\t{fm_version}\thold ok installed\n",
    }


def test_h100_590_capture_passes_every_gpu_check() -> None:
    ctx = run(spec_590(), healthy())
    gpu = area(ctx, "gpu")
    assert set(gpu) == {"gpu.count", "gpu.driver_version"} | {f"gpu.0.{c}" for c in PER_GPU}
    assert [r.id for r in gpu.values() if not r.passed] == []
    assert gpu["gpu.0.nvlink"].found == "18 of 18 at spec speed"
    assert gpu["gpu.0.memory"].found == "80 (81559 MiB)"
    assert gpu["gpu.driver_version"].found == "590.48.01"


def test_wrong_driver_fails_only_the_driver_check() -> None:
    ctx = run(spec(**{"gpu.count": 1}), healthy())
    failed = [r for r in area(ctx, "gpu").values() if not r.passed]
    assert [(r.id, r.expected, r.found) for r in failed] == [("gpu.driver_version", "550.127.08", "590.48.01")]


def test_inactive_nvlink_fails_that_gpus_nvlink_check() -> None:
    down = NVLINK_590.replace("Link 7: 26.562 GB/s", "Link 7: <inactive>")
    assert down != NVLINK_590
    ctx = run(spec_590(), healthy(nvidia_smi_nvlink=down))
    failed = {r.id: r for r in area(ctx, "gpu").values() if not r.passed}
    assert list(failed) == ["gpu.0.nvlink"]
    assert failed["gpu.0.nvlink"].found == "17 of 18 at spec speed" and "7" in failed["gpu.0.nvlink"].detail


def test_slower_nvlink_is_not_at_spec_speed() -> None:
    slow = NVLINK_590.replace("Link 3: 26.562 GB/s", "Link 3: 13.281 GB/s")
    ctx = run(spec_590(), {"nvidia_smi_q": Q_590, "nvidia_smi_nvlink": slow})
    assert not area(ctx, "gpu")["gpu.0.nvlink"].passed


def test_eight_h100_capture_and_a_missing_gpu() -> None:
    s = spec(**{"software.nvidia_driver.branch": "535", "software.nvidia_driver.version": "535.183.01",
                "software.fabric_manager.version": "535.183.01"})
    ctx = run(s, {"nvidia_smi_q": Q_535X8}, Level.QUICK)
    gpu = area(ctx, "gpu")
    assert gpu["gpu.count"].passed and gpu["gpu.count"].found == "8"
    assert all(gpu[f"gpu.{i}.model"].passed for i in range(8))
    # Drop the last GPU block (what a fallen-off-the-bus GPU looks like): only the count fails.
    cut = Q_535X8[: Q_535X8.rindex("\nGPU 0000")] + "\n"
    cut = cut.replace("Attached GPUs                             : 8", "Attached GPUs                             : 7")
    ctx = run(s, {"nvidia_smi_q": cut}, Level.QUICK)
    failed = [(r.id, r.found) for r in area(ctx, "gpu").values() if not r.passed]
    assert failed == [("gpu.count", "7")]


def test_nvidia_smi_failing_fails_gpu_and_fabric_checks_with_the_reason() -> None:
    err = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    s = spec_590()
    ctx = run(s, {"nvidia_smi_q": (9, err, ""), "nvidia_smi_nvlink": (9, err, ""), **fabric_sections(s)})
    gpu = area(ctx, "gpu")
    assert set(gpu) == {"gpu.count", "gpu.driver_version"}
    assert not any(r.passed for r in gpu.values())
    assert "couldn't communicate" in gpu["gpu.count"].found and gpu["gpu.count"].found.startswith("unreadable")
    assert not area(ctx, "fabric")["fabric.state"].passed


def test_truncated_capture_is_unreadable_not_zero_gpus() -> None:
    ctx = run(spec_590(), {"nvidia_smi_q": TRUNCATED}, Level.QUICK)
    count = area(ctx, "gpu")["gpu.count"]
    assert not count.passed and "nvidia-smi" in count.found and count.found.startswith("unreadable")


def test_fabric_checks_pass_on_capture_with_service_and_package() -> None:
    s = spec_590()
    ctx = run(s, {"nvidia_smi_q": Q_590, **fabric_sections(s)})
    fab = area(ctx, "fabric")
    assert set(fab) == {"fabric.service", "fabric.version", "fabric.0.state"}
    assert all(r.passed for r in fab.values()), fab
    assert fab["fabric.0.state"].found == "Completed / Success"


def test_fabric_manager_failed_or_at_another_version() -> None:
    s = spec_590()
    ctx = run(s, {"nvidia_smi_q": Q_590, **fabric_sections(s, active="failed")})
    assert [r.id for r in area(ctx, "fabric").values() if not r.passed] == ["fabric.service"]
    ctx = run(s, {"nvidia_smi_q": Q_590, **fabric_sections(s, fm_version="590.44.01-1")})
    bad = [r for r in area(ctx, "fabric").values() if not r.passed]
    assert [(r.id, r.expected, r.found) for r in bad] == [("fabric.version", "590.48.01", "590.44.01")]


def test_fabric_registration_in_progress_fails() -> None:
    s = spec_590()
    q = re.sub(r"(\n\s+State\s+: )Completed\n", r"\1In Progress\n", Q_590)
    assert q != Q_590
    ctx = run(s, {"nvidia_smi_q": q, **fabric_sections(s)})
    assert [r.id for r in area(ctx, "fabric").values() if not r.passed] == ["fabric.0.state"]


def test_pcie_spec_has_no_fabric_checks() -> None:
    s = spec_590(**{"gpu.interconnect": "pcie", "gpu.nvlink": None, "software.fabric_manager": None})
    ctx = run(s, {"nvidia_smi_q": Q_590})
    assert area(ctx, "fabric") == {}
    assert "gpu.0.nvlink" not in area(ctx, "gpu")

"""A twin of each distinct catalogue CPU verifies with exit 0 (issue 21, item 7; issue 43, item 4).

For each profile: `lab up --bmc-only --profile NAME` (the simulated BMC presents the profile's CPUs, DIMMs, GPUs
and drives), a twin of that profile (lscpu, /proc/cpuinfo and meminfo of the catalogue CPU; one GPU behind the
nvidia-smi stand-in for the workstation, none for the others; no md array, no scratch pool), converged minimally
(tests/lab/verify_lab.py), then `provision verify --level full` through the real CLI: exit 0, nothing failed or
in error, and no check of a section the profile does not have. The twin's own link stands for the profile's
on-board 1 GbE NIC (ethernet.ports passes from `ip -j -d` and sysfs, as on a real host), and a profile without
GPUs has no NVIDIA driver stand-in at all. Run under the lab lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.lab.verify_lab import ROOT, converge, project_spec, ssh, verify_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]

NODE = "node01"
# One profile for each distinct CPU of the seed's catalogue (11 parts over 18 rows): the rows that share a CPU
# (i9-13900 64/128 GB, i5-13500 64/128 GB and the workstation, the five EPYC 7502P rows) differ only in memory
# size and drives, and are validated only (tests/unit/test_seed_profiles.py).
PROFILES = ("catalogue_i5_13500_ws", "catalogue_epyc_9454p", "catalogue_ryzen9_7950x", "catalogue_i9_9900k",
            "catalogue_i7_6700k_7700", "catalogue_i7_8700", "catalogue_i9_13900_64g", "catalogue_ryzen5_3600",
            "catalogue_ryzen7_7700", "catalogue_ryzen9_5950x", "catalogue_epyc_7502p_128g_1t")
ABSENT_AREAS = ("raid", "zfs", "infiniband", "fabric")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def _verifies_with_exit_0(inventory: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """`provision verify --level full --no-bmc` through the CLI: exit 0, nothing failed or in error; results by id."""
    report = tmp_path / "report.json"
    proc = _cli("verify", NODE, "-i", str(inventory), "--level", "full", "--no-bmc", "--json", str(report))
    assert report.exists(), proc.stderr[-2000:]  # verify stopped before judging (bad input, unreachable node)
    node = json.loads(report.read_text())["nodes"][0]
    results = node["results"]
    bad = [f"{r['id']}: expected {r['expected']}, found {r['found']}" for r in results
           if r["outcome"] in ("fail", "error")]
    assert proc.returncode == 0, "\n".join(bad) + proc.stderr
    assert node["totals"]["fail"] == 0 and node["totals"]["error"] == 0
    return {r["id"]: r for r in results}


@pytest.mark.parametrize("profile", PROFILES)
def test_twin_of_the_profile_verifies_with_exit_0(profile: str, tmp_path: Path) -> None:
    spec = project_spec(profile)
    with verify_lab(tmp_path / "lab", 1, profile=profile) as (inventory, _twin_dir, infos):
        # the factory image of a server without GPUs has no NVIDIA driver: no nvidia-smi on the twin at all
        factory = ssh(infos[NODE], "command -v nvidia-smi || echo none; dpkg-query -W -f '${Package}\\n' | grep nvidia || true")
        assert factory.split() == (["none"] if spec.gpu is None else ["/usr/bin/nvidia-smi", "nvidia-driver",
                                                                       "nvidia-kernel-open-dkms"]), factory
        converge(infos[NODE], spec)
        ids = _verifies_with_exit_0(inventory, tmp_path)
        ports = ids["ethernet.ports"]  # the on-board 1 GbE NIC the twin's link stands for, from sysfs (no ibstat)
        assert ports["outcome"] == "pass" and ports["found"] == "1 (eth0 1 Gb/s)", ports
        assert not [i for i in ids if i.split(".")[0] in ABSENT_AREAS]  # absent sections: no checks at all
        for key in ("cpu.model", "cpu.sockets", "cpu.cores_per_socket", "cpu.threads", "memory.dimm_count",
                    "nvme.count"):
            assert ids[key]["outcome"] == "pass", ids[key]
        assert ids["cpu.threads"]["found"] == str(spec.cpu.total_threads)
        # SMBIOS as the twin's dmidecode presents the spec: base clock, L3 per socket, the DIMMs' kind
        assert ids["cpu.base_clock"]["found"] == f"{round(spec.cpu.base_clock_ghz * 1000)} MHz", ids["cpu.base_clock"]
        assert ids["cpu.l3_cache"]["found"] == f"{spec.cpu.l3_cache_mb_per_socket} MB", ids["cpu.l3_cache"]
        assert ids["memory.module"]["found"] == spec.memory.module, ids["memory.module"]
        if spec.gpu is None:
            assert not [i for i in ids if i.startswith("gpu.") or "nvidia" in i]
        else:
            assert ids["gpu.count"]["outcome"] == "pass" and ids["gpu.count"]["found"] == "1"
            assert ids["gpu.0.model"]["found"] == spec.gpu.model and "gpu.1.model" not in ids
            assert not [i for i in ids if "nvlink" in i]


# The seed's two other GPU classes (section 4.1): PCIe boards, so no NVLink, NVSwitch or fabric manager, but the
# scratch stripe, the boot mirror and InfiniBand as ML-PROD-V4 has them.
GPU_VARIANTS = ("ml_density_v2", "ml_cost_v3")


@pytest.mark.parametrize("profile", GPU_VARIANTS)
def test_twin_of_a_gpu_variant_verifies_with_exit_0(profile: str, tmp_path: Path) -> None:
    spec = project_spec(profile)
    assert spec.gpu is not None
    with verify_lab(tmp_path / "lab", 1, profile=profile) as (inventory, _twin_dir, infos):
        converge(infos[NODE], spec)
        ids = _verifies_with_exit_0(inventory, tmp_path)
        assert ids["gpu.count"]["outcome"] == "pass" and ids["gpu.count"]["found"] == str(spec.gpu.count)
        assert {ids[f"gpu.{i}.model"]["found"] for i in range(spec.gpu.count)} == {spec.gpu.model}
        assert ids["memory.dimm_count"]["found"] == str(spec.memory.dimm_count)
        for area in ("zfs", "raid", "infiniband"):  # the sections this class has are checked, not skipped
            assert [i for i in ids if i.split(".")[0] == area], area

"""Profiles for every node class of the seed: optional sections, the catalogue profiles, and what skips them.

An absent section (gpu, storage.scratch, storage.boot.raid, network.infiniband) means the hardware is not
there: no role, no probe and no check is generated for it (there is no "not applicable" outcome, and a
check that is not made is never a pass). A present section whose pins are missing is a spec error.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.conformance.checks import NODE_AREAS, burnin_plan, names
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts, Section
from provision.conformance.model import Level
from provision.conformance.parsers.cpu import parse_lscpu
from provision.conformance.parsers.mdstat import parse_mdstat
from provision.errors import SpecError
from provision.lab.bmcsim.config import Parts
from provision.lab.bmcsim.seed import build
from provision.lab.bmcsim.tree import ROOT
from provision.lab.twins.personality.faults import Faults, fault_params
from provision.lab.twins.personality.hardware import hardware_from_spec
from provision.lab.twins.personality.procfiles import render_cpuinfo, render_mdstat
from provision.spec import NodeSpec, load_fleet
from provision.spec.memory_population import check_profile
from provision.spec.model import required

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "inventory" / "hosts.yml"
CATALOGUE = ("catalogue_i9_9900k", "catalogue_ryzen9_7950x", "catalogue_epyc_9454p", "catalogue_i5_13500_ws")
TREES_DIR = REPO / "provision" / "lab" / "data" / "trees"
LSCPU = REPO / "provision" / "lab" / "twins" / "personality" / "data" / "tools" / "lscpu.py"


@pytest.fixture(scope="module")
def profiles() -> dict[str, NodeSpec]:
    return load_fleet(HOSTS).profiles


def _raw(profile: str) -> dict[str, Any]:
    path = REPO / "inventory" / "group_vars" / "all" / f"profile_{profile}.yml"
    return dict(yaml.safe_load(path.read_text())[f"provision_profile_{profile}"])


def _without(raw: dict[str, Any], *keys: str) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for key in keys:
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node[p]
        node.pop(leaf)
    return out


def _ids(spec: NodeSpec, level: Level = Level.FULL) -> tuple[set[str], set[str]]:
    """(probe names, check ids) of every node area on `spec`, evaluated over facts where every probe
    answered nothing (exit 127): each check the spec generates shows up as an ERROR row."""
    probes = [p for area in NODE_AREAS for p in area.probes(spec, level)]
    facts = NodeFacts(node="n1", sections={p.name: Section(name=p.name, rc=127, stdout="", stderr="")
                                           for p in probes})
    ctx = Context(node="n1", spec=spec, facts=facts, level=level)
    for area in NODE_AREAS:
        area.evaluate(ctx)
    return {p.name for p in probes}, {r.id for r in ctx.results}


def test_every_catalogue_family_has_a_profile(profiles: dict[str, NodeSpec]) -> None:
    assert set(CATALOGUE) <= set(profiles)
    models = {profiles[p].cpu.model for p in CATALOGUE}
    assert any("Core(TM) i9" in m for m in models) and any("Ryzen" in m for m in models)
    assert any("EPYC 9454P" in m for m in models) and any("i5-13500" in m for m in models)


@pytest.mark.parametrize("profile", CATALOGUE)
def test_catalogue_profile_validates_without_findings(profiles: dict[str, NodeSpec], profile: str) -> None:
    spec = profiles[profile]
    assert check_profile(spec) == []  # the CPU is in the memory table; channels, DPC and speed agree
    assert spec.unused_pins() == []
    assert spec.storage.scratch is None and spec.storage.boot.raid is None and spec.network.infiniband is None
    assert spec.storage.boot.count == 2 and spec.cpu.sockets == 1


def test_the_workstation_has_one_pcie_rtx_4000_and_no_fabric(profiles: dict[str, NodeSpec]) -> None:
    spec = profiles["catalogue_i5_13500_ws"]
    gpu = spec.need_gpu()
    assert gpu.count == 1 and "RTX 4000" in gpu.model and gpu.interconnect == "pcie" and gpu.nvlink is None
    assert not gpu.fabric_manager and spec.software.fabric_manager is None
    assert spec.cpu.total_threads == 20 and spec.cpu.cores_per_socket == 14  # 6 P-cores x 2 + 8 E-cores
    assert spec.memory.type == "DDR5" and spec.memory.total_gb == 64


def test_catalogue_servers_without_gpu(profiles: dict[str, NodeSpec]) -> None:
    for profile in ("catalogue_i9_9900k", "catalogue_ryzen9_7950x", "catalogue_epyc_9454p"):
        spec = profiles[profile]
        assert spec.gpu is None and spec.software.nvidia_driver is None
        with pytest.raises(SpecError, match="gpu is absent"):
            spec.need_gpu()


# (sections removed from ML-PROD-V4 with their pins, probes and check-id prefixes that must then be absent)
ABSENT: list[tuple[str, tuple[str, ...], set[str], tuple[str, ...]]] = [
    ("gpu", ("gpu", "software.nvidia_driver", "software.fabric_manager", "software.cuda", "software.cudnn",
             "software.nccl", "software.container_toolkit", "software.dcgm"),
     {"nvidia_smi_q", "nvidia_smi_nvlink", "nvidia_smi_nvlink_errors"}, ("gpu.", "fabric.")),
    ("storage.scratch", ("storage.scratch", "software.zfs", "acceptance.scratch_seq_read_gbs",
                         "acceptance.scratch_rand_read_iops_4k"),
     {"zpool_status", "zpool_get", "zfs_get"}, ("zfs.",)),
    ("storage.boot.raid", ("storage.boot.raid", "software.mdadm"), {"mdstat", "mdadm_detail", "root_source"},
     ("raid.",)),
    ("network.infiniband", ("network.infiniband", "software.rdma", "acceptance.ib_write_bw_gbps"), set(),
     ("infiniband.",)),
]


@pytest.mark.parametrize("section,removed,probes,prefixes", ABSENT, ids=[a[0] for a in ABSENT])
def test_an_absent_section_generates_no_checks(section: str, removed: tuple[str, ...], probes: set[str],
                                               prefixes: tuple[str, ...]) -> None:
    full = NodeSpec.model_validate(_raw("ml_prod_v4"))
    full_probes, full_ids = _ids(full)
    assert probes <= full_probes and any(i.startswith(prefixes) for i in full_ids)  # present: they are made
    spec = NodeSpec.model_validate(_without(_raw("ml_prod_v4"), *removed))
    assert not spec.has(section)
    got_probes, got_ids = _ids(spec)
    assert not probes & got_probes
    assert not [i for i in got_ids if i.startswith(prefixes)]
    word = {"gpu": "nvidia", "storage.scratch": "zfs", "storage.boot.raid": "mdadm", "network.infiniband": "mlx5"}
    assert not [i for i in got_ids if word[section] in i]  # nor a module, package or unit of it elsewhere
    lost = {i for i in full_ids if not i.startswith(prefixes)} - got_ids
    assert not [i for i in lost if not i.startswith(_side_effects(section))], lost


def _side_effects(section: str) -> tuple[str, ...]:
    """Check ids outside the section's own area that go with it: its packages and units."""
    if section == "gpu":
        pkgs = ("nvidia-driver", "cuda-toolkit-", "cudnn", "libnccl2", "nvidia-container-toolkit",
                "datacenter-gpu-manager", "nvidia-fabricmanager")
        return (*(f"packages.{p}" for p in pkgs), "services.nvidia-", "kernel.module.nvidia")
    if section == "network.infiniband":
        return ("packages.rdma-core", "kernel.module.")
    pkg = {"storage.scratch": "zfsutils-linux", "storage.boot.raid": "mdadm", "network.infiniband": "rdma-core"}[section]
    if section == "storage.scratch":  # checkpoint protection is the scratch pool's (checks/checkpoints.py)
        return (f"packages.{pkg}", "kernel.module.zfs", "checkpoints.")
    return (f"packages.{pkg}", "kernel.module.zfs")


def test_no_gpu_means_no_gpu_packages_units_or_burnin(profiles: dict[str, NodeSpec]) -> None:
    spec = profiles["catalogue_epyc_9454p"]
    assert [p.component for p in names.pinned_packages(spec)] == ["kernel"]
    assert not [u for u in names.required_units(spec) if "nvidia" in u.unit]
    facts = NodeFacts(node="n1", sections={})
    assert burnin_plan.local_probes(spec, facts) == []  # no DCGM, no NCCL, no pool, no scratch drives


def test_one_gpu_runs_dcgm_but_no_nccl(profiles: dict[str, NodeSpec]) -> None:
    spec = profiles["catalogue_i5_13500_ws"]
    names_ = [p.name for p in burnin_plan.local_probes(spec, NodeFacts(node="n1", sections={}))]
    assert names_ == [burnin_plan.DCGM]
    units = {u.unit for u in names.required_units(spec)}
    assert {"nvidia-dcgm.service", "nvidia-persistenced.service"} <= units
    assert "nvidia-fabricmanager.service" not in units
    _probes, ids = _ids(spec)
    # nvidia-smi unreadable here: the count and driver checks are made (ERROR); per-GPU ones need its output
    assert {"gpu.count", "gpu.driver_version", "kernel.module.nvidia"} <= ids
    assert not [i for i in ids if "nvlink" in i or "fabric" in i or "peermem" in i]


# (what is removed or added, the validation error it must raise)
BAD: list[tuple[str, dict[str, Any] | tuple[str, ...], str]] = [
    ("gpu-without-driver", ("software.nvidia_driver",), "gpu is present, so software needs nvidia_driver pinned"),
    ("gpu-without-dcgm", ("software.dcgm",), "gpu is present, so software needs dcgm pinned"),
    ("gpu-without-diag-level", ("acceptance.dcgm_diag_level",), "gpu is present, so acceptance needs dcgm_diag_level"),
]


@pytest.mark.parametrize("name,change,message", BAD, ids=[b[0] for b in BAD])
def test_hardware_without_its_pin_is_an_error(name: str, change: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NodeSpec.model_validate(_without(_raw("catalogue_i5_13500_ws"), *change))


def test_multi_gpu_needs_allreduce_figures() -> None:
    with pytest.raises(ValueError, match="gpus is present, so acceptance needs allreduce_busbw_gbs"):
        NodeSpec.model_validate(_without(_raw("ml_prod_v4"), "acceptance.allreduce_busbw_gbs"))


def test_a_pin_without_hardware_is_allowed_and_named(profiles: dict[str, NodeSpec]) -> None:
    raw = _raw("catalogue_epyc_9454p")
    raw["software"]["zfs"] = {"version": "2.1.11", "apt_version": "2.1.11-1+deb12u1"}
    assert NodeSpec.model_validate(raw).unused_pins() == ["software.zfs"]


def test_required_names_the_key() -> None:
    assert required(3, "acceptance.x") == 3
    with pytest.raises(SpecError, match=r"acceptance\.x is absent"):
        required(None, "acceptance.x")


def _lscpu_fields() -> Any:
    spec_ = importlib.util.spec_from_file_location("lab_lscpu", LSCPU)
    assert spec_ is not None and spec_.loader is not None
    sys.path.insert(0, str(LSCPU.parent))
    try:
        module = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(module)
    finally:
        sys.path.remove(str(LSCPU.parent))
    return module.fields


@pytest.mark.parametrize("profile", CATALOGUE)
def test_twin_presents_the_profile(profiles: dict[str, NodeSpec], profile: str) -> None:
    spec = profiles[profile]
    hw = hardware_from_spec(spec, 1, ("fpu", "sse2"))
    assert len(hw.gpus) == (spec.gpu.count if spec.gpu else 0)
    assert hw.boot_raid is None and hw.scratch is None and not hw.gpu_fabric
    assert [d.role for d in hw.nvme] == ["boot", "boot"]
    assert len(hw.dimms) == spec.memory.dimm_count and {d.type for d in hw.dimms} == {spec.memory.type}
    assert parse_mdstat(render_mdstat(hw, Faults())).arrays == ()
    assert render_cpuinfo(hw).count("processor\t:") == spec.cpu.total_threads
    text = "".join(f"{k}: {v}\n" for k, v in _lscpu_fields()(hw.model_dump(mode="json")))
    info = parse_lscpu(text)
    assert (info.model_name, info.sockets, info.cores_per_socket, info.cpus) == (
        spec.cpu.model, 1, spec.cpu.cores_per_socket, spec.cpu.total_threads)
    if spec.gpu is None:  # faults that need a part the twin lacks are refused
        with pytest.raises(Exception, match="has no such part"):
            fault_params("gpu_missing", hw)
    with pytest.raises(Exception, match="has no such part"):
        fault_params("boot_mirror_degraded", hw)


def test_bmc_simulator_presents_the_profile_counts() -> None:
    parts = Parts(cpus=1, dimms=2, gpus=1, gpu_model="NVIDIA RTX 4000 SFF Ada Generation", boot_drives=2,
                  scratch_drives=0, psus=1)
    tree = build(TREES_DIR / "supermicro", as_captured=False, parts=parts).tree
    assert tree.get(f"{ROOT}/Systems/1/Memory")["Members@odata.count"] == 2
    cpus = tree.get(f"{ROOT}/Systems/1/Processors")["Members"]
    assert len(cpus) == 1 and all(c["@odata.id"] in tree for c in cpus)
    gpus = [u for u in tree.uris() if u.startswith(f"{ROOT}/Chassis/1/PCIeDevices/GPU") and u.count("/") == 6]
    assert gpus == [f"{ROOT}/Chassis/1/PCIeDevices/GPU1"]
    drives = [u for u in tree.uris() if str(tree.get(u).get("@odata.type", "")).startswith("#Drive.")]
    assert len(drives) == 2
    # nothing still links to a removed member
    gone = f"{ROOT}/Chassis/1/PCIeDevices/GPU2"
    assert gone not in tree and not [u for u in tree.uris() if f'"{gone}"' in str(tree.get(u)).replace("'", '"')]


@pytest.mark.parametrize("profile", CATALOGUE)
def test_lab_up_profile_gives_the_simulator_the_profiles_parts(profiles: dict[str, NodeSpec], profile: str,
                                                               tmp_path: Path) -> None:
    from provision.lab import manager

    spec = profiles[profile]
    parts, group_vars = manager._profile(manager.UpOptions(lab_dir=tmp_path, profile=profile, source_inventory=HOSTS))
    assert (parts.cpus, parts.dimms, parts.gpus, parts.boot_drives, parts.scratch_drives, parts.psus) == (
        1, spec.memory.dimm_count, spec.gpu.count if spec.gpu else 0, 2, 0, 1)
    assert (group_vars / f"{profile}.yml").exists()  # the lab inventory's group names the profile


# Each role of an optional section, the playbook that runs it and the section its `when:` must name.
ROLE_SECTIONS = [("gpu.yml", "nvidia_driver", "gpu"), ("gpu.yml", "cuda_toolkit", "gpu"), ("gpu.yml", "cudnn", "gpu"),
                 ("gpu.yml", "nccl", "gpu"), ("containers.yml", "container_runtime", "gpu"),
                 ("storage.yml", "boot_raid1", "storage.boot.raid"), ("storage.yml", "zfs_scratch", "storage.scratch"),
                 ("infiniband.yml", "infiniband", "network.infiniband")]


@pytest.mark.parametrize("playbook,role,section", ROLE_SECTIONS)
def test_roles_of_optional_sections_run_only_when_the_section_is_there(playbook: str, role: str,
                                                                       section: str) -> None:
    plays = yaml.safe_load((REPO / "playbooks" / playbook).read_text())
    entry = next(r for p in plays for r in p.get("roles", []) if r["role"] == role)
    assert f"provision_spec.{section}" in entry["when"]


def test_preflight_and_dcgm_follow_their_sections() -> None:
    (play,) = yaml.safe_load((REPO / "playbooks" / "preflight.yml").read_text())
    assert "provision_spec.storage.scratch" in play["tasks"][0]["when"]
    defaults = yaml.safe_load((REPO / "roles" / "monitoring" / "defaults" / "main.yml").read_text())
    assert "provision_spec.gpu" in defaults["monitoring_dcgm_enabled"]
    tasks = yaml.safe_load((REPO / "roles" / "monitoring" / "tasks" / "main.yml").read_text())
    assert tasks[0]["when"] == "monitoring_dcgm_enabled"


@pytest.mark.parametrize("profile", CATALOGUE)
def test_a_catalogue_twins_bmc_shows_no_gpu_or_ib_drift(profiles: dict[str, NodeSpec], profile: str,
                                                        tmp_path: Path) -> None:
    """The simulated BMC of `lab up --profile` (the Supermicro capture trimmed to the profile) read as preflight
    and verify read it: absent sections now expect none, so a GPU or IB adapter the trim left behind would be
    drift and fail bmc.gpu_count on the twin."""
    sys.path.insert(0, str(REPO / "tests" / "unit" / "redfish"))
    from rf_fakebmc import FakeBmc, Served
    from rf_support import connect

    from provision.conformance.bmc_source import read_connected
    from provision.conformance.checks.bmc import evaluate_bmc
    from provision.lab import manager
    from provision.redfish.ops.drift import drift
    from provision.redfish.ops.inventory import observe

    spec = profiles[profile]
    parts, _ = manager._profile(manager.UpOptions(lab_dir=tmp_path, profile=profile, source_inventory=HOSTS))
    sim = build(TREES_DIR / "supermicro", as_captured=False, parts=parts).tree
    with Served(FakeBmc(tree={u: sim.get(u) for u in sim.uris()})) as srv:
        items = {i.key: i for i in drift(spec, observe(connect(srv))).items}
        facts = read_connected(connect(srv), spec)
    assert items["gpu.count"].verdict == "ok", items["gpu.count"]
    assert items["network.infiniband.count"].verdict in ("ok", "unknown"), items["network.infiniband.count"]
    ctx = Context(node="n1", spec=spec, facts=NodeFacts(node="n1", sections={}), level=Level.FULL)
    evaluate_bmc(ctx, facts)
    row = next(r for r in ctx.results if r.id == "bmc.gpu_count")
    assert row.passed, row

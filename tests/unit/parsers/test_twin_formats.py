"""The lab twins' stand-in tools print what these parsers read, converged and under each fault.

This pins the contract between the node twins (which imitate the tools) and the conformance
checks (which parse them): a format drift on either side fails here. The tools run as
subprocesses against a temp twin state, as in tests/unit/test_personality_tools.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_personality_helpers import (  # tests/unit is on sys.path (pytest rootdir-relative import)
    CONVERGED,
    CONVERGED_UNITS,
    Twin,
)

from provision.conformance import parsers as p
from provision.conformance.parsers.nvme import critical_warning_names
from provision.lab.twins.personality import FAULT_KINDS, apply_fault

COMMANDS: list[tuple[str, tuple[str, ...], Callable[[str], Any]]] = [
    ("nvidia_smi", ("-q",), p.parse_nvidia_smi_query),
    ("nvidia_smi", ("-q", "-x"), p.parse_nvidia_smi_xml),
    ("nvidia_smi", ("-L",), p.parse_nvidia_smi_list),
    ("nvidia_smi", (), p.parse_nvidia_smi_table),
    ("nvidia_smi", ("nvlink", "-s"), p.parse_nvlink_status),
    ("nvidia_smi", ("nvlink", "-e"), p.parse_nvlink_errors),
    ("dmesg", (), p.parse_xid_events),
    ("nvidia_smi", ("topo", "-m"), p.parse_topo_matrix),
    ("nvidia_smi", ("--query-gpu=index,name,memory.total,power.limit,fabric.state", "--format=csv"),
     p.parse_query_gpu_csv),
    ("dcgmi", ("diag", "-r", "2"), p.parse_dcgmi_diag),
    ("ibstat", (), p.parse_ibstat),
    ("ibv_devinfo", (), p.parse_ibv_devinfo),
    ("mdadm", ("--detail", "/dev/md0"), p.parse_mdadm_detail),
    ("nvme", ("list", "-o", "json"), p.parse_nvme_list),
    ("nvme", ("smart-log", "/dev/nvme2", "-o", "json"), p.parse_nvme_smart_log),
    ("smartctl", ("-a", "-j", "/dev/nvme2"), p.parse_smartctl_nvme),
    ("lscpu", (), p.parse_lscpu),
    ("dmidecode", (), p.parse_dmidecode),
]  # fmt: skip


@pytest.fixture
def twin(tmp_path: Path) -> Twin:
    node = Twin(tmp_path)
    node.converge()
    return node


def _proc(twin: Twin, name: str) -> str:
    return (twin.state / "proc" / name).read_text(encoding="utf-8")


def test_every_tool_of_a_converged_twin_parses(twin: Twin) -> None:
    for tool, args, parser in COMMANDS:
        parser(twin.out(tool, *args))
    assert len(p.parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus) == 8
    assert not p.parse_mdstat(_proc(twin, "mdstat")).arrays[0].degraded
    assert p.parse_meminfo(_proc(twin, "meminfo")).mem_total_kib > 0
    assert p.parse_cpuinfo(_proc(twin, "cpuinfo")).processors


def _checkpointed(twin: Twin) -> tuple[str, str]:
    """(snapshot list, zpool status) of a scratch pool with one snapshot and one scrub (made once)."""
    if twin.run("zpool", "list", "scratch", check=False).returncode != 0:
        twin.out("zpool", "create", "scratch", *[f"/dev/disk/by-id/{d['by_id']}" for d in twin.drives("scratch")])
        twin.out("zfs", "snapshot", "scratch@autosnap_2026-12-02_02:00:00_hourly")
        twin.out("zpool", "scrub", "scratch")
    return (twin.out("zfs", "list", "-H", "-p", "-t", "snapshot", "-o", "name,creation"),
            twin.out("zpool", "status", "scratch"))


def _visible(twin: Twin, kind: str) -> bool:
    """Whether the fault shows through the parsed output the conformance checks read."""
    if kind in ("snapshot_missing", "snapshot_stale", "scrub_failed"):
        import time

        from provision.conformance.parsers.zfs_checkpoints import parse_scan, parse_snapshots

        listing, status = _checkpointed(twin)
        snaps = parse_snapshots(listing)
        if kind == "snapshot_missing":
            return snaps == ()
        if kind == "snapshot_stale":
            return all(time.time() - s.created.timestamp() > 40 * 3600 for s in snaps) and len(snaps) == 1
        (pool,) = p.parse_zpool_status(status)
        return (parse_scan(pool.scan or "").errors or 0) > 0
    if kind == "gpu_missing":
        return len(p.parse_nvidia_smi_list(twin.out("nvidia_smi", "-L"))) == 7
    if kind == "nvlink_down":
        gpus = p.parse_nvlink_status(twin.out("nvidia_smi", "nvlink", "-s"))
        return any(not link.active for g in gpus for link in g.links)
    if kind in ("fabric_manager_failed", "package_wrong_version"):
        gpus = p.parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
        return not all(g.fabric is not None and g.fabric.completed for g in gpus)
    if kind == "ib_port_down":
        ports = [port for ca in p.parse_ibstat(twin.out("ibstat")).cas for port in ca.ports]
        return any(port.state == "Down" for port in ports)
    if kind == "ib_port_slow":
        ports = [port for ca in p.parse_ibstat(twin.out("ibstat")).cas for port in ca.ports]
        return any(port.link_layer == "InfiniBand" and port.rate_gbps == 200.0 for port in ports)
    if kind == "boot_mirror_degraded":
        detail = p.parse_mdadm_detail(twin.out("mdadm", "--detail", "/dev/md0"))
        return detail.degraded and p.parse_mdstat(_proc(twin, "mdstat")).arrays[0].degraded
    if kind == "scratch_drive_missing":
        drives = len(twin.drives("boot")) + len(twin.drives("scratch"))
        return len(p.parse_nvme_list(twin.out("nvme", "list", "-o", "json"))) == drives - 1
    if kind == "nvme_wearing_out":
        logs = [
            p.parse_nvme_smart_log(twin.out("nvme", "smart-log", f"/dev/nvme{i}", "-o", "json")) for i in range(2, 10)
        ]
        return any(log.percentage_used == 95 and log.media_errors == 12 for log in logs)
    if kind == "ib_bw_low":  # only a measurement shows it: the port is Active at its full rate
        from provision.conformance.checks.burnin_parsers import parse_perftest_bw

        row = parse_perftest_bw(twin.out("ib_write_bw", "-d", "mlx5_0", "--report_gbits", "10.0.0.7"))
        return row is not None and row.average_gbps < twin.spec.acceptance.ib_write_bw_gbps
    if kind == "nvme_read_slow":  # only a measurement shows it: SMART stays healthy
        from provision.conformance.checks.burnin_parsers import parse_fio_jobs

        jobs = parse_fio_jobs(twin.out("fio", "--readonly", "--output-format=json", "--name=d",
                                       f"--filename=/dev/{twin.drives('scratch')[0]['name']}"))
        return jobs[0].read_gbs < twin.spec.acceptance.scratch_seq_read_gbs / twin.spec.storage.scratch.count
    if kind == "nvme_worn":  # past 1 DWPD x capacity x 5 years: the default rating of the spec
        drive = twin.drives("scratch")[0]
        log = p.parse_nvme_smart_log(twin.out("nvme", "smart-log", f"/dev/{drive['name']}", "-o", "json"))
        return log.percentage_used == 99 and (log.written_bytes or 0) > drive["size_bytes"] * 365 * 5
    if kind == "nvme_spare_low":
        drive = twin.drives("scratch")[1]
        log = p.parse_nvme_smart_log(twin.out("nvme", "smart-log", f"/dev/{drive['name']}", "-o", "json"))
        names = critical_warning_names(log.critical_warning)
        return log.available_spare_pct < (log.available_spare_threshold_pct or 0) and len(names) == 1
    if kind in ("nvme_sanitize_fails", "nvme_no_erase"):  # erase capabilities, and a sanitize's log
        from provision.clean import nvme as erase

        first, last = twin.drives("scratch")[0], twin.drives("scratch")[-1]
        if kind == "nvme_no_erase":
            ident = p.parse_nvme_id_ctrl(twin.out("nvme", "id-ctrl", f"/dev/{last['controller']}", "-o", "json"))
            return not ident.sanicap and not (ident.oacs or 0) & 0x2
        twin.run("nvme", "sanitize", f"/dev/{first['controller']}", "--sanact=4")
        log = twin.out("nvme", "sanitize-log", f"/dev/{first['controller']}", "-o", "json")
        return erase.parse_sanitize_log(log).status.value == "failed"
    if kind == "gpu_xid":
        gpus = p.parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
        return [(e.code, [i for i, g in enumerate(gpus) if e.matches(g.bus_id)])
                for e in p.parse_xid_events(twin.out("dmesg"))] == [(119, [2])]
    if kind == "dimm_missing":
        dimms = p.parse_dmidecode(twin.out("dmidecode", "-t", "memory")).memory_devices
        empty = [d.locator for d in dimms if not d.populated]
        return empty == ["P2-DIMMH2"] and len(dimms) == 32 and all(d.slot for d in dimms)
    if kind == "container_gpu_hidden":  # a docker container on the twin lists no GPU; the host still lists 8
        from provision.conformance.parsers.containers import container_gpus

        twin.set_packages({**CONVERGED, "nvidia-container-toolkit": "1.17.3-1"})
        twin.set_units(*CONVERGED_UNITS, "docker.service")
        image = twin.spec.containers.test_image.docker
        twin.run("docker", "pull", image)
        done = twin.run("docker", "run", "--rm", "--pull=never", "--gpus", "all", image, "nvidia-smi", "-L",
                        check=False)
        seen = container_gpus(done.returncode, done.stdout)
        return seen == () and len(p.parse_nvidia_smi_list(twin.out("nvidia_smi", "-L"))) == 8
    gpu = {"gpu_row_remap_pending": 4, "gpu_throttle_thermal": 5, "gpu_pcie_downtrained": 6}.get(kind)
    if gpu is not None:
        gpus = p.parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
        xml = p.parse_nvidia_smi_xml(twin.out("nvidia_smi", "-q", "-x")).gpus
        fields = ("clock_events", "remapped_rows", "pcie", "temperature_gpu_c", "temperature_memory_c")
        assert [[getattr(g, f) for f in fields] for g in xml] == [[getattr(g, f) for f in fields] for g in gpus]
        healthy = [g for i, g in enumerate(gpus) if i != gpu]
        hit = gpus[gpu]
        shows = {
            "gpu_row_remap_pending": hit.remapped_rows is not None and hit.remapped_rows.pending is True,
            "gpu_throttle_thermal": hit.clock_events is not None and hit.clock_events.hw_thermal_slowdown is True
            and (hit.temperature_gpu_c or 0) > 87,
            "gpu_pcie_downtrained": (hit.pcie.gen_current, hit.pcie.gen_max) == (4, 5),
        }[kind]
        return shows and all(g.pcie.gen_current == 5 and g.remapped_rows and not g.remapped_rows.pending
                             and g.clock_events and not g.clock_events.hw_slowdown for g in healthy)
    raise AssertionError(f"no visibility check for fault {kind!r}: add one")


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_each_fault_parses_and_shows(twin: Twin, kind: str) -> None:
    assert not _visible(twin, kind)  # the converged twin does not show it...
    apply_fault(twin.state, kind, clear=False)
    assert _visible(twin, kind)  # ...the faulted one does, in output the parsers accept


def test_the_twins_memory_verifies_and_a_missing_dimm_fails_its_channel(twin: Twin) -> None:
    """The ML-PROD-V4 twin's dmidecode and meminfo through the memory checks: green, then one DIMM out."""
    from provision.conformance.model import Outcome
    from tests.unit.conformance.helpers import area, run, spec

    def memory() -> dict[str, Any]:
        sections = {"dmidecode_memory": twin.out("dmidecode", "-t", "memory"), "meminfo": _proc(twin, "meminfo")}
        return area(run(spec(), sections), "memory")

    assert {cid: r.outcome for cid, r in memory().items() if r.outcome is not Outcome.PASS} == {}
    apply_fault(twin.state, "dimm_missing", clear=False)
    mem = memory()
    assert {cid for cid, r in mem.items() if not r.accepted} == {"memory.installed", "memory.dimm_count",
                                                                  "memory.population"}
    assert mem["memory.population"].detail == "socket 1 Node1/Channel3: 1 DIMM(s) (P2-DIMMH1), spec 2"


@pytest.mark.parametrize("profile", ["ml_density_v2", "ml_cost_v3", "sys_821ge_tnhr_captured"])
def test_every_profiles_twin_populates_memory_as_its_spec_says(tmp_path: Path, profile: str) -> None:
    from provision.conformance.model import Outcome
    from tests.unit.conformance.helpers import area, run

    node = Twin(tmp_path, profile)
    node.converge()
    sections = {"dmidecode_memory": node.out("dmidecode", "-t", "memory"), "meminfo": _proc(node, "meminfo")}
    mem = area(run(node.spec, sections), "memory")
    assert {cid: r.outcome for cid, r in mem.items() if r.outcome is not Outcome.PASS} == {}
    assert mem["memory.population"].found.startswith(f"{node.spec.cpu.sockets} socket(s) x "
                                                     f"{node.spec.memory.channels_per_socket} channel(s)")
@pytest.mark.parametrize(
    ("kind", "failing"),
    [
        ("nvme_worn", {"nvme.nvme2n1.wear", "nvme.nvme2n1.endurance"}),
        ("nvme_spare_low", {"nvme.nvme3n1.spare", "nvme.nvme3n1.critical_warning"}),
    ],
)
def test_nvme_end_of_life_faults_fail_exactly_their_checks(twin: Twin, kind: str, failing: set[str]) -> None:
    """The stand-in `nvme` under the fault, through the NVMe checks as verify runs them (the lab test in
    tests/lab/test_verify.py does the same over SSH to a booted twin)."""
    from provision.conformance.checks import nvme as check
    from provision.conformance.facts import NodeFacts
    from provision.conformance.model import Level
    from provision.conformance.runner import evaluate
    from tests.unit.conformance.helpers import facts

    def nvme_results() -> dict[str, Any]:
        drives = twin.drives("boot") + twin.drives("scratch")
        sections: dict[str, str | tuple[int, str, str]] = {"nvme_list": twin.out("nvme", "list", "-o", "json")}
        for d in drives:
            sections[f"nvme_smart:/dev/{d['name']}"] = twin.out("nvme", "smart-log", f"/dev/{d['name']}", "-o", "json")
        node_facts: NodeFacts = facts(sections)
        ctx = evaluate("n1", twin.spec, node_facts, Level.FULL)
        return {r.id: r for r in ctx.results if r.area == check.AREA}

    apply_fault(twin.state, kind, clear=False)
    try:
        bad = {i for i, r in nvme_results().items() if not r.accepted}
    finally:
        apply_fault(twin.state, kind, clear=True)
    assert bad == failing
    assert not {i for i, r in nvme_results().items() if not r.accepted}


def _smbios(node: Twin) -> dict[str, Any]:
    """The twin's SMBIOS CPU and memory rows, probed as verify probes them (checks/cpu.py, checks/memory.py)."""
    from tests.unit.conformance.helpers import area, run

    sections = {"dmidecode_cpu": node.out("dmidecode", "-t", "processor", "-t", "cache"),
                "dmidecode_memory": node.out("dmidecode", "-t", "memory"), "meminfo": _proc(node, "meminfo")}
    ctx = run(node.spec, sections)
    return {**area(ctx, "cpu"), **area(ctx, "memory")}


def _mutate(node: Twin, change: Callable[[dict[str, Any]], None]) -> None:
    path = node.state / "hardware.json"
    hw = json.loads(path.read_text())
    change(hw)
    path.write_text(json.dumps(hw))


@pytest.mark.parametrize("profile", ["ml_prod_v4", "catalogue_i9_9900k", "catalogue_epyc_9454p"])
def test_the_twin_presents_the_specd_base_clock_l3_and_dimm_kind(tmp_path: Path, profile: str) -> None:
    node = Twin(tmp_path, profile)
    node.converge()
    rows = _smbios(node)
    checked = {"cpu.base_clock", "cpu.l3_cache", "memory.module"}
    assert {cid: rows[cid].outcome.value for cid in checked} == dict.fromkeys(checked, "pass")
    assert rows["memory.module"].found == node.spec.memory.module
    assert rows["cpu.l3_cache"].found == f"{node.spec.cpu.l3_cache_mb_per_socket} MB"


@pytest.mark.parametrize(("profile", "change", "failing"), [
    ("ml_prod_v4", lambda hw: [d.update(registered=False) for d in hw["dimms"][:1]], "memory.module"),
    ("catalogue_i9_9900k", lambda hw: [d.update(registered=True) for d in hw["dimms"]], "memory.module"),
    ("ml_prod_v4", lambda hw: hw["cpu"].update(l3_kb_per_socket=hw["cpu"]["l3_kb_per_socket"] // 2), "cpu.l3_cache"),
    ("catalogue_epyc_9454p", lambda hw: hw["cpu"].update(base_mhz=2250), "cpu.base_clock"),
])
def test_a_mutated_twin_fails_exactly_that_check(tmp_path: Path, profile: str,
                                                 change: Callable[[dict[str, Any]], None], failing: str) -> None:
    node = Twin(tmp_path, profile)
    node.converge()
    _mutate(node, change)
    rows = _smbios(node)
    checked = {"cpu.base_clock", "cpu.l3_cache", "memory.module"}
    assert {cid for cid in checked if not rows[cid].accepted} == {failing}
    assert rows[failing].outcome.value == "fail"

"""Twin output and the matching real capture, through the same conformance parser, give the same fields.

For each tool the twin imitates: parse the twin's output and the capture (tests/fixtures, see
PROVENANCE.md) with the project's parser and compare which fields come out filled (`shape`),
plus the values the spec fixes. Where a field legitimately differs (the capture is another GPU
model or state), the test says which and why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_personality_helpers import Twin, capture, exporter_section, shape, shape_diff

from provision.conformance.parsers import (
    cpu,
    dcgm,
    dmidecode,
    ibverbs,
    infiniband,
    mdadm,
    mdstat,
    meminfo,
    nvme,
    nvsmi_csv,
    nvsmi_list,
    nvsmi_query,
    nvsmi_table,
    nvsmi_topo,
    nvsmi_xml,
    smartctl,
    zfs_lists,
    zpool_status,
)

H100_590 = "nvidia-smi/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Twin:
    twin = Twin(tmp_path_factory.mktemp("twin"))
    twin.converge()
    devs = [f"/dev/disk/by-id/{d['by_id']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "-o", "ashift=12", "-O", "compression=lz4", "-m", "/scratch", "scratch", *devs)
    return twin


def first(parsed: Any) -> Any:
    return parsed[0] if isinstance(parsed, tuple) else parsed


# (id, twin argv, parser, capture text getter, fields allowed to differ and why)
CASES: list[tuple[str, tuple[str, ...], Callable[[str], Any], Callable[[], str], dict[str, str]]] = [
    ("nvidia-smi -q", ("nvidia_smi", "-q"), nvsmi_query.parse_nvidia_smi_query,
     lambda: capture("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt"), {}),
    ("nvidia-smi -q -x", ("nvidia_smi", "-q", "-x"), lambda t: nvsmi_xml.parse_nvidia_smi_xml(t, expect_all=False),
     lambda: capture("nvidia-smi/telegraf/a100-sxm4-v12.xml"),
     {"gpus[].remapped_rows": "the A100 capture runs MIG, where remapped rows read N/A",
      "gpus[].mig": "the A100 capture runs MIG; the spec says MIG off",
      "gpus[].fabric": "the A100 capture reads fabric N/A; an HGX H100 twin has completed registration"}),
    ("nvidia-smi", ("nvidia_smi",), nvsmi_table.parse_nvidia_smi_table,
     lambda: capture("nvidia-smi/gpud/nvidia-smi.550.90.07.h100x8.txt"), {}),
    ("nvidia-smi -L", ("nvidia_smi", "-L"), nvsmi_list.parse_nvidia_smi_list,
     lambda: exporter_section(H100_590, "nvidia-smi -L"), {}),
    ("nvidia-smi nvlink -s", ("nvidia_smi", "nvlink", "-s"), nvsmi_list.parse_nvlink_status,
     lambda: exporter_section(H100_590, "nvidia-smi nvlink -s"), {}),
    ("nvidia-smi topo -m", ("nvidia_smi", "topo", "-m"), nvsmi_topo.parse_topo_matrix,
     lambda: capture("nvidia-smi/handwritten/topo-m.8gpu-4nic.txt"), {}),
    ("ibstat", ("ibstat",), infiniband.parse_ibstat,
     lambda: capture("infiniband/gpud/ibstat.47.0.h100.all.active.2.txt"), {}),
    ("ibv_devinfo", ("ibv_devinfo",), ibverbs.parse_ibv_devinfo,
     lambda: capture("infiniband/handwritten/ibv_devinfo.2hca.txt"), {}),
    ("mdadm --detail", ("mdadm", "--detail", "/dev/md0"), mdadm.parse_mdadm_detail,
     lambda: capture("mdraid/qemu-vm/mdadm-detail.clean.txt"),
     {"bitmap": "a 1.9 TB mirror gets an internal bitmap; the 512 MiB VM capture has none",
      "consistency_policy": "same reason (bitmap vs resync)"}),
    ("dmidecode", ("dmidecode",), dmidecode.parse_dmidecode,
     lambda: capture("dmidecode/linuxhw/dmidecode.quanta-d54q-2u.2x-xeon-platinum-8470n.ddr5-4800.txt"),
     {"baseboard.serial_number": "hw-probe masks serials as '--'", "system.serial_number": "masked",
      "system.uuid": "masked", "memory_devices[].serial_number": "masked"}),
    ("lscpu", ("lscpu",), cpu.parse_lscpu, lambda: capture("lscpu/build-machine/lscpu.util-linux-2.38.1.txt"), {}),
    ("nvme list -o json", ("nvme", "list", "-o", "json"), nvme.parse_nvme_list,
     lambda: capture("nvme/qemu-vm/nvme-list.json"), {}),
    ("nvme smart-log -o json", ("nvme", "smart-log", "/dev/nvme2n1", "-o", "json"), nvme.parse_nvme_smart_log,
     lambda: capture("nvme/qemu-vm/nvme-smart-log.nvme0.json"),
     {"temperature_sensors": "qemu's controller has no extra sensors; a Samsung PM1743 reports two"}),
    ("nvme id-ctrl -o json", ("nvme", "id-ctrl", "/dev/nvme2", "-o", "json"), nvme.parse_nvme_id_ctrl,
     lambda: capture("nvme/qemu-vm/nvme-id-ctrl.nvme0.json"), {}),
    ("smartctl -a -j", ("smartctl", "-a", "-j", "/dev/nvme0"), smartctl.parse_smartctl_nvme,
     lambda: capture("nvme/qemu-vm/smartctl-a-j.nvme0.json"),
     {"total_capacity_bytes": "qemu's controller reports tnvmcap 0, so smartctl leaves the capacity out"}),
    ("smartctl -a -j (Dell)", ("smartctl", "-a", "-j", "/dev/nvme1"), smartctl.parse_smartctl_nvme,
     lambda: capture("nvme/ironlib/smartctl-nvme0.dell-r6515.json"), {}),
    ("dcgmi diag -r 2", ("dcgmi", "diag", "-r", "2"), dcgm.parse_dcgmi_diag,
     lambda: capture("dcgm/handwritten/dcgmi-diag-r2.pass.txt"), {}),
    ("zpool list -Hp", ("zpool", "list", "-Hp", "-o", "name,health,size,alloc,free,fragmentation,capacity,dedupratio"),
     lambda t: zfs_lists.parse_zpool_list(t, ["name", "health", "size", "alloc", "free", "fragmentation",
                                              "capacity", "dedupratio"]),
     lambda: capture("zfs/telegraf/freebsd14-zpool-list-Hp.txt"), {}),
    ("zfs get -Hp", ("zfs", "get", "-Hp", "compression,recordsize,atime,mountpoint", "scratch"),
     zfs_lists.parse_zfs_get, lambda: capture("zfs/handwritten/zfs-get-Hp.txt"), {}),
]


@pytest.mark.parametrize(("argv", "parser", "real", "differs"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_twin_and_capture_give_the_same_fields(
    twin: Twin, argv: tuple[str, ...], parser: Callable[[str], Any], real: Callable[[], str],
    differs: dict[str, str],
) -> None:  # fmt: skip
    diffs = shape_diff(first(parser(twin.out(*argv))), first(parser(real())))
    unexplained = [d for d in diffs if not any(d.startswith(path) for path in differs)]
    assert unexplained == []


def test_degraded_pool_status_parses_like_the_capture(tmp_path: Path) -> None:
    from provision.lab.twins.personality import apply_fault

    twin = Twin(tmp_path)
    twin.out("zpool", "create", "scratch", "raidz2", *(f"/dev/{d['name']}" for d in twin.drives("scratch")))
    apply_fault(twin.state, "scratch_drive_missing", clear=False)
    mine = zpool_status.parse_zpool_status(twin.out("zpool", "status"))[0]
    real = zpool_status.parse_zpool_status(capture("zfs/handwritten/zpool-status.degraded.txt"))[0]
    assert (mine.state, real.state) == ("DEGRADED", "DEGRADED")
    assert mine.scan == "none requested"  # a fresh pool was never scrubbed: real zpool says so on its scan line
    assert shape_diff(mine, real) == []


def test_degraded_mirror_parses_like_the_real_failed_one(tmp_path: Path) -> None:
    from provision.lab.twins.personality import apply_fault

    twin = Twin(tmp_path)
    apply_fault(twin.state, "boot_mirror_degraded", clear=False)
    mine = mdadm.parse_mdadm_detail(twin.out("mdadm", "--detail", "/dev/md0"))
    real = mdadm.parse_mdadm_detail(capture("mdraid/qemu-vm/mdadm-detail.failed.txt"))
    assert (mine.state, mine.active_devices, mine.failed_devices) == (real.state, real.active_devices,
                                                                     real.failed_devices)
    md_mine = mdstat.parse_mdstat((twin.state / "proc/mdstat").read_text()).arrays[0]
    md_real = mdstat.parse_mdstat(capture("mdraid/qemu-vm/proc-mdstat.failed.txt")).arrays[0]
    assert shape_diff(md_mine, md_real) == ["bitmap: twin str / capture None"]


def test_query_gpu_csv_fields_parse_like_the_capture(twin: Twin) -> None:
    real = nvsmi_csv.parse_query_gpu_csv(exporter_section(H100_590, "nvidia-smi --query-gpu", phase="idle"))
    wanted = ["driver_version", "name", "serial", "uuid", "pci.bus_id", "index", "persistence_mode",
              "memory.total", "power.limit", "temperature.gpu", "pcie.link.gen.current", "pcie.link.width.current",
              "ecc.mode.current", "mig.mode.current", "fabric.state", "fabric.status", "vbios_version"]
    mine = nvsmi_csv.parse_query_gpu_csv(
        twin.out("nvidia_smi", f"--query-gpu={','.join(wanted)}", "--format=csv")
    )
    assert [mine.units[mine.fields.index(f)] for f in wanted] == [real.units[real.fields.index(f)] for f in wanted]
    for f in wanted:
        assert type(mine.rows[0].get(f)) is type(real.rows[0].get(f)), f


def test_proc_files_parse_like_real_ones(twin: Twin) -> None:
    state = twin.state / "proc"
    real_mem = meminfo.parse_meminfo(capture("meminfo/build-machine/proc-meminfo.txt"))
    mine_mem = meminfo.parse_meminfo((state / "meminfo").read_text())
    assert shape_diff(mine_mem, real_mem) == []
    assert 2000 * 1024**3 < mine_mem.mem_total_kib * 1024 < 2048 * 1024**3
    real_cpu = cpu.parse_cpuinfo(capture("lscpu/telegraf/proc-cpuinfo.xeon-platinum-8480plus.txt"))
    mine_cpu = cpu.parse_cpuinfo((state / "cpuinfo").read_text())
    assert shape_diff(mine_cpu, real_cpu) == []
    real_md = mdstat.parse_mdstat(capture("mdraid/node_exporter/proc-mdstat.txt"))
    mine_md = mdstat.parse_mdstat((state / "mdstat").read_text())
    md201 = next(a for a in real_md.arrays if a.name == "md201")  # a v1.2 raid1 like the twin's md0
    assert shape_diff(mine_md.arrays[0], md201) == [
        "bitmap: twin str / capture None",  # the installer's md0 (> 100 GB) has an internal bitmap
        "sync_action: twin None / capture str",  # md201 is being checked; the twin's md0 is idle
        "sync_percent: twin None / capture float",
        "sync_state: twin None / capture str",
    ]


def test_spec_figures_come_out_of_the_parsers(twin: Twin) -> None:
    lscpu = cpu.parse_lscpu(twin.out("lscpu"))
    assert (lscpu.cpus, lscpu.sockets, lscpu.model_name) == (256, 2, "Intel(R) Xeon(R) Platinum 8592+")
    dmi = dmidecode.parse_dmidecode(twin.out("dmidecode", "-t", "memory"))
    assert shape(dmi)  # parsed
    cpuinfo = cpu.parse_cpuinfo((twin.state / "proc/cpuinfo").read_text())
    assert len(cpuinfo.processors) == 256 and cpuinfo.sockets == 2
    assert {"avx512f", "amx_tile", "amx_bf16", "amx_int8"} <= set(cpuinfo.processors[255].flags)


def test_fields_ids_are_unique() -> None:
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))


def test_state_dir_is_tmp(twin: Twin) -> None:
    assert Path(str(twin.state)).is_relative_to(twin.base)

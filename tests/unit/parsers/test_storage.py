"""zpool/zfs, /proc/mdstat, mdadm --detail, nvme-cli, smartctl and lsblk."""

from __future__ import annotations

import pytest

from provision.conformance.parsers import (
    parse_lsblk,
    parse_mdadm_detail,
    parse_mdstat,
    parse_nvme_id_ctrl,
    parse_nvme_list,
    parse_nvme_smart_log,
    parse_smartctl_nvme,
    parse_zfs_get,
    parse_zfs_list,
    parse_zpool_list,
    parse_zpool_status,
)
from provision.conformance.parsers.mdstat import MdArray
from provision.errors import ParseError

from ._fixtures import text

VM = "mdraid/qemu-vm/"
QEMU_NVME = "nvme/qemu-vm/"


def test_zpool_list_capture() -> None:
    columns = ["name", "health", "size", "alloc", "free", "fragmentation", "capacity", "dedupratio"]
    (pool,) = parse_zpool_list(text("zfs/telegraf/freebsd14-zpool-list-Hp.txt"), columns)
    assert pool.name == "zroot"
    assert pool.get("health") == "ONLINE"
    assert (pool.get("size"), pool.get("alloc"), pool.get("free")) == (67108864000, 11959578624, 55149285376)
    assert (pool.get("frag"), pool.get("cap"), pool.get("dedup")) == (4, 17, 1.0)


def test_zpool_list_wrong_columns_is_an_error() -> None:
    with pytest.raises(ParseError, match="expected 11"):
        parse_zpool_list(text("zfs/telegraf/freebsd14-zpool-list-Hp.txt"))


def test_zfs_list_capture() -> None:
    rows = parse_zfs_list(
        text("zfs/telegraf/freebsd14-zfs-list-Hp.txt"), ["name", "avail", "used", "usedsnap", "usedds"]
    )
    assert len(rows) == 14
    assert rows[0].name == "zroot"
    assert (rows[0].get("available"), rows[0].get("used")) == (53069045760, 11959443456)
    assert rows[0].get("usedsnap") is None  # "-"
    assert rows[-1].name == "zroot/var/tmp"


def test_zfs_get_handwritten() -> None:
    props = {p.property: p for p in parse_zfs_get(text("zfs/handwritten/zfs-get-Hp.txt")) if p.dataset == "scratch"}
    assert props["compression"].value == "lz4" and props["compression"].source == "local"
    assert props["recordsize"].value == 1048576
    assert props["compressratio"].value == 1.87
    assert props["compressratio"].source is None
    assert props["mountpoint"].value == "/scratch"


def test_zpool_status_degraded_handwritten() -> None:
    scratch, tank = parse_zpool_status(text("zfs/handwritten/zpool-status.degraded.txt"))
    assert (scratch.name, scratch.state, tank.state) == ("scratch", "DEGRADED", "ONLINE")
    assert scratch.status is not None and scratch.status.startswith("One or more devices could not be used")
    assert scratch.errors == "No known data errors"
    raidz = scratch.root.children[0]
    assert (raidz.name, raidz.state) == ("raidz2-0", "DEGRADED")
    leaves = {v.name: v for v in scratch.root.leaves()}
    assert len(leaves) == 8
    assert leaves["14502398732462849351"].state == "UNAVAIL"
    assert leaves["14502398732462849351"].note == "was /dev/nvme5n1"
    assert leaves["nvme7n1"].checksum_errors == 2
    assert leaves["nvme9n1"].read_errors == 1228  # "1.2K"
    assert [v.name for v in scratch.config] == ["scratch", "logs", "spares"]
    spare = scratch.config[2].children[0]
    assert (spare.name, spare.state, spare.read_errors) == ("nvme11n1", "AVAIL", None)
    assert [v.name for v in tank.root.leaves()] == ["sda", "sdb"]


def test_zpool_status_truncated_and_empty() -> None:
    capture = text("zfs/handwritten/zpool-status.degraded.txt")
    with pytest.raises(ParseError, match="no 'errors:' line"):
        parse_zpool_status(capture[: capture.index("errors:")])
    assert parse_zpool_status("no pools available\n") == ()


def test_mdstat_capture() -> None:
    stat = parse_mdstat(text("mdraid/node_exporter/proc-mdstat.txt"))
    assert len(stat.arrays) == 17
    arrays = {a.name: a for a in stat.arrays}
    md6 = arrays["md6"]
    assert (md6.level, md6.raid_disks, md6.active_disks, md6.status, md6.degraded) == ("raid1", 2, 1, "U_", True)
    assert md6.failed_members == ("sdb2",)
    assert [m.device for m in md6.members if m.spare] == ["sdc"]
    assert (md6.sync_action, md6.sync_percent) == ("recovery", 8.5)
    assert (arrays["md8"].sync_action, arrays["md201"].sync_action) == ("resync", "check")
    assert (arrays["md9"].sync_state, arrays["md11"].sync_state) == ("DELAYED", "PENDING")
    assert arrays["md11"].mode == "auto-read-only"
    assert arrays["md7"].degraded and arrays["md7"].status == "U_UU"
    assert arrays["md7"].bitmap == "0/30 pages [0KB], 65536KB chunk"
    assert not arrays["md4"].active and arrays["md4"].failed_members == ("sda3",)
    assert arrays["md219"].level is None and arrays["md219"].superblock == "external:imsm"
    assert not arrays["md127"].degraded and arrays["md127"].blocks == 312319552
    assert [name for name, a in arrays.items() if a.degraded] == ["md6", "md7"]


def test_mdstat_truncated() -> None:
    capture = text("mdraid/node_exporter/proc-mdstat.txt")
    with pytest.raises(ParseError, match="unused devices"):
        parse_mdstat(capture[: capture.index("md10 :")])


def test_mdadm_detail_real_raid1_lifecycle() -> None:
    clean = parse_mdadm_detail(text(VM + "mdadm-detail.clean.txt"))
    assert (clean.device, clean.version, clean.raid_level, clean.raid_devices) == ("/dev/md0", "1.2", "raid1", 2)
    assert (clean.state, clean.degraded, clean.array_size_kib) == (("clean",), False, 523264)
    assert (clean.name, clean.uuid) == ("node1:0", "36a4fb33:54e65566:de4168b7:77154463")
    assert [(m.number, m.major, m.minor, m.raid_device, m.device) for m in clean.members] == [
        (0, 254, 0, 0, "/dev/vda"),
        (1, 254, 16, 1, "/dev/vdb"),
    ]
    failed = parse_mdadm_detail(text(VM + "mdadm-detail.failed.txt"))
    assert failed.state == ("clean", "degraded") and failed.degraded
    assert (failed.active_devices, failed.working_devices, failed.failed_devices) == (1, 1, 1)
    assert [(m.raid_device, m.state, m.device) for m in failed.members] == [
        (0, ("active", "sync"), "/dev/vda"),
        (1, ("removed",), None),
        (None, ("faulty",), "/dev/vdb"),
    ]
    removed = parse_mdadm_detail(text(VM + "mdadm-detail.removed.txt"))
    assert (removed.total_devices, len(removed.members)) == (1, 2)
    recovery = parse_mdadm_detail(text(VM + "mdadm-detail.recovery.txt"))
    assert recovery.state == ("clean", "degraded", "recovering")
    assert (recovery.rebuild_status, recovery.spare_devices) == ("2% complete", 1)
    assert recovery.members[1].state == ("spare", "rebuilding")
    resync = parse_mdadm_detail(text(VM + "mdadm-detail.resync.txt"))
    assert (resync.state, resync.resync_status, resync.degraded) == (("clean", "resyncing"), "2% complete", False)


def test_mdstat_real_raid1_lifecycle() -> None:
    def md0(phase: str) -> MdArray:
        (array,) = parse_mdstat(text(VM + f"proc-mdstat.{phase}.txt")).arrays
        return array

    assert (md0("clean").status, md0("clean").degraded, md0("clean").blocks) == ("UU", False, 523264)
    assert (md0("resync").sync_action, md0("resync").sync_percent, md0("resync").degraded) == ("resync", 2.1, False)
    assert (md0("failed").status, md0("failed").failed_members) == ("U_", ("vdb",))
    assert [m.device for m in md0("removed").members] == ["vda"] and md0("removed").degraded
    assert (md0("recovery").sync_action, md0("recovery").sync_percent) == ("recovery", 2.0)


def test_mdadm_detail_missing_rows() -> None:
    capture = text(VM + "mdadm-detail.clean.txt")
    cut = capture[: capture.rindex("       1     254")]
    with pytest.raises(ParseError, match="Raid Devices : 2' but 1"):
        parse_mdadm_detail(cut)


def test_nvme_id_ctrl_capture() -> None:
    ctrl = parse_nvme_id_ctrl(text("nvme/ironlib/nvme-id-ctrl.json"))
    assert (ctrl.model, ctrl.serial, ctrl.firmware) == ("Samsung SSD 980 PRO 1TB", "S5P2NG0R824326R", "3B2QGXA7")
    assert (ctrl.total_capacity_bytes, ctrl.pci_vendor_id, ctrl.namespaces) == (1000204886016, 5197, 1)


def test_smartctl_nvme_capture() -> None:
    smart = parse_smartctl_nvme(text("nvme/ironlib/smartctl-nvme0.dell-r6515.json"))
    assert (smart.device, smart.model_name, smart.serial_number) == (
        "/dev/nvme0",
        "Micron_9300_MTFDHAL3T8TDP",
        "202728F691F5",
    )
    assert (smart.firmware_version, smart.total_capacity_bytes) == ("11300DN0", 3840755982336)
    assert (smart.smart_passed, smart.exit_status, smart.critical_warning) == (True, 0, 0)
    assert (smart.temperature_c, smart.percentage_used, smart.media_errors) == (37, 0, 0)
    assert (smart.available_spare_pct, smart.power_on_hours, smart.unsafe_shutdowns) == (100, 301, 33)


def test_nvme_cli_23_real_qemu_controllers() -> None:
    flat = parse_nvme_list(text(QEMU_NVME + "nvme-list.json"))
    assert [(n.device_path, n.serial) for n in flat] == [
        ("/dev/nvme1n1", "SCRATCH0000002"),
        ("/dev/nvme0n1", "SCRATCH0000001"),
    ]
    assert {(n.model, n.firmware, n.physical_size, n.sector_size) for n in flat} == {
        ("QEMU NVMe Ctrl", "7.2.22", 268435456, 512)
    }
    assert parse_nvme_list(text(QEMU_NVME + "nvme-list-v.json")) == flat  # the -v layout, same facts
    log = parse_nvme_smart_log(text(QEMU_NVME + "nvme-smart-log.nvme0.json"))
    assert (log.temperature_c, log.critical_warning, log.percentage_used) == (50, 0, 0)  # 323 K
    assert (log.media_errors, log.power_on_hours) == (0, 0)  # printed as "0" strings by nvme-cli 2.x
    ctrl = parse_nvme_id_ctrl(text(QEMU_NVME + "nvme-id-ctrl.nvme0.json"))
    assert (ctrl.model, ctrl.serial, ctrl.firmware, ctrl.namespaces) == (
        "QEMU NVMe Ctrl",
        "SCRATCH0000001",
        "7.2.22",
        256,
    )
    assert ctrl.total_capacity_bytes == 0  # "tnvmcap":"0" (string) on the emulated controller
    smart = parse_smartctl_nvme(text(QEMU_NVME + "smartctl-a-j.nvme0.json"))
    assert (smart.serial_number, smart.temperature_c, smart.smart_passed) == ("SCRATCH0000001", 50, True)
    assert smart.total_capacity_bytes is None


def test_nvme_smart_log_integer_layout_handwritten() -> None:
    log = parse_nvme_smart_log(text("nvme/handwritten/nvme-smart-log.json"))
    assert (log.temperature_c, log.percentage_used, log.media_errors, log.critical_warning) == (37, 3, 0, 0)
    assert (log.available_spare_pct, log.power_on_hours) == (100, 8123)


def test_nvme_truncated_json() -> None:
    capture = text(QEMU_NVME + "nvme-list.json")
    with pytest.raises(ParseError, match="invalid JSON"):
        parse_nvme_list(capture[: len(capture) // 2])
    with pytest.raises(ParseError, match="missing 'media_errors'"):
        parse_nvme_smart_log('{"critical_warning":0,"temperature":300,"avail_spare":100,"percent_used":1}')
    with pytest.raises(ParseError, match="should be a count"):
        parse_nvme_smart_log(
            '{"critical_warning":0,"temperature":300,"avail_spare":100,"percent_used":1,"media_errors":"x"}'
        )


def test_lsblk_captures() -> None:
    devices = parse_lsblk(text("nvme/ironlib/lsblk.json"))
    assert [d.name for d in devices] == ["sda", "sdb", "nvme0", "nvme0"]
    assert devices[1].model == "MTFDDAV240TDU"  # trailing spaces stripped
    assert devices[3].kname == "/dev/nvme1"
    assert [d.tran for d in devices] == ["sata", "sata", "nvme", "nvme"]
    mine = parse_lsblk(text("lsblk/build-machine/lsblk-Jb.json"))
    assert [(d.name, d.type, d.size) for d in mine] == [("zram0", "disk", 0), ("vda", "disk", 274877906944)]
    assert mine[1].mountpoints == ("/run/netns", "/")


def test_lsblk_md_over_nvme_real() -> None:
    devices = parse_lsblk(text(QEMU_NVME + "lsblk-Jb.md-over-nvme.json"))
    assert [(d.name, d.type, d.tran, d.serial) for d in devices] == [
        ("nvme1n1", "disk", "nvme", "SCRATCH0000002"),
        ("nvme0n1", "disk", "nvme", "SCRATCH0000001"),
    ]
    assert all(d.model == "QEMU NVMe Ctrl" and d.mountpoints == () for d in devices)
    assert [(c.name, c.type, c.size) for d in devices for c in d.children] == [("md0", "raid1", 267386880)] * 2


def test_lsblk_children() -> None:
    out = '{"blockdevices":[{"name":"nvme0n1","type":"disk","size":100,"children":[{"name":"nvme0n1p1","type":"part","size":50,"children":[{"name":"md0","type":"raid1","size":49,"mountpoints":["/"]}]}]}]}'
    (disk,) = parse_lsblk(out)
    assert [d.name for d in disk.walk()] == ["nvme0n1", "nvme0n1p1", "md0"]
    assert disk.walk()[2].mountpoints == ("/",)

"""The disks stage of a clean over a simulated node (its tools answered from a table) through the bring-up
engine and a real journal: evidence per drive, a failing drive named, a resumed clean that erases nothing twice."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from provision.bringup.engine import run_bringup
from provision.bringup.model import Action, Outcome
from provision.bringup.options import BringupOptions
from provision.clean import records
from provision.clean.disks import DisksStage
from provision.clean.model import MIB, CleanLevel, EraseMethod
from provision.clean.options import CleanOptions
from provision.journal import Journal
from provision.remote.ssh import CommandResult
from provision.spec import HostEntry, load_fleet
from tests.conftest import EXAMPLE_INVENTORY

MDADM = (Path(__file__).parents[1] / "fixtures" / "mdraid" / "qemu-vm" / "mdadm-detail.clean.txt").read_text()


@dataclass
class FakeDrive:
    serial: str
    sanicap: int = 0x3
    oacs: int = 0x17
    fna: int = 0x4
    dirty: bool = True
    sstat: int = 0
    fails_sanitize: bool = False
    erases: int = 0


@dataclass
class FakeBusDrive:
    """A SATA drive (hdparm -I's security section as its text) or a SAS drive (sg_opcodes' lines)."""

    tran: str
    serial: str
    caps: str
    dirty: bool = True
    enabled: bool = False
    erases: int = 0
    refuses: bool = False


HDPARM = "Security:\n\tMaster password revision code = 65534\n{lines}\nLogical Unit WWN Device Identifier: 5\n"
SATA_OK = HDPARM.format(lines="\t\tsupported\n\tnot\tenabled\n\tnot\tlocked\n\tnot\tfrozen\n"
                        "\t\tsupported: enhanced erase")
SATA_FROZEN = SATA_OK.replace("not\tfrozen", "\tfrozen")
SAS_OK = "  Opcode  Service    Name\n   48        2      Sanitize, block erase\n   48        3      Sanitize, cryptographic erase\n"


@dataclass
class FakeNode:
    """nvme, lsblk, hdparm, sg_opcodes, mdadm, zpool, wipefs and the read back of a node with a boot mirror on
    nvme0/1 and data drives."""

    drives: dict[str, FakeDrive]
    pools: list[str] = field(default_factory=lambda: ["scratch"])
    commands: list[str] = field(default_factory=list)
    others: dict[str, FakeBusDrive] = field(default_factory=dict)
    md_name: str = "/dev/md0"
    """The boot array as `mdadm --detail --scan` names it."""

    def _other(self, command: str) -> tuple[int, str] | None:
        m = re.search(r"(/dev/sd[a-z]+)", command)
        if command.startswith("lsblk"):
            return 0, json.dumps({"blockdevices": [
                {"name": "vda", "tran": None, "serial": None, "model": None, "type": "disk"},
                *({"name": d.removeprefix("/dev/"), "tran": f.tran, "serial": f.serial, "model": "M", "type": "disk"}
                  for d, f in self.others.items())]})
        if m is None:
            return None
        d = self.others[m[1]]
        if command.startswith("hdparm -I"):
            return 0, d.caps.replace("not\tenabled", "\tenabled") if d.enabled else d.caps
        if command.startswith("sg_opcodes"):
            return 0, d.caps
        if command.startswith(("hdparm --user-master", "sg_sanitize")):
            d.erases += 1
            if d.refuses or "frozen" in d.caps.replace("not\tfrozen", ""):
                return 5, ""
            d.dirty = False
            return 0, ""
        if "blockdev --getsize64" in command:
            return 0, f"{MIB}\n{4096 if d.dirty else 0}\n{MIB}\n0\n"
        if command.startswith("wipefs -a"):
            return 0, ""
        return None

    def __call__(self, command: str) -> CommandResult:
        self.commands.append(command)
        rc, out = self._answer(command)
        return CommandResult(node="node01", command=command, exit_code=rc, stdout=out, stderr="" if rc == 0 else "no",
                             seconds=0.0)

    def _drive(self, command: str) -> tuple[str, FakeDrive]:
        n = re.search(r"/dev/nvme(\d+)", command)
        assert n is not None, command
        return f"/dev/nvme{n[1]}n1", self.drives[f"/dev/nvme{n[1]}n1"]

    def _answer(self, command: str) -> tuple[int, str]:
        other = self._other(command)
        if other is not None:
            return other
        if command == "nvme list -o json":
            return 0, json.dumps({"Devices": [{"DevicePath": d, "ModelNumber": "LAB", "SerialNumber": f.serial,
                                               "Firmware": "1", "NameSpace": 1, "PhysicalSize": 1 << 30}
                                              for d, f in self.drives.items()]})
        if command.startswith("nvme id-ctrl"):
            _, d = self._drive(command)
            return 0, json.dumps({"vid": 1, "sn": d.serial, "mn": "LAB", "fr": "1", "oacs": d.oacs, "fna": d.fna,
                                  "sanicap": d.sanicap})
        if command.startswith(("mdadm --detail /dev/md0", f"mdadm --detail {self.md_name}")):
            return 0, MDADM.replace("/dev/vda", "/dev/nvme0n1p2").replace("/dev/vdb", "/dev/nvme1n1p2")
        if command == "mdadm --detail --scan":
            return 0, f"ARRAY {self.md_name} metadata=1.2 name=node01:0 UUID=36a4fb33:54e65566:de4168b7:77154463\n"
        if command == "zpool list -H -o name":
            return 0, "".join(p + "\n" for p in self.pools)
        if command.startswith("zpool status"):
            return 0, (f"  pool: scratch\n state: ONLINE\nconfig:\n\n\tNAME        STATE     READ WRITE CKSUM\n"
                       f"\tscratch     ONLINE       0     0     0\n\t  nvme-LAB_{self.drives['/dev/nvme2n1'].serial}"
                       "  ONLINE       0     0     0\n\nerrors: No known data errors\n")
        if command.startswith("zpool destroy"):
            self.pools.remove(command.split()[-1])
            return 0, ""
        if command.startswith(("wipefs -a", "mdadm --stop")):
            return 0, ""
        if command.startswith("nvme sanitize-log"):
            _, d = self._drive(command)
            return 0, json.dumps({"nvme": {"sprog": 65535, "sstat": {"status": f"({d.sstat}) x"}}})
        if command.startswith("nvme sanitize") or command.startswith("nvme format"):
            _, d = self._drive(command)
            d.erases += 1
            if command.startswith("nvme sanitize") and (d.fails_sanitize or not d.sanicap):
                d.sstat = 3 if d.sanicap else d.sstat
                return (0, "") if d.sanicap else (1, "")
            d.dirty, d.sstat = False, 1 if command.startswith("nvme sanitize") else d.sstat
            return 0, ""
        if "blockdev --getsize64" in command:
            _, d = self._drive(command)
            return 0, f"{MIB}\n{4096 if d.dirty else 0}\n{MIB}\n0\n"
        raise AssertionError(f"unexpected command {command!r}")


@pytest.fixture(scope="module")
def host() -> HostEntry:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]


def _node(**faults: dict[str, object]) -> FakeNode:
    drives = {f"/dev/nvme{i}n1": FakeDrive(serial=f"SN{i}") for i in range(4)}
    for dev, change in faults.items():
        for k, v in change.items():
            setattr(drives[f"/dev/{dev}"], k, v)
    return FakeNode(drives)


def _stage(node: FakeNode, level: CleanLevel = CleanLevel.SANITIZE) -> DisksStage:
    opts = CleanOptions(bringup=BringupOptions(inventory=EXAMPLE_INVENTORY / "hosts.yml", poll_s=0.0), level=level)
    return DisksStage(opts, shell=lambda _host: node, sleep=lambda _s: None)


def _clean(host: HostEntry, node: FakeNode, jr: Journal, level: CleanLevel = CleanLevel.SANITIZE):  # type: ignore[no-untyped-def]
    return run_bringup([host], [_stage(node, level)], journal=jr, kind=records.CLEAN)


def test_data_drives_erased_with_evidence_boot_kept(host: HostEntry, tmp_path: Path) -> None:
    node = _node(nvme3n1={"sanicap": 0, "fna": 0})
    with Journal(tmp_path / "j.db") as jr:
        result = _clean(host, node, jr)
        assert result.ok, result
        kept = records.evidence(jr, "node01")
    assert {e.serial: e.method for e in kept} == {"SN2": EraseMethod.SANITIZE_CRYPTO, "SN3": EraseMethod.FORMAT_USER}
    assert all(e.read_back.zeroed and e.ended_at >= e.started_at for e in kept)
    assert next(e for e in kept if e.serial == "SN2").sanitize is not None
    assert [node.drives[f"/dev/nvme{i}n1"].erases for i in range(4)] == [0, 0, 1, 1]  # boot mirror untouched
    assert node.pools == [] and "wipefs -a /dev/nvme0n1" not in node.commands


def test_a_failed_sanitize_and_an_unerasable_drive_fail_the_node_naming_both(host: HostEntry, tmp_path: Path) -> None:
    node = _node(nvme2n1={"fails_sanitize": True}, nvme3n1={"sanicap": 0, "oacs": 0, "fna": 0})
    with Journal(tmp_path / "j.db") as jr:
        result = _clean(host, node, jr)
        assert records.evidence(jr, "node01") == []
    (stage,) = result.nodes[0].stages
    assert stage.outcome is Outcome.FAILED
    assert "/dev/nvme2n1 (SN2): sanitize-crypto failed: the drive's sanitize log says failed" in stage.error
    assert "/dev/nvme3n1 (SN3): supports no sanitize method" in stage.error


def test_a_resumed_clean_does_not_erase_a_drive_twice(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    with Journal(tmp_path / "j.db") as jr:
        # a clean killed after nvme2's sanitize ran and before its outcome was journaled (failpoint drive-erase:after)
        run_id = jr.start_run(records.CLEAN, "node01")
        jr.action_started(run_id, "node01", "disks", records.ERASE, "/dev/nvme2n1 SN2")
        node.drives["/dev/nvme2n1"].dirty, node.drives["/dev/nvme2n1"].sstat = False, 1
        node.drives["/dev/nvme2n1"].erases = 1
        assert _clean(host, node, jr).ok
        kept = {e.serial: e for e in records.evidence(jr, "node01")}
        assert kept["SN2"].resumed and not kept["SN3"].resumed
        assert [node.drives[f"/dev/nvme{i}n1"].erases for i in (2, 3)] == [1, 1]
        # a third run of the same clean (its done stage never ran): nothing left to erase
        again = _clean(host, node, jr)
        assert again.ok and [node.drives[f"/dev/nvme{i}n1"].erases for i in (2, 3)] == [1, 1]
        assert "erased earlier in this clean" in again.nodes[0].stages[0].plan.note


def test_an_interrupted_erase_that_did_not_run_is_run(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    with Journal(tmp_path / "j.db") as jr:  # killed before the command ran (drive-erase:before): still dirty
        jr.action_started(jr.start_run(records.CLEAN, "node01"), "node01", "disks", records.ERASE, "/dev/nvme2n1 SN2")
        assert _clean(host, node, jr).ok
        assert not any(e.resumed for e in records.evidence(jr, "node01"))
    assert node.drives["/dev/nvme2n1"].erases == 1


def test_a_completed_clean_starts_the_next_afresh(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    with Journal(tmp_path / "j.db") as jr:
        assert _clean(host, node, jr).ok
        run_id = jr.start_run(records.CLEAN, "node01", {"by": "ops@ctl", "level": "sanitize"})
        jr.stage_finished(jr.stage_started(run_id, "node01", records.DONE_STAGE), "converged")
        assert records.evidence(jr, "node01") == [] and len(records.last_evidence(jr, "node01")) == 2
        marks = records.cleaned(jr, ["node01", "node02"])
        assert list(marks) == ["node01"] and "by ops@ctl (sanitize)" in marks["node01"].describe()
        for d in node.drives.values():
            d.dirty = True
        assert _clean(host, node, jr).ok
    assert [node.drives[f"/dev/nvme{i}n1"].erases for i in (2, 3)] == [2, 2]


def test_metadata_level_erases_nothing(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    with Journal(tmp_path / "j.db") as jr:
        assert _clean(host, node, jr, CleanLevel.METADATA).ok
    assert not any(d.erases for d in node.drives.values())
    assert "wipefs -a /dev/nvme2n1" in node.commands and "zpool destroy -f scratch" in node.commands


def test_the_boot_array_under_its_udev_name_is_known_by_its_members(host: HostEntry, tmp_path: Path) -> None:
    """`mdadm --detail --scan` may name the boot array /dev/md/root (the spec says /dev/md0): it is still the boot
    array (its members are on the boot drives), never stopped nor its members' superblocks zeroed."""
    node = _node()
    node.md_name = "/dev/md/root"
    with Journal(tmp_path / "j.db") as jr:
        assert _clean(host, node, jr).ok
    assert "mdadm --detail /dev/md/root" in node.commands
    assert not any(c.startswith(("mdadm --stop", "mdadm --zero-superblock")) for c in node.commands), node.commands
    assert [node.drives[f"/dev/nvme{i}n1"].erases for i in range(4)] == [0, 0, 1, 1]


def test_plan_only_runs_no_command_that_changes_the_node(host: HostEntry) -> None:
    node = _node()
    result = run_bringup([host], [_stage(node)], journal=None, plan_only=True)
    assert result.nodes[0].stages[0].outcome is Outcome.PLANNED
    actions: tuple[Action, ...] = result.nodes[0].stages[0].plan.actions
    assert [a.kind for a in actions].count("drive-erase") == 2
    assert not any(c.startswith(("nvme sanitize ", "nvme format", "wipefs", "zpool destroy")) for c in node.commands)


@pytest.mark.parametrize(("serials", "named"), [({"nvme3n1": "SN2"}, "/dev/nvme2n1, /dev/nvme3n1"),
                                                ({"nvme2n1": " "}, "/dev/nvme2n1")])
def test_drives_that_cannot_be_told_apart_by_serial_are_refused(host: HostEntry, tmp_path: Path,
                                                               serials: dict[str, str], named: str) -> None:
    """Resume skips the serials with evidence: a shared or missing serial would pass an unerased drive as erased."""
    node = _node(**{dev: {"serial": sn} for dev, sn in serials.items()})
    with Journal(tmp_path / "j.db") as jr:
        result = _clean(host, node, jr)
    assert not result.ok
    assert f"drives {named} report no serial or the same serial" in result.nodes[0].stages[0].error
    assert not any(d.erases for d in node.drives.values())
    assert not any(c.startswith(("wipefs", "zpool destroy", "mdadm --stop")) for c in node.commands)


def test_sata_and_sas_drives_erased_by_what_they_support_a_frozen_one_named(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    node.others = {"/dev/sda": FakeBusDrive("sata", "ATA1", SATA_OK), "/dev/sdb": FakeBusDrive("sas", "SAS1", SAS_OK),
                   "/dev/sdc": FakeBusDrive("sata", "ATA2", SATA_FROZEN)}
    with Journal(tmp_path / "j.db") as jr:
        result = _clean(host, node, jr)
        kept = {e.serial: e.method for e in records.evidence(jr, "node01")}
    assert not result.ok
    error = result.nodes[0].stages[0].error or ""
    assert "/dev/sdc (ATA2): ATA security is frozen" in error
    assert kept == {"SN2": EraseMethod.SANITIZE_CRYPTO, "SN3": EraseMethod.SANITIZE_CRYPTO,
                    "ATA1": EraseMethod.ATA_ERASE_ENHANCED, "SAS1": EraseMethod.SCSI_SANITIZE_CRYPTO}
    assert "ATA2" not in kept and node.others["/dev/sdc"].erases == 0 and node.others["/dev/sdc"].dirty
    assert "hdparm --user-master u --security-erase-enhanced provision-erase /dev/sda" in " ".join(node.commands)


def test_a_sata_erase_that_leaves_the_password_set_is_not_cleaned(host: HostEntry, tmp_path: Path) -> None:
    node = _node()
    node.others = {"/dev/sda": FakeBusDrive("sata", "ATA1", SATA_OK)}
    real = node._other

    def still_enabled(command: str) -> tuple[int, str] | None:
        got = real(command)
        if command.startswith("hdparm --user-master"):
            node.others["/dev/sda"].enabled = True  # the drive took the password, and kept it
        return got

    node._other = still_enabled  # type: ignore[method-assign]
    with Journal(tmp_path / "j.db") as jr:
        result = _clean(host, node, jr)
        kept = {e.serial for e in records.evidence(jr, "node01")}
    assert not result.ok and "ATA1" not in kept
    assert "/dev/sda (ATA1): ata-security-erase-enhanced reported done, but the drive's security is still enabled" \
        in (result.nodes[0].stages[0].error or "")

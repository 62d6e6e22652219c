"""The twins' stand-in nvme erases: id-ctrl lists sanitize and format, a sanitize zeroes the drive's backing
file and logs success, the nvme_sanitize_fails and nvme_no_erase faults; parsed by the product's parsers."""

from __future__ import annotations

import json
from pathlib import Path

from test_personality_helpers import Twin

from provision.clean import nvme
from provision.clean.model import DriveCaps, SanitizeStatus
from provision.conformance.parsers.nvme import parse_nvme_id_ctrl
from provision.lab.twins.personality.state import apply_fault


def _dirty(twin: Twin, name: str) -> Path:
    backing = twin.state / "disks" / name
    backing.parent.mkdir(parents=True, exist_ok=True)
    with backing.open("r+b" if backing.exists() else "wb") as fh:
        fh.truncate(64 * 1024 * 1024)
        fh.write(b"checkpoint" * 100)
    return backing


def _caps(twin: Twin, ctrl: str) -> DriveCaps:
    ident = parse_nvme_id_ctrl(twin.out("nvme", "id-ctrl", f"/dev/{ctrl}", "-o", "json"))
    return DriveCaps.of(ident.sanicap, ident.oacs, ident.fna)


def _erases(twin: Twin) -> dict[str, int]:
    return {k: v["erases"] for k, v in json.loads((twin.state / "nvme-erase.json").read_text()).items()}


def test_sanitize_zeroes_the_drive_and_logs_success(tmp_path: Path) -> None:
    twin = Twin(tmp_path)
    drive = twin.drives("scratch")[0]
    backing = _dirty(twin, drive["name"])
    assert _caps(twin, drive["controller"]) == DriveCaps(sanitize_crypto=True, sanitize_block=True, format=True,
                                                         format_crypto=True)
    log = nvme.parse_sanitize_log(twin.out("nvme", "sanitize-log", f"/dev/{drive['controller']}", "-o", "json"))
    assert log.status is SanitizeStatus.NEVER
    twin.out("nvme", "sanitize", f"/dev/{drive['controller']}", "--sanact=4")
    log = nvme.parse_sanitize_log(twin.out("nvme", "sanitize-log", f"/dev/{drive['controller']}", "-o", "json"))
    assert log.succeeded and log.progress == nvme.SPROG_IDLE
    assert backing.stat().st_size == 64 * 1024 * 1024 and not backing.read_bytes().strip(b"\0")
    assert _erases(twin) == {drive["name"]: 1}


def test_format_ses_erases_too(tmp_path: Path) -> None:
    twin = Twin(tmp_path)
    drive = twin.drives("scratch")[1]
    backing = _dirty(twin, drive["name"])
    twin.out("nvme", "format", f"/dev/{drive['name']}", "--ses=2", "--force")
    assert not backing.read_bytes().strip(b"\0")


def test_faults_fail_a_sanitize_and_take_every_method_away(tmp_path: Path) -> None:
    twin = Twin(tmp_path)
    apply_fault(twin.state, "nvme_sanitize_fails", clear=False)
    apply_fault(twin.state, "nvme_no_erase", clear=False)
    first, last = twin.drives("scratch")[0], twin.drives("scratch")[-1]
    backing = _dirty(twin, first["name"])
    twin.out("nvme", "sanitize", f"/dev/{first['controller']}", "--sanact=4")  # accepted, then failed
    log = nvme.parse_sanitize_log(twin.out("nvme", "sanitize-log", f"/dev/{first['controller']}", "-o", "json"))
    assert log.status is SanitizeStatus.FAILED
    assert backing.read_bytes().strip(b"\0")  # the data stays
    assert _caps(twin, last["controller"]) == DriveCaps()
    assert twin.run("nvme", "sanitize", f"/dev/{last['controller']}", "--sanact=4", check=False).returncode == 1
    assert twin.run("nvme", "format", f"/dev/{last['name']}", "--ses=1", check=False).returncode == 1


def test_lsblk_lists_the_simulated_disks_not_the_hosts(tmp_path: Path) -> None:
    """A clean lists SATA and SAS drives with lsblk: in a twin that is the simulated server's disks (NVMe only),
    never the lab host's, whatever the host has."""
    from provision.clean import ata

    twin = Twin(tmp_path)
    out = json.loads(twin.out("lsblk", *ata.LIST_COMMAND.split()[1:]))
    names = {d["name"] for d in out["blockdevices"]}
    assert names == {d["name"] for d in twin.drives("boot") + twin.drives("scratch")}
    assert all(d["tran"] == "nvme" for d in out["blockdevices"])
    assert ata.parse_lsblk(json.dumps(out)) == ()  # no SATA or SAS drive in the spec'd server

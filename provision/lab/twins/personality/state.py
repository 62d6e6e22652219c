"""A twin's hardware state directory on the host (bind-mounted at /var/lib/provision-lab).

Layout (all SIMULATED hardware):
  hardware.json        the server, from the spec (hardware.py)
  faults.json          active faults (faults.py); the fake tools read it on every call
  zfs.json             pools/datasets the fake zpool/zfs created (written inside the twin)
  proc/{meminfo,cpuinfo,mdstat,sys/kernel/osrelease}   bind-mounted over the twin's /proc files
                       (osrelease: the kernel the twin "runs"; set at each boot by lab_kernel.py)
  sys/class/net/IF/speed   the link speed of the on-board NIC the twin's own link stands for
                       (hardware.json `nics`), bind-mounted over the twin's sysfs entry (a veth reads 10000)
  disks/nvmeXn1        sparse 64 MiB files that back /dev/nvmeXn1 in the twin
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from provision.errors import InputError, LabError
from provision.lab.twins.personality.faults import FAULT_KINDS, Faults, dump_faults, fault_params, load_faults
from provision.lab.twins.personality.hardware import Hardware, hardware_from_spec
from provision.lab.twins.personality.packages import FACTORY_KERNEL
from provision.lab.twins.personality.procfiles import (
    PROC_FILES,
    render_all,
    render_mdstat,
    render_sysfs,
    write_in_place,
)
from provision.spec.model import NodeSpec

TWIN_STATE_DIR = "/var/lib/provision-lab"
DISK_BYTES = 64 * 1024 * 1024


def _cpu_flags() -> tuple[str, ...]:
    text = resources.files(__package__).joinpath("data/cpu-flags.txt").read_text(encoding="utf-8")
    return tuple(text.split())


def load_hardware(state_dir: Path) -> Hardware:
    path = state_dir / "hardware.json"
    try:
        return Hardware.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise LabError(f"{state_dir}: no hardware.json (run prepare_node first)") from exc
    except ValueError as exc:
        raise LabError(f"{path}: not a twin hardware file ({exc.__class__.__name__})") from exc


def _make_disks(state_dir: Path, hw: Hardware, faults: Faults) -> None:
    disks = state_dir / "disks"
    disks.mkdir(exist_ok=True)
    missing = faults.active.get("scratch_drive_missing", {}).get("drive")
    for drive in hw.nvme:
        path = disks / drive.name
        if drive.name == missing:
            continue
        if not path.exists():
            with path.open("wb") as fh:
                fh.truncate(DISK_BYTES)


def prepare_node(state_dir: Path, spec: NodeSpec, index: int) -> None:
    """Write the simulated server for node `index`: hardware.json, proc files, disk files.

    An existing faults.json and zfs.json are kept (faults and pools survive a reboot, as on a
    real server); delete the state dir for a factory-fresh node.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    hw = hardware_from_spec(spec, index, _cpu_flags())
    write_in_place(state_dir / "hardware.json", hw.model_dump_json(indent=1) + "\n")
    faults = load_faults(state_dir / "faults.json")
    write_in_place(state_dir / "faults.json", dump_faults(faults))
    osrelease = state_dir / "proc/sys/kernel/osrelease"
    kernel = osrelease.read_text(encoding="utf-8").strip() if osrelease.exists() else FACTORY_KERNEL
    for name, text in render_all(hw, faults, kernel or FACTORY_KERNEL).items():
        write_in_place(state_dir / "proc" / name, text)
    for name, text in render_sysfs(hw).items():
        write_in_place(state_dir / "sys" / name, text)
    _make_disks(state_dir, hw, faults)


def proc_binds(state_dir: Path) -> dict[str, Path]:
    """Twin path -> host file for the /proc and /sys files to bind-mount (read-only is fine)."""
    binds = {f"/proc/{name}": state_dir / "proc" / name for name in PROC_FILES}
    if (state_dir / "hardware.json").exists():  # without one the twin presents no NIC (and its /proc files miss)
        binds.update({f"/sys/{name}": state_dir / "sys" / name for name in render_sysfs(load_hardware(state_dir))})
    return binds


def apply_fault(state_dir: Path, kind: str, clear: bool) -> None:
    """Set (or with clear=True remove) a fault; tools see it on their next call."""
    hw = load_hardware(state_dir)
    path = state_dir / "faults.json"
    faults = load_faults(path)
    if clear:
        _check_kind(kind)
        faults.active.pop(kind, None)
    else:
        _check_kind(kind)
        faults.active[kind] = fault_params(kind, hw)
    write_in_place(path, dump_faults(faults))
    write_in_place(state_dir / "proc" / "mdstat", render_mdstat(hw, faults))
    _sync_disk_files(state_dir, hw, faults)


def _check_kind(kind: str) -> None:
    if kind not in FAULT_KINDS:
        raise InputError(f"unknown fault kind {kind!r}; known: {', '.join(sorted(FAULT_KINDS))}")


def _sync_disk_files(state_dir: Path, hw: Hardware, faults: Faults) -> None:
    """A missing scratch drive's backing file is parked, so the twin's /dev entry really goes away."""
    disks, parked = state_dir / "disks", state_dir / "disks-removed"
    parked.mkdir(exist_ok=True)
    missing = faults.active.get("scratch_drive_missing", {}).get("drive")
    for drive in hw.nvme:
        live, away = disks / drive.name, parked / drive.name
        if drive.name == missing and live.exists():
            live.rename(away)
        elif drive.name != missing and away.exists() and not live.exists():
            away.rename(live)
    _make_disks(state_dir, hw, faults)

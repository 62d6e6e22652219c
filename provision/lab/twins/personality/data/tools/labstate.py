# LAB STAND-IN: simulated hardware, not the real tool.
"""Shared state reader of the lab's simulated tools (runs inside a node twin; stdlib only).

The twin's simulated server is described by $PROVISION_LAB_STATE/hardware.json (default
/var/lib/provision-lab, bind-mounted from the host) and its faults by faults.json. Package state
comes from the twin's real dpkg database (PROVISION_LAB_DPKG_ADMINDIR overrides, for tests), and
service state from the twin's real systemd (`systemctl is-active`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any, NoReturn

# Die quietly on a closed pipe (`nvidia-smi -q | head`), as the real C tools do.
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

STATE_DIR = os.environ.get("PROVISION_LAB_STATE", "/var/lib/provision-lab")
DPKG_ADMINDIR = os.environ.get("PROVISION_LAB_DPKG_ADMINDIR", "")

CUDA_BY_BRANCH = {"535": "12.2", "550": "12.4", "555": "12.5", "560": "12.6", "565": "12.7", "570": "12.8"}


def state_path(*parts: str) -> str:
    return os.path.join(STATE_DIR, *parts)


def _load(name: str, default: Any) -> Any:
    try:
        with open(state_path(name), encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return default


def hardware() -> dict[str, Any]:
    hw = _load("hardware.json", None)
    if hw is None:
        die(f"lab state missing: {state_path('hardware.json')} (is this a provision lab twin?)", 1)
    return dict(hw)


def faults() -> dict[str, dict[str, Any]]:
    return dict(_load("faults.json", {}).get("active", {}))


def fault(kind: str) -> dict[str, Any] | None:
    return faults().get(kind)


def die(message: str, code: int) -> NoReturn:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def installed_version(package: str) -> str | None:
    """Version of an installed package from the real dpkg database, or None."""
    cmd = ["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Version}", package]
    if DPKG_ADMINDIR:
        cmd.insert(1, f"--admindir={DPKG_ADMINDIR}")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    status, _, version = done.stdout.partition("|")
    if done.returncode != 0 or status[1:2] != "i":  # "ii" installed, "hi" installed and held
        return None
    return version.strip() or None


def upstream(version: str) -> str:
    v = version.split(":", 1)[-1]
    return v.rsplit("-", 1)[0] if "-" in v else v


def service_active(unit: str) -> bool:
    try:
        done = subprocess.run(["systemctl", "is-active", "--quiet", unit], check=False,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        return False
    return done.returncode == 0


def kernel_module_version() -> str | None:
    """Version of the NVIDIA kernel module 'loaded' (= installed DKMS package), or None."""
    for pkg in ("nvidia-kernel-open-dkms", "nvidia-kernel-dkms"):
        v = installed_version(pkg)
        if v:
            return upstream(v)
    return None


def driver_version() -> str | None:
    """The driver version nvidia-smi reports; package_wrong_version overrides it."""
    wrong = fault("package_wrong_version")
    if wrong and wrong.get("package") == "nvidia-driver":
        return upstream(str(wrong["version"]))
    return kernel_module_version()


def cuda_version(driver: str) -> str:
    return CUDA_BY_BRANCH.get(driver.split(".")[0], "12.4")


def fabric_manager_ok(driver: str) -> bool:
    """Fabric registration completes only with the fabric manager active at the driver's version."""
    if fault("fabric_manager_failed") is not None:
        return False
    names = ("nvidia-fabricmanager-550", "nvidia-fabricmanager-560", f"nvidia-fabricmanager-{driver.split('.')[0]}")
    fm = next((v for v in map(installed_version, names) if v), None)
    if fm is None or upstream(fm) != driver:
        return False
    return service_active("nvidia-fabricmanager.service")


def visible_gpus(hw: dict[str, Any]) -> list[dict[str, Any]]:
    """GPUs the driver enumerates (gpu_missing drops one; indices renumber like on a real node)."""
    missing = fault("gpu_missing")
    gone = None if missing is None else int(missing["gpu"])
    return [g for g in hw["gpus"] if g["index"] != gone]


def link_inactive(gpu: dict[str, Any], link: int) -> bool:
    down = fault("nvlink_down")
    return down is not None and int(down["gpu"]) == gpu["index"] and int(down["link"]) == link


def present_drives(hw: dict[str, Any]) -> list[dict[str, Any]]:
    missing = fault("scratch_drive_missing")
    gone = None if missing is None else str(missing["drive"])
    return [d for d in hw["nvme"] if d["name"] != gone]


def find_drive(hw: dict[str, Any], path: str) -> dict[str, Any] | None:
    """A drive by /dev/nvmeXn1, /dev/nvmeX, /dev/disk/by-id/<id>, a partition of those, or a bare name."""
    base = os.path.basename(path.rstrip("/"))
    for d in hw["nvme"]:
        names = {d["name"], d["controller"], d["by_id"]}
        if base in names or any(base.startswith(n + "-part") or base.startswith(n + "p") for n in names):
            return d
    return None


def _hit(kind: str, gpu: dict[str, Any]) -> bool:
    params = fault(kind)
    return params is not None and int(params["gpu"]) == gpu["index"]


def gpu_health(gpu: dict[str, Any]) -> dict[str, Any]:
    """What `nvidia-smi -q` reports of a GPU's health; the gpu_* faults change it (all else healthy, idle)."""
    thermal = fault("gpu_throttle_thermal") if _hit("gpu_throttle_thermal", gpu) else None
    pcie = fault("gpu_pcie_downtrained") if _hit("gpu_pcie_downtrained", gpu) else None
    remap = _hit("gpu_row_remap_pending", gpu)
    temp = int(thermal["temperature"]) if thermal else 27 + (gpu["index"] * 3) % 7
    return {
        "temp": temp, "mem_temp": temp + 8 if thermal else 44, "pstate": "P0",
        # An idle GPU reports Idle; a thermally throttled one is busy and slowed by HW Slowdown (HW Thermal).
        "ev_idle": "Not Active" if thermal else "Active",
        "ev_hw_slowdown": "Active" if thermal else "Not Active",
        "ev_hw_thermal": "Active" if thermal else "Not Active",
        "pcie_gen_current": int(pcie["generation"]) if pcie else gpu["pcie_gen"],
        "pcie_width_current": gpu["pcie_width"],
        # A row marked for remapping after an uncorrectable error: counted, pending until the next GPU reset.
        "remap_unc": 1 if remap else 0, "remap_pending": "Yes" if remap else "No",
    }


def xid_lines(hw: dict[str, Any]) -> list[str]:
    """Kernel log lines of the gpu_xid fault, in the NVIDIA driver's format (NVRM: Xid (PCI:...): N, ...)."""
    params = fault("gpu_xid")
    if params is None:
        return []
    gpu = next((g for g in hw["gpus"] if g["index"] == int(params["gpu"])), None)
    if gpu is None:
        return []
    pci = gpu["bus_id"][4:].rsplit(".", 1)[0]  # 00000000:19:00.0 -> 0000:19:00, as the driver prints it
    return [f"NVRM: Xid (PCI:{pci}): {int(params['xid'])}, pid=1234, name=python3, {params['message']}"]

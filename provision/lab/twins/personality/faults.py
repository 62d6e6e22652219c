"""Twin faults: what is broken on the simulated server, kept in faults.json.

Each fault is a kind plus the parameters the fake tools need (which GPU, which link, which
drive...), chosen deterministically from hardware.json so a fault always hits the same part.
The fake tools read faults.json on every call; /proc/mdstat is re-rendered here.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InputError, LabError
from provision.lab.twins.personality.hardware import Hardware

FAULT_KINDS: frozenset[str] = frozenset(
    {
        "gpu_missing",
        "nvlink_down",
        "fabric_manager_failed",
        "ib_port_down",
        "ib_port_slow",
        "boot_mirror_degraded",
        "scratch_drive_missing",
        "nvme_wearing_out",
        "nvme_worn",
        "nvme_spare_low",
        "nvme_sanitize_fails",
        "nvme_no_erase",
        "package_wrong_version",
        "gpu_xid",
        "gpu_row_remap_pending",
        "gpu_throttle_thermal",
        "gpu_pcie_downtrained",
        "dimm_missing",
        "ib_bw_low",
        "nvme_read_slow",
        "snapshot_missing",
        "snapshot_stale",
        "scrub_failed",
        "container_gpu_hidden",
    }
)
# Which GPU each GPU-health fault hits (index into the server's GPUs, bounded by their count): parts no
# other fault touches (gpu_missing takes count/2-1 = GPU 3 of 8, nvlink_down GPU 1).
GPU_HEALTH_TARGET = {"gpu_xid": 2, "gpu_row_remap_pending": 4, "gpu_throttle_thermal": 5, "gpu_pcie_downtrained": 6}

FaultParams = dict[str, str | int]


class Faults(BaseModel):
    """Content of faults.json: active fault kinds with their parameters."""

    model_config = ConfigDict(extra="forbid")

    active: dict[str, FaultParams] = Field(default_factory=dict)

    def degraded_member(self) -> str | None:
        params = self.active.get("boot_mirror_degraded")
        return str(params["member"]) if params else None


def load_faults(path: Path) -> Faults:
    if not path.exists():
        return Faults()
    try:
        return Faults.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise LabError(f"{path}: not a faults file ({exc.__class__.__name__})") from exc


def dump_faults(faults: Faults) -> str:
    return json.dumps(faults.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"


def _older_version(installed: str) -> str:
    """A different nvidia-driver stand-in version than the pinned one (see packages.py)."""
    from provision.lab.twins.personality.packages import DRIVER_VERSIONS

    others = [v for v in DRIVER_VERSIONS if v != installed]
    return others[0]


def fault_params(kind: str, hw: Hardware) -> FaultParams:
    """Which part a fault hits on this server (deterministic)."""
    ib = [h for h in hw.hcas if h.link_layer == "InfiniBand"] or list(hw.hcas)
    scratch = [d for d in hw.nvme if d.role == "scratch"]
    needs = {
        "gpu_missing": bool(hw.gpus),
        "nvlink_down": any(g.nvlinks for g in hw.gpus),
        "fabric_manager_failed": hw.gpu_fabric,
        "ib_port_down": bool(ib),
        "ib_port_slow": bool(ib),
        "ib_bw_low": bool(ib),
        "nvme_read_slow": bool(scratch),
        "scratch_drive_missing": bool(scratch),
        "nvme_wearing_out": bool(scratch),
        "dimm_missing": bool(hw.dimms),
        "container_gpu_hidden": bool(hw.gpus),
        "boot_mirror_degraded": hw.boot_raid is not None,
        "package_wrong_version": hw.driver_apt_version is not None,
        "nvme_worn": bool(scratch),
        "nvme_spare_low": bool(scratch),
        "nvme_sanitize_fails": bool(scratch),
        "nvme_no_erase": bool(scratch),
        "snapshot_missing": bool(scratch),
        "snapshot_stale": bool(scratch),
        "scrub_failed": bool(scratch),
        **dict.fromkeys(GPU_HEALTH_TARGET, bool(hw.gpus)),
    }
    if not needs.get(kind, True):
        raise InputError(f"fault {kind}: this twin's hardware ({hw.profile}) has no such part")
    if kind == "gpu_missing":
        return {"gpu": hw.gpus[len(hw.gpus) // 2 - 1 if len(hw.gpus) > 1 else 0].index}
    if kind == "nvlink_down":
        return {"gpu": 1 if len(hw.gpus) > 1 else 0, "link": 5}
    if kind == "fabric_manager_failed":
        return {}
    if kind == "ib_port_down":
        return {"hca": ib[-1].name, "port": 1}
    if kind == "ib_port_slow":
        return {"hca": ib[0].name, "port": 1, "rate": max(1, ib[0].rate // 2)}
    if kind == "ib_bw_low":  # the port stays Active at its full rate; the burn-in measures 60 % of it
        return {"hca": ib[0].name, "port": 1, "percent": 60}
    if kind == "nvme_read_slow":  # the first scratch drive reads at 1.2 GB/s (fio stand-in), SMART healthy
        return {"drive": scratch[0].name}
    if kind == "boot_mirror_degraded":
        assert hw.boot_raid is not None  # needs above
        return {"member": hw.boot_raid.members[-1]}
    if kind == "scratch_drive_missing":
        return {"drive": scratch[-1].name}
    if kind == "nvme_wearing_out":
        return {"drive": scratch[len(scratch) // 2].name, "percentage_used": 95, "media_errors": 12}
    if kind == "dimm_missing":  # the last DIMM: its channel (P2-DIMMH on ML-PROD-V4) is one short
        return {"locator": hw.dimms[-1].locator}
    if kind == "nvme_worn":  # the first scratch drive: written past its rating (1 DWPD x capacity x 5 years)
        return {"drive": scratch[0].name, "percentage_used": 99, "written_pct": 102}
    if kind == "nvme_spare_low":  # the second: spare below the drive's 10% threshold
        return {"drive": scratch[min(1, len(scratch) - 1)].name, "avail_spare": 5}
    if kind == "nvme_sanitize_fails":  # the first scratch drive: a sanitize it accepts, then logs as failed
        return {"drive": scratch[0].name}
    if kind == "nvme_no_erase":  # the last scratch drive lists no sanitize and no Format NVM
        return {"drive": scratch[-1].name}
    if kind == "snapshot_missing":  # `zfs list -t snapshot` shows none (sanoid never ran, or they were destroyed)
        return {}
    if kind == "snapshot_stale":  # every snapshot shows 50 hours older: sanoid stopped two days ago
        return {"hours": 50}
    if kind == "scrub_failed":  # the last scrub finished with 4 errors (and `errors:` lists data errors)
        return {"errors": 4}
    if kind in GPU_HEALTH_TARGET:
        return _gpu_health_params(kind, hw)
    if kind == "container_gpu_hidden":  # containers run, but their nvidia-smi -L finds no GPU (docker, apptainer)
        return {}
    if kind == "package_wrong_version":
        assert hw.driver_apt_version is not None  # needs above
        return {"package": "nvidia-driver", "version": _older_version(hw.driver_apt_version)}
    raise InputError(f"unknown fault kind {kind!r}; known: {', '.join(sorted(FAULT_KINDS))}")


def _gpu_health_params(kind: str, hw: Hardware) -> FaultParams:
    gpu = hw.gpus[min(GPU_HEALTH_TARGET[kind], len(hw.gpus) - 1)]
    if kind == "gpu_xid":  # Xid 119: GSP RPC timeout (NVIDIA's Xid catalogue), in the failing list
        return {"gpu": gpu.index, "xid": 119,
                "message": "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76."}
    if kind == "gpu_throttle_thermal":  # hot enough for HW thermal slowdown: above the default fail tier
        return {"gpu": gpu.index, "temperature": 91}
    if kind == "gpu_pcie_downtrained":  # trained one generation down (Gen5 slot, Gen4 link)
        return {"gpu": gpu.index, "generation": max(1, gpu.pcie_gen - 1)}
    return {"gpu": gpu.index}

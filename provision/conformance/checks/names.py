"""Package and unit names derived from the spec: the one place that maps spec pins to apt names.

Names follow NVIDIA's CUDA apt repository and Debian (the lab's stand-ins use the same names).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provision.spec.model import NodeSpec
from provision.spec.software import Pin


class PinnedPackage(BaseModel):
    """An apt package the spec pins: which spec component, which name, which version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    component: str
    package: str
    apt_version: str


class RequiredUnit(BaseModel):
    """A systemd unit that must be active, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: str
    reason: str


def pinned_packages(spec: NodeSpec) -> list[PinnedPackage]:
    """Every pinned apt package of the spec, in a stable order; a pin the spec leaves out has no row."""
    sw = spec.software
    cuda_mm = "-".join(sw.cuda.version.split(".")[:2]) if sw.cuda else ""
    cudnn_major = sw.cudnn.version.split(".")[0] if sw.cudnn else ""
    cuda_major = sw.cuda.version.split(".")[0] if sw.cuda else ""
    optional: list[tuple[str, str, Pin | None]] = [
        ("nvidia_driver", "nvidia-driver", sw.nvidia_driver),
        ("cuda", f"cuda-toolkit-{cuda_mm}", sw.cuda),
        ("cudnn", f"cudnn{cudnn_major}-cuda-{cuda_major or cuda_mm}", sw.cudnn),
        ("nccl", "libnccl2", sw.nccl),
        ("container_toolkit", "nvidia-container-toolkit", sw.container_toolkit),
        ("dcgm", "datacenter-gpu-manager", sw.dcgm),
        ("zfs", "zfsutils-linux", sw.zfs),
        ("mdadm", "mdadm", sw.mdadm),
    ]
    rows = [("kernel", sw.kernel.package, sw.kernel.apt_version)]
    rows += [(c, p, pin.apt_version) for c, p, pin in optional if pin is not None]
    if sw.fabric_manager is not None:
        rows.insert(2, ("fabric_manager", fabric_manager_package(spec), sw.fabric_manager.apt_version))
    if sw.rdma is not None:
        rows.append(("rdma", sw.rdma.stack if sw.rdma.stack == "rdma-core" else "doca-ofed", sw.rdma.apt_version))
    return [PinnedPackage(component=c, package=p, apt_version=v) for c, p, v in rows]


def fabric_manager_package(spec: NodeSpec) -> str:
    return f"nvidia-fabricmanager-{spec.need_driver().branch}"


FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"


def required_units(spec: NodeSpec) -> list[RequiredUnit]:
    """Every systemd unit that must be active on a node of this spec."""
    units = [
        RequiredUnit(unit="ssh.service", reason="remote management"),
        RequiredUnit(unit="chrony.service", reason="time sync"),
        RequiredUnit(unit="prometheus-node-exporter.service", reason="node metrics"),
        RequiredUnit(unit="smartmontools.service", reason="drive health (smartd)"),
    ]
    if spec.gpu is None:  # no GPUs: no DCGM, persistence daemon or fabric manager is required
        return units
    units.insert(2, RequiredUnit(unit="nvidia-dcgm.service", reason="GPU health (DCGM)"))
    if spec.gpu.persistence_mode:
        units.append(RequiredUnit(unit="nvidia-persistenced.service", reason="gpu.persistence_mode"))
    if spec.gpu.fabric_manager:
        units.append(RequiredUnit(unit=FABRIC_MANAGER_UNIT, reason="gpu.interconnect nvswitch"))
    return units

"""The node spec: one frozen, typed description of what a node class must be.

Its sections live beside it (hardware, storage, firmware, software, acceptance); the inventory's side of a
host (endpoints, lab declaration, the fleet) in provision/spec/fleet.py.

Built from the `provision_spec` variable of each host's merged Ansible variables, so the
Ansible roles and the Python side read the very same figures.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import Field, field_validator, model_validator

from provision.errors import SpecError
from provision.spec.acceptance import COMPARISONS, Acceptance, Comparison, Reference
from provision.spec.bmc_setup import BmcSetup
from provision.spec.containers import Containers
from provision.spec.firmware import Bios, FirmwareComponent
from provision.spec.frozen import Frozen
from provision.spec.hardware import Cooling, Cpu, Gpu, Memory, Network, Power
from provision.spec.nfs import NfsMount, unique_mounts
from provision.spec.platforms import Platforms
from provision.spec.software import DriverPin, Software
from provision.spec.storage import BootRaid, ScratchStorage, Storage

_TEXT_FIGURES = frozenset({"cpu.model", "memory.type", "gpu.model"})


_T = TypeVar("_T")


def required(value: _T | None, key: str) -> _T:
    """`value`, for code reached only when the spec has it (`key` names it); SpecError when it is absent."""
    if value is None:
        raise SpecError(f"spec key {key} is absent: code for it ran on a profile without it")
    return value


_PINS_NEEDED_BY: dict[str, tuple[str, ...]] = {
    "gpu": ("nvidia_driver", "cuda", "cudnn", "nccl", "container_toolkit", "dcgm"),
    "storage.scratch": ("zfs",),
    "storage.boot.raid": ("mdadm",),
}
"""Pins an optional hardware section needs: present hardware without its pin is an error."""

_ACCEPTANCE_NEEDED_BY: dict[str, tuple[str, ...]] = {
    "gpu": ("dcgm_diag_level",),
    "gpus": ("allreduce_latency_us_p99", "allreduce_busbw_gbs"),
    "storage.scratch": ("scratch_seq_read_gbs", "scratch_rand_read_iops_4k"),
    "network.infiniband": ("ib_write_bw_gbps",),
}
"""Acceptance figures an optional hardware section needs (burn-in gates on them); `gpus`: more than one GPU
(NCCL all_reduce across one GPU measures nothing)."""


class NodeSpec(Frozen):
    """Everything a node of one class must be."""

    profile: str = Field(min_length=1, description="Human name of the class, e.g. ML-PROD-V4")
    description: str = ""
    platforms: Platforms | None = Field(
        default=None, validate_default=True,
        description="The platforms (Manufacturer + Model or SKU globs) the profile describes, or `any`; required")
    form_factor: str
    cpu: Cpu
    memory: Memory
    gpu: Gpu | None = None
    """Absent: a node without accelerators (no GPU stack, no GPU checks)."""
    storage: Storage
    network: Network
    power: Power
    cooling: Cooling
    bios: Bios
    firmware: tuple[FirmwareComponent, ...]
    software: Software
    acceptance: Acceptance
    containers: Containers = Field(default_factory=Containers, description="Container engines wired to the GPUs")
    nfs_mounts: tuple[NfsMount, ...] = Field(default=(), description="NFS checkpoint mounts (none: no NFS)")
    reference: Reference = Field(default_factory=Reference, description="Figures recorded, not judged")
    comparisons: dict[str, Comparison] = Field(
        default_factory=dict,
        description="Per drift figure, exact or minimum; figures not named keep the default kind (COMPARISONS)",
    )
    bmc: BmcSetup | None = Field(default=None, description="Day zero: how the BMC is taken over (bmc setup)")

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: Platforms | None) -> Platforms:
        if value is None:
            raise ValueError("missing: name the platforms the profile describes ([{manufacturer, model or sku}]), "
                             "or `platforms: any`")
        return value

    @property
    def described_platforms(self) -> Platforms:
        """`platforms`, never None once validated."""
        if self.platforms is None:
            raise SpecError("spec key platforms is absent")
        return self.platforms

    @field_validator("nfs_mounts")
    @classmethod
    def _unique_mounts(cls, value: tuple[NfsMount, ...]) -> tuple[NfsMount, ...]:
        return unique_mounts(value)

    @field_validator("comparisons")
    @classmethod
    def _known_figures(cls, value: dict[str, Comparison]) -> dict[str, Comparison]:
        unknown = sorted(set(value) - set(COMPARISONS))
        if unknown:
            raise ValueError(f"unknown comparison figure(s) {unknown}; known: {sorted(COMPARISONS)}")
        text = sorted(k for k, v in value.items() if k in _TEXT_FIGURES and v == Comparison.MINIMUM)
        if text:
            raise ValueError(f"{text} are names, not figures: they can only be compared exactly")
        return value

    def comparison(self, figure: str) -> Comparison:
        """How `figure` (e.g. power.psu_watts) is compared: the profile's choice, else the default."""
        return self.comparisons.get(figure, COMPARISONS.get(figure, Comparison.EXACT))

    @property
    def effective_comparisons(self) -> dict[str, Comparison]:
        return {k: self.comparison(k) for k in COMPARISONS}

    def has(self, section: str) -> bool:
        """Whether an optional hardware section (gpu, network.infiniband, storage.scratch, storage.jbod,
        storage.boot.raid) is present: an absent one means no role, no check and no twin part for it."""
        if section == "gpus":
            return self.gpu is not None and self.gpu.count > 1
        value = {"gpu": self.gpu, "network.infiniband": self.network.infiniband,
                 "storage.scratch": self.storage.scratch, "storage.jbod": self.storage.jbod,
                 "storage.boot.raid": self.storage.boot.raid}[section]
        return value is not None

    def need_gpu(self) -> Gpu:
        """The gpu section, for code reached only when it is present (a caller that forgot to skip raises)."""
        return required(self.gpu, "gpu")

    def need_scratch(self) -> ScratchStorage:
        """The storage.scratch section, for code reached only when it is present."""
        return required(self.storage.scratch, "storage.scratch")

    def need_boot_raid(self) -> BootRaid:
        """The storage.boot.raid section, for code reached only when it is present."""
        return required(self.storage.boot.raid, "storage.boot.raid")

    def need_driver(self) -> DriverPin:
        """software.nvidia_driver, present whenever gpu is (the cross-checks make sure)."""
        return required(self.software.nvidia_driver, "software.nvidia_driver")

    def unused_pins(self) -> list[str]:
        """Pinned software whose hardware the spec does not have (allowed: `spec validate` warns)."""
        return [f"software.{pin}" for section, pins in _PINS_NEEDED_BY.items() if not self.has(section)
                for pin in pins if getattr(self.software, pin) is not None]

    @model_validator(mode="after")
    def _cross_checks(self) -> NodeSpec:
        if self.gpu is not None and self.gpu.fabric_manager and self.software.fabric_manager is None:
            raise ValueError("gpu interconnect nvswitch needs software.fabric_manager")
        for section, pins in _PINS_NEEDED_BY.items():
            if self.has(section):
                missing = [p for p in pins if getattr(self.software, p) is None]
                if missing:
                    raise ValueError(f"{section} is present, so software needs {', '.join(missing)} pinned")
        for section, figures in _ACCEPTANCE_NEEDED_BY.items():
            missing = [f for f in figures if getattr(self.acceptance, f) is None]
            if self.has(section) and missing:
                raise ValueError(f"{section} is present, so acceptance needs {', '.join(missing)}")
        names = [f.component for f in self.firmware]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"firmware component(s) listed twice: {dupes}")
        return self



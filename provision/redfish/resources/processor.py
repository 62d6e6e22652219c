"""Processor: CPUs and, on some BMCs, GPUs."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from provision.redfish.resources.base import Resource, dig, link_ids, real_text

_CACHE = ("L1Cache", "L2Cache", "L3Cache", "L4Cache")
_NUMBER = re.compile(r"^(0x)?[0-9a-f]+h?$", re.I)


def _named_family(pid: Any) -> str | None:
    """ProcessorId.EffectiveFamily when it holds the processor's name, not a CPUID number: AMI MegaRAC BMCs put the
    brand string there ("Intel(R) Xeon(R) Gold 6430") and leave Model out."""
    family = real_text(pid.get("EffectiveFamily")) if isinstance(pid, dict) else None
    return family if family and not _NUMBER.match(family) and re.search(r"[A-Za-z]{3}", family) else None


class Processor(Resource):
    """One socket or accelerator."""

    processor_type: str | None = None
    """CPU, GPU, FPGA, ..."""
    manufacturer: str | None = None
    model: str | None = None
    """As the BMC says it, padding stripped; None for "N/A" placeholders."""
    socket: str | None = None
    total_cores: int | None = None
    total_threads: int | None = None
    max_speed_mhz: int | None = Field(default=None, alias="MaxSpeedMHz")
    serial_number: str | None = None
    firmware_version: str | None = None
    memory_gib: float | None = Field(default=None, alias="ProcessorMemoryGiB")
    processor_id: dict[str, Any] = Field(default_factory=dict, alias="ProcessorId")
    """VendorId, EffectiveFamily, EffectiveModel, Step, IdentificationRegisters (DMTF Processor.ProcessorId)."""
    memory_summary: dict[str, Any] = Field(default_factory=dict)
    """Processor.MemorySummary: TotalMemorySizeMiB of a GPU's own memory (v1_11+)."""
    processor_memory: list[dict[str, Any]] = Field(default_factory=list)
    """Processor.ProcessorMemory (deprecated): caches and integrated memory, each with CapacityMiB."""
    links: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _model_from_processor_id(cls, data: Any) -> Any:
        """No Model (or a placeholder): the name a BMC gives in ProcessorId.EffectiveFamily, where it gives one."""
        if not isinstance(data, dict) or real_text(data.get("Model")):
            return data
        named = _named_family(data.get("ProcessorId"))
        return {**data, "Model": named} if named else data

    @field_validator("model", "manufacturer", "serial_number", "firmware_version", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str | None:
        return real_text(v)

    @field_validator("processor_id", "memory_summary", "links", mode="before")
    @classmethod
    def _obj(cls, v: Any) -> dict[str, Any]:
        return v if isinstance(v, dict) else {}

    @field_validator("processor_memory", mode="before")
    @classmethod
    def _list(cls, v: Any) -> list[dict[str, Any]]:
        return [m for m in v if isinstance(m, dict)] if isinstance(v, list) else []

    @property
    def identity(self) -> str | None:
        """The CPU as ProcessorId describes it when Model is absent: vendor, family, model, stepping."""
        pid = self.processor_id
        parts = [f"{k.lower()} {real_text(str(pid[key]))}" for key, k in
                 (("EffectiveFamily", "Family"), ("EffectiveModel", "Model"), ("Step", "Stepping"))
                 if pid.get(key) is not None and real_text(str(pid[key]))]
        vendor = real_text(pid.get("VendorId")) or self.manufacturer
        if not parts and not real_text(pid.get("IdentificationRegisters")):
            return None
        regs = real_text(pid.get("IdentificationRegisters"))
        text = " ".join(filter(None, [vendor, *parts]))
        return f"{text} (id {regs})" if regs and not parts else text

    @property
    def own_memory_gib(self) -> float | None:
        """An accelerator's own memory: MemorySummary.TotalMemorySizeMiB, else non-cache ProcessorMemory."""
        if self.memory_gib:
            return self.memory_gib
        total = self.memory_summary.get("TotalMemorySizeMiB")
        if isinstance(total, int | float) and total > 0:
            return round(total / 1024, 1)
        mib = sum(m.get("CapacityMiB") or 0 for m in self.processor_memory
                  if m.get("MemoryType") not in _CACHE and isinstance(m.get("CapacityMiB"), int | float))
        return round(mib / 1024, 1) if mib else None

    @property
    def pcie_device_uri(self) -> str | None:
        """Links.PCIeDevice: where a GPU's board (its name, on some BMCs its only model) is described."""
        ids = link_ids(dig(self.links, "PCIeDevice"))
        return ids[0] if ids else None

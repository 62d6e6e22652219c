"""Processor: CPUs and, on some BMCs, GPUs."""

from __future__ import annotations

from pydantic import Field

from provision.redfish.resources.base import Resource


class Processor(Resource):
    """One socket or accelerator."""

    processor_type: str | None = None
    """CPU, GPU, FPGA, ..."""
    manufacturer: str | None = None
    model: str | None = None
    socket: str | None = None
    total_cores: int | None = None
    total_threads: int | None = None
    max_speed_mhz: int | None = Field(default=None, alias="MaxSpeedMHz")
    serial_number: str | None = None
    firmware_version: str | None = None
    memory_gib: float | None = Field(default=None, alias="ProcessorMemoryGiB")

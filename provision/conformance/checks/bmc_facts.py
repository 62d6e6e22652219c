"""What the BMC checks read from the BMC, typed: the BMC source (provision/conformance/bmc_source.py) builds it,
the checks (bmc) judge it.

Its own module so both import it and neither imports the other's caller.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from provision.redfish.resources import Memory, Power, Thermal
from provision.redfish.resources.bios import AttrValue
from provision.redfish.resources.log import LogEntry
from provision.redfish.vendors import GpuView
from provision.redfish.vendors.base import BiosProof
from provision.spec.platforms import PlatformIdentity


class BiosSetting(BaseModel):
    """One neutral BIOS key resolved on this BMC: the attribute, the wanted and the current value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    attribute: str | None
    wanted: AttrValue | None
    current: AttrValue | None
    proof: BiosProof | None = Field(default=None, description="No attribute: the vendor plugin's other evidence")
    error: str | None = Field(default=None, description="Why the key found no one attribute (several fit)")


class FirmwareSeen(BaseModel):
    """The running versions of one baseline component."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    component: str
    versions: tuple[str, ...]
    entries: int = Field(default=0, description="FirmwareInventory entries matched (some may lack a version)")
    absent: tuple[str, ...] = Field(default=(), description="Entries listed with Status.State Absent: 'id version'")


class BmcFacts(BaseModel):
    """What the checks need from the BMC, typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vendor: str
    bios: tuple[BiosSetting, ...]
    firmware: tuple[FirmwareSeen, ...]
    power: tuple[Power, ...]
    thermal: tuple[Thermal, ...]
    sel: tuple[LogEntry, ...]
    sel_read: bool = Field(default=True, description="False when the BMC exposes no SEL")
    ambient: tuple[str, ...] = Field(default=(), description="Thermal sensors that read the internal ambient")
    inlet: tuple[str, ...] = Field(default=(), description="Thermal sensors that read the chassis inlet")
    memory: tuple[Memory, ...] = Field(default=(), description="The system's Memory members (DIMM slots)")
    gpus: tuple[GpuView, ...] = Field(default=(), description="The GPUs the BMC lists (vendor plugin's find_gpus)")
    identity: PlatformIdentity | None = Field(default=None, description="What the BMC says the node is (None: not "
                                              "read, which is never a pass of bmc.platform)")

"""Counting hardware by identity: a drive, PSU or port the BMC lists in two places is one part.

Pure functions over parsed resources. A part with a serial number is one part wherever it is listed. A drive
without one is known by model + capacity + bay; parts that give too little to tell them apart count once per
listing within one source, and a second source that restates them (SimpleStorage beside Storage, PowerSubsystem
beside Power) adds only the parts it lists beyond the first (the larger count of each model wins), never the
same parts again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from provision.redfish.resources import Drive, NetworkPort, PowerSupply
from provision.redfish.resources.base import real_text

T = TypeVar("T")
Technology = Literal["Ethernet", "InfiniBand", "other", "unknown"]


def controller_protocol(storage: dict[str, Any]) -> str | None:
    """The one device protocol a Storage's controllers state (StorageControllers[].SupportedDeviceProtocols),
    e.g. NVMe for an NVMe backplane; None when they state none or more than one (then nothing is inferred)."""
    protocols = {str(p).upper(): str(p) for c in storage.get("StorageControllers") or [] if isinstance(c, dict)
                 for p in c.get("SupportedDeviceProtocols") or [] if isinstance(p, str) and p.strip()}
    return next(iter(protocols.values())) if len(protocols) == 1 else None


def with_controller_protocol(drive: Drive, stated: dict[str, str]) -> Drive:
    """A drive whose own Protocol is not given takes the one protocol its Storage's controllers attach; a
    drive's own Protocol always stands."""
    proto = stated.get(drive.uri.rstrip("/")) if drive.protocol is None and drive.uri else None
    return drive.model_copy(update={"protocol": proto}) if proto else drive


def drives_by_identity(listed: Sequence[Drive]) -> list[Drive]:
    """Drives of Storage and Chassis, one per identity (serial, else model + capacity + bay); a drive listed
    without enough to identify it stays one per URI. Absent slots and removable media are not drives."""
    out: dict[Hashable, Drive] = {}
    for d in listed:
        if not d.present or d.removable_media:
            continue
        out.setdefault(d.identity or ("uri", d.uri), d)
    return list(out.values())


def _same_model(a: Drive, b: Drive) -> bool:
    same = (a.model or "").upper() == (b.model or "").upper() and a.model is not None
    return same and (a.capacity_bytes is None or b.capacity_bytes is None or a.capacity_bytes == b.capacity_bytes)


def restated(first: Sequence[T], second: Sequence[T], key: Callable[[T], Hashable | None],
             alike: Callable[[T, T], bool]) -> list[T]:
    """`first` plus the parts of `second` that are not in it: same key (a serial) when both have one, else each
    part of `second` takes one unmatched part of `first` that is alike (same model), and only the rest are new."""
    keys = {key(x) for x in first} - {None}
    used: set[int] = set()
    out = list(first)
    for part in second:
        k = key(part)
        if k is not None and k in keys:
            continue
        twin = next((i for i, x in enumerate(first) if i not in used and key(x) is None and alike(x, part)), None)
        if twin is None and k is None:
            twin = next((i for i, x in enumerate(first) if i not in used and alike(x, part)), None)
        if twin is not None:
            used.add(twin)
            continue
        out.append(part)
        if k is not None:
            keys.add(k)
    return out


def merge_simple_storage(drives: Sequence[Drive], devices: Sequence[Drive]) -> list[Drive]:
    """Drives plus the SimpleStorage devices that are not among them (SimpleStorage restates the disks Storage
    describes, without serials: a device is the drive of the same model it matches)."""
    kept = [d for d in devices if d.present and not d.removable_media]
    return restated(list(drives), kept, lambda d: d.identity, _same_model)


def _psu_key(p: PowerSupply) -> Hashable | None:
    serial = real_text(p.serial_number)
    return ("serial", serial.upper()) if serial else None


def _psu_alike(a: PowerSupply, b: PowerSupply) -> bool:
    ma, mb = real_text(a.model), real_text(b.model)
    return ma is None or mb is None or ma.upper() == mb.upper()


def psus_by_identity(legacy: Sequence[PowerSupply], subsystem: Sequence[PowerSupply]) -> list[PowerSupply]:
    """The PSUs of one chassis from Power and PowerSubsystem: PowerSubsystem's when Power lists none, else one
    per identity (serial; without serials the larger listing of each model)."""
    present_legacy = [p for p in legacy if p.present]
    present_sub = [p for p in subsystem if p.present]
    if not present_legacy:
        return list(subsystem)
    return list(legacy) + restated(present_legacy, present_sub, _psu_key, _psu_alike)[len(present_legacy):]


class PortTally(BaseModel):
    """NIC ports by stated link technology; a port that states none is unknown, never guessed."""

    model_config = ConfigDict(frozen=True)

    ethernet: int = 0
    infiniband: int = 0
    other: int = 0
    """Ports that state another technology (FibreChannel, NVLink, ...)."""
    unknown: int = 0

    @property
    def total(self) -> int:
        return self.ethernet + self.infiniband + self.other + self.unknown

    def shown(self) -> str:
        """"Ethernet 3, InfiniBand 1, unknown 8" (other technologies only when some port states one)."""
        other = f", other {self.other}" if self.other else ""
        return f"Ethernet {self.ethernet}, InfiniBand {self.infiniband}{other}, unknown {self.unknown}"


def port_technology(port: NetworkPort) -> Technology:
    """Ethernet or InfiniBand as the port states it (LinkNetworkTechnology, else ActiveLinkTechnology);
    "other" for another stated technology (FibreChannel, ...); unknown when it states none."""
    tech = (real_text(port.technology) or "").lower()
    if not tech:
        return "unknown"
    return {"ethernet": "Ethernet", "infiniband": "InfiniBand"}.get(tech, "other")  # type: ignore[return-value]


def tally(technologies: Sequence[Technology]) -> PortTally:
    c = Counter(technologies)
    return PortTally(ethernet=c["Ethernet"], infiniband=c["InfiniBand"], other=c["other"], unknown=c["unknown"])

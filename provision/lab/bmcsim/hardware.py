"""Hardware faults of one simulated BMC: a hot inlet, a lost PSU, a failed fan, a missing DIMM.

Each edits this BMC's own copy of the resources a real BMC reports the part in (Chassis Thermal and Power,
the ThermalSubsystem / PowerSubsystem members, a Memory member) and puts the saved copies back when the
fault is cleared. What verify reads is then what a BMC shows with that part gone; how verify judges it
is the product's business (provision/conformance/checks/bmc.py), not the simulator's.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator

from provision.lab.bmcsim.faults import Faults
from provision.lab.bmcsim.tree import ROOT, Json, Resources

_INLET = re.compile(r"(?i)\binlet\b")
_CHASSIS_CONTEXTS = (None, "SystemBoard", "Chassis")  # an 'Inlet' of a GPU or a GPU subsystem is not the chassis'
LOST = {"State": "UnavailableOffline", "Health": "Critical"}
ABSENT = {"State": "Absent", "Health": "OK"}


class Hardware:
    """Applies and reverts the hardware faults of one BMC (registered as the Faults' listeners)."""

    __slots__ = ("_changing", "_faults", "_res", "_saved")

    def __init__(self, res: Resources, faults: Faults) -> None:
        self._res = res
        self._faults = faults
        self._saved: dict[str, dict[str, Json]] = {}  # kind -> uri -> the resource before the fault
        self._changing: dict[str, Json] = {}
        apply: dict[str, Callable[[float], None]] = {
            "inlet-hot": self._inlet_hot, "psu-lost": self._psu_lost, "fan-failed": self._fan_failed,
            "dimm-missing": self._dimm_missing}
        for kind, fn in apply.items():
            faults.on_change(kind, lambda on, kind=kind, fn=fn: self._toggle(kind, on, fn))  # type: ignore[misc]

    def _toggle(self, kind: str, on: bool, apply: Callable[[float], None]) -> None:
        for uri, original in self._saved.pop(kind, {}).items():
            self._res.put(uri, original)
        if on:
            value = self._faults.get(kind)
            self._changing = {}
            apply(0.0 if value is None else value)
            self._saved[kind] = self._changing

    def _edit(self, uri: str) -> Json:
        """This BMC's copy of `uri` to change, its original kept for the clear."""
        self._changing.setdefault(uri, copy.deepcopy(self._res.get(uri) or {}))
        obj = self._res.mutable(uri)
        obj.pop("@odata.etag", None)
        return obj

    # --- the faults ---------------------------------------------------------------------------
    def _inlet_hot(self, celsius: float) -> None:
        """Every chassis inlet sensor (PhysicalContext Intake, or named Inlet on the board) reads `celsius`."""
        for uri in self._under("Thermal"):
            temps = (self._res.get(uri) or {}).get("Temperatures") or []
            hits = [i for i, t in enumerate(temps) if _is_inlet(t, temps)]
            if hits:
                obj = self._edit(uri)
                for i in hits:
                    obj["Temperatures"][i]["ReadingCelsius"] = celsius

    def _psu_lost(self, _value: float) -> None:
        """The last PSU that carries load goes UnavailableOffline / Critical (its AC lost); the Redundancy
        group is left as it was, as BMCs that do not recompute it show it."""
        for uri in self._under("Power"):
            supplies = (self._res.get(uri) or {}).get("PowerSupplies") or []
            live = [i for i, p in enumerate(supplies) if (p.get("Status") or {}).get("State") != "Absent"]
            if live:
                self._edit(uri)["PowerSupplies"][live[-1]]["Status"] = dict(LOST)
                return
        self._last_member("PowerSubsystem/PowerSupplies", LOST)

    def _fan_failed(self, _value: float) -> None:
        """The first fan stops: Health Critical, reading 0."""
        for uri in self._under("Thermal"):
            fans = (self._res.get(uri) or {}).get("Fans") or []
            live = [i for i, f in enumerate(fans) if (f.get("Status") or {}).get("State") != "Absent"]
            if live:
                fan = self._edit(uri)["Fans"][live[0]]
                fan["Status"] = {"State": "Enabled", "Health": "Critical"}
                fan["Reading"] = 0
                return
        self._last_member("ThermalSubsystem/Fans", {"State": "Enabled", "Health": "Critical"})

    def _dimm_missing(self, _value: float) -> None:
        """The last populated DIMM of the first system is gone from its slot (Absent, 0 MiB)."""
        for system in self._members(f"{ROOT}/Systems"):
            coll = str(((self._res.get(system) or {}).get("Memory") or {}).get("@odata.id", "")).rstrip("/")
            dimms = [m for m in self._members(coll) if (self._res.get(m) or {}).get("CapacityMiB")]
            if dimms:
                self._edit(dimms[-1]).update(CapacityMiB=0, Status=dict(ABSENT))
                return

    # --- where things are ---------------------------------------------------------------------
    def _members(self, coll: str) -> list[str]:
        body = self._res.get(coll) or {}
        return [str(m["@odata.id"]).rstrip("/") for m in body.get("Members") or [] if isinstance(m, dict)
                and m.get("@odata.id")]

    def _under(self, leaf: str) -> Iterator[str]:
        for chassis in self._members(f"{ROOT}/Chassis"):
            if self._res.exists(f"{chassis}/{leaf}"):
                yield f"{chassis}/{leaf}"

    def _last_member(self, sub: str, status: Json) -> None:
        for coll in self._under(sub):
            members = [m for m in self._members(coll) if ((self._res.get(m) or {}).get("Status") or {})
                       .get("State") != "Absent"]
            if members:
                self._edit(members[-1])["Status"] = dict(status)
                return


def _is_inlet(t: Json, temps: list[Json]) -> bool:
    if any(x.get("PhysicalContext") == "Intake" for x in temps):
        return t.get("PhysicalContext") == "Intake"
    return t.get("PhysicalContext") in _CHASSIS_CONTEXTS and bool(_INLET.search(str(t.get("Name") or "")))

"""ComputerSystem.Reset with timed PowerState transitions, and boot source override."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from provision.lab.bmcsim import events
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import Timings
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.reply import Reply, error, success
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.tree import Json, Resources, norm

RESET_TYPES = ("On", "ForceOn", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart",
               "PowerCycle", "Nmi", "PushPowerButton")
OVERRIDE_ENABLED = ("Disabled", "Once", "Continuous")
OVERRIDE_MODES = ("UEFI", "Legacy")
WRITABLE = {"AssetTag": str, "IndicatorLED": str, "LocationIndicatorActive": bool}


class Power:
    """One computer system's power: PowerState steps over simulated time, hooks on off/on."""

    def __init__(self, node: str, system: str, res: Resources, clock: SimClock, sel: Sel, timings: Timings,
                 on_boot: Callable[[], None], on_power: Callable[[bool], None]) -> None:
        self._node = node
        self.system = system
        self._res = res
        self._clock = clock
        self._sel = sel
        self._t = timings
        self._on_boot = on_boot
        self._on_power = on_power
        self._pending: list[asyncio.TimerHandle] = []
        self._meters = self._power_meters()

    def _power_meters(self) -> dict[str, float]:
        """Chassis Power resources of this system and the draw each shows with the host on."""
        out: dict[str, float] = {}
        links = ((self._res.get(self.system) or {}).get("Links") or {}).get("Chassis") or []
        for link in links:
            chassis = self._res.get(str(link.get("@odata.id", "")).rstrip("/")) or {}
            uri = str((chassis.get("Power") or {}).get("@odata.id", "")).rstrip("/")
            control = ((self._res.get(uri) or {}).get("PowerControl") or [{}])[0]
            if isinstance(control.get("PowerConsumedWatts"), int | float):
                out[uri] = float(control["PowerConsumedWatts"])
        return out

    def _readings(self, state: str) -> None:
        """Power draw follows the host: full when On, standby when Off, half while in transition."""
        share = {"On": 1.0, "Off": 0.03}.get(state, 0.5)
        for uri, watts in self._meters.items():
            self._res.mutable(uri)["PowerControl"][0]["PowerConsumedWatts"] = round(watts * share)

    @property
    def state(self) -> str:
        return str((self._res.get(self.system) or {}).get("PowerState", "On"))

    def _set(self, state: str) -> None:
        self._res.mutable(self.system)["PowerState"] = state
        self._readings(state)
        events.record(self._node, "power", state=state)

    def allowed(self, action: Json) -> tuple[str, ...]:
        """The action's ResetType@Redfish.AllowableValues, else its @Redfish.ActionInfo resource's
        ResetType parameter (Redfish ActionInfo schema; the Supermicro and GH200 captures use it)."""
        listed = action.get("ResetType@Redfish.AllowableValues")
        if not listed and isinstance(action.get("@Redfish.ActionInfo"), str):
            info = self._res.get(norm(action["@Redfish.ActionInfo"])) or {}
            listed = next((p.get("AllowableValues") for p in info.get("Parameters") or []
                           if isinstance(p, dict) and p.get("Name") == "ResetType"), None)
        return tuple(listed) if isinstance(listed, list) and listed else RESET_TYPES

    def reset(self, body: Json, action: Json) -> Reply:
        kind = body.get("ResetType")
        if kind is None:
            return error(400, "ActionParameterMissing", "ComputerSystem.Reset", "ResetType")
        if kind not in self.allowed(action):
            return error(400, "ActionParameterValueNotInList", kind, "ResetType", "ComputerSystem.Reset")
        for handle in self._pending:
            handle.cancel()
        self._pending.clear()
        self._sel.add(f"Host reset requested: {kind}", reset=kind)
        self._plan(str(kind))
        return success()

    def _plan(self, kind: str) -> None:
        on = self.state in ("On", "PoweringOn")
        t = self._t
        if kind in ("On", "ForceOn") or (kind == "PushPowerButton" and not on):
            self._steps([(0, "PoweringOn"), (t.power_on, "On")])
        elif kind == "ForceOff" or (kind == "PushPowerButton" and on):
            self._steps([(0, "PoweringOff"), (t.power_off, "Off")])
        elif kind == "GracefulShutdown":
            self._steps([(0, "PoweringOff"), (t.graceful_shutdown, "Off")])
        elif kind in ("ForceRestart", "PowerCycle", "GracefulRestart") and on:
            down = t.graceful_shutdown if kind == "GracefulRestart" else t.power_off
            self._steps([(0, "PoweringOff"), (down, "Off"), (0.5, "PoweringOn"), (t.power_on, "On")])
        elif kind in ("ForceRestart", "PowerCycle", "GracefulRestart"):
            self._steps([(0, "PoweringOn"), (t.power_on, "On")])

    def _steps(self, steps: list[tuple[float, str]]) -> None:
        at = 0.0
        for delay, state in steps:
            at += delay
            if at == 0:
                self._enter(state)
            else:
                self._pending.append(self._clock.later(at, lambda s=state: self._enter(s)))  # type: ignore[misc]

    def _enter(self, state: str) -> None:
        before = self.state
        if state == before:
            return
        self._set(state)
        if state == "PoweringOn" and before in ("Off", "PoweringOff"):
            self._on_power(True)
        if state == "Off":
            self._on_power(False)
            self._sel.add("Host powered off")
        if state == "On":
            self._sel.add("Host powered on; reset complete")
            self._on_boot()

    def start_off(self) -> None:
        """The host is off when the BMC starts (whatever the captured tree says)."""
        self._set("Off")

    def host_off(self, why: str) -> None:
        """The host turned itself off (its OS powered down, or it died): Off now, whatever was planned."""
        for handle in self._pending:
            handle.cancel()
        self._pending.clear()
        if self.state != "Off":
            self._sel.add(f"Host powered off by itself ({why})")
            self._enter("Off")

    def patch(self, body: Json) -> list[Json]:
        """PATCH of the system: boot override and a few plain properties; errors, nothing applied if any."""
        errors: list[Json] = []
        cur = self._res.get(self.system) or {}
        for key, val in body.items():
            if key.startswith("@"):
                continue
            if key == "Boot" and isinstance(val, dict):
                errors += self._check_boot(cur.get("Boot") or {}, val)
            elif key in WRITABLE:
                if not isinstance(val, WRITABLE[key]):
                    errors.append(message("PropertyValueTypeError", val, key, related=[f"/{key}"]))
            elif key in cur:
                errors.append(message("PropertyNotWritable", key, related=[f"/{key}"]))
            else:
                errors.append(message("PropertyUnknown", key, related=[f"/{key}"]))
        if errors:
            return errors
        sys_res = self._res.mutable(self.system)
        for key, val in body.items():
            if key == "Boot":
                sys_res.setdefault("Boot", {}).update(val)
            elif key in WRITABLE:
                sys_res[key] = val
        events.record(self._node, "system.patch", keys=sorted(body))
        return []

    def _check_boot(self, boot: Json, val: Json) -> list[Json]:
        allowed = {
            "BootSourceOverrideEnabled": OVERRIDE_ENABLED,
            "BootSourceOverrideMode": OVERRIDE_MODES,
            "BootSourceOverrideTarget": tuple(boot.get("BootSourceOverrideTarget@Redfish.AllowableValues")
                                              or ("None", "Pxe", "Cd", "Hdd", "Usb", "BiosSetup")),
        }
        errors = []
        for key, v in val.items():
            prop = f"/Boot/{key}"
            if key not in allowed:
                known = key in boot
                errors.append(message("PropertyNotWritable" if known else "PropertyUnknown", key, related=[prop]))
            elif not isinstance(v, str):
                errors.append(message("PropertyValueTypeError", v, key, related=[prop]))
            elif v not in allowed[key]:
                errors.append(message("PropertyValueNotInList", v, key, related=[prop]))
        return errors

    def consume_boot_once(self) -> None:
        boot = (self._res.get(self.system) or {}).get("Boot") or {}
        if boot.get("BootSourceOverrideEnabled") == "Once":
            self._res.mutable(self.system)["Boot"]["BootSourceOverrideEnabled"] = "Disabled"
            self._sel.add(f"Boot override Once consumed: {boot.get('BootSourceOverrideTarget')}")

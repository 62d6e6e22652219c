"""Power: observe PowerState, plan the reset action(s), apply and wait for the state; boot override;
virtual media."""

from __future__ import annotations

import contextlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

from provision.errors import InputError
from provision.redfish.connector import Connector
from provision.redfish.errors import RedfishBadRequest, RedfishError, RedfishTimeout
from provision.redfish.ops.session import Node
from provision.redfish.ops.waiting import Clock, wait_for
from provision.redfish.resources import ComputerSystem

Target = Literal["on", "off", "graceful", "cycle"]
ON_STATES = ("On",)


class PowerAction(BaseModel):
    """One ComputerSystem.Reset and the PowerState it should end in."""

    model_config = ConfigDict(frozen=True)

    reset_type: str
    expect: Literal["On", "Off"]


def plan(target: Target, state: str | None, allowed: tuple[str, ...]) -> list[PowerAction]:
    """Pure: the resets that take PowerState `state` to `target` (empty when already there)."""
    allowed = allowed or ("On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle")
    on = state in ON_STATES
    if target == "on":
        return [] if on else [PowerAction(reset_type=_pick(allowed, "On", "ForceOn"), expect="On")]
    if target == "off":
        return [PowerAction(reset_type=_pick(allowed, "ForceOff"), expect="Off")] if on or state != "Off" else []
    if target == "graceful":
        return [PowerAction(reset_type=_pick(allowed, "GracefulShutdown"), expect="Off")] if state != "Off" else []
    if not on:
        return [PowerAction(reset_type=_pick(allowed, "On", "ForceOn"), expect="On")]
    for kind in ("PowerCycle", "ForceRestart"):
        if kind in allowed:
            return [PowerAction(reset_type=kind, expect="On")]
    return [PowerAction(reset_type=_pick(allowed, "ForceOff"), expect="Off"),
            PowerAction(reset_type=_pick(allowed, "On", "ForceOn"), expect="On")]


def _pick(allowed: tuple[str, ...], *wanted: str) -> str:
    for w in wanted:
        if w in allowed:
            return w
    raise RedfishBadRequest(f"the BMC offers none of the reset types {list(wanted)} (has {list(allowed)})")


def power_state(conn: Connector, system_uri: str) -> str | None:
    return ComputerSystem.parse(conn.get(system_uri)).power_state


def apply(node: Node, actions: list[PowerAction], clock: Clock, timeout_s: float = 300,
          first_poll_at: float = 0.0) -> str | None:
    """Send each reset and wait for its PowerState; returns the final state. `first_poll_at` (a
    clock.now() time): the whole sequence is known not to end before then, so its last state is first
    polled then."""
    target = node.system.reset_target or f"{node.system.uri}/Actions/ComputerSystem.Reset"
    state = node.system.power_state
    for i, act in enumerate(actions):
        node.conn.post(target, {"ResetType": act.reset_type})
        state = wait_power(node, act, clock, timeout_s, first_poll_at if i == len(actions) - 1 else 0.0)
    return state


def wait_power(node: Node, act: PowerAction, clock: Clock, timeout_s: float, first_poll_at: float = 0.0) -> str:
    """Wait for `act.expect` (first polled at `first_poll_at`, a clock.now() time); for a restart, wait
    to see the host leave On first (briefly)."""
    uri = node.system.uri
    if act.reset_type in ("PowerCycle", "ForceRestart", "GracefulRestart"):
        with contextlib.suppress(RedfishTimeout):  # a fast BMC may restart between two polls
            wait_for(lambda: True if power_state(node.conn, uri) != "On" else None, min(timeout_s, 30),
                     "host leaving On", clock)
    clock.sleep(max(0.0, first_poll_at - clock.now()))
    return wait_for(lambda: act.expect if power_state(node.conn, uri) == act.expect else None, timeout_s,
                    f"{node.conn.opts.where}: PowerState {act.expect} after {act.reset_type}", clock)


def host_reset(node: Node, clock: Clock, timeout_s: float = 600, first_poll_at: float = 0.0) -> str | None:
    """The one host reset that applies staged BIOS settings and OnReset firmware (see apply)."""
    state = power_state(node.conn, node.system.uri)
    return apply(node, plan("cycle", state, node.system.reset_types), clock, timeout_s, first_poll_at)


# ---- boot override and virtual media -------------------------------------------------------------
def boot_once(node: Node, target: str, mode: str | None = None) -> None:
    """One-time boot override (e.g. Pxe, Cd, BiosSetup)."""
    allowed = node.system.boot.allowed_targets
    if allowed and target not in allowed:
        raise InputError(f"boot target {target!r} not offered by {node.conn.opts.where} (has {list(allowed)})")
    boot: dict[str, str] = {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": target}
    if mode:
        boot["BootSourceOverrideMode"] = mode
    node.conn.patch(node.system.uri, {"Boot": boot})


def virtual_media(node: Node, image: str | None) -> str:
    """Insert `image` (URL) into the first CD/DVD virtual drive, or eject when image is None."""
    conn = node.conn
    sys_json = conn.get(node.system.uri)
    candidates = [sys_json.get("VirtualMedia")]
    if node.manager_uri:
        candidates.append((conn.get(node.manager_uri) or {}).get("VirtualMedia"))
    for ref in candidates:
        if not isinstance(ref, dict) or not ref.get("@odata.id"):
            continue
        for media in conn.members(str(ref["@odata.id"])):
            types = media.get("MediaTypes") or []
            if not any(t in ("CD", "DVD") for t in types):
                continue
            acts = media.get("Actions") or {}
            uri = str(media["@odata.id"])
            if image is None:
                target = (acts.get("#VirtualMedia.EjectMedia") or {}).get("target") or \
                    f"{uri}/Actions/VirtualMedia.EjectMedia"
                conn.post(target, {})
            else:
                target = (acts.get("#VirtualMedia.InsertMedia") or {}).get("target") or \
                    f"{uri}/Actions/VirtualMedia.InsertMedia"
                conn.post(target, {"Image": image, "Inserted": True, "WriteProtected": True})
            return uri
    raise RedfishError(f"{conn.opts.where}: no CD/DVD virtual media found")

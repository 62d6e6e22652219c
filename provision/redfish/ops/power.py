"""Power: observe PowerState, plan the reset action(s), apply and wait for the state; boot override;
virtual media."""

from __future__ import annotations

import contextlib
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from provision.errors import InputError
from provision.redfish import allowable
from provision.redfish.connector import Connector
from provision.redfish.errors import RedfishBadRequest, RedfishError, RedfishNoAnswer, RedfishTimeout
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


ASSUMED = ("On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle")


def plan(target: Target, state: str | None, allowed: tuple[str, ...], where: str = "the BMC") -> list[PowerAction]:
    """Pure: the resets that take PowerState `state` to `target` (empty when already there), using only
    the reset types in `allowed` (what the BMC offers, see reset_types); a cycle is PowerCycle, else
    ForceRestart, else ForceOff then On. When the BMC does not say, the common set ASSUMED is."""
    allowed = allowed or ASSUMED
    pick = lambda *wanted: _pick(allowed, where, *wanted)  # noqa: E731
    on = state in ON_STATES
    if target == "on":
        return [] if on else [PowerAction(reset_type=pick("On", "ForceOn"), expect="On")]
    if target == "off":
        return [PowerAction(reset_type=pick("ForceOff"), expect="Off")] if on or state != "Off" else []
    if target == "graceful":
        return [PowerAction(reset_type=pick("GracefulShutdown"), expect="Off")] if state != "Off" else []
    if not on:
        return [PowerAction(reset_type=pick("On", "ForceOn"), expect="On")]
    for kind in ("PowerCycle", "ForceRestart"):
        if kind in allowed:
            return [PowerAction(reset_type=kind, expect="On")]
    return [PowerAction(reset_type=pick("ForceOff"), expect="Off"),
            PowerAction(reset_type=pick("On", "ForceOn"), expect="On")]


def _pick(allowed: tuple[str, ...], where: str, *wanted: str) -> str:
    for w in wanted:
        if w in allowed:
            return w
    raise RedfishBadRequest(f"{where}: offers none of the reset types {list(wanted)} (it offers {list(allowed)})")


def reset_types(node: Node) -> tuple[str, ...]:
    """The ResetTypes the system's ComputerSystem.Reset accepts: inline AllowableValues, else its
    @Redfish.ActionInfo; () when the BMC says neither."""
    return allowable.action_values(node.conn, node.system.actions.get("#ComputerSystem.Reset"), "ResetType")


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
        lost = _send_reset(node, target, act)
        try:
            state = wait_power(node, act, clock, timeout_s, first_poll_at if i == len(actions) - 1 else 0.0)
        except RedfishTimeout as exc:
            if lost is None:
                raise
            raise RedfishNoAnswer(f"{lost}; read back, PowerState did not become {act.expect} ({exc})",
                                  uri=lost.uri) from None
    return state


RESTARTS = ("PowerCycle", "ForceRestart", "GracefulRestart")


def _send_reset(node: Node, target: str, act: PowerAction) -> RedfishNoAnswer | None:
    """POST the reset. One whose answer was lost is read back by the wait that follows when it changes
    PowerState (On from Off, Off from On): returned, not raised. A restart ends in the state it began in,
    so its lost answer cannot be read back: raised."""
    try:
        node.conn.post(target, {"ResetType": act.reset_type})
    except RedfishNoAnswer as exc:
        if act.reset_type in RESTARTS:
            raise
        return exc
    return None


def wait_power(node: Node, act: PowerAction, clock: Clock, timeout_s: float, first_poll_at: float = 0.0) -> str:
    """Wait for `act.expect` (first polled at `first_poll_at`, a clock.now() time); for a restart, wait
    to see the host leave On first (briefly)."""
    uri = node.system.uri
    restart = act.reset_type in RESTARTS
    with node.conn.waiting(timeout_s + (min(timeout_s, 30) if restart else 0) + max(0.0, first_poll_at - clock.now())):
        if restart:
            with contextlib.suppress(RedfishTimeout):  # a fast BMC may restart between two polls
                wait_for(lambda: True if power_state(node.conn, uri) != "On" else None, min(timeout_s, 30),
                         "host leaving On", clock)
        clock.sleep(max(0.0, first_poll_at - clock.now()))
        return wait_for(lambda: act.expect if power_state(node.conn, uri) == act.expect else None, timeout_s,
                        f"{node.conn.opts.where}: PowerState {act.expect} after {act.reset_type}", clock)


def host_reset(node: Node, clock: Clock, timeout_s: float = 600, first_poll_at: float = 0.0) -> str | None:
    """The one host reset that applies staged BIOS settings and OnReset firmware (see apply)."""
    state = power_state(node.conn, node.system.uri)
    return apply(node, plan("cycle", state, reset_types(node), node.conn.opts.where), clock, timeout_s,
                 first_poll_at)


# ---- boot override and virtual media -------------------------------------------------------------
def boot_once(node: Node, target: str, mode: str | None = None) -> None:
    """One-time boot override (e.g. Pxe, Cd, BiosSetup), each value checked against the Boot object's
    @Redfish.AllowableValues and sent in the BMC's own spelling; nothing is sent when one is not offered."""
    where = node.conn.opts.where
    raw = node.conn.get(node.system.uri).get("Boot")
    boot_json = raw if isinstance(raw, dict) else {}
    try:
        boot: dict[str, str] = {
            "BootSourceOverrideEnabled": allowable.offered(
                "Once", allowable.inline(boot_json, "BootSourceOverrideEnabled"), "BootSourceOverrideEnabled", where),
            "BootSourceOverrideTarget": allowable.offered(
                target, allowable.inline(boot_json, "BootSourceOverrideTarget") or node.system.boot.allowed_targets,
                "boot target", where),
        }
        if mode:
            boot["BootSourceOverrideMode"] = allowable.offered(
                mode, allowable.inline(boot_json, "BootSourceOverrideMode"), "boot mode", where)
    except RedfishBadRequest as exc:
        raise InputError(str(exc)) from None
    node.conn.patch(node.system.uri, {"Boot": boot})


class MediaSlot(BaseModel):
    """One virtual media drive the BMC offers: its URI, media types, and what it holds."""

    model_config = ConfigDict(frozen=True)

    uri: str
    types: tuple[str, ...]
    image: str | None = None
    inserted: bool = False
    insert_target: str = ""
    eject_target: str = ""

    @property
    def is_cd(self) -> bool:
        return any(t in ("CD", "DVD") for t in self.types)


def media_slots(node: Node) -> list[MediaSlot]:
    """The virtual media drives of the system and of its manager, in the BMC's order, each once (both often
    link the same collection)."""
    conn = node.conn
    candidates = [conn.get(node.system.uri).get("VirtualMedia")]
    if node.manager_uri:
        candidates.append((conn.get(node.manager_uri) or {}).get("VirtualMedia"))
    slots: list[MediaSlot] = []
    for ref in candidates:
        if not isinstance(ref, dict) or not ref.get("@odata.id"):
            continue
        for media in conn.members(str(ref["@odata.id"])):
            uri = str(media["@odata.id"])
            if any(s.uri == uri for s in slots):
                continue
            acts = media.get("Actions") or {}
            slots.append(MediaSlot(
                uri=uri, types=tuple(str(t) for t in media.get("MediaTypes") or []),
                image=media.get("Image") or None, inserted=bool(media.get("Inserted")),
                insert_target=(acts.get("#VirtualMedia.InsertMedia") or {}).get("target")
                or f"{uri}/Actions/VirtualMedia.InsertMedia",
                eject_target=(acts.get("#VirtualMedia.EjectMedia") or {}).get("target")
                or f"{uri}/Actions/VirtualMedia.EjectMedia"))
    return slots


def insert_media(node: Node, slot: MediaSlot, image: str) -> None:
    """Insert `image` (URL) into `slot`. A drive that holds media is ejected first, as Ironic and Ansible's
    redfish_command do: many BMCs refuse an insert into a full drive (iDRAC: VRM0012), and the image is
    then fetched afresh. An insert whose answer was lost is read back: done when the drive holds `image`."""
    if slot.inserted:
        eject_media(node, slot)
    try:
        node.conn.post(slot.insert_target, {"Image": image, "Inserted": True, "WriteProtected": True})
    except RedfishNoAnswer as exc:
        if _without_userinfo(_holding(node, slot.uri)) != _without_userinfo(image):
            raise RedfishNoAnswer(f"{exc}; read back, {slot.uri} does not hold the image",
                                  uri=exc.uri, status=exc.status) from None


def eject_media(node: Node, slot: MediaSlot) -> None:
    """EjectMedia; one whose answer was lost is read back: done when the drive holds nothing."""
    try:
        node.conn.post(slot.eject_target, {})
    except RedfishNoAnswer as exc:
        if _holding(node, slot.uri) is not None:
            raise RedfishNoAnswer(f"{exc}; read back, {slot.uri} still holds media", uri=exc.uri,
                                  status=exc.status) from None


def _without_userinfo(url: str | None) -> str | None:
    """The URL as a BMC may show it back: without the user and password some BMCs strip from Image."""
    if url is None:
        return None
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _holding(node: Node, uri: str) -> str | None:
    """The image the drive at `uri` holds now (None: empty), read afresh."""
    media = node.conn.get(uri)
    image = media.get("Image")
    return str(image) if media.get("Inserted") and image else None


def virtual_media(node: Node, image: str | None) -> str:
    """Insert `image` (URL) into the first CD/DVD virtual drive, or eject when image is None."""
    for slot in media_slots(node):
        if not slot.is_cd:
            continue
        if image is None:
            eject_media(node, slot)
        else:
            insert_media(node, slot, image)
        return slot.uri
    raise RedfishError(f"{node.conn.opts.where}: no CD/DVD virtual media found")

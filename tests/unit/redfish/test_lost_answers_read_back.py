"""Virtual media and resets as real BMCs behave: a full drive refuses an insert (iDRAC: VRM0012), so what it holds is
ejected first; an InsertMedia, EjectMedia or power change whose answer was lost is read back, never assumed
and never sent twice.

The connector runs for real on a fake transport (test_post_once's): a BMC with one CD drive whose POSTs
can be carried out and then lose their answer ("lost") or be dropped unread ("unsent")."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import RemoteDisconnected
from types import SimpleNamespace
from typing import Any

import pytest
import urllib3

from provision.redfish.errors import RedfishBadRequest, RedfishNoAnswer
from provision.redfish.ops import power
from provision.redfish.ops.waiting import Clock
from tests.unit.redfish.test_post_once import _answer, _node

CD = "/redfish/v1/Managers/1/VirtualMedia/CD1"
INSERT = f"{CD}/Actions/VirtualMedia.InsertMedia"
EJECT = f"{CD}/Actions/VirtualMedia.EjectMedia"
OLD = "http://images.example/old.iso"
NEW = "http://images.example/installer.iso"


@dataclass
class MediaBmc:
    """One CD drive. `faults`: what happens to each POST in turn ("lost", "unsent", "ok"); `shows`: how it
    shows an inserted URL back (some BMCs drop the user and password)."""

    image: str | None = None
    faults: list[str] = field(default_factory=list)
    posts: list[str] = field(default_factory=list)
    shows: Callable[[str], str] = field(default=lambda url: url)

    def urlopen(self, method: str, path: str, body: bytes | None = None, **_: Any) -> Any:
        if method == "GET":
            return _answer(200, {"@odata.id": CD, "MediaTypes": ["CD", "DVD"], "Image": self.image,
                                 "Inserted": self.image is not None})
        fault = self.faults.pop(0) if self.faults else "ok"
        self.posts.append(path.rsplit(".", 1)[-1])
        if fault == "unsent":
            raise urllib3.exceptions.ProtocolError("Connection aborted.", RemoteDisconnected("closed"))
        if path == INSERT and self.image is not None:  # a full drive refuses, as iDRAC does (VRM0012)
            return _answer(400, {"error": {"code": "Base.1.8.GeneralError", "message": "VRM0012: already attached"}})
        self.image = self.shows(json.loads(body or b"{}")["Image"]) if path == INSERT else None
        if fault == "lost":
            raise urllib3.exceptions.ProtocolError("Connection aborted.", RemoteDisconnected("closed"))
        return _answer(204, {})


def slot(bmc: MediaBmc) -> power.MediaSlot:
    return power.MediaSlot(uri=CD, types=("CD", "DVD"), image=bmc.image, inserted=bmc.image is not None,
                           insert_target=INSERT, eject_target=EJECT)


def test_what_a_full_drive_holds_is_ejected_before_the_insert() -> None:
    bmc = MediaBmc(image=OLD)
    power.insert_media(_node(bmc), slot(bmc), NEW)  # type: ignore[arg-type]
    assert bmc.posts == ["EjectMedia", "InsertMedia"] and bmc.image == NEW


def test_an_empty_drive_gets_the_insert_only() -> None:
    bmc = MediaBmc()
    power.insert_media(_node(bmc), slot(bmc), NEW)  # type: ignore[arg-type]
    assert bmc.posts == ["InsertMedia"] and bmc.image == NEW


@pytest.mark.parametrize("shows", [lambda url: url, lambda url: url.replace("op:secret@", "")],
                         ids=["as-sent", "without-userinfo"])
def test_an_insert_carried_out_whose_answer_was_lost_is_read_back_as_done(shows: Any) -> None:
    bmc = MediaBmc(faults=["lost"], shows=shows)
    url = "http://op:secret@images.example/installer.iso"
    power.insert_media(_node(bmc), slot(bmc), url)  # type: ignore[arg-type]
    assert bmc.posts == ["InsertMedia"] and bmc.image is not None  # sent once, not again


def test_an_insert_lost_before_the_bmc_read_it_is_reported_naming_the_drive_and_not_resent() -> None:
    bmc = MediaBmc(faults=["unsent"])
    with pytest.raises(RedfishNoAnswer, match=f"node07 .*POST {INSERT}.*read back, {CD} does not hold the image"):
        power.insert_media(_node(bmc), slot(bmc), NEW)  # type: ignore[arg-type]
    assert bmc.posts == ["InsertMedia"] and bmc.image is None


def test_an_eject_whose_answer_was_lost_is_read_back() -> None:
    done = MediaBmc(image=OLD, faults=["lost"])
    power.eject_media(_node(done), slot(done))  # type: ignore[arg-type]
    assert done.image is None
    stuck = MediaBmc(image=OLD, faults=["unsent"])
    with pytest.raises(RedfishNoAnswer, match=f"read back, {CD} still holds media"):
        power.eject_media(_node(stuck), slot(stuck))  # type: ignore[arg-type]


def test_a_refused_insert_still_raises_as_refused() -> None:
    bmc = MediaBmc(image=OLD, faults=["unsent"])  # the eject never reached it: the drive stays full
    with pytest.raises(RedfishNoAnswer):
        power.insert_media(_node(bmc), slot(bmc), NEW)  # type: ignore[arg-type]
    assert bmc.posts == ["EjectMedia"]
    full = MediaBmc(image=OLD)
    with pytest.raises(RedfishBadRequest, match="VRM0012"):  # the slot as read before someone else inserted
        power.insert_media(_node(full), slot(MediaBmc()), NEW)  # type: ignore[arg-type]


# ---- a reset whose answer was lost -----------------------------------------------------------------
SYSTEM = "/redfish/v1/Systems/1"
RESET = f"{SYSTEM}/Actions/ComputerSystem.Reset"


@dataclass
class PowerBmc:
    """A host's PowerState; each Reset POST in turn "lost" (carried out, answer dropped) or "unsent"."""

    state: str
    faults: list[str] = field(default_factory=list)
    posts: int = 0

    def urlopen(self, method: str, path: str, body: bytes | None = None, **_: Any) -> Any:
        if method == "GET":
            return _answer(200, {"@odata.id": SYSTEM, "PowerState": self.state})
        fault = self.faults.pop(0) if self.faults else "ok"
        self.posts += 1
        if fault != "unsent":
            kind = json.loads(body or b"{}")["ResetType"]
            self.state = "Off" if kind in ("ForceOff", "GracefulShutdown") else "On"
        if fault in ("lost", "unsent"):
            raise urllib3.exceptions.ProtocolError("Connection aborted.", RemoteDisconnected("closed"))
        return _answer(204, {})


def power_node(bmc: PowerBmc) -> Any:
    node = _node(bmc)  # type: ignore[arg-type]
    node.system = SimpleNamespace(uri=SYSTEM, reset_target=RESET, power_state=bmc.state)
    return node


def fake_clock() -> Clock:
    return Clock(poll_s=1.0, sleep=lambda s: None, now=iter(range(100000)).__next__)  # type: ignore[arg-type]


@pytest.mark.parametrize(("before", "act"), [("Off", power.PowerAction(reset_type="On", expect="On")),
                                             ("On", power.PowerAction(reset_type="ForceOff", expect="Off"))])
def test_a_power_change_whose_answer_was_lost_is_read_back_from_powerstate(before: str,
                                                                            act: power.PowerAction) -> None:
    bmc = PowerBmc(state=before, faults=["lost"])
    assert power.apply(power_node(bmc), [act], fake_clock(), timeout_s=60) == act.expect
    assert bmc.posts == 1  # read back, not sent again


def test_a_power_change_that_never_happened_is_reported_naming_the_reset_after_the_wait() -> None:
    bmc = PowerBmc(state="Off", faults=["unsent"])
    with pytest.raises(RedfishNoAnswer, match=f"POST {RESET}.*read back, PowerState did not become On"):
        power.apply(power_node(bmc), [power.PowerAction(reset_type="On", expect="On")], fake_clock(), timeout_s=60)
    assert bmc.posts == 1


def test_a_restart_whose_answer_was_lost_is_reported_at_once_it_cannot_be_read_back() -> None:
    bmc = PowerBmc(state="On", faults=["lost"])
    clock = fake_clock()
    with pytest.raises(RedfishNoAnswer, match=f"POST {RESET}"):
        power.apply(power_node(bmc), [power.PowerAction(reset_type="ForceRestart", expect="On")], clock, 60)
    assert bmc.posts == 1 and clock.now() < 5  # no wait: On before and after tells nothing

"""The os stage's apply against a fake BMC and host: a whole install journals every step in order, the host
key SSH must present is the one the seed medium carried, the private key never reaches a log, a file of
another mode or a directory left behind; and a kill at each point of the install resumes where the journal
says (observe -> plan -> apply again), ending with the same node as an uninterrupted run.

The fake host is a state machine behind monkeypatched Redfish calls: a CD boot with the installer inserted
runs the "installer" (it downloads the seed from the stage's ImageServer, as a BMC does, and takes the
host key from it), which powers the host off a few polls later; a disk boot runs the installed OS, which
answers SSH with the key it was given.
"""

from __future__ import annotations

import contextlib
import logging
import re
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.bringup import failpoint
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages import os_stage
from provision.bringup.stages.os_plan import ORDER, OsObserved, Ssh
from provision.bringup.stages.os_stage import OsStage
from provision.journal import Journal
from provision.redfish.ops import power
from provision.remote import hostkeys
from provision.spec import HostEntry, SshEndpoint
from tests.unit.bringup.isos import isos

URL = "http://images.example/install.iso"
CD = power.MediaSlot(uri="/redfish/v1/Managers/1/VirtualMedia/CD1", types=("CD", "DVD"))
USB = power.MediaSlot(uri="/redfish/v1/Managers/1/VirtualMedia/USB1", types=("USBStick",))
pytestmark = pytest.mark.skipif(os_stage.seed_tool() is None, reason="needs xorriso or genisoimage")
__all__ = ["isos"]  # the fixture


class Killed(BaseException):
    """What the failpoint does here instead of SIGKILL: leaves the journal as a kill would."""


@dataclass
class FakeHost:
    power: str = "Off"
    override: str = ""
    media: dict[str, str] = field(default_factory=dict)
    running: str = ""  # "installer" or "os"
    polls_left: int = 0
    installed_key: str = ""
    installs: int = 0
    seed: bytes = b""
    calls: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.calls.append(f"reset {self.override or '-'}")
        boot, self.override = self.override, ""  # Once: consumed by the start
        self.power = "On"
        if boot == "Cd" and CD.uri in self.media:
            self.running, self.polls_left, self.installs = "installer", 3, self.installs + 1
            found = re.search(rb"ssh-ed25519 [A-Za-z0-9+/=]+", self.seed)
            assert found, "the seed carries no public host key"
            self.installed_key = found.group().decode()
        else:
            self.running = "os" if self.installed_key else ""

    def state(self) -> str:
        if self.running == "installer":
            self.polls_left -= 1
            if self.polls_left <= 0:
                self.power, self.running = "Off", ""
        return self.power

    def ssh(self, known_hosts: Path, pattern: str) -> Ssh:
        if self.power != "On" or self.running != "os":
            return Ssh.DOWN
        return Ssh.OK if hostkeys.expected_key(known_hosts, pattern) == self.installed_key else Ssh.WRONG_KEY

    def slots(self) -> list[power.MediaSlot]:
        return [s.model_copy(update={"inserted": s.uri in self.media, "image": self.media.get(s.uri)})
                for s in (CD, USB)]


@pytest.fixture
def rig(make_host: Callable[..., HostEntry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    fake = FakeHost()
    host = make_host().model_copy(update={"ssh": SshEndpoint(host="127.0.0.1", port=2222,
                                                             known_hosts=tmp_path / "known_hosts")})
    monkeypatch.setattr(os_stage.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))

    @contextlib.contextmanager
    def fake_bmc(ctx: StageContext, opts: BringupOptions) -> Iterator[Any]:
        yield SimpleNamespace(conn=SimpleNamespace(waiting=lambda seconds: contextlib.nullcontext()),
                              system=SimpleNamespace(uri="/redfish/v1/Systems/1"))

    def insert(node: Any, slot: power.MediaSlot, image: str) -> None:
        fake.calls.append(f"insert {slot.uri.rsplit('/', 1)[-1]}")
        fake.media[slot.uri] = image
        if slot.uri == USB.uri:  # the BMC copies the image at insert time, as the lab's VM host does
            with urllib.request.urlopen(image, timeout=10) as resp:
                fake.seed = resp.read()

    def eject(node: Any, slot: power.MediaSlot) -> None:
        fake.calls.append(f"eject {slot.uri.rsplit('/', 1)[-1]}")
        fake.media.pop(slot.uri, None)

    def boot_once(node: Any, target: str) -> None:
        fake.override = target

    monkeypatch.setattr(os_stage, "bmc", fake_bmc)
    monkeypatch.setattr(os_stage.power, "media_slots", lambda node: fake.slots())
    monkeypatch.setattr(os_stage.power, "insert_media", insert)
    monkeypatch.setattr(os_stage.power, "eject_media", eject)
    monkeypatch.setattr(os_stage.power, "boot_once", boot_once)
    monkeypatch.setattr(os_stage.power, "host_reset", lambda node, clock, timeout: fake.reset())
    monkeypatch.setattr(os_stage, "_wait_off", lambda node, clock, timeout, where: _until_off(fake))
    monkeypatch.setattr(os_stage, "_first_boot", lambda host, timeout, where: _until_ssh(fake, host))
    stage = OsStage(BringupOptions(inventory=Path("inventory/hosts.yml"), os_image=URL, poll_s=0.01))
    monkeypatch.setattr(stage, "_probe", lambda h: (fake.ssh(tmp_path / "known_hosts", "[127.0.0.1]:2222"), "x"))
    monkeypatch.setattr(stage, "_refusals", lambda ctx, installer: ())
    monkeypatch.setattr(os_stage.power, "power_state", lambda conn, uri: fake.state())
    with Journal(tmp_path / "journal.db") as journal:
        yield fake, host, stage, journal, tmp_path


def _until_off(fake: FakeHost) -> None:
    for _ in range(10):
        if fake.state() == "Off":
            return
    raise os_stage.InstallFailed("never off")


def _until_ssh(fake: FakeHost, host: HostEntry) -> None:
    assert host.ssh is not None and host.ssh.known_hosts is not None
    if fake.ssh(host.ssh.known_hosts, "[127.0.0.1]:2222") is not Ssh.OK:
        raise os_stage.InstallFailed(f"{host.name}: os-first-boot: no SSH with the seeded host key")


def _pass(stage: OsStage, host: HostEntry, journal: Journal) -> tuple[OsObserved, list[str]]:
    """observe -> plan -> apply once, as the engine does; returns the observation and the planned kinds."""
    ctx = StageContext(host=host, journal=journal, run_id=journal.start_run("bringup", host.name))
    observed = stage.observe(ctx)
    plan = stage.plan(host, observed)
    if plan.actions:
        stage.apply(ctx, plan)
    return observed, [a.kind for a in plan.actions]


def test_a_whole_install_then_a_second_run_changes_nothing(rig: Any, caplog: pytest.LogCaptureFixture) -> None:
    fake, host, stage, journal, tmp = rig
    caplog.set_level(logging.DEBUG)
    _, kinds = _pass(stage, host, journal)
    assert kinds == [s.value for s in ORDER]
    records = journal.actions(host.name, stage="os")
    assert [(r.action, r.outcome) for r in records] == [(s.value, "ok") for s in ORDER]
    known = hostkeys.expected_key(tmp / "known_hosts", "[127.0.0.1]:2222")
    assert known == fake.installed_key  # the key SSH presents is the one made here, and nothing came back
    assert records[0].target == f"host {hostkeys.fingerprint(known)}"
    assert fake.calls == ["insert CD1", "insert USB1", "reset Cd", "eject CD1", "eject USB1", "reset Hdd"]
    assert not list((tmp / "tmp").glob("provision-os-seed-*/*")), "the key pair or seed was left behind"
    assert "PRIVATE KEY" not in caplog.text and "ed25519_private" not in caplog.text
    observed, kinds = _pass(stage, host, journal)
    assert observed.ssh is Ssh.OK and kinds == [] and fake.installs == 1


KILLS = [(s.value, when) for s in ORDER for when in ("before", "after")]
# where the next run goes on after the kill: a fresh install before the installer was started, the rest of
# this one after (the reset sent and journaled, or sent and not: the host is then seen On, installing)
FRESH = {f"{k}:{w}" for k in ("os-hostkey", "os-media", "os-boot-cd") for w in ("before", "after")} | \
    {"os-power-on:before"}


@pytest.mark.parametrize(("kind", "when"), KILLS)
def test_a_kill_at_any_point_resumes_where_the_journal_says(rig: Any, monkeypatch: pytest.MonkeyPatch,
                                                           kind: str, when: str) -> None:
    fake, host, stage, journal, tmp = rig

    def hit(action: str, at: str) -> None:
        if (action, at) == (kind, when):
            raise Killed

    monkeypatch.setattr(failpoint, "hit", hit)
    with pytest.raises(Killed):
        _pass(stage, host, journal)
    monkeypatch.setattr(failpoint, "hit", lambda action, at: None)
    _, kinds = _pass(stage, host, journal)
    order = [s.value for s in ORDER]
    if f"{kind}:{when}" in FRESH:
        assert kinds == order  # nothing was written to the disks: a new key, a new install
        assert fake.installs == 1
    elif kind == "os-first-boot":
        assert kinds == ["os-first-boot"]  # up with the new key: the attempt is closed, nothing else
    else:
        assert kinds[0] != "os-hostkey" and kinds == order[len(order) - len(kinds):]
        assert fake.installs == 1, "the install was started twice"
    assert fake.power == "On" and fake.running == "os" and not fake.media
    assert hostkeys.expected_key(tmp / "known_hosts", "[127.0.0.1]:2222") == fake.installed_key
    _, kinds = _pass(stage, host, journal)
    assert kinds == []


CD2 = power.MediaSlot(uri="/x/CD2", types=("DVD",))
FLOPPY = power.MediaSlot(uri="/x/Floppy1", types=("Floppy",))


@pytest.mark.parametrize(("slots", "seed"), [
    ([CD, USB], USB),
    ([CD, CD2, USB], CD2),  # a second CD first: every BMC that offers one boots nothing from it
    ([USB, CD], USB),
    ([CD, FLOPPY], FLOPPY),
    ([CD], None),
    ([USB], USB),  # the USB stick is the seed's; no CD for the installer is refused apart
])
def test_the_seed_goes_on_a_second_medium(slots: list[power.MediaSlot], seed: power.MediaSlot | None) -> None:
    assert os_stage.seed_slot(slots) == seed


def test_media_slots_lists_a_collection_the_system_and_the_manager_both_link_once() -> None:
    member = {"@odata.id": CD.uri, "MediaTypes": ["CD", "DVD"], "Inserted": True, "Image": URL}
    usb = {"@odata.id": USB.uri, "MediaTypes": ["USBStick"]}
    conn = SimpleNamespace(get=lambda uri: {"VirtualMedia": {"@odata.id": "/m"}},
                           members=lambda uri: [member, usb] if uri == "/m" else [])
    node = SimpleNamespace(conn=conn, system=SimpleNamespace(uri="/s"), manager_uri="/mgr")
    slots = power.media_slots(node)  # type: ignore[arg-type]
    assert [(s.uri, s.inserted, s.image) for s in slots] == [(CD.uri, True, URL), (USB.uri, False, None)]
    assert os_stage.seed_slot(slots) is not None and os_stage.seed_slot(slots).uri == USB.uri  # type: ignore[union-attr]


def test_the_preflight_is_one_ranged_get_before_anything_is_written(rig: Any, monkeypatch: pytest.MonkeyPatch,
                                                                   isos: dict[str, Path]) -> None:
    """No HEAD then GET: one request proves the URL answers and reads the El Torito sectors."""
    from provision.redfish.image_server import ImageServer

    _, host, stage, journal, _ = rig
    monkeypatch.setattr(os_stage.inv_ops, "observe", lambda conn: None)
    monkeypatch.setattr(os_stage.drift_ops, "drift", lambda spec, inv: _drift("2", "ok"))
    monkeypatch.setattr(os_stage.power, "media_slots", lambda node: [CD, USB])
    seen: list[tuple[str, str | None]] = []
    real = os_stage.os_media._open

    def spy(req: urllib.request.Request, *args: Any) -> Any:
        seen.append((req.get_method(), req.get_header("Range")))
        return real(req, *args)

    monkeypatch.setattr(os_stage.os_media, "_open", spy)
    ctx = StageContext(host=host, journal=journal, run_id=None)
    with ImageServer() as srv:
        url = srv.url_for(isos["efi"])
        assert OsStage._refusals(stage, ctx, url) == ()
        assert seen == [("GET", "bytes=32768-98303")]
        missing = url.replace("efi.iso", "nope.iso")
        assert OsStage._refusals(stage, ctx, missing) == (f"installer {missing}: HTTP 404",)
    assert OsStage._refusals(stage, ctx, "nfs://server/install.iso") == ()  # the BMC's to fetch


def _drift(observed: str, verdict: str) -> Any:
    from provision.redfish.ops.drift import DriftItem, DriftReport

    return DriftReport(items=[DriftItem(key="storage.boot.count", expected="2 x 1.92 TB", observed=observed,
                                        verdict=verdict)])  # type: ignore[arg-type]


@pytest.mark.parametrize(("boot", "slots", "tool", "url", "refusals"), [
    (("2", "ok"), [CD, USB], "xorriso", None, ()),
    (("1", "drift"), [CD, USB], "xorriso", None,
     ("the BMC lists 1 boot drive(s) (2 x 1.92 TB): the RAID1 root needs two",)),
    (("0", "unknown"), [CD, USB], "xorriso", None, ()),  # the BMC gives no sizes: the installer checks
    (("0 (+ 1 of unknown protocol)", "drift"), [CD, USB], "xorriso", None,  # at most one, whatever its protocol
     ("the BMC lists 0 (+ 1 of unknown protocol) boot drive(s) (2 x 1.92 TB): the RAID1 root needs two",)),
    (("2", "ok"), [CD], "xorriso", None,
     ("the BMC offers no second virtual medium (CD, USB stick or floppy) for the seed",)),
    (("2", "ok"), [USB], "xorriso", None, ("the BMC offers no CD/DVD virtual medium for the installer",)),
    (("2", "ok"), [CD, USB], None, "installer u does not answer: refused",
     ("installer u does not answer: refused", "no xorriso or genisoimage on this controller to make the seed medium")),
])
def test_what_refuses_a_new_install(rig: Any, monkeypatch: pytest.MonkeyPatch, boot: tuple[str, str],
                                    slots: list[power.MediaSlot], tool: str | None, url: str | None,
                                    refusals: tuple[str, ...]) -> None:
    _, host, stage, journal, _ = rig
    monkeypatch.setattr(os_stage.inv_ops, "observe", lambda conn: None)
    monkeypatch.setattr(os_stage.drift_ops, "drift", lambda spec, inv: _drift(*boot))
    monkeypatch.setattr(os_stage.power, "media_slots", lambda node: slots)
    monkeypatch.setattr(os_stage, "seed_tool", lambda: tool)
    monkeypatch.setattr(os_stage.os_media, "preflight", lambda u, mode, access: url)
    ctx = StageContext(host=host, journal=journal, run_id=None)
    assert OsStage._refusals(stage, ctx, URL) == refusals


@pytest.mark.parametrize(("kind", "boot_mode", "refused"), [
    ("data", "uefi", "ISO 9660 but not bootable from CD (no El Torito boot record at sector 17)"),
    ("bios", "uefi", "no bootable El Torito entry for UEFI (the catalog boots BIOS)"),
    ("efi", "legacy", "no bootable El Torito entry for BIOS (the catalog boots UEFI)"),
    ("efi", "uefi", None),
])
def test_an_installer_the_host_cannot_boot_is_refused_before_anything_is_written(
        rig: Any, monkeypatch: pytest.MonkeyPatch, isos: dict[str, Path], kind: str, boot_mode: str,
        refused: str | None) -> None:
    from provision.errors import InputError
    from provision.redfish.image_server import ImageServer
    from provision.spec.firmware import Bios

    fake, host, stage, journal, _ = rig
    host = host.model_copy(update={"spec": host.spec.model_copy(update={"bios": Bios(
        settings={"boot_mode": boot_mode})})})
    monkeypatch.setattr(stage, "_refusals", partial(OsStage._refusals, stage))  # the rig's: none
    monkeypatch.setattr(os_stage.inv_ops, "observe", lambda conn: None)
    monkeypatch.setattr(os_stage.drift_ops, "drift", lambda spec, inv: _drift("2", "ok"))
    with ImageServer() as srv:
        url = srv.url_for(isos[kind])
        stage.opts = stage.opts.model_copy(update={"os_image": url})
        if refused is None:
            assert stage.observe(StageContext(host=host, journal=journal, run_id=None)).refusals == ()
            return
        with pytest.raises(InputError) as err:
            _pass(stage, host, journal)
    assert str(err.value) == f"{host.name}: cannot install: installer {url}: {refused}"
    assert fake.calls == [] and fake.power == "Off" and not fake.media  # no medium inserted, no power change
    assert journal.actions(host.name, stage="os") == []

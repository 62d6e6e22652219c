"""The os stage's decisions, pure: what was observed -> the steps of an install (or of its resumption).

An install is a fixed sequence of steps, each one journaled side effect (intent first, outcome after):

    os-hostkey    make the node's host key pair; its public half becomes the node's known_hosts entry;
                  the seed medium (seed.py) is made with the private half
    os-media      insert the installer (first CD) and the seed (a second virtual medium)
    os-boot-cd    a one-time boot from the virtual CD
    os-power-on   reset the host (or power it on): the installer starts
    os-installing wait, within the install deadline, for the installer to power the host off
    os-eject      eject both media (the seed's private key leaves the BMC; a disk that does not boot
                  cannot fall back to the installer and install again)
    os-boot-disk  a one-time boot from the disks, power on
    os-first-boot wait for SSH answering with exactly the key made at os-hostkey

Over the network (software.os_installer.method pxe or http_boot) three steps differ, in the same places:

    os-netboot     the node's boot entry in the netboot directory (provision netboot): its MAC, its boot
                   script (iPXE: kernel, initrd, the seed's URL) served by this run's image server; the
                   seed's files served there too, their URL handed out only to that MAC
    os-boot-net    a one-time boot from the network (Pxe or UefiHttp, as the BMC allows)
    os-netboot-off the node's boot entry removed (the seed's URL is no longer handed out; a disk that does
                   not boot cannot fall back to the installer and install again)

An attempt keeps the method it started with: a resumed attempt finishes with its own cleanup step.

The journal's records since the latest os-hostkey are the attempt (`Attempt`). After a kill, `resume`
says where to go on: from the step after the last one done once the host was powered on for the
installer (the disks are being or were written); before that, nothing was written to the disks and the
served seed is gone with the killed process, so the install starts over with a new key. A network attempt
killed while its installer still runs (the host On, os-installing not done) starts over too: the installer
fetches its seed over the network from the killed run's image server, which is gone (found in the vm tier:
the installer failed at the seed's fetch); one that powered off had its seed and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.bringup.model import Action, StagePlan
from provision.errors import CheckFailed, InputError
from provision.journal.records import ActionRecord
from provision.redact import redact_url
from provision.spec import HostEntry
from provision.spec.software import InstallMethod


class Step(StrEnum):
    HOSTKEY = "os-hostkey"
    MEDIA = "os-media"
    BOOT_CD = "os-boot-cd"
    POWER_ON = "os-power-on"
    INSTALLING = "os-installing"
    EJECT = "os-eject"
    BOOT_DISK = "os-boot-disk"
    FIRST_BOOT = "os-first-boot"
    NETBOOT = "os-netboot"
    BOOT_NET = "os-boot-net"
    NETBOOT_OFF = "os-netboot-off"


ORDER: tuple[Step, ...] = (Step.HOSTKEY, Step.MEDIA, Step.BOOT_CD, Step.POWER_ON, Step.INSTALLING, Step.EJECT,
                           Step.BOOT_DISK, Step.FIRST_BOOT)
NET_ORDER: tuple[Step, ...] = (Step.HOSTKEY, Step.NETBOOT, Step.BOOT_NET, Step.POWER_ON, Step.INSTALLING,
                               Step.NETBOOT_OFF, Step.BOOT_DISK, Step.FIRST_BOOT)
WRITING = ORDER.index(Step.POWER_ON)  # from this step on the installer may be writing the disks
assert NET_ORDER.index(Step.POWER_ON) == WRITING
CLEANUP = (Step.EJECT, Step.NETBOOT_OFF)


def order_of(method: InstallMethod) -> tuple[Step, ...]:
    return ORDER if method is InstallMethod.VIRTUAL_MEDIA else NET_ORDER


class Ssh(StrEnum):
    OK = "ok"  # answers with the key known_hosts records
    DOWN = "down"  # does not answer (off, booting, blank)
    WRONG_KEY = "wrong-key"  # answers with another key, or one known_hosts does not hold


class Attempt(BaseModel):
    """The latest install attempt as the journal has it: each step's last outcome ("ok", "failed", None
    for started and never finished), and the fingerprint of the key it made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: dict[Step, str | None]
    fingerprint: str = ""

    @property
    def order(self) -> tuple[Step, ...]:
        """The steps of this attempt's method (network: any network step recorded)."""
        net = any(s in self.outcomes for s in (Step.NETBOOT, Step.BOOT_NET, Step.NETBOOT_OFF))
        return NET_ORDER if net else ORDER

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.order if self.outcomes.get(s, "") == "failed"), None)

    @property
    def complete(self) -> bool:
        return self.outcomes.get(Step.FIRST_BOOT, "") == "ok"

    @property
    def last_done(self) -> int:
        """Index in its order of the last step done (-1: none)."""
        done = [i for i, s in enumerate(self.order) if self.outcomes.get(s, "") == "ok"]
        return max(done, default=-1)

    def unfinished(self, step: Step) -> bool:
        return step in self.outcomes and self.outcomes[step] is None


def attempt_of(records: Sequence[ActionRecord]) -> Attempt | None:
    """The latest attempt from the node's os-stage records, oldest first (None: never attempted)."""
    starts = [i for i, r in enumerate(records) if r.action == Step.HOSTKEY.value]
    if not starts:
        return None
    outcomes: dict[Step, str | None] = {}
    mine = records[starts[-1]:]
    for rec in mine:
        if rec.action in Step._value2member_map_:
            outcomes[Step(rec.action)] = rec.outcome
    target = mine[0].target.split()
    return Attempt(outcomes=outcomes, fingerprint=target[-1] if target and target[-1].startswith("SHA256:") else "")


def orphaned_net_installer(attempt: Attempt | None, power: str | None) -> bool:
    """A network attempt's installer powered on by a run that is gone (the host On, os-installing not done):
    the seed's server it fetches from died with that run."""
    if attempt is None or attempt.failed is not None or attempt.order is not NET_ORDER or power != "On":
        return False
    started = attempt.last_done >= WRITING or attempt.unfinished(Step.POWER_ON)
    return started and attempt.outcomes.get(Step.INSTALLING) != "ok"


def resume(attempt: Attempt | None, power: str | None) -> tuple[Step, ...] | None:
    """The steps left of `attempt` given the host's PowerState; None: start a new install; (): done."""
    if attempt is None or attempt.failed is not None:
        return None  # a failed step ends an attempt: the next run installs again
    if attempt.complete:
        return ()
    last, order = attempt.last_done, attempt.order
    if orphaned_net_installer(attempt, power):
        return None  # a network installer still running may not have fetched its seed, whose server died with
        #              the killed run: start over (the new attempt's power-on resets it with a new boot script)
    if last >= WRITING:
        return order[last + 1:]
    if attempt.unfinished(Step.POWER_ON) and power == "On":
        return order[WRITING + 1:]  # killed while resetting: the installer is running, wait for it
    return None


class OsObserved(BaseModel):
    """What the os stage plans from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ssh: Ssh
    ssh_detail: str = ""
    power: str | None = None
    known_hosts: Path
    expected_fingerprint: str = ""
    """Of the key known_hosts records for the node ("": none)."""
    attempt: Attempt | None = None
    installer: str | None = None
    """The installer URL: --os-image, else the profile's software.os_installer."""
    method: InstallMethod = InstallMethod.VIRTUAL_MEDIA
    """How a new install boots the installer (the host's provision_os_install_method, else the profile's)."""
    refusals: tuple[str, ...] = ()
    """Why a new install cannot start (the installer URL does not answer or is not bootable from CD in the
    host's boot mode, fewer than two boot drives, no
    second virtual medium, no seed tool): observed only when one might."""


def _actions(steps: Sequence[Step], installer: str, method: InstallMethod = InstallMethod.VIRTUAL_MEDIA
             ) -> tuple[Action, ...]:
    what = {Step.HOSTKEY: "new host key pair", Step.MEDIA: redact_url(installer), Step.BOOT_CD: "Cd once",
            Step.POWER_ON: "installer", Step.INSTALLING: "until the installer powers off",
            Step.EJECT: "installer and seed", Step.BOOT_DISK: "Hdd once, power on",
            Step.FIRST_BOOT: "SSH with the new host key",
            Step.NETBOOT: f"boot entry for its MAC: {redact_url(installer)}",
            Step.BOOT_NET: f"{method.boot_target} once", Step.NETBOOT_OFF: "boot entry and seed"}
    return tuple(Action(kind=s.value, target="host", after=what[s]) for s in steps)


def plan_os(host: HostEntry, obs: OsObserved) -> StagePlan:
    """Pure: nothing when the OS answers with the expected key; the rest of an attempt under way; a new
    install when nothing answers and an installer is configured; else a one-line refusal."""
    left = resume(obs.attempt, obs.power)
    if obs.ssh is Ssh.OK:
        if left:  # up with the new key: only what is left of the cleanup, and the attempt closed
            steps = [s for s in left if s in CLEANUP]
            actions = (*_actions(steps, obs.installer or ""),
                       Action(kind=Step.FIRST_BOOT.value, target="host", after="answers SSH", changes_node=False))
            return StagePlan(stage="os", node=host.name, actions=actions, note="installed; answers SSH")
        return StagePlan(stage="os", node=host.name, note="OS answers SSH with the expected host key")
    if obs.ssh is Ssh.WRONG_KEY:
        raise CheckFailed(f"{host.name}: SSH answers with a host key {obs.known_hosts} does not hold for it "
                          f"({obs.ssh_detail}): not installed over; remove or fix its entry there to reinstall")
    if left:
        return StagePlan(stage="os", node=host.name, actions=_actions(left, obs.installer or "", obs.method),
                         note=f"resuming the install at {left[0].value}")
    ours = obs.attempt is not None and not obs.attempt.complete and \
        obs.attempt.fingerprint == obs.expected_fingerprint
    if obs.expected_fingerprint and not ours:
        raise CheckFailed(f"{host.name}: does not answer SSH ({obs.ssh_detail}) and {obs.known_hosts} records "
                          "its host key: an installed node that is down is not installed over; power it on, or "
                          "remove its entry there to reinstall")
    if not obs.installer:
        raise InputError(f"{host.name}: no OS answers SSH ({obs.ssh_detail}) and no installer to install one "
                         "(--os-image, or software.os_installer in its profile)")
    if obs.refusals:
        raise InputError(f"{host.name}: cannot install: " + "; ".join(obs.refusals))
    how = "" if obs.method is InstallMethod.VIRTUAL_MEDIA else f" over the network ({obs.method.value})"
    return StagePlan(stage="os", node=host.name, actions=_actions(order_of(obs.method), obs.installer, obs.method),
                     note=f"install from {redact_url(obs.installer)}{how}")

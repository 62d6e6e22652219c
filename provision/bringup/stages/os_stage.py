"""The os stage: the OS answers SSH with the node's expected host key, else install it from virtual media.

observe: PowerState; SSH (only while the host is on) checked against known_hosts; the latest install
attempt from the journal; and, when a new install may start, what refuses one before anything is
written: the installer URL not answering or serving no image the host boots from CD (os_media.preflight:
one ranged GET of its El Torito sectors proves both), fewer than two boot drives on the BMC, no second virtual medium
for the seed, no ISO tool. plan: os_plan.plan_os (pure). apply: the planned steps, each one
journaled side effect (os_plan's docstring lists them).

The host-key channel is the config drive Ironic uses: the stage makes the key pair, records the public
half as the node's known_hosts entry, and hands the private half to the installer on the seed medium
(seed.py), so nothing has to come back from the installer over any channel. What the stage expects from
an installer (the lab's, or a site's preseed / autoinstall / kickstart on the same virtual media path):
no prompt; the site's SSH key enrolled; the host key taken from the seed (CIDATA: cloud-init's
`ssh_keys`, or provision/ssh_host_ed25519_key); power off when done, successfully or not: the stage
tells the two apart by SSH answering with the seeded key after the boot from the disks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from provision.bringup.model import StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages import os_media, os_net
from provision.bringup.stages.bmc_session import bmc
from provision.bringup.stages.os_plan import OsObserved, Ssh, Step, attempt_of, orphaned_net_installer, plan_os, resume
from provision.bringup.stages.seed import build_seed, seed_tool, seed_tree
from provision.errors import ProvisionError
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import drift as drift_ops
from provision.redfish.ops import inventory as inv_ops
from provision.redfish.ops import power
from provision.redfish.ops.session import Node
from provision.redfish.ops.waiting import Clock, wait_for
from provision.remote import hostkeys
from provision.remote.ssh import SshError, endpoint, known_hosts_file, wait_for_ssh
from provision.spec import HostEntry
from provision.spec.software import InstallMethod

SEED = "seed.iso"


class InstallFailed(ProvisionError):
    """An install step did not do what it should (names the node and the step)."""


def installer_of(host: HostEntry, opts: BringupOptions) -> str | None:
    """The installer image's URL (--os-image, else the profile's)."""
    pinned = host.spec.software.os_installer
    return opts.os_image or (pinned.url if pinned is not None else None)


def seed_slot(slots: list[power.MediaSlot]) -> power.MediaSlot | None:
    """The medium for the seed: a second CD/DVD, else a USB stick or floppy (the first CD is the installer's)."""
    cds = [s for s in slots if s.is_cd]
    rest = [s for s in slots if not s.is_cd and any(t in ("USBStick", "Floppy") for t in s.types)]
    return next(iter(cds[1:] + rest), None)


class OsStage:
    """The OS answers SSH with the expected host key; else install it through the BMC's virtual media."""

    name = "os"

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts
        self.clock = Clock(poll_s=opts.poll_s)

    # --- observe ---------------------------------------------------------------------------------
    def observe(self, ctx: StageContext) -> OsObserved:
        host = ctx.host
        ssh = endpoint(host)
        known = known_hosts_file(ssh)
        key = hostkeys.expected_key(known, hostkeys.host_pattern(ssh))
        with bmc(ctx, self.opts) as node:
            state = power.power_state(node.conn, node.system.uri)
        records = ctx.journal.actions(host.name, stage=self.name) if ctx.journal is not None else []
        attempt = attempt_of(records)
        left = resume(attempt, state)
        if state == "Off":
            answer, detail = Ssh.DOWN, "the host is Off"
        elif left and left[0] is not Step.FIRST_BOOT:  # the installer runs: no sshd to wait for
            answer, detail = Ssh.DOWN, f"an install is under way ({left[0].value} next)"
        elif orphaned_net_installer(attempt, state):  # nor here: it is started over
            answer, detail = Ssh.DOWN, "a network installer runs without the seed's server (its run was killed)"
        else:
            answer, detail = self._probe(host)
        obs = OsObserved(ssh=answer, ssh_detail=detail, power=state, known_hosts=known,
                         expected_fingerprint=hostkeys.fingerprint(key) if key else "",
                         attempt=attempt, installer=installer_of(host, self.opts), method=host.install_method)
        if answer is Ssh.DOWN and obs.installer and not left:  # a new install might start
            network = obs.method is not InstallMethod.VIRTUAL_MEDIA
            why = self._net_refusals(ctx) if network else self._refusals(ctx, obs.installer)
            obs = obs.model_copy(update={"refusals": why})
        return obs

    def _probe(self, host: HostEntry) -> tuple[Ssh, str]:
        try:
            wait_for_ssh(host, timeout=self.opts.ssh_wait_s)
        except SshError as exc:
            text = str(exc)
            wrong = "not found in known_hosts" in text or "does not match" in text
            return (Ssh.WRONG_KEY if wrong else Ssh.DOWN), text.removeprefix(f"{host.name}: ")
        return Ssh.OK, ""

    def _net_refusals(self, ctx: StageContext) -> tuple[str, ...]:
        pinned = ctx.host.spec.software.os_installer
        if pinned is None or pinned.kernel is None:  # --os-image alone names no kernel to boot
            return ("a network install boots software.os_installer.kernel and .initrd: its profile names none",)
        with bmc(ctx, self.opts) as node:
            why = _boot_drives(node, ctx.host) + os_net.refusals(ctx.host, node, pinned, ctx.host.install_method,
                                                                  self.opts.netboot_dir)
        server = os_net.server_refusal(self.opts.image_bind, self.opts.image_advertise)
        return tuple(why + ([server] if server else []))

    def _refusals(self, ctx: StageContext, installer: str) -> tuple[str, ...]:
        # one ranged GET, before anything is written
        why = [os_media.preflight(installer, os_media.boot_mode(ctx.host), ctx.host.installer)]
        with bmc(ctx, self.opts) as node:
            why += _boot_drives(node, ctx.host)
            slots = power.media_slots(node)
        if not any(s.is_cd for s in slots):
            why.append("the BMC offers no CD/DVD virtual medium for the installer")
        elif seed_slot(slots) is None:
            why.append("the BMC offers no second virtual medium (CD, USB stick or floppy) for the seed")
        if seed_tool() is None:
            why.append("no xorriso or genisoimage on this controller to make the seed medium")
        return tuple(w for w in why if w)

    def plan(self, host: HostEntry, observed: OsObserved) -> StagePlan:
        return plan_os(host, observed)

    # --- apply -----------------------------------------------------------------------------------
    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        """Each step in its own BMC deadline (the waits in them have their own bounds: Connector.waiting)."""
        with _seed_home(ctx.host.name) as home, self._server() as server:
            try:
                self._steps(ctx, plan, home, server)
            finally:
                if any(a.kind == Step.NETBOOT.value for a in plan.actions):
                    _forget_entry(ctx.host, self.opts.netboot_dir)

    def _steps(self, ctx: StageContext, plan: StagePlan, home: Path, server: ImageServer) -> None:
        network = any(a.kind == Step.NETBOOT.value for a in plan.actions)
        for action in plan.actions:
            if not action.changes_node:  # bookkeeping: the attempt is over, the node answers
                ctx.side_effect(self.name, action, lambda: None)
                continue
            step = Step(action.kind)
            if step is Step.HOSTKEY:  # made first: the journal's record names the key's fingerprint
                public = hostkeys.make_key_pair(home, f"root@{ctx.host.name}")
                action = action.model_copy(update={"target": f"host {hostkeys.fingerprint(public)}"})
                ctx.say(self.name, action.describe())
                ctx.side_effect(self.name, action, partial(_hostkey, ctx.host, home, public, network))
                continue
            ctx.say(self.name, action.describe())
            with bmc(ctx, self.opts) as node:
                ctx.side_effect(self.name, action, partial(self._run, ctx.host, node, step, server, home / SEED))

    @contextlib.contextmanager
    def _server(self) -> Iterator[ImageServer]:
        with ImageServer(bind=self.opts.image_bind, advertise=self.opts.image_advertise) as server:
            yield server

    def _run(self, host: HostEntry, node: Node, step: Step, server: ImageServer, seed: Path) -> None:
        where = f"{host.name}: {step.value}"
        if step is Step.MEDIA:
            if not seed.is_file():
                raise InstallFailed(f"{where}: no seed medium was made in this run (os-hostkey did not run)")
            _insert(node, installer_of(host, self.opts) or "", server.url_for(seed), where)
            with node.conn.waiting(self.opts.seed_fetch_wait_s):
                _fetched(server, self.clock, self.opts.seed_fetch_wait_s)
        elif step is Step.BOOT_CD:
            power.boot_once(node, "Cd")
        elif step is Step.NETBOOT:
            pinned = host.spec.software.os_installer
            files = sorted(p for p in (seed.parent / "seed").rglob("*") if p.is_file())
            if pinned is None or not files:
                raise InstallFailed(f"{where}: no seed was made in this run (os-hostkey did not run)")
            os_net.netboot_on(host, pinned, server, files, self.opts.netboot_dir, installer_of(host, self.opts) or "")
        elif step is Step.BOOT_NET:
            power.boot_once(node, host.install_method.boot_target)
        elif step is Step.NETBOOT_OFF:
            os_net.netboot_off(host, self.opts.netboot_dir)
        elif step is Step.POWER_ON:
            power.host_reset(node, self.clock, 900)  # On from Off, a reset when on: the override applies
        elif step is Step.INSTALLING:
            _wait_off(node, self.clock, self.opts.install_timeout_s, where)
        elif step is Step.EJECT:
            _eject(node)
        elif step is Step.BOOT_DISK:
            power.boot_once(node, "Hdd")
            power.host_reset(node, self.clock, 900)
        elif step is Step.FIRST_BOOT:
            _first_boot(host, self.opts.first_boot_timeout_s, where)


def _forget_entry(host: HostEntry, netboot_dir: Path) -> None:
    """However apply ends: the boot entry names this run's image server, which is gone with it (a killed run
    leaves it to os-netboot-off of the run that resumes, or to os-netboot of a new attempt)."""
    os_net.netboot_off(host, netboot_dir)


def _boot_drives(node: Node, host: HostEntry) -> list[str]:
    """Fewer than two boot drives for the RAID1 root, as the BMC lists them."""
    items = drift_ops.drift(host.spec, inv_ops.observe(node.conn)).items
    boot = next((i for i in items if i.key == "storage.boot.count"), None)
    if boot is not None and boot.verdict != "unknown" and int(boot.observed.split()[0]) < 2:  # "1 (+ 2 of ...)"
        return [f"the BMC lists {boot.observed} boot drive(s) ({boot.expected}): the RAID1 root needs two"]
    return []


def _hostkey(host: HostEntry, home: Path, public: str, network: bool = False) -> None:
    """The seed made from the pair in `home` (an image for virtual media; its files under home/seed for the
    network), then the public half recorded as the node's expected key."""
    ssh = endpoint(host)
    if network:
        seed_tree(home, host.name, home / "seed")
    else:
        build_seed(home, host.name, home / SEED)
    hostkeys.record_key(known_hosts_file(ssh), hostkeys.host_pattern(ssh), public)


@contextlib.contextmanager
def _seed_home(node: str) -> Iterator[Path]:
    """A private directory for the node's key pair and seed, removed when apply ends however it ends (a
    stale one of a killed run is removed when the next apply starts)."""
    home = hostkeys.private_dir(Path(tempfile.gettempdir()) / f"provision-os-seed-{os.getuid()}", node)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _insert(node: Node, installer: str, seed_url: str, where: str) -> None:
    slots = power.media_slots(node)
    cd = next((s for s in slots if s.is_cd), None)
    seed = seed_slot(slots)
    if cd is None or seed is None:
        raise InstallFailed(f"{where}: the BMC no longer offers two virtual media")
    power.insert_media(node, cd, installer)
    power.insert_media(node, seed, seed_url)


def _fetched(server: ImageServer, clock: Clock, wait_s: float) -> None:
    """Wait (bounded) for the BMC to download the seed: one that copies the image at insert time then has
    it whatever becomes of this process; one that streams it on demand reads it later, while it is served."""
    deadline = clock.now() + wait_s
    while SEED not in server.sent and clock.now() < deadline:
        clock.sleep(min(clock.poll_s, 0.5))


def _eject(node: Node) -> None:
    for slot in power.media_slots(node):
        if slot.inserted:
            power.eject_media(node, slot)


def _wait_off(node: Node, clock: Clock, timeout_s: float, where: str) -> None:
    def off() -> bool | None:
        return True if power.power_state(node.conn, node.system.uri) == "Off" else None

    try:
        with node.conn.waiting(timeout_s):
            wait_for(off, timeout_s, where, clock)
    except ProvisionError as exc:
        if "not done after" in str(exc):
            raise InstallFailed(f"{where}: the installer did not power the host off within {timeout_s:.0f} s") \
                from None
        raise


def _first_boot(host: HostEntry, timeout_s: float, where: str) -> None:
    try:
        wait_for_ssh(host, timeout=timeout_s)
    except SshError as exc:
        raise InstallFailed(f"{where}: no SSH with the seeded host key after booting from the disks "
                            f"({str(exc).removeprefix(host.name + ': ')}); the install failed or the disks "
                            "do not boot") from None

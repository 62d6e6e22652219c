"""The disks stage of a clean: pools and arrays stopped, labels wiped, every data drive erased with evidence.

observe runs the node's own tools over SSH (nvme, lsblk, hdparm, sg_opcodes, mdadm, zpool) and reads the
journal (what this clean already erased, which erase was interrupted); plan is provision.clean.plan.plan_disks;
apply runs exactly its actions,
each journaled before and after (ctx.side_effect), and keeps each drive's evidence in the journal. A drive
that fails (a sanitize its log says failed, a format refused, a read back that is not zeroed) does not stop
the others; the stage fails at the end naming every such drive.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial

from provision.bringup.model import StagePlan
from provision.bringup.stage import StageContext
from provision.clean import ata, nvme, records
from provision.clean.model import Bus, Drive, DriveCaps, DriveEvidence, SanitizeLog, SanitizeStatus
from provision.clean.options import CleanOptions
from provision.clean.plan import (
    DISKS,
    DestroyPool,
    DisksObserved,
    EraseDrive,
    Interrupted,
    MdArray,
    RecordResumed,
    StopArray,
    Unerasable,
    WipeLabels,
    ZfsPool,
    plan_disks,
)
from provision.conformance.parsers.mdadm import parse_mdadm_detail
from provision.conformance.parsers.nvme import parse_nvme_id_ctrl, parse_nvme_list
from provision.conformance.parsers.zpool_status import Vdev, parse_zpool_status
from provision.errors import CheckFailed, ProvisionError
from provision.remote import ssh
from provision.spec import HostEntry

Shell = Callable[[str], ssh.CommandResult]
"""Run one command on the node (a non-zero exit is a result)."""


def node_shell(host: HostEntry, timeout_s: float) -> Shell:
    return lambda command: ssh.run(host, command, timeout=timeout_s)


def _must(shell: Shell, command: str) -> str:
    res = shell(command)
    if not res.ok:
        why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_code}").splitlines()[-1][:200]
        raise CheckFailed(f"{res.node}: {command.split(' 2>')[0]!r} failed: {why}")
    return res.stdout


def _leaves(vdevs: tuple[Vdev, ...]) -> list[str]:
    return [leaf for v in vdevs for leaf in (_leaves(v.children) if v.children else [v.name])]


def _mentions(leaf: str, drive: Drive) -> bool:
    base = drive.device.rsplit("/", 1)[-1]
    return drive.serial in leaf or re.search(rf"(^|/){re.escape(base)}(p\d+)?$", leaf) is not None


def _distinct_serials(node: str, drives: list[Drive]) -> None:
    """An erase is tracked by the drive's serial (a resumed clean skips the serials it has evidence for): two
    drives with one serial, or one without, would let an unerased drive pass as erased. Refused, nothing done."""
    serials = [d.serial.strip() for d in drives]
    bad = sorted(d.device for d in drives if not d.serial.strip() or serials.count(d.serial.strip()) > 1)
    if bad:
        raise CheckFailed(f"{node}: drives {', '.join(bad)} report no serial or the same serial: an erase is "
                          "proven per serial, so none is erased")


def observe_disks(host: HostEntry, shell: Shell, erased: frozenset[str],
                  open_erases: dict[str, float]) -> DisksObserved:
    """Read-only: the node's NVMe namespaces with their controllers' erase capabilities, the boot mirror's
    members, the ZFS pools and md arrays; for an erase interrupted in this clean, the drive's sanitize log and a
    read back of its first and last MiB."""
    raid = host.spec.storage.boot.raid
    boot_devs: set[str] = set()
    boot_known = False
    if raid is not None:
        detail = parse_mdadm_detail(_must(shell, f"mdadm --detail {nvme.q(raid.device)}"))
        boot_devs = {whole_disk(m.device) for m in detail.members if m.device}
        boot_known = bool(boot_devs)
    drives = []
    for ns in parse_nvme_list(_must(shell, "nvme list -o json")):
        ctrl = nvme.controller_of(ns.device_path)
        ident = parse_nvme_id_ctrl(_must(shell, f"nvme id-ctrl {nvme.q(ctrl)} -o json"))
        drives.append(Drive(device=ns.device_path, controller=ctrl, serial=ns.serial, model=ns.model,
                            boot=ns.device_path in boot_devs, caps=DriveCaps.of(ident.sanicap, ident.oacs, ident.fna)))
    for bd in ata.parse_lsblk(_must(shell, ata.LIST_COMMAND)):
        drives.append(Drive(device=bd.device, controller=bd.device, bus=bd.bus, serial=bd.serial, model=bd.model,
                            boot=bd.device in boot_devs, caps=_bus_caps(shell, bd.bus, bd.device)))
    _distinct_serials(host.name, drives)
    boot = [d for d in drives if d.boot]
    pools = []
    for name in nvme.parse_zpools(_pools(shell)):
        found = parse_zpool_status(_must(shell, f"zpool status {nvme.q(name)}"))
        leaves = [leaf for p in found for leaf in _leaves(p.config)]
        pools.append(ZfsPool(name=name, boot=any(_mentions(leaf, d) for leaf in leaves for d in boot)))
    arrays = []
    for dev in nvme.parse_md_scan(_must(shell, "mdadm --detail --scan")):
        # The boot array by its name, or by its members (the scan may name it by its udev name, /dev/md/root).
        members = tuple(m.device for m in parse_mdadm_detail(_must(shell, f"mdadm --detail {nvme.q(dev)}")).members
                        if m.device)
        is_boot = (raid is not None and dev == raid.device) or any(whole_disk(m) in boot_devs for m in members)
        arrays.append(MdArray(device=dev, members=() if is_boot else members, boot=is_boot))
    seen = {d.serial: _interrupted(shell, d, open_erases[d.serial]) for d in drives if d.serial in open_erases}
    return DisksObserved(drives=tuple(drives), pools=tuple(pools), arrays=tuple(arrays), boot_known=boot_known,
                         erased=erased, interrupted=seen, observed_at=time.time())


def whole_disk(device: str) -> str:
    """A partition's disk: /dev/nvme0n1p2 -> /dev/nvme0n1, /dev/sda2 -> /dev/sda (a whole disk as it is)."""
    if re.search(r"/nvme\d+n\d+p\d+$", device) or re.search(r"/(?:mmcblk|loop)\d+p\d+$", device):
        return re.sub(r"p\d+$", "", device)
    if re.search(r"/(?:sd|vd|hd|xvd)[a-z]+\d+$", device):
        return re.sub(r"\d+$", "", device)
    return device


def _bus_caps(shell: Shell, bus: Bus, device: str) -> DriveCaps:
    """A SATA drive's ATA security feature set (hdparm -I), a SAS drive's SANITIZE service actions (sg_opcodes).
    A tool that is not installed (exit 127) is a one-line error naming it: the drive cannot be judged."""
    command = ata.hdparm_command(device) if bus is Bus.SATA else ata.opcodes_command(device)
    res = shell(command)
    if res.exit_code == 127:
        tool = "hdparm" if bus is Bus.SATA else "sg_opcodes (sg3-utils)"
        raise CheckFailed(f"{res.node}: {device} is a {bus.value} drive and {tool} is not installed: its erase "
                          "capabilities cannot be read; nothing erased")
    if not res.ok:
        why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_code}").splitlines()[-1][:200]
        raise CheckFailed(f"{res.node}: {command!r} failed: {why}")
    return ata.parse_hdparm_security(res.stdout) if bus is Bus.SATA else ata.parse_sg_opcodes(res.stdout)


def _pools(shell: Shell) -> str:
    """`zpool list -H -o name`; a node without ZFS (no zpool command) has no pools."""
    res = shell("zpool list -H -o name")
    if res.exit_code == 127:
        return ""
    if not res.ok:
        why = res.stderr.strip() or f"exit {res.exit_code}"
        raise CheckFailed(f"{res.node}: zpool list failed: {why[:200]}")
    return res.stdout


def _interrupted(shell: Shell, d: Drive, started_at: float) -> Interrupted:
    log = None
    if d.caps.sanitize_crypto or d.caps.sanitize_block:
        log = nvme.parse_sanitize_log(_must(shell, nvme.sanitize_log_command(d.controller)))
    return Interrupted(started_at=started_at, sanitize=log,
                       read_back=nvme.parse_read_back(_must(shell, nvme.read_back_command(d.device))))


class DisksStage:
    """Pools and arrays stopped, labels wiped, data drives erased (the level's method), evidence journaled."""

    name = DISKS

    def __init__(self, opts: CleanOptions, shell: Callable[[HostEntry], Shell] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.opts = opts
        self.shell_of = shell or (lambda host: node_shell(host, opts.ssh_timeout_s))
        self.sleep = sleep

    def observe(self, ctx: StageContext) -> DisksObserved:
        erased: frozenset[str] = frozenset()
        open_erases: dict[str, float] = {}
        if ctx.journal is not None:
            erased = frozenset(e.serial for e in records.evidence(ctx.journal, ctx.host.name))
            open_erases = records.interrupted(ctx.journal, ctx.host.name)
        return observe_disks(ctx.host, self.shell_of(ctx.host), erased, open_erases)

    def plan(self, host: HostEntry, observed: DisksObserved) -> StagePlan:
        return plan_disks(host.name, observed, self.opts.level, self.opts.include_boot)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        shell = self.shell_of(ctx.host)
        failed: list[str] = []
        for action in plan.actions:
            ctx.say(self.name, action.describe())
            if isinstance(action, Unerasable):
                failed.append(action.why)
            elif isinstance(action, RecordResumed):
                self._keep(ctx, action.evidence)
            elif isinstance(action, EraseDrive):
                try:
                    found = ctx.side_effect(self.name, action, partial(self._erase, shell, action))
                except ProvisionError as exc:
                    failed.append(str(exc))
                    continue
                self._keep(ctx, found)
            else:
                ctx.side_effect(self.name, action, partial(_must, shell, _command(action)))
        if failed:
            raise CheckFailed(f"{ctx.host.name}: clean failed: " + "; ".join(failed))

    def _keep(self, ctx: StageContext, evidence: DriveEvidence) -> None:
        if ctx.journal is not None and ctx.run_id is not None:
            records.record_evidence(ctx.journal, ctx.run_id, self.name, evidence)
        ctx.say(self.name, f"{evidence.device} ({evidence.serial}): {evidence.method.value} in "
                           f"{evidence.seconds:.1f} s, {evidence.read_back.describe()}")

    def _erase(self, shell: Shell, action: EraseDrive) -> DriveEvidence:
        d, method = action.drive, action.method
        where = f"{d.device} ({d.serial})"
        started = time.time()
        command = (nvme.erase_command(method, d.device, d.controller) if d.bus is Bus.NVME
                   else ata.erase_command(method, d.device))
        res = shell(command)
        if not res.ok:
            why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_code}").splitlines()[-1][:200]
            raise CheckFailed(f"{where}: {method.value} refused: {why}")
        if method.is_ata and ata.parse_hdparm_security(_must(shell, ata.hdparm_command(d.device))).ata_enabled:
            raise CheckFailed(f"{where}: {method.value} reported done, but the drive's security is still enabled "
                              f"(password {ata.ERASE_PASSWORD!r}: hdparm --security-disable)")
        log = self._wait_sanitize(shell, d) if method.is_sanitize else None
        if log is not None and not log.succeeded:
            raise CheckFailed(f"{where}: {method.value} failed: the drive's sanitize log says {log.status.value}")
        back = nvme.parse_read_back(_must(shell, nvme.read_back_command(d.device)))
        if not back.zeroed:
            raise CheckFailed(f"{where}: {method.value} reported done, but {back.describe()}")
        return DriveEvidence(node=res.node, device=d.device, serial=d.serial, method=method, started_at=started,
                             ended_at=time.time(), sanitize=log, read_back=back)

    def _wait_sanitize(self, shell: Shell, d: Drive) -> SanitizeLog:
        deadline = time.monotonic() + self.opts.erase_timeout_s
        while True:
            log = nvme.parse_sanitize_log(_must(shell, nvme.sanitize_log_command(d.controller)))
            if log.status is not SanitizeStatus.IN_PROGRESS and log.progress == nvme.SPROG_IDLE:
                return log
            if time.monotonic() >= deadline:
                raise CheckFailed(f"{d.device} ({d.serial}): sanitize still in progress after "
                                  f"{self.opts.erase_timeout_s:.0f} s ({log.progress * 100 // 65536}%)")
            self.sleep(self.opts.bringup.poll_s)


def _command(action: object) -> str:
    if isinstance(action, DestroyPool):
        return f"zpool destroy -f {nvme.q(action.target)}"
    if isinstance(action, StopArray):
        zero = " ".join(nvme.q(m) for m in action.members)
        return f"mdadm --stop {nvme.q(action.target)}" + (f" && mdadm --zero-superblock {zero}" if zero else "")
    if isinstance(action, WipeLabels):
        return f"wipefs -a {nvme.q(action.target)}"
    raise TypeError(f"the disks stage cannot apply {action!r}")

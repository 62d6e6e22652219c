"""A simulated BMC's host as a qemu VM (plain emulation, TCG: /dev/kvm is unusable on the lab machines).

As sushy-tools with libvirt drives VMs for Ironic's CI, without libvirt: power on starts qemu with the
boot order the BMC's Boot override asks for, power off stops it, a reset is an off then an on (so the
new boot order applies, as the firmware reads it at every start). The VM has:

- UEFI firmware (Debian's ovmf), with its own copy of the variable store kept across power cycles;
- the spec's boot pair and scratch drives as emulated NVMe controllers (`-device nvme,serial=...`),
  sparse raw files in the node's work directory that persist like real disks;
- the virtual CD (a SCSI CD on virtio-scsi: Debian's cloud kernel, which the lab's images boot, has no
  AHCI and no USB storage driver) holding the last image InsertMedia fetched into CD1; any other
  virtual drive (USB1: the os stage's seed medium) is one more SCSI CD on that bus, never bootable;
- user-mode networking, restricted (provision/lab/guestnet.py): the guest's port 22 forwarded to
  127.0.0.1:<ssh_port>, and the guest reaching only the host's `guest_ports` (as 10.0.2.100:<port>);
- its serial console written to console-NNNN.log (one file per power-on, numbered): the lab reads what
  an installer prints there, a channel the guest's network cannot reach.

Boot order is given to the firmware with `bootindex` (qemu's fw_cfg "bootorder", which OVMF honours and
from which it drops devices without an index): Cd puts the CD first, then the boot pair; Hdd the boot
pair only, then the CD; Pxe the NIC first (the provisioning NIC where the VM has one), then the boot pair.

A VM with a provisioning NIC (VmHostConfig.provisioning) has a second virtio NIC on a tap device in the lab's
network namespace (never the host's network): at each power-on the host opens the tap inside that namespace
and passes qemu the descriptor (`-netdev tap,fd=N`); its BMC lists both NICs with their MACs
(provision/lab/bmcsim/vmnics.py). OVMF's own network stack boots from it at Pxe (DHCP, then the loader over
TFTP from the lab's dnsmasq).

Media inserted while the VM runs is attached at its next power-on (the os stage always resets after
inserting); a real BMC attaches it at once. GracefulShutdown stops qemu as ForceOff does (no ACPI
button press is sent).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from provision.lab import guestnet
from provision.lab.bmcsim import events, vmnics
from provision.lab.bmcsim.config import VmHostConfig
from provision.lab.bmcsim.host import BootTarget, HostBackend, HostEvent, HostEventKind

CONSOLE = "console-{n:04d}.log"
CD_SLOT = "CD1"  # the virtual drive the firmware boots from (the others are never bootable)
MEDIA_DIR = "media"
VARS = "OVMF_VARS.fd"
DOWNLOAD_TIMEOUT_S = 300


def drive_file(cfg: VmHostConfig, serial: str) -> Path:
    return cfg.work_dir / f"nvme-{serial}.img"


def boot_indexes(target: BootTarget, boot_drives: int, has_media: bool, provisioning: bool = False
                 ) -> dict[str, int]:
    """Device id -> bootindex for the next start: `cd`, `nic` (the user network's), `pxe` (the provisioning
    NIC), `boot0`..`bootN-1` (absent: not bootable)."""
    disks = [f"boot{i}" for i in range(boot_drives)]
    if target is BootTarget.CD and has_media:
        order = ["cd", *disks]
    elif target is BootTarget.PXE:
        order = ["pxe" if provisioning else "nic", *disks]
    else:  # Hdd, or Cd with nothing in the drive: the firmware goes on to the disks
        order = [*disks, "cd"] if has_media else disks
    return {dev: i for i, dev in enumerate(order)}


# The link speed the NIC reports (virtio-net reports none unless told): a 1 GbE port, as the spec says.
NIC_MBPS = 1000


def qemu_argv(cfg: VmHostConfig, target: BootTarget, media: Path | None, console: Path,
              more: Sequence[Path] = (), tap_fd: int | None = None) -> list[str]:
    """The qemu command line of one power-on (pure: a function of the config, boot target and media);
    `more`: the other virtual drives' images, SCSI CDs without a boot index; `tap_fd`: the provisioning
    NIC's open tap (required when the config has one)."""
    index = boot_indexes(target, len(cfg.boot_drives), media is not None, cfg.provisioning is not None)

    def at(dev: str) -> str:
        return f",bootindex={index[dev]}" if dev in index else ""

    argv = [
        "qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(cfg.memory_mib),
        "-smp", str(cfg.cpus), "-display", "none", "-monitor", "none", "-serial", f"file:{console}",
        "-drive", f"if=pflash,format=raw,readonly=on,file={cfg.firmware_code}",
        "-drive", f"if=pflash,format=raw,file={cfg.work_dir / VARS}",
        "-netdev", f"{guestnet.netdev(cfg.ssh_port, cfg.guest_ports)},id=net0",
        "-device", f"virtio-net-pci,netdev=net0,mac={cfg.mac},speed={NIC_MBPS},duplex=full{at('nic')}",
    ]  # fmt: skip
    if cfg.provisioning is not None:
        if tap_fd is None:
            raise ValueError("a VM with a provisioning NIC needs its tap's file descriptor")
        argv += [
            "-netdev", f"tap,id=net1,fd={tap_fd}",
            "-device", f"virtio-net-pci,netdev=net1,mac={cfg.provisioning.mac},speed={NIC_MBPS},duplex=full"
                       f"{at('pxe')}",
        ]  # fmt: skip
    drives = [(f"boot{i}", d) for i, d in enumerate(cfg.boot_drives)]
    drives += [(f"scratch{i}", d) for i, d in enumerate(cfg.scratch_drives)]
    for dev, drive in drives:
        argv += [
            "-drive", f"file={drive_file(cfg, drive.serial)},if=none,id={dev},format=raw",
            "-device", f"nvme,drive={dev},serial={drive.serial}{at(dev)}",
        ]  # fmt: skip
    if media is not None or more:
        argv += ["-device", "virtio-scsi-pci,id=scsi0"]
    if media is not None:
        argv += [
            "-drive", f"file={media},if=none,id=cd,media=cdrom,readonly=on,format=raw",
            "-device", f"scsi-cd,bus=scsi0.0,drive=cd{at('cd')}",
        ]  # fmt: skip
    for i, image in enumerate(more, start=1):
        argv += [
            "-drive", f"file={image},if=none,id=cd{i},media=cdrom,readonly=on,format=raw",
            "-device", f"scsi-cd,bus=scsi0.0,drive=cd{i},scsi-id={i}",
        ]  # fmt: skip
    return argv


def media_refusal(url: str, allowed_hosts: tuple[str, ...]) -> str | None:
    """Why InsertMedia refuses `url` before fetching it (the lab fetches from its own loopback only)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        return f"{url}: only http and https image URLs are fetched"
    if parsed.hostname not in allowed_hosts:
        return f"{url}: the lab fetches images from {', '.join(allowed_hosts)} only"
    return None


class VmHost(HostBackend):
    """One qemu VM per BMC; see the module docstring for what each call does."""

    starts_on = False

    def __init__(self, node: str, cfg: VmHostConfig, allowed_hosts: tuple[str, ...]) -> None:
        super().__init__(node)
        self.cfg = cfg
        self._allowed = allowed_hosts
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._media: dict[str, Path] = {}  # virtual drive (CD1, USB1) -> the image it holds
        self._starts = 0

    # --- what the BMC asks -----------------------------------------------------------------
    def check_media(self, url: str) -> str | None:
        return media_refusal(url, self._allowed)

    def _do_power(self, on: bool, boot: BootTarget) -> None:
        if not on:
            self._stop()
            return
        if self._proc is not None and self._proc.poll() is None:
            return  # already on
        self._prepare()
        self._starts += 1
        console = self.cfg.work_dir / CONSOLE.format(n=self._starts)
        cd = self._media.get(CD_SLOT)
        more = [path for slot, path in sorted(self._media.items()) if slot != CD_SLOT]
        nic = self.cfg.provisioning
        tap = vmnics.open_tap(nic.netns, nic.tap) if nic is not None else None
        argv = qemu_argv(self.cfg, boot, cd, console, more, tap)
        log = open(self.cfg.work_dir / "qemu.log", "ab")  # noqa: SIM115 - handed to qemu, closed below
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    pass_fds=(tap,) if tap is not None else ())
        finally:
            log.close()
            if tap is not None:
                os.close(tap)  # qemu holds its own copy
        self._proc, self._stopping = proc, False
        (self.cfg.work_dir / "qemu.pid").write_text(f"{proc.pid}\n")
        events.record(
            self.node, "vm.start", pid=proc.pid, boot=boot.value, media=str(cd or ""), more=len(more),
            console=console.name
        )
        threading.Thread(target=self._watch, args=(proc,), name=f"vm-watch-{self.node}", daemon=True).start()

    def _do_insert(self, url: str, slot: str = CD_SLOT) -> None:
        media = self.cfg.work_dir / MEDIA_DIR
        media.mkdir(parents=True, exist_ok=True)
        name = (urlparse(url).path.rstrip("/").rsplit("/", 1)[-1] or "image") + ".media"
        if slot != CD_SLOT:
            name = f"{slot.lower()}-{name}"
        part = media / f"{name}.part"
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as resp, open(part, "wb") as out:
                shutil.copyfileobj(resp, out, 1024 * 1024)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            part.unlink(missing_ok=True)
            events.record(self.node, "vm.media_failed", url=url, slot=slot, error=exc.__class__.__name__)
            self._report(HostEvent(kind=HostEventKind.MEDIA_FAILED, detail=f"{url}: {exc}"))
            return
        self._drop_media(slot)
        self._media[slot] = part.rename(media / name)
        events.record(self.node, "vm.media", url=url, slot=slot, size=self._media[slot].stat().st_size)

    def _do_eject(self, slot: str = CD_SLOT) -> None:
        self._drop_media(slot)
        events.record(self.node, "vm.eject", slot=slot)

    def _do_close(self) -> None:
        self._stop()

    # --- the VM ----------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Blank sparse drives and the firmware's variable store, made once and kept (a machine's disks
        and NVRAM survive a power cycle)."""
        self.cfg.work_dir.mkdir(parents=True, exist_ok=True)
        for drive in (*self.cfg.boot_drives, *self.cfg.scratch_drives):
            path = drive_file(self.cfg, drive.serial)
            if not path.exists():
                with open(path, "wb") as f:
                    f.truncate(drive.size_mib * 1024 * 1024)
        vars_file = self.cfg.work_dir / VARS
        if not vars_file.exists():
            shutil.copyfile(self.cfg.firmware_vars, vars_file)

    def _drop_media(self, slot: str) -> None:
        path = self._media.pop(slot, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._stopping = True
        if proc.poll() is None:
            proc.terminate()  # qemu exits at SIGTERM at once: the power is cut
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._proc = None
        (self.cfg.work_dir / "qemu.pid").unlink(missing_ok=True)
        events.record(self.node, "vm.stop", pid=proc.pid, rc=proc.returncode)

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        """qemu ending by itself (the guest powered off, or qemu failed) is the host going Off."""
        rc = proc.wait()
        if self._stopping or self._proc is not proc:
            return
        events.record(self.node, "vm.exited", pid=proc.pid, rc=rc)
        self._report(HostEvent(kind=HostEventKind.POWERED_OFF, detail=f"qemu exited {rc}"))

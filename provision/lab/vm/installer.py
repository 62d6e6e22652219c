"""LAB ONLY: the unattended installer CD the lab builds from Debian packages, for a VM lab node.

This is an image-based deploy (what Ironic's agent does), not Debian's installer. The CD (ISO 9660 with
Rock Ridge, so owners, modes and links of the OS tree are kept; booted by UEFI through its El Torito EFI
image, a FAT file holding a standalone GRUB) carries:

    /installer/vmlinuz, /installer/initrd.gz   the Debian cloud kernel and a busybox initramfs
    /installer/install.conf                    this node's settings: boot pair serials, SSH key, hostname
    /os/                                       the OS tree to write: the twins' cached Debian root plus the
                                               kernel, udev, initramfs-tools, mdadm, fdisk, dosfstools
                                               and GRUB for UEFI (real packages from the archive)

The installer's init (INSTALL_SH) mounts the CD, runs every tool from the OS tree (chroot), and:
partitions both boot drives (GPT: a 64 MiB EFI system partition, the rest Linux RAID), makes md RAID1
for `/` (metadata 1.2, see below), writes the OS tree onto it, writes fstab and mdadm.conf, rebuilds
the initramfs (so it assembles the mirror), installs GRUB for UEFI on both ESPs (removable path, so
either drive boots alone), enrols the lab's SSH key, installs the host key the os stage made and put on
its seed medium (a second CD, found by its provision/ssh_host_ed25519_key; install.conf SEED=1) or else
makes a new one, prints the public key on the serial console between markers (the lab reads the
console file qemu writes: the guest's network cannot reach it, so it cannot be spoofed from there), then
powers off. Any step that fails prints
`PROVISION-INSTALL-ERROR: <step>: <what>` and powers off; before the drives are partitioned nothing is
written to them (a node without its two boot drives is refused first).

Metadata 1.2 (superblock 4 KiB from the start of each member): the firmware never reads the mirror,
only the ESPs, which are plain partitions outside it, and GRUB reads md 1.2 (mdraid1x); 1.0 (superblock
at the end) is only needed when firmware must read a member as a plain filesystem (an ESP on md).

The arrays are created with --assume-clean: both members are freshly partitioned blank (all-zero, sparse)
drives, so they already agree; a resync of them under plain emulation would only cost time.

A real site uses its own unattended installer (Debian preseed, Ubuntu autoinstall, kickstart) on the
same virtual media path; what the os stage expects from it: no prompt, the lab's (site's) SSH key
enrolled, and the new host key reported over a channel the node's network cannot forge (serial console
over the BMC, or a second virtual medium), then power off.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import LabError
from provision.lab.twins import rootfs
from provision.lab.twins._cmd import have, last_line, run
from provision.lab.twins.mounts import remove_tree
from provision.lab.vm import debs, image, initrd
from provision.remote.hostkeys import KEY_NAME

# nvme-cli and dmidecode: what verify reads on a node (drives and their SMART log, the DIMMs).
OS_PACKAGES = [*image.IMAGE_PACKAGES, "mdadm", "fdisk", "dosfstools", "grub-efi-amd64-bin", "grub2-common",
               "nvme-cli", "dmidecode"]  # fmt: skip
HOST_TOOLS = {"xorriso": "xorriso", "grub-mkstandalone": "grub-common", "mkfs.vfat": "dosfstools",
              "mcopy": "mtools"}  # fmt: skip
# What the installer's own kernel needs, loaded in dependency order (modules.dep): the virtual CD (a
# SCSI CD on virtio-scsi), its filesystem, the ESPs' filesystem (vfat loads its iocharset, ascii in
# Debian's config, even with utf8 on), md RAID1.
INSTALLER_MODULES = ("virtio_pci", "virtio_scsi", "sr_mod", "isofs", "vfat", "nls_cp437", "nls_iso8859-1",
                     "nls_ascii", "nls_utf8", "raid1")  # fmt: skip
# The installed system's initramfs (MODULES=list: plain emulation makes MODULES=most take minutes).
TARGET_MODULES = ("md_mod", "raid1", "virtio_pci", "virtio_net", "vfat", "nls_cp437", "nls_ascii", "nls_utf8")
TARGET_INITRAMFS = "# written by provision's installer builder\nMODULES=list\nCOMPRESS=gzip\n"
GRUB_DEFAULT = """# written by provision's installer builder: the serial console is the lab's only screen
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0 net.ifnames=0"
GRUB_TERMINAL=console
"""
CD_GRUB_CFG = """set timeout=0
search --no-floppy --set=root --file /installer/install.conf
linux /installer/vmlinuz console=ttyS0 rdinit=/init panic=-1 loglevel=4
initrd /installer/initrd.gz
boot
"""
ESP_MIB = 64
HOSTKEY_BEGIN = "PROVISION-HOSTKEY-BEGIN"
HOSTKEY_END = "PROVISION-HOSTKEY-END"
DONE = "PROVISION-INSTALL-DONE"
ERROR = "PROVISION-INSTALL-ERROR:"
STEP = "PROVISION-INSTALL-STEP:"
STAMP = "installer.json"


class InstallerTree(BaseModel):
    """The cached OS tree and installer boot files (built once per recipe)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: Path
    kernel_version: str
    built: bool = False


class InstallConf(BaseModel):
    """One node's install: which drives are the boot pair, the key to enrol, the hostname."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hostname: str = Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")
    boot_serials: tuple[str, ...] = Field(min_length=1, max_length=4)
    authorized_key: str = Field(pattern=r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256) [A-Za-z0-9+/=]+( \S+)?$")
    seed: bool = False
    """True: the host key comes from the os stage's seed medium (a second CD; the install fails without it);
    False: the installer makes one and prints it on the serial console."""

    def text(self) -> str:
        for serial in self.boot_serials:
            if not serial.replace("-", "").replace("_", "").replace(".", "").isalnum():
                raise LabError(f"boot drive serial {serial!r}: only letters, digits, '-', '_', '.'")
        return (f"HOSTNAME='{self.hostname}'\nBOOT_SERIALS='{' '.join(self.boot_serials)}'\n"
                f"AUTHORIZED_KEY='{self.authorized_key}'\nSEED='{int(self.seed)}'\n")  # fmt: skip


INSTALL_SH = f"""#!/bin/busybox sh
# provision installer: partition the boot pair, md RAID1 for /, write the OS, GRUB on both ESPs, power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo 1 > /proc/sys/kernel/printk
say() {{ echo "$*" > /dev/console; }}
fail() {{ say "{ERROR} $STEP: $*"; sync; poweroff -f; sleep 60; }}
step() {{ STEP=$1; say "{STEP} $1 $(cut -d' ' -f1 /proc/uptime)"; }}
step modules
for m in $(cat /modules.order); do insmod /lib/modules/$m || fail "insmod $m"; done
step media
find_media() {{  # $1: a file the medium holds, $2: where to mount it, $3: a device to skip; sets FOUND
  FOUND=; i=0
  while [ $i -lt 100 ]; do
    for d in /dev/sr*; do
      [ -b "$d" ] && [ "$d" != "$3" ] || continue
      mount -t iso9660 -o ro "$d" "$2" 2>/dev/null || continue
      [ -f "$2/$1" ] && {{ FOUND=$d; return 0; }}
      umount "$2"
    done
    sleep 0.1; i=$((i+1))
  done
  return 1
}}
mkdir -p /cd /t /seed
find_media installer/install.conf /cd "" || fail "cannot find the installer CD (one holding /installer/install.conf)"
CD_DEV=$FOUND
. /cd/installer/install.conf || fail "no install.conf on the CD"
if [ "$SEED" = 1 ]; then
  find_media provision/{KEY_NAME} /seed "$CD_DEV" || \
    fail "no seed medium (a CD holding provision/{KEY_NAME}) beside the installer; nothing written"
fi
OS=/cd/os
for d in dev proc sys; do mount --bind /$d $OS/$d || fail "bind /$d"; done
mount -t tmpfs tmpfs $OS/run; mount -t tmpfs tmpfs $OS/tmp
x() {{ chroot $OS "$@" || fail "$*"; }}
step drives
disks=
for s in $BOOT_SERIALS; do
  found=
  for c in /sys/class/nvme/nvme*; do
    [ "$(tr -d ' ' < $c/serial)" = "$s" ] || continue
    for n in $c/nvme*n1; do [ -e "$n" ] && found=${{n##*/}}; done
  done
  [ -n "$found" ] || fail "boot drive $s not found (need the boot pair: $BOOT_SERIALS); nothing written"
  disks="$disks $found"
done
set -- $disks
[ $# -eq 2 ] || fail "need exactly two boot drives for the RAID1 root, found $#: $disks; nothing written"
A=$1; B=$2
step partition
for d in $A $B; do
  printf 'label: gpt\\nsize={ESP_MIB}MiB, type=U, name=esp\\ntype=R, name=root\\n' | x sfdisk -q --wipe always /dev/$d
done
i=0; while [ ! -b /dev/${{B}}p2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
step raid
x mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --assume-clean --name=root \\
  /dev/${{A}}p2 /dev/${{B}}p2
step filesystems
x mkfs.ext4 -q -L root /dev/md0
x mkfs.vfat -n ESP0 /dev/${{A}}p1
x mkfs.vfat -n ESP1 /dev/${{B}}p1
step write
mount -t ext4 /dev/md0 /t || fail "mount /dev/md0"
for e in $OS/* $OS/.[!.]*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  case ${{e##*/}} in
    dev|proc|sys|run|tmp) mkdir -p /t/${{e##*/}} ;;  # the installer's own mounts: not copied
    *) cp -a "$e" /t/ || fail "copy ${{e##*/}} of the OS tree" ;;
  esac
done
chmod 1777 /t/tmp
for d in dev proc sys; do mount --bind /$d /t/$d || fail "bind /$d"; done
mount -t tmpfs tmpfs /t/run
y() {{ chroot /t "$@" || fail "$*"; }}
step configure
root_uuid=$(chroot /t blkid -s UUID -o value /dev/md0)
esp_uuid=$(chroot /t blkid -s UUID -o value /dev/${{A}}p1)
[ -n "$root_uuid" ] && [ -n "$esp_uuid" ] || fail "no filesystem UUIDs"
printf 'UUID=%s / ext4 errors=remount-ro 0 1\\nUUID=%s /boot/efi vfat umask=0077,nofail 0 1\\n' \\
  "$root_uuid" "$esp_uuid" > /t/etc/fstab
mkdir -p /t/etc/mdadm /t/boot/efi
{{ echo "HOMEHOST <system>"; chroot /t mdadm --detail --scan; }} > /t/etc/mdadm/mdadm.conf || fail "mdadm.conf"
grep -q '^ARRAY /dev/md0 ' /t/etc/mdadm/mdadm.conf || fail "mdadm --detail --scan named no /dev/md0"
echo "$HOSTNAME" > /t/etc/hostname
mkdir -p /t/root/.ssh; chmod 700 /t/root/.ssh
echo "$AUTHORIZED_KEY" > /t/root/.ssh/authorized_keys; chmod 600 /t/root/.ssh/authorized_keys
rm -f /t/etc/ssh/ssh_host_*
if [ "$SEED" = 1 ]; then  # the host key the os stage made and recorded: nothing has to come back
  cp /seed/provision/{KEY_NAME} /seed/provision/{KEY_NAME}.pub /t/etc/ssh/ || fail "copy the seeded host key"
  chmod 600 /t/etc/ssh/{KEY_NAME}; chmod 644 /t/etc/ssh/{KEY_NAME}.pub
else
  y ssh-keygen -q -t ed25519 -N "" -C "root@$HOSTNAME" -f /etc/ssh/{KEY_NAME}
fi
step initramfs
y update-initramfs -c -k all
step bootloader
mount -t vfat /dev/${{A}}p1 /t/boot/efi || fail "mount ESP0"
y grub-install --target=x86_64-efi --efi-directory=/boot/efi --removable --no-nvram
y update-grub
umount /t/boot/efi
mount -t vfat /dev/${{B}}p1 /t/boot/efi || fail "mount ESP1"
y grub-install --target=x86_64-efi --efi-directory=/boot/efi --removable --no-nvram
[ -f /t/boot/efi/EFI/BOOT/BOOTX64.EFI ] || fail "no EFI/BOOT/BOOTX64.EFI on ESP1"
umount /t/boot/efi
step report
say "{HOSTKEY_BEGIN}"
say "$(cat /t/etc/ssh/ssh_host_ed25519_key.pub)"
say "{HOSTKEY_END}"
for d in run sys proc dev; do umount /t/$d; done
umount /t || fail "umount /t"
chroot $OS mdadm --stop /dev/md0 > /dev/null 2>&1
umount /seed 2>/dev/null
sync
say "{DONE} $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
sleep 60
"""


def module_order(modules_dep: str, wanted: tuple[str, ...]) -> list[str]:
    """Paths (relative to /lib/modules/<version>) of `wanted` modules and their dependencies, each after
    what it needs, from the text of modules.dep. LabError naming a module the kernel does not have."""
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in modules_dep.splitlines():
        path, sep, rest = line.partition(":")
        if not sep:
            continue
        deps[path] = rest.split()
        by_name[path.rsplit("/", 1)[-1].removesuffix(".ko").replace("-", "_")] = path
    order: list[str] = []

    def add(path: str) -> None:
        if path in order:
            return
        for dep in reversed(deps.get(path, [])):  # modules.dep lists what to load last first
            add(dep)
        order.append(path)

    for name in wanted:
        found = by_name.get(name.replace("-", "_"))
        if found is None:
            raise LabError(f"kernel module {name} is not in modules.dep (built in, or missing from the kernel?)")
        add(found)
    return order


def ensure_installer_tree(cache: Path | None = None) -> InstallerTree:
    """The OS tree and the installer's kernel and initramfs, built once per recipe (one builder at a time)."""
    missing = [f"{tool} ({pkg})" for tool, pkg in HOST_TOOLS.items() if not have(tool)]
    if missing:
        raise LabError(f"the installer builder needs {', '.join(missing)}: PROVISION_TEST_VM=1 scripts/bootstrap.sh")
    cache = cache or rootfs.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".installer.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = rootfs.ensure_rootfs(cache)
        deb_cache = cache / "vm-debs"
        kernel_deb = debs.kernel_deb(deb_cache)
        wanted = debs.plan(base / "var/lib/dpkg/status", OS_PACKAGES)
        target = cache / f"installer-{_recipe(base, kernel_deb, wanted)}"
        if (target / STAMP).is_file():
            return InstallerTree.model_validate_json((target / STAMP).read_text())
        for stale in cache.glob("installer-*"):
            remove_tree(stale)  # other recipes and interrupted builds (we hold the lock)
        return _build(target, base, kernel_deb, wanted, deb_cache)


def _recipe(base: Path, kernel_deb: Path, wanted: dict[str, str]) -> str:
    parts = ["i2", (base / rootfs.STAMP).read_text().strip(), kernel_deb.name, image.NETWORK_UNIT,
             TARGET_INITRAMFS, GRUB_DEFAULT, CD_GRUB_CFG, INSTALL_SH, repr(TARGET_MODULES),
             repr(INSTALLER_MODULES), repr(sorted(wanted.items()))]  # fmt: skip
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _build(target: Path, base: Path, kernel_deb: Path, wanted: dict[str, str], deb_cache: Path) -> InstallerTree:
    work = target.with_name(f"{target.name}.build-{os.getpid()}")
    remove_tree(work)
    try:
        work.mkdir(parents=True)
        tree = work / "os"
        run(["cp", "-a", str(base), str(tree)], timeout=600)
        (tree / rootfs.STAMP).unlink(missing_ok=True)
        boot = work / "installer"
        boot.mkdir()
        conf = tree / "etc/initramfs-tools/update-initramfs.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text("update_initramfs=no\n")  # no initramfs built on the host: the installer makes it
        # The kernel goes in as its package (dpkg knows it, as on an installed node: the spec's kernel
        # package check reads dpkg); INITRD=No keeps its hook from building an initramfs here.
        image._install(tree, [*debs.fetch(wanted, deb_cache), kernel_deb], ("--force-confdef", "--force-confold"),
                       env=("INITRD=No",))  # fmt: skip
        conf.write_text("update_initramfs=yes\nbackup_initramfs=no\n")
        version = _kernel_version(tree)
        shutil.copy2(tree / "boot" / f"vmlinuz-{version}", boot / "vmlinuz")
        _configure(tree)
        _installer_initrd(boot / "initrd.gz", image._busybox(deb_cache, work), tree / "lib/modules" / version)
        remove_tree(work / "busybox-deb")
    except BaseException:
        remove_tree(work)
        raise
    work.rename(target)
    made = InstallerTree(directory=target, kernel_version=version, built=True)
    (target / STAMP).write_text(made.model_copy(update={"built": False}).model_dump_json(indent=1))
    return made


def _kernel_version(tree: Path) -> str:
    versions = sorted(p.name for p in (tree / "usr/lib/modules").iterdir() if (p / "modules.dep").is_file())
    if len(versions) != 1:
        raise LabError(f"the installer's OS tree: expected one kernel, found {versions or 'none'}")
    return versions[0]


def _configure(tree: Path) -> None:
    image._configure(tree)  # networkd on qemu's user network, initramfs config, no apt cache
    (tree / "etc/initramfs-tools/conf.d/provision-vm.conf").write_text(TARGET_INITRAMFS)
    (tree / "etc/initramfs-tools/modules").write_text("\n".join(TARGET_MODULES) + "\n")
    (tree / "etc/default").mkdir(parents=True, exist_ok=True)
    (tree / "etc/default/grub").write_text(GRUB_DEFAULT)
    (tree / "etc/fstab").write_text("# written by the installer\n")
    (tree / "etc/hostname").write_text("provision-installer\n")
    for key in (tree / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # each installed node makes its own
    for name in ("root/.ssh/authorized_keys",):
        (tree / name).unlink(missing_ok=True)
    (tree / "boot/efi").mkdir(parents=True, exist_ok=True)
    remount = tree / "etc/systemd/system/systemd-remount-fs.service"
    if remount.is_symlink():
        remount.unlink()  # the twins mask it (their root is nspawn's); an installed root remounts per fstab


def _installer_initrd(out: Path, busybox: Path, modules_dir: Path) -> None:
    order = module_order((modules_dir / "modules.dep").read_text(), INSTALLER_MODULES)
    out.write_bytes(installer_initrd(busybox, modules_dir, order, {"init": INSTALL_SH}))


def installer_initrd(busybox: Path, modules_dir: Path, order: list[str], scripts: dict[str, str]) -> bytes:
    """A gzipped newc initramfs: busybox, the kernel modules in `order` (and modules.order), and `scripts`
    (name -> text, executable; `init` among them)."""
    writer = initrd._Newc()
    for d in ("bin", "dev", "proc", "sys", "lib", "lib/modules"):
        writer.directory(d)
    writer.file("bin/busybox", busybox.read_bytes(), 0o755)
    for name, text in scripts.items():
        writer.file(name, text.encode(), 0o755)
    names = []
    for rel in order:
        name = rel.rsplit("/", 1)[-1]
        writer.file(f"lib/modules/{name}", (modules_dir / rel).read_bytes(), 0o644)
        names.append(name)
    writer.file("modules.order", ("\n".join(names) + "\n").encode(), 0o644)
    return gzip.compress(writer.finish(), compresslevel=1)


def make_iso(tree: InstallerTree, conf: InstallConf, out: Path) -> Path:
    """This node's installer CD at `out` (the OS tree is shared; install.conf is the node's)."""
    work = out.with_name(out.name + ".work")
    remove_tree(work)
    work.mkdir(parents=True)
    try:
        inst = work / "installer"
        inst.mkdir()
        for name in ("vmlinuz", "initrd.gz"):
            os.link(tree.directory / "installer" / name, inst / name)
        (inst / "install.conf").write_text(conf.text())
        cfg = work / "grub.cfg"
        cfg.write_text(CD_GRUB_CFG)
        efi = work / "efi"
        efi.mkdir()
        run(["grub-mkstandalone", "-O", "x86_64-efi", "-o", str(efi / "BOOTX64.EFI"),
             "--modules=part_gpt iso9660 search search_fs_file linux normal configfile",
             f"boot/grub/grub.cfg={cfg}"], timeout=300)  # fmt: skip
        esp = work / "efiboot.img"
        with open(esp, "wb") as f:
            f.truncate(((efi / "BOOTX64.EFI").stat().st_size * 3 // 2 // 2**20 + 4) * 2**20)
        run(["mkfs.vfat", "-n", "INSTALLER", str(esp)], timeout=60)
        run(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"], timeout=60)
        run(["mcopy", "-i", str(esp), str(efi / "BOOTX64.EFI"), "::/EFI/BOOT/BOOTX64.EFI"], timeout=60)
        boot_dir = work / "boot"
        boot_dir.mkdir()
        os.link(esp, boot_dir / "efiboot.img")
        argv = [
            "xorriso", "-as", "mkisofs", "-R", "-V", "PROVISION_INSTALL", "-o", str(out),
            "-e", "boot/efiboot.img", "-no-emul-boot",
            "-graft-points", f"installer={inst}", f"boot={boot_dir}", f"os={tree.directory / 'os'}",
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            raise LabError(f"xorriso failed (exit {proc.returncode}): {last_line(proc.stderr)}")
    finally:
        remove_tree(work)
    return out


def installer_iso(conf: InstallConf, out: Path, cache: Path | None = None) -> Path:
    """Build (or reuse) the installer tree, then this node's CD; returns `out`."""
    tree = ensure_installer_tree(cache)
    shutil.rmtree(out.with_name(out.name + ".work"), ignore_errors=True)
    return make_iso(tree, conf, out)

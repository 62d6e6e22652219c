"""LAB ONLY: the lab's installer (provision/lab/vm/installer.py) booted over the network instead of from its CD.

The same init script, with one block changed: where the CD installer looks for its CD and the seed medium,
this one loads the virtio NIC's driver and loop, takes an address by DHCP on each NIC (busybox udhcpc; no
route is set: the provisioning network is the interface's own subnet), fetches the node's installer image
(the same ISO: install.conf, the OS tree) from `url=` on the kernel command line into memory and loop-mounts
it where the CD would be, and fetches the host key pair from the seed's URL (`provision.seed=`, the os
stage's image server, which hands it to that node's boot script only). Everything after that (drives,
mirror, OS, GRUB, the key on the serial console, power off) is the CD installer's own text, but for one
line more: the installed OS leaves the NIC it was installed through (BOOTIF) unmanaged.

    netboot_files(tree, out_dir) -> (vmlinuz, initrd.gz)   served by the lab's image server; the os stage's
                                                          software.os_installer.kernel / .initrd name them

The kernel command line the os stage's boot script gives (provision/netboot/config.py ipxe_script) plus the
profile's `cmdline` (CMDLINE: the serial console, the installer's init).
"""

from __future__ import annotations

import os
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins import rootfs
from provision.lab.twins.mounts import remove_tree
from provision.lab.vm import image
from provision.lab.vm.installer import INSTALL_SH, INSTALLER_MODULES, InstallerTree, installer_initrd, module_order
from provision.remote.hostkeys import KEY_NAME

NET_MODULES = ("virtio_net", "loop")
CMDLINE = "console=ttyS0 rdinit=/init panic=-1 loglevel=4 BOOTIF=01-${net0/mac:hexhyp}"
"""The profile's software.os_installer.cmdline: the installer's console and init, and BOOTIF (pxelinux's
convention), the MAC of the NIC iPXE booted from, which iPXE fills in when it runs the boot script."""
ISO = "/install.iso"
CD_BLOCK_START = "mkdir -p /cd /t /seed\n"
CD_BLOCK_END = "; nothing written\"\nfi\n"
UDHCPC_SH = """#!/bin/busybox sh
# udhcpc's hook: the address only (no route, no DNS: the image server is on the provisioning subnet)
case "$1" in
  deconfig) ifconfig "$interface" 0.0.0.0 ;;
  bound|renew) ifconfig "$interface" "$ip" netmask "${subnet:-255.255.255.0}" ;;
esac
"""
NET_BLOCK = f"""mkdir -p /cd /t /seed/provision
URL=; SEEDURL=; BOOTMAC=
for a in $(cat /proc/cmdline); do
  case "$a" in
    url=*) URL=${{a#url=}} ;; provision.seed=*) SEEDURL=${{a#provision.seed=}} ;;
    BOOTIF=01-*) BOOTMAC=$(echo "${{a#BOOTIF=01-}}" | tr - :) ;;
  esac
done
[ -n "$URL" ] || fail "no url= (the installer image) on the kernel command line; nothing written"
step network
ifconfig lo 127.0.0.1 up
i=0; while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
leased=
for n in /sys/class/net/eth*; do
  [ -e "$n" ] || continue
  ifconfig "${{n##*/}}" up
  udhcpc -i "${{n##*/}}" -n -q -t 4 -T 2 -s /udhcpc.sh >/dev/null 2>&1 && leased="$leased ${{n##*/}}"
done
[ -n "$leased" ] || fail "no DHCP answer on any NIC; nothing written"
say "{{STEP}} leased$leased"
step fetch
wget -q -O {ISO} "$URL" || fail "cannot fetch the installer image $URL; nothing written"
mount -t iso9660 -o ro,loop {ISO} /cd || fail "cannot mount the installer image fetched from $URL"
CD_DEV=none
. /cd/installer/install.conf || fail "no install.conf in the installer image"
if [ "$SEED" = 1 ]; then
  [ -n "$SEEDURL" ] || fail "no provision.seed= (the seed's URL) on the kernel command line; nothing written"
  for f in {KEY_NAME} {KEY_NAME}.pub; do
    wget -q -O /seed/provision/$f "$SEEDURL$f" || fail "cannot fetch the seed's $f; nothing written"
  done
  chmod 600 /seed/provision/{KEY_NAME}
fi
"""

HOSTNAME_LINE = 'echo "$HOSTNAME" > /t/etc/hostname\n'
# The installed OS leaves the provisioning NIC alone: the lab's network unit (provision/lab/vm/image.py) gives
# every eth* the user network's static address, which on two NICs would send the SSH replies out the wrong one.
TARGET_BLOCK = """if [ -n "$BOOTMAC" ]; then
  mkdir -p /t/etc/systemd/network
  printf '[Match]\\nMACAddress=%s\\n\\n[Link]\\nUnmanaged=yes\\n' "$BOOTMAC" \\
    > /t/etc/systemd/network/00-provisioning.network
fi
"""


def net_init() -> str:
    """The installer's init with its media block swapped for the network one (LabError if the CD
    installer's text no longer has that block: the two must change together)."""
    start = INSTALL_SH.find(CD_BLOCK_START)
    end = INSTALL_SH.find(CD_BLOCK_END, start)
    if start < 0 or end < 0:
        raise LabError("the CD installer's media block is not where the network installer expects it")
    block = NET_BLOCK.replace("{STEP}", "PROVISION-INSTALL-STEP:")
    text = INSTALL_SH[:start] + block + INSTALL_SH[end + len(CD_BLOCK_END):]
    if text.count(HOSTNAME_LINE) != 1:
        raise LabError("the CD installer's hostname line is not where the network installer expects it")
    return text.replace(HOSTNAME_LINE, HOSTNAME_LINE + TARGET_BLOCK)


def netboot_files(tree: InstallerTree, out_dir: Path, cache: Path | None = None) -> tuple[Path, Path]:
    """The installer's kernel and network initramfs in `out_dir` (made fresh each call: a few MiB)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kernel = out_dir / "vmlinuz"
    kernel.unlink(missing_ok=True)
    os.link(tree.directory / "installer" / "vmlinuz", kernel)
    modules_dir = tree.directory / "os/lib/modules" / tree.kernel_version
    order = module_order((modules_dir / "modules.dep").read_text(), (*INSTALLER_MODULES, *NET_MODULES))
    work = out_dir / "busybox.work"
    remove_tree(work)
    work.mkdir()
    try:
        busybox = image._busybox((cache or rootfs.cache_dir()) / "vm-debs", work)
        out = out_dir / "initrd.gz"
        out.write_bytes(installer_initrd(busybox, modules_dir, order, {"init": net_init(), "udhcpc.sh": UDHCPC_SH}))
    finally:
        remove_tree(work)
    return kernel, out

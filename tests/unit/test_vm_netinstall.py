"""The lab installer booted over the network: its init is the CD installer's with only the media block
swapped (network, image and seed fetched over HTTP), each fetch refused before a drive is touched."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from provision.errors import LabError
from provision.lab.vm import installer, netinstall


def test_the_network_init_is_the_cd_installers_but_for_how_it_finds_its_image_and_seed() -> None:
    net, cd = netinstall.net_init(), installer.INSTALL_SH
    if shutil.which("sh"):
        assert subprocess.run(["sh", "-n"], input=net, text=True, check=False).returncode == 0
    assert "find_media installer/install.conf" not in net and "find_media provision/" not in net
    head, tail = cd.split(netinstall.CD_BLOCK_START, 1)[0], cd.split(netinstall.CD_BLOCK_END, 1)[1]
    assert net.startswith(head)
    assert net.replace(netinstall.TARGET_BLOCK, "").endswith(tail)  # everything else is the CD installer's text
    assert "udhcpc -i" in net and 'wget -q -O /install.iso "$URL"' in net and "-o ro,loop /install.iso /cd" in net
    assert 'wget -q -O /seed/provision/$f "$SEEDURL$f"' in net  # the seed's flat URLs (os_net's image server)


@pytest.mark.parametrize("refusal", ["no url=", "no DHCP answer", "cannot fetch the installer image",
                                     "no provision.seed=", "cannot fetch the seed's"])
def test_each_network_refusal_comes_before_any_drive_is_written(refusal: str) -> None:
    net = netinstall.net_init()
    assert net.index(refusal) < net.index("step drives") < net.index("step partition")


def test_the_seed_is_fetched_only_for_a_seeded_install_and_its_key_made_private() -> None:
    net = netinstall.net_init()
    seeded = net.index('if [ "$SEED" = 1 ]; then\n  [ -n "$SEEDURL" ]')
    assert seeded < net.index("$SEEDURL$f") < net.index("chmod 600 /seed/provision/ssh_host_ed25519_key")


def test_a_cd_installer_whose_media_block_moved_is_a_lab_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netinstall, "INSTALL_SH", installer.INSTALL_SH.replace(netinstall.CD_BLOCK_START, "mkdir -p /x\n"))
    with pytest.raises(LabError, match="media block"):
        netinstall.net_init()


def test_the_udhcpc_hook_sets_only_the_address() -> None:
    assert "route add" not in netinstall.UDHCPC_SH and "ip route" not in netinstall.UDHCPC_SH and 'ifconfig "$interface" "$ip" netmask' in netinstall.UDHCPC_SH


def test_the_nic_it_was_installed_through_is_left_unmanaged_by_the_installed_os() -> None:
    net = netinstall.net_init()
    assert "BOOTIF=01-${net0/mac:hexhyp}" in netinstall.CMDLINE  # iPXE fills in the NIC it booted from
    assert 'BOOTIF=01-*) BOOTMAC=$(echo "${a#BOOTIF=01-}" | tr - :)' in net
    unit = net.index("00-provisioning.network")
    assert net.index('echo "$HOSTNAME" > /t/etc/hostname') < unit < net.index(installer.HOSTKEY_BEGIN)
    assert "MACAddress=%s\\n\\n[Link]\\nUnmanaged=yes" in net


def _newc_entries(blob: bytes) -> dict[str, tuple[int, bytes]]:
    """name -> (mode, data) of a newc cpio archive (the test's own reader, independent of the writer)."""
    out: dict[str, tuple[int, bytes]] = {}
    at = 0
    while True:
        head = blob[at:at + 110]
        assert head[:6] == b"070701", head[:6]
        mode, size, namesize = int(head[14:22], 16), int(head[54:62], 16), int(head[94:102], 16)
        name_end = at + 110 + namesize
        name = blob[at + 110:name_end - 1].decode()
        data_at = (name_end + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, blob[data_at:data_at + size])
        at = (data_at + size + 3) & ~3


def test_the_installer_initramfs_holds_busybox_its_scripts_and_the_modules_in_order(tmp_path: Path) -> None:
    import gzip

    from provision.lab.vm.installer import installer_initrd

    (tmp_path / "busybox").write_bytes(b"BB")
    mods = tmp_path / "modules"
    (mods / "kernel").mkdir(parents=True)
    for name in ("virtio.ko", "virtio_net.ko"):
        (mods / "kernel" / name).write_bytes(name.encode())
    blob = installer_initrd(tmp_path / "busybox", mods, ["kernel/virtio.ko", "kernel/virtio_net.ko"],
                            {"init": "#!/bin/sh\n", "udhcpc.sh": "#!/bin/sh\necho dhcp\n"})
    entries = _newc_entries(gzip.decompress(blob))
    assert entries["bin/busybox"][1] == b"BB" and entries["init"][1] == b"#!/bin/sh\n"
    assert entries["udhcpc.sh"][0] & 0o777 == 0o755 and entries["init"][0] & 0o777 == 0o755
    assert entries["lib/modules/virtio_net.ko"][1] == b"virtio_net.ko"
    assert entries["modules.order"][1] == b"virtio.ko\nvirtio_net.ko\n"  # insmod resolves nothing: order matters

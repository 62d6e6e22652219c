"""`provision netboot up|status|down` with a real dnsmasq on a private network: two network namespaces joined
by a veth pair (dnsmasq's side and the nodes' side), never the host's network. A DHCP client stands for the
node's firmware (tests/lab/dhcpclient.py): the lab node's MAC is answered (PXE: the loader over TFTP; iPXE:
its boot script's URL only while the os stage's entry is there; UEFI HTTP boot: the loader's URL), a MAC
the inventory does not name gets nothing; the leases and the log show only the lab node; after down no
dnsmasq process, port or file is left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.netboot import service
from provision.netboot.config import NetbootNode
from tests.conftest import EXAMPLE_INVENTORY

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(service.dnsmasq_binary() is None, reason="no dnsmasq (scripts/bootstrap.sh installs it)"),
]

NODE_MAC = "52:54:00:4e:42:01"
STRANGER_MAC = "52:54:00:4e:42:99"
HTTP_LOADER = "http://10.77.0.1:8080/ipxe.efi"
CLIENT = Path(__file__).with_name("dhcpclient.py")


class Net:
    def __init__(self, tag: str) -> None:
        self.server, self.client = f"pvnb-s{tag}", f"pvnb-c{tag}"
        self.server_if, self.client_if = f"pvnbs{tag}", f"pvnbc{tag}"

    def ip(self, *args: str, ns: str | None = None) -> str:
        argv = ["ip", "netns", "exec", ns, *args] if ns else list(args)
        return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30).stdout

    def firmware(self, mac: str, *flags: str) -> dict[str, Any]:
        """One DHCP exchange from the nodes' side, as the firmware `flags` names."""
        out = self.ip(sys.executable, str(CLIENT), self.client_if, mac, *flags, ns=self.client)
        return dict(json.loads(out))


@pytest.fixture(scope="module")
def net() -> Iterator[Net]:
    n = Net(str(os.getpid() % 100000))
    try:
        for ns in (n.server, n.client):
            n.ip("ip", "netns", "add", ns)
            n.ip("ip", "link", "set", "lo", "up", ns=ns)
        n.ip("ip", "link", "add", n.server_if, "netns", n.server, "type", "veth", "peer", "name", n.client_if,
             "netns", n.client)
        n.ip("ip", "addr", "add", "10.77.0.1/24", "dev", n.server_if, ns=n.server)
        n.ip("ip", "link", "set", n.server_if, "up", ns=n.server)
        # the nodes' side: the lab node's MAC, no address until DHCP gives one
        n.ip("ip", "link", "set", n.client_if, "address", NODE_MAC, ns=n.client)
        n.ip("ip", "link", "set", n.client_if, "up", ns=n.client)
        yield n
    finally:
        for ns in (n.server, n.client):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)


@pytest.fixture()
def inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE_INVENTORY, inv)
    (tmp_path / "firmware").symlink_to(EXAMPLE_INVENTORY.parent / "firmware")
    node01 = inv / "host_vars" / "node01.yml"
    node01.write_text(node01.read_text() + f"provision_os_install_method: pxe\nprovision_provisioning_mac: "
                                           f"'{NODE_MAC}'\n")
    return inv / "hosts.yml"


@pytest.fixture()
def nbdir(tmp_path: Path) -> Iterator[Path]:
    """netboot's directory; its dnsmasq stopped however the test ends."""
    d = tmp_path / "netboot"
    try:
        yield d
    finally:
        service.stop(d)


def cli(net: Net, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", net.server, sys.executable, "-m", "provision.cli", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def boot_file(offer: dict[str, Any]) -> str:
    """The boot file an offer names: option 67, or the header's file field dnsmasq moves it to."""
    return str(offer["options"].get("67") or offer["file"])


def ports(net: Net) -> str:
    return net.ip("ss", "-H", "-lnup", ns=net.server)


def test_netboot_answers_only_the_lab_node_and_leaves_nothing_after_down(net: Net, inventory: Path, nbdir: Path,
                                                                         tmp_path: Path) -> None:
    d = nbdir
    loader = tmp_path / "loader.efi"
    loader.write_bytes(b"MZ" + b"\x90" * 1500)  # stands for the iPXE EFI binary: three TFTP blocks
    up = cli(net, "netboot", "up", "node01", "node02", "-i", str(inventory), "--interface", net.server_if,
             "--network", "10.77.0.0/24", "--range", "10.77.0.100-10.77.0.150", "--site-range", "10.77.0.0/26",
             "--loader", str(loader), "--http-loader", HTTP_LOADER, "--dir", str(d))
    assert up.returncode == 0, up.stderr
    assert f"1 node(s) [node01 {NODE_MAC}]; dnsmasq pid" in up.stdout  # node02 installs from virtual media
    pid = service.running_pid(d)
    assert pid is not None and ":67 " in ports(net) and ":69 " in ports(net)
    status = cli(net, "netboot", "status", "--dir", str(d), "-o", "table")
    assert f"netboot: dnsmasq pid {pid}; nodes: pv-node01; leases: none; installing: none" in status.stdout

    # PXE firmware of the lab node: an address of the range, the loader's name, the loader over TFTP
    pxe = net.firmware(NODE_MAC, "--pxe", "--tftp", "ipxe.efi")
    assert pxe["ack"] is not None and pxe["ack"]["yiaddr"].startswith("10.77.0.1")
    assert 100 <= int(pxe["ack"]["yiaddr"].rsplit(".", 1)[1]) <= 150
    assert boot_file(pxe["offer"]) == "ipxe.efi" and pxe["tftp"] == loader.stat().st_size
    assert "3" not in pxe["offer"]["options"]  # no default route through the controller
    # a MAC the inventory does not name: no answer at all, whatever it is
    assert net.firmware(STRANGER_MAC, "--pxe", "--wait", "4")["offer"] is None
    assert net.firmware(STRANGER_MAC, "--http", "--wait", "4")["offer"] is None
    # UEFI HTTP boot firmware of the lab node: HTTPClient and the loader's URL
    web = net.firmware(NODE_MAC, "--http")
    assert web["offer"]["options"].get("60") == "HTTPClient" and boot_file(web["offer"]) == HTTP_LOADER

    # iPXE on the lab node: its boot script over TFTP while the os stage's entry is there, and only then
    ipxe = net.firmware(NODE_MAC, "--ipxe", "--tftp", "boot.ipxe")
    assert boot_file(ipxe["offer"]) == "boot.ipxe" and ipxe["tftp"] == -2  # no entry: TFTP says no such file
    script = "#!ipxe\nkernel http://10.77.0.1:41234/Zr4nd0m/vmlinuz\nboot\n"
    service.add_boot_entry(d, NetbootNode(name="node01", mac=NODE_MAC), script)
    assert net.firmware(NODE_MAC, "--ipxe", "--tftp", "boot.ipxe")["tftp"] == len(script)
    assert net.firmware(NODE_MAC, "--pxe", "--tftp", "ipxe.efi")["tftp"] == loader.stat().st_size  # its root
    assert net.firmware(STRANGER_MAC, "--ipxe", "--wait", "4")["offer"] is None
    assert "installing: pv-node01" in cli(net, "netboot", "status", "--dir", str(d), "-o", "table").stdout
    assert service.remove_boot_entry(d, "node01")
    assert net.firmware(NODE_MAC, "--ipxe", "--tftp", "boot.ipxe")["tftp"] == -2

    leases = (d / "dnsmasq.leases").read_text().splitlines()
    assert leases and all(line.split()[1] == NODE_MAC for line in leases)
    log = (d / "dnsmasq.log").read_text().splitlines()
    answered = [line for line in log if "DHCPOFFER" in line or "DHCPACK" in line]
    assert answered and all(NODE_MAC in line for line in answered)
    stranger = [line for line in log if STRANGER_MAC in line]
    assert stranger and all(line.rstrip().endswith("ignored") for line in stranger)  # asked, told nothing
    tftp = [line for line in log if "dnsmasq-tftp" in line and " sent " in line]
    assert len(tftp) == 3 and all(line.endswith(f" to {pxe['ack']['yiaddr']}") for line in tftp)

    down = cli(net, "netboot", "down", "--dir", str(d))
    assert down.returncode == 0, down.stderr
    assert not d.exists() and service.running_pid(d) is None
    assert not Path(f"/proc/{pid}").exists() or "dnsmasq" not in Path(f"/proc/{pid}/cmdline").read_text()
    assert ":67 " not in ports(net) and ":69 " not in ports(net)
    again = cli(net, "netboot", "down", "--dir", str(d))
    assert again.returncode == 0 and "was not up" in again.stdout


def test_a_proxy_beside_the_sites_dhcp_boots_only_the_lab_node(net: Net, inventory: Path, nbdir: Path,
                                                                tmp_path: Path) -> None:
    """Proxy DHCP: the site's server gives the address (here: one set by hand); dnsmasq gives no address,
    only boot information, PXE firmware getting its file from the boot server (port 4011)."""
    loader = tmp_path / "loader.efi"
    loader.write_bytes(b"MZ" + b"\x90" * 700)
    net.ip("ip", "addr", "replace", "10.77.0.200/24", "dev", net.client_if, ns=net.client)
    up = cli(net, "netboot", "up", "node01", "-i", str(inventory), "--interface", net.server_if, "--network",
             "10.77.0.0/24", "--mode", "proxy", "--loader", str(loader), "--dir", str(nbdir))
    assert up.returncode == 0, up.stderr
    pxe = net.firmware(NODE_MAC, "--pxe", "--from", "10.77.0.200", "--tftp", "ipxe.efi")
    assert pxe["offer"]["yiaddr"] == "0.0.0.0" and pxe["ack"] is None  # no address from a proxy
    assert pxe["boot"]["file"] == "ipxe.efi" and pxe["tftp"] == loader.stat().st_size
    assert boot_file(net.firmware(NODE_MAC, "--ipxe")["offer"]) == "boot.ipxe"
    # its own TFTP root (its MAC from the neighbour table: a proxy leases nothing) while its entry exists
    script = "#!ipxe\nboot\n"
    service.add_boot_entry(nbdir, NetbootNode(name="node01", mac=NODE_MAC), script)
    assert net.firmware(NODE_MAC, "--ipxe", "--from", "10.77.0.200", "--tftp", "boot.ipxe")["tftp"] == len(script)
    service.remove_boot_entry(nbdir, "node01")
    assert net.firmware(NODE_MAC, "--ipxe", "--from", "10.77.0.200", "--tftp", "boot.ipxe")["tftp"] == -2
    assert net.firmware(STRANGER_MAC, "--pxe", "--wait", "4")["offer"] is None
    assert "proxy-ignored" in (nbdir / "dnsmasq.log").read_text()
    assert not (nbdir / "dnsmasq.leases").exists() or not (nbdir / "dnsmasq.leases").read_text().strip()
    assert cli(net, "netboot", "down", "--dir", str(nbdir)).returncode == 0
    assert not nbdir.exists() and ":67 " not in ports(net) and ":4011 " not in ports(net)

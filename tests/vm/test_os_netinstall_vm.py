"""Bare metal over the network, on a VM lab node with blank drives: `provision bringup node01` with
software.os_installer.method pxe installs the OS through the network boot path of the os stage, boots it
from its md RAID1 root, configures it (site.yml) and verifies it, as tests/vm/test_os_install_vm.py does
through virtual media.

The network is private: a network namespace holds a bridge with the VM's provisioning NIC (a tap, its MAC
listed by the VM's simulated BMC) and dnsmasq (`provision netboot up`, run in the namespace, full DHCP for
that MAC only); a veth pair joins it to the controller, which has 10.78.0.254 on it and serves from there:
the lab's image server (the installer's kernel, its network initramfs (provision/lab/vm/netinstall.py) and
the node's installer image, the same ISO as the CD's) and the os stage's own (the seed, --image-bind).
The VM's firmware boots its NIC's iPXE option ROM, which runs the boot script the os stage wrote for its
MAC; the installer takes an address, fetches the image and the seed over HTTP, installs, powers off.

The first run is killed (a real SIGKILL, `os-installing:before`) once the installer is powered on; the seed's
server died with it, so the second run finds the host On with its install unfinished and starts over (a new
key, a new boot entry, the host reset into the installer), then waits for it, removes the boot entry, boots
the disks and reaches SSH with exactly the new key; configure and verify follow. The installer's phases
(power-on to the boot script, the kernel and initrd, the install, the first boot) are printed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.lab.bmcsim.config import VmProvisioningNic
from provision.lab.guestnet import HOST_FROM_GUEST
from provision.lab.parts import spec_parts
from provision.lab.twins import repo
from provision.lab.twins.ssh import lab_key
from provision.lab.vm import installer, netinstall
from provision.lab.vm.node import VmNodeOptions, drive_serials, vm_node
from provision.lab.vm.node_repo import node_repo
from provision.netboot import service
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import netif
from provision.remote import hostkeys
from provision.spec.model import NodeSpec
from tests.vm import vm_node_lab
from tests.vm.test_os_install_vm import BOOT_DRIVE_MIB, MEMORY_MIB, Lab

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(3600)]
MAC = "52:54:00:4e:56:02"
CONTROLLER = "10.78.0.254"
LOADER = Path("/usr/lib/ipxe/ipxe.efi")


def ip(*args: str, ns: str | None = None) -> str:
    argv = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30).stdout


class NetLab(Lab):
    ns: str
    nbdir: Path

    def netboot(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-m", "provision.cli", "netboot",
                               *args], capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def private_network(ns: str, host_if: str) -> None:
    """The namespace's bridge (10.78.0.1: dnsmasq) with the VM's tap and a veth to the controller (10.78.0.254)."""
    ip("ip", "netns", "add", ns)
    ip("ip", "link", "set", "lo", "up", ns=ns)
    ip("ip", "link", "add", "pvbr0", "type", "bridge", ns=ns)
    ip("ip", "addr", "add", "10.78.0.1/24", "dev", "pvbr0", ns=ns)
    ip("ip", "tuntap", "add", "dev", "pvtap0", "mode", "tap", ns=ns)
    ip("ip", "link", "set", "pvtap0", "master", "pvbr0", "up", ns=ns)
    ip("ip", "link", "add", host_if, "type", "veth", "peer", "name", "pvnvp0", "netns", ns)
    ip("ip", "link", "set", "pvnvp0", "master", "pvbr0", "up", ns=ns)
    ip("ip", "link", "set", "pvbr0", "up", ns=ns)
    ip("ip", "addr", "add", f"{CONTROLLER}/24", "dev", host_if)
    ip("ip", "link", "set", host_if, "up")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetLab]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    if service.dnsmasq_binary() is None or not LOADER.is_file():
        pytest.skip("no dnsmasq or iPXE (PROVISION_TEST_VM=1 scripts/bootstrap.sh installs them)")
    base = tmp_path_factory.mktemp("netinstall")
    tag = str(os.getpid() % 100000)
    ns, host_if = f"pvni-{tag}", f"pvni{tag}"
    key = lab_key(base)
    tree = installer.ensure_installer_tree()
    node_spec = vm_node_lab.spec(tree, BOOT_DRIVE_MIB, MEMORY_MIB)
    # network.ethernet.count stays 1: the installed OS leaves the provisioning NIC (BOOTIF) unmanaged, down
    boot, _ = drive_serials("node01", 2, 0)
    conf = installer.InstallConf(hostname="node01", boot_serials=tuple(boot), seed=True,
                                 authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
    started = time.monotonic()
    iso = installer.installer_iso(conf, base / "install.iso")
    kernel, initrd = netinstall.netboot_files(tree, base / "netboot-files")
    packages = node_repo(tree)
    print(f"\ninstaller image and network initramfs built in {time.monotonic() - started:.1f} s")
    server = repo.start(packages, ["127.0.0.1"], base)
    nbdir = base / "netboot"
    try:
        private_network(ns, host_if)
        options = VmNodeOptions(name="node01", boot_drive_mib=BOOT_DRIVE_MIB, scratch_drives=0,
                                memory_mib=MEMORY_MIB, parts=spec_parts(NodeSpec.model_validate(node_spec)),
                                guest_ports=(server.port,),
                                provisioning=VmProvisioningNic(mac=MAC, netns=ns, tap="pvtap0"))  # fmt: skip
        with vm_node(base / "lab", options) as node, ImageServer(bind=CONTROLLER, advertise=CONTROLLER) as srv:
            node_spec["software"]["os_installer"] = {
                "url": srv.url_for(iso), "method": "pxe", "kernel": srv.url_for(kernel),
                "initrd": srv.url_for(initrd), "cmdline": netinstall.CMDLINE}
            lab = NetLab(node, key, base, srv.url_for(iso), node_spec, repo.url(server, HOST_FROM_GUEST))
            lab.ns, lab.nbdir = ns, nbdir
            with open(base / "inventory" / "host_vars" / "node01.yml", "a") as hv:
                hv.write(f"provision_provisioning_mac: '{MAC}'\n")
            up = lab.netboot("up", "node01", "-i", str(lab.inventory), "--interface", "pvbr0", "--network",
                             "10.78.0.0/24", "--range", "10.78.0.100-10.78.0.150", "--site-range",
                             f"{CONTROLLER}/32", "--loader", str(LOADER), "--dir", str(nbdir))  # fmt: skip
            assert up.returncode == 0, up.stderr
            yield lab
    finally:
        service.stop(nbdir)
        repo.stop(server)
        subprocess.run(["ip", "link", "delete", host_if], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)


def phases(console: str) -> dict[str, float]:
    """The installer's steps (seconds since its kernel started) from its serial console."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(rf"{installer.STEP} (\S+) ([0-9.]+)", console)}


def events(lab: NetLab) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in lab.node.log_file.read_text().splitlines() if '"vm.' in ln]


def dnsmasq_times(lab: NetLab, what: str) -> list[float]:
    """Epoch seconds of dnsmasq's log lines containing `what` (its local-time stamps, to the second)."""
    year = time.localtime().tm_year
    return [time.mktime(time.strptime(f"{year} {ln[:15]}", "%Y %b %d %H:%M:%S"))
            for ln in (lab.nbdir / "dnsmasq.log").read_text().splitlines() if what in ln]


def install_figures(lab: NetLab, console: Path) -> dict[str, float]:
    """Power-on to DHCP, to the boot script over TFTP, to the installer's kernel (iPXE fetched the kernel and
    initrd), the install (kernel to power-off), the first boot (the disks' power-on to SSH with the key)."""
    ev = events(lab)
    on = next(e["t"] for e in ev if e["event"] == "vm.start" and e["console"] == console.name)
    off = next(e["t"] for e in ev if e["event"] in ("vm.exited", "vm.stop") and e["t"] > on)
    disk = next(e for e in ev if e["event"] == "vm.start" and e["boot"] == "Hdd")
    text = console.read_text(errors="replace")
    done = float(text.split(installer.DONE, 1)[1].split()[0])
    ack = next(t for t in dnsmasq_times(lab, "DHCPACK") if t >= int(on))
    script = next(t for t in dnsmasq_times(lab, "boot.ipxe to") if t >= int(on))
    stamps = [ln.split()[0] for ln in (lab.base / "logs" / "node01.log").read_text().splitlines()
              if ln.endswith(" os: applied")]
    ssh = time.mktime(time.strptime(stamps[-1], "%Y-%m-%dT%H:%M:%S"))  # os-first-boot: SSH with the key
    return {"dhcp": round(ack - on, 1), "boot script": round(script - on, 1),
            "kernel+initrd": round(off - done - script, 1), "install": done,
            "first boot to ssh": round(ssh - disk["t"], 1)}  # fmt: skip


def test_the_whole_bringup_over_the_network_killed_during_the_install_resumes_configures_verifies(
        lab: NetLab) -> None:
    net = ("--image-bind", CONTROLLER, "--image-advertise", CONTROLLER, "--netboot-dir", str(lab.nbdir))
    rc, _, first = lab.bringup("--strategy", "mitogen", *net, failpoint="os-installing:before")
    assert rc == -9, "the failpoint did not kill the run"
    killed_key = hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")
    rc, out, second = lab.bringup("--strategy", "mitogen", *net)
    stages = {s["stage"]: s for s in out["nodes"][0]["stages"]}
    print(f"killed {first:.0f} s after the start (installer powered on); the resumed bring-up took {second:.0f} s: "
          + ", ".join(f"{n} {s['outcome']} {s['seconds']:.1f}" for n, s in stages.items()))
    assert rc == 0 and stages["os"]["outcome"] == "applied", out
    assert [a.split()[0] for a in stages["os"]["actions"]] == [  # started over: the killed run's seed is gone
        "os-hostkey", "os-netboot", "os-boot-net", "os-power-on", "os-installing", "os-netboot-off",
        "os-boot-disk", "os-first-boot"]
    assert stages["configure"]["outcome"] == "applied" and stages["verify"]["outcome"] == "converged", stages
    logs = lab.node.console_logs()
    assert len(logs) == 3, "not: the killed installer, the new one, the disks"
    text = logs[1].read_text(errors="replace")
    assert installer.DONE in text and installer.ERROR not in text
    print(f"installer steps (s since its kernel started): {phases(text)}; network install phases (s): "
          f"{install_figures(lab, logs[1])}")
    found = re.search(rf"{installer.HOSTKEY_BEGIN}\s+(ssh-ed25519 [A-Za-z0-9+/=]+)", text.replace("\r", ""))
    recorded = hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")
    assert found and found.group(1) == recorded != killed_key, "the installed host key is not the new attempt's"
    assert not (Path(tempfile.gettempdir()) / f"provision-os-seed-{os.getuid()}" / lab.node.name).exists()
    assert lab.sh("findmnt -n -o SOURCE /").strip() == "/dev/md0"

    log = (lab.nbdir / "dnsmasq.log").read_text()
    answered = [ln for ln in log.splitlines() if "DHCPOFFER" in ln or "DHCPACK" in ln]
    assert answered and all(MAC in ln for ln in answered), log[-2000:]
    leases = [ln.split() for ln in (lab.nbdir / "dnsmasq.leases").read_text().splitlines()]
    assert leases and {lease[1] for lease in leases} == {MAC}, leases
    sent = [ln.rsplit(" sent ", 1)[1] for ln in log.splitlines() if "dnsmasq-tftp" in ln and " sent " in ln]
    assert sent and all(s.split("/tftp/", 1)[1].startswith("52-54-00-4e-56-02/boot.ipxe") for s in sent), sent
    assert not (lab.nbdir / "tftp" / "52-54-00-4e-56-02").exists()  # the boot entry and seed URL are gone


def test_the_bmc_lists_the_vms_two_nics_with_the_provisioning_mac(lab: NetLab) -> None:
    """The MAC the inventory gives is the one the VM's BMC reports (provision/redfish/ops/netif.py reads it)."""
    node = lab.node
    auth = base64.b64encode(f"{node.username}:{node.password.get_secret_value()}".encode()).decode()

    def get(path: str) -> dict[str, Any]:
        req = urllib.request.Request(f"{node.redfish_url}{path}", headers={"Authorization": f"Basic {auth}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return dict(json.loads(resp.read()))

    system = get("/redfish/v1/Systems")["Members"][0]["@odata.id"]
    coll = get(get(system)["EthernetInterfaces"]["@odata.id"])
    nics = netif.parse_nics([get(m["@odata.id"]) for m in coll["Members"]])
    assert sorted(n.mac for n in nics) == sorted([node.host.mac, MAC])


def test_netboot_down_leaves_no_process_port_or_file(lab: NetLab) -> None:
    pid = service.running_pid(lab.nbdir)
    assert pid is not None
    down = lab.netboot("down", "--dir", str(lab.nbdir))
    assert down.returncode == 0, down.stderr
    assert not lab.nbdir.exists() and service.running_pid(lab.nbdir) is None
    assert not Path(f"/proc/{pid}").exists() or "dnsmasq" not in Path(f"/proc/{pid}/cmdline").read_text()
    ports = ip("ss", "-H", "-lnup", ns=lab.ns)
    assert ":67 " not in ports and ":69 " not in ports, ports

"""The `ip` stand-in: a twin's own link (a veth) shown as the catalogue server's on-board PCI NIC.

The real-ip output below was captured on the lab host (iproute2 6.1.0, Debian 12) from a veth end moved
into a network namespace and renamed eth0, as provision/lab/twins/netns.py makes a twin's link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_personality_helpers import TOOLS, spec

from provision.conformance.checks.netdev import parse_netdevs
from provision.lab.twins.personality import install_tools, prepare_node, proc_binds
from provision.lab.twins.personality.hardware import hardware_from_spec

CAPTURE = (
    '[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue",'
    '"operstate":"UNKNOWN","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00",'
    '"broadcast":"00:00:00:00:00:00","promiscuity":0,"allmulti":0,"min_mtu":0,"max_mtu":0,"num_tx_queues":1,'
    '"num_rx_queues":1,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,'
    '"gro_max_size":65536,"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host",'
    '"label":"lo","valid_life_time":4294967295,"preferred_life_time":4294967295}]},'
    '{"ifindex":7,"link_index":8,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,'
    '"qdisc":"noqueue","operstate":"UP","group":"default","txqlen":1000,"link_type":"ether",'
    '"address":"d6:54:08:e9:8f:a3","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"promiscuity":0,"allmulti":0,'
    '"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"},"num_tx_queues":2,"num_rx_queues":2,'
    '"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536,'
    '"addr_info":[{"family":"inet","local":"10.203.1.2","prefixlen":24,"scope":"global","label":"eth0",'
    '"valid_life_time":4294967295,"preferred_life_time":4294967295}]}]\n'
)
CATALOGUE = ("catalogue_i9_9900k", "catalogue_ryzen9_7950x", "catalogue_epyc_9454p", "catalogue_i5_13500_ws")


def _ip(tmp_path: Path, profile: str, *args: str, real_rc: int = 0) -> subprocess.CompletedProcess[str]:
    """ip.py over a real-ip double that prints the capture (and its arguments on stderr)."""
    state = tmp_path / "state"
    if not state.exists():
        prepare_node(state, spec(profile), 1)
    fake = tmp_path / "real-ip"
    (tmp_path / "capture.json").write_text(CAPTURE)
    fake.write_text(f'#!/bin/sh\necho "args: $*" >&2\ncat {tmp_path / "capture.json"}\nexit {real_rc}\n')
    fake.chmod(0o755)
    env = {**os.environ, "PROVISION_LAB_STATE": str(state), "PROVISION_LAB_REAL_IP": str(fake)}
    return subprocess.run([sys.executable, "-S", "-I", str(TOOLS / "ip.py"), *args], capture_output=True,
                          text=True, env=env, check=False)


@pytest.mark.parametrize("profile", CATALOGUE)
def test_the_catalogue_twin_link_is_its_on_board_nic(profile: str) -> None:
    hw = hardware_from_spec(spec(profile), 1, ())
    assert [(n.name, n.speed_mbps) for n in hw.nics] == [("eth0", 1000)]
    assert not [h for h in hw.hcas if h.link_layer == "Ethernet"]  # a 1 GbE port is no ConnectX


def test_a_gpu_server_keeps_its_connectx_ethernet_ports_and_has_no_nic() -> None:
    hw = hardware_from_spec(spec("ml_prod_v4"), 1, ())
    assert hw.nics == () and len([h for h in hw.hcas if h.link_layer == "Ethernet"]) == 2


def test_the_check_sees_a_physical_nic_at_the_spec_speed(tmp_path: Path) -> None:
    done = _ip(tmp_path, "catalogue_epyc_9454p", "-j", "-d", "addr", "show")
    assert done.returncode == 0 and done.stderr == "args: -j -d addr show\n"
    lo, eth0 = json.loads(done.stdout)
    assert lo == json.loads(CAPTURE)[0]  # everything else exactly as the real ip printed it
    assert eth0["parentbus"] == "pci" and eth0["parentdev"] == "0000:05:00.0"
    assert not {"linkinfo", "link_index", "link_netnsid"} & set(eth0) and eth0["mtu"] == 1500
    speed = (tmp_path / "state/sys/class/net/eth0/speed").read_text().strip()  # bound over the twin's sysfs
    devs = parse_netdevs(done.stdout + f"\n@@sysfs\nlo 1 - -\neth0 7 {speed} -\n")
    assert [(d.name, d.physical, d.kind, d.speed_mbps) for d in devs] == [("lo", False, None, None),
                                                                          ("eth0", True, None, 1000)]


def test_without_details_no_parent_bus_as_the_real_ip(tmp_path: Path) -> None:
    (_, eth0) = json.loads(_ip(tmp_path, "catalogue_i9_9900k", "--json", "link", "show").stdout)
    assert "parentbus" not in eth0 and "linkinfo" not in eth0


@pytest.mark.parametrize(("profile", "args", "rc"), [
    ("ml_prod_v4", ("-j", "-d", "addr", "show"), 0),  # no simulated NIC: the veth stays a veth
    ("catalogue_i9_9900k", ("-d", "addr", "show"), 0),  # text output is never rewritten
    ("catalogue_i9_9900k", ("-j", "-d", "addr", "show"), 1),  # the real ip failed: its output and rc as they are
])
def test_everything_else_is_the_real_ip_unchanged(tmp_path: Path, profile: str, args: tuple[str, ...],
                                                  rc: int) -> None:
    done = _ip(tmp_path, profile, *args, real_rc=rc)
    assert (done.returncode, done.stdout) == (rc, CAPTURE)


def test_prepare_node_binds_the_nic_speed_over_sysfs(tmp_path: Path) -> None:
    prepare_node(tmp_path, spec("catalogue_ryzen9_7950x"), 2)
    binds = proc_binds(tmp_path)
    assert binds["/sys/class/net/eth0/speed"].read_text() == "1000\n"
    prepare_node(tmp_path / "gpu", spec("ml_prod_v4"), 2)
    assert not [k for k in proc_binds(tmp_path / "gpu") if k.startswith("/sys/")]


def test_the_ip_entry_point_starts_python_only_for_json(tmp_path: Path) -> None:
    install_tools(tmp_path)
    entry = (tmp_path / "usr/local/sbin/ip").read_text()
    assert "LAB STAND-IN" in entry and entry.rstrip().endswith('exec /usr/bin/ip "$@"')
    # run it with the tools dir and the real ip pointed at doubles: `-j` goes to ip.py, the rest to "ip"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = entry.replace("/usr/bin/ip", str(bin_dir / "ip")).replace("/usr/lib/provision-lab/tools",
                                                                        str(tmp_path / "usr/lib/provision-lab/tools"))
    (bin_dir / "ip").write_text("#!/bin/sh\necho real \"$@\"\n")
    (bin_dir / "ip").chmod(0o755)
    (bin_dir / "entry").write_text(script)
    env = {**os.environ, "PROVISION_LAB_PYTHON": sys.executable, "PROVISION_LAB_REAL_IP": str(bin_dir / "ip"),
           "PROVISION_LAB_STATE": str(tmp_path / "none"), "PROVISION_LAB_TOOLS": str(TOOLS)}
    text = subprocess.run(["sh", str(bin_dir / "entry"), "-4", "addr"], capture_output=True, text=True, env=env)
    assert text.stdout == "real -4 addr\n"
    as_json = subprocess.run(["sh", str(bin_dir / "entry"), "-d", "-j", "addr"], capture_output=True, text=True,
                             env=env)
    assert as_json.stdout == "real -d -j addr\n"  # through ip.py: no hardware.json, the real output

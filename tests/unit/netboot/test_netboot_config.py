"""dnsmasq's files for network installs, rendered from settings and nodes (pure), and every refusal in one
line before anything is written: a node without a MAC, a MAC twice, a range overlapping the site's."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest
from pydantic import ValidationError

from provision.errors import InputError
from provision.netboot.config import (
    Mode,
    NetbootNode,
    NetbootSettings,
    ipxe_script,
    mac_dir,
    normal_mac,
    parse_range,
    refusals,
    render_conf,
    render_hosts,
)
from provision.redfish.ops.netif import parse_nics, provisioning_mac

NET = IPv4Network("10.77.0.0/24")


def settings(tmp: Path, mode: Mode = Mode.DHCP, **kw: object) -> NetbootSettings:
    base: dict[str, object] = {"directory": tmp, "interface": "pv0", "mode": mode, "network": NET}
    if mode is Mode.DHCP:
        base |= {"first": IPv4Address("10.77.0.100"), "last": IPv4Address("10.77.0.150")}
    return NetbootSettings.model_validate(base | kw)


def test_full_dhcp_answers_only_known_macs_on_its_interface_without_dns(tmp_path: Path) -> None:
    conf = render_conf(settings(tmp_path), "root").splitlines()
    assert "port=0" in conf and "interface=pv0" in conf and "bind-interfaces" in conf
    assert "dhcp-range=10.77.0.100,10.77.0.150,255.255.255.0,3600" in conf
    assert "dhcp-ignore=tag:!known" in conf  # a MAC not in the hosts file gets nothing
    assert f"dhcp-hostsfile={tmp_path / 'hosts'}" in conf and "dhcp-option=option:router" in conf
    assert "dhcp-boot=tag:known,tag:!ipxe,tag:!efi-http,ipxe.efi" in conf  # PXE firmware: the loader by TFTP
    assert "dhcp-boot=tag:known,tag:ipxe,boot.ipxe" in conf  # iPXE: the script in the MAC's own TFTP root
    assert "tftp-unique-root=mac" in conf
    assert f"tftp-root={tmp_path / 'tftp'}" in conf and f"pid-file={tmp_path / 'dnsmasq.pid'}" in conf
    assert not any("HTTPClient" in line for line in conf)  # no HTTP boot offered without its loader


def test_a_proxy_gives_no_addresses_and_offers_the_loader_to_pxe_clients(tmp_path: Path) -> None:
    conf = render_conf(settings(tmp_path, Mode.PROXY), "root").splitlines()
    assert "dhcp-range=10.77.0.0,proxy,255.255.255.0" in conf
    assert not any(line.startswith("dhcp-range=10.77.0.1") for line in conf) and "dhcp-authoritative" not in conf
    assert 'pxe-service=tag:!ipxe,X86-64_EFI,"provision",ipxe.efi' in conf  # the boot server's answer (4011)
    assert "dhcp-ignore=tag:!known" in conf  # a proxy tells a stranger nothing either


def test_http_boot_hands_its_firmware_the_loaders_url(tmp_path: Path) -> None:
    conf = render_conf(settings(tmp_path, http_loader="http://10.77.0.1:8080/ipxe.efi"), "root").splitlines()
    assert "dhcp-match=set:efi-http,option:client-arch,16" in conf
    assert "dhcp-option-force=tag:known,tag:efi-http,tag:!ipxe,60,HTTPClient" in conf
    assert "dhcp-boot=tag:known,tag:efi-http,tag:!ipxe,http://10.77.0.1:8080/ipxe.efi" in conf


def test_each_node_has_its_own_tag_and_its_own_tftp_root() -> None:
    nodes = [NetbootNode(name="node01", mac="52:54:00:00:00:01"), NetbootNode(name="gpu.a_1", mac="52:54:00:00:00:02")]
    assert render_hosts(nodes) == "52:54:00:00:00:01,set:pv-node01\n52:54:00:00:00:02,set:pv-gpu-a-1\n"
    assert mac_dir("52:54:00:AB:00:01") == "52-54-00-ab-00-01"  # as dnsmasq's tftp-unique-root=mac names it


def test_the_ipxe_script_boots_the_kernel_with_the_image_and_the_seed() -> None:
    text = ipxe_script("http://m/vmlinuz", "http://m/initrd", "http://m/os.iso", "http://c:1/p/", "quiet")
    lines = text.splitlines()
    assert lines[0] == "#!ipxe" and lines[-1] == "boot"
    assert lines[1].startswith("kernel --name vmlinuz http://m/vmlinuz initrd=initrd ip=dhcp url=http://m/os.iso ")
    assert "ds=nocloud-net;s=http://c:1/p/" in lines[1] and "provision.seed=http://c:1/p/" in lines[1]
    assert lines[1].endswith(" quiet") and lines[2] == "initrd --name initrd http://m/initrd"


@pytest.mark.parametrize(("nodes", "kw", "words"), [
    ({}, {}, "netboot: no node selected"),
    ({"node01": "52:54:00:00:00:01", "node02": None, "node03": None}, {},
     "netboot: node02, node03: no provisioning MAC (set provision_provisioning_mac"),
    ({"node01": "52:54:00:00:00:01", "node02": "52:54:00:00:00:01"}, {},
     "netboot: MAC 52:54:00:00:00:01 given twice: node01 and node02"),
    ({"node01": "52:54:00:00:00:01"}, {"site_ranges": (IPv4Network("10.77.0.128/25"),)},
     "netboot: range 10.77.0.100-10.77.0.150 overlaps the site's 10.77.0.128/25"),
    ({"node01": "52:54:00:00:00:01"}, {"site_ranges": (IPv4Network("10.77.0.150/32"),)},
     "netboot: range 10.77.0.100-10.77.0.150 overlaps the site's 10.77.0.150/32"),  # the last address counts
])
def test_refusals(tmp_path: Path, nodes: dict[str, str | None], kw: dict[str, object], words: str) -> None:
    with pytest.raises(InputError) as caught:
        refusals(settings(tmp_path, **kw), nodes)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_range_beside_the_sites_is_taken(tmp_path: Path) -> None:
    got = refusals(settings(tmp_path, site_ranges=(IPv4Network("10.77.0.0/26"), IPv4Network("10.77.0.151/32"))),
                   {"node02": "52:54:00:00:00:02", "node01": "52:54:00:00:00:01"})
    assert [(n.name, n.mac) for n in got] == [("node01", "52:54:00:00:00:01"), ("node02", "52:54:00:00:00:02")]


@pytest.mark.parametrize(("mode", "kw", "words"), [
    (Mode.PROXY, {}, "http_boot needs --mode dhcp"),
    (Mode.DHCP, {}, "http_boot needs --http-loader URL"),
])
def test_http_boot_refusals(tmp_path: Path, mode: Mode, kw: dict[str, object], words: str) -> None:
    with pytest.raises(InputError, match=words):
        refusals(settings(tmp_path, mode, **kw), {"node01": "52:54:00:00:00:01"}, frozenset({"node01"}))


@pytest.mark.parametrize(("kw", "words"), [
    ({"last": IPv4Address("10.77.1.1")}, "is not inside 10.77.0.0/24"),
    ({"first": IPv4Address("10.77.0.200")}, "the first address is after the last"),
    ({"mode": Mode.PROXY, "first": IPv4Address("10.77.0.1"), "last": IPv4Address("10.77.0.2")}, "a proxy gives no"),
    ({"interface": "eth0; rm -rf /"}, "String should match pattern"),
])
def test_settings_refused(tmp_path: Path, kw: dict[str, object], words: str) -> None:
    base = {"directory": tmp_path, "interface": "pv0", "mode": Mode.DHCP, "network": NET,
            "first": IPv4Address("10.77.0.100"), "last": IPv4Address("10.77.0.150")}
    with pytest.raises(ValidationError, match=words):
        NetbootSettings.model_validate(base | kw)


def test_parsing_of_ranges_and_macs() -> None:
    assert parse_range("10.0.0.5-10.0.0.9") == (IPv4Address("10.0.0.5"), IPv4Address("10.0.0.9"))
    with pytest.raises(InputError, match="not FIRST-LAST"):
        parse_range("10.0.0.5")
    assert normal_mac("52-54-00-AB-cd-01") == "52:54:00:ab:cd:01"
    assert normal_mac("52:54:00:ab:cd") is None


def test_the_provisioning_mac_is_the_systems_one_physical_interface() -> None:
    members = [
        {"Id": "1", "MACAddress": "52:54:00:AA:00:01", "PermanentMACAddress": "52:54:00:AA:00:09"},
        {"Id": "usb0", "MACAddress": "02:00:00:00:00:01", "EthernetInterfaceType": "Virtual"},  # BMC's host NIC
        {"Id": "2", "MACAddress": "52:54:00:AA:00:02", "InterfaceEnabled": False},
        {"Id": "3", "MACAddress": "unknown"},
    ]
    nics = parse_nics(members)
    assert [(n.id, n.mac) for n in nics] == [("1", "52:54:00:aa:00:09")]  # the permanent one
    assert provisioning_mac(nics) == ("52:54:00:aa:00:09", "")
    two = parse_nics([{"Id": "1", "MACAddress": "52:54:00:aa:00:01"}, {"Id": "2", "MACAddress": "52:54:00:aa:00:02"}])
    mac, why = provisioning_mac(two)
    assert mac is None and "lists 2 interfaces (1, 2): set provision_provisioning_mac" in why
    assert provisioning_mac([])[0] is None


def test_a_boot_entry_is_the_macs_own_tftp_root_and_goes_whole(tmp_path: Path) -> None:
    from provision.netboot import service

    node = NetbootNode(name="node01", mac="52:54:00:00:00:01")
    service.write_files(settings(tmp_path / "nb"), [node], None)
    (tmp_path / "nb" / "tftp" / "ipxe.efi").write_bytes(b"MZ")
    root = service.add_boot_entry(tmp_path / "nb", node, "#!ipxe\nboot\n")
    assert root == tmp_path / "nb" / "tftp" / "52-54-00-00-00-01"
    assert sorted(p.name for p in root.iterdir()) == ["boot.ipxe", "ipxe.efi"]  # the loader too: it is the root
    assert service.status(tmp_path / "nb").installing == ("pv-node01",)
    assert service.remove_boot_entry(tmp_path / "nb", "node01") and not root.exists()
    assert not service.remove_boot_entry(tmp_path / "nb", "node01")
    assert service.status(tmp_path / "nb").installing == ()
    assert (tmp_path / "nb" / "tftp" / "ipxe.efi").is_file()  # the shared loader stays

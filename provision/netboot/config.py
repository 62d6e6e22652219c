"""The network side of the os stage's network install, pure: settings and nodes -> dnsmasq's files.

dnsmasq (https://thekelleys.org.uk/dnsmasq/doc.html) answers the nodes' DHCP (in full on an isolated
provisioning range, or as a proxy beside the site's DHCP server, which keeps giving the addresses), serves
the iPXE loader over TFTP to PXE firmware, and hands UEFI HTTP boot firmware the loader's URL. Every
answer goes only to the inventory's MACs (`dhcp-ignore=tag:!known` on a full range; a proxy answers only
the hosts file's MACs through `tag:known`). Files, all under one directory:

    dnsmasq.conf      the service (netboot up writes it; a site that runs dnsmasq itself includes it)
    hosts             one line per node: its provisioning MAC, a tag per node (dhcp-hostsfile)
    tftp/ipxe.efi     the iPXE loader (a copy), for PXE firmware
    tftp/<mac>/       written by the os stage during a node's install, removed after: its boot.ipxe and
                      the loader. dnsmasq's tftp-unique-root=mac makes tftp/<mac>/ the TFTP root of that
                      MAC alone (resolved from its lease or the neighbour table), so the script, which
                      holds the seed's URL, is read by that node only; without the directory the node
                      finds no boot.ipxe and boots on from its next device
    dnsmasq.pid, dnsmasq.leases, dnsmasq.log   (provision runs it)

A boot script (iPXE) names the installer's kernel and initrd, its image URL and the seed's URL; the seed's
files are served by the os stage's image server under its unguessable prefix. Nothing needs dnsmasq to
re-read a file (dnsmasq 2.90 crashes answering DHCP after a SIGHUP that dropped a dhcp-optsdir file: seen
in this lab), TFTP reads each file when asked.
Bad input is refused in one line before anything is written: a node without a provisioning MAC, a MAC
given twice, an address range that overlaps the site's, a range outside the interface's subnet.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from provision.errors import InputError

MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
CONF, HOSTS, TFTP = "dnsmasq.conf", "hosts", "tftp"
SCRIPT = "boot.ipxe"
PID, LEASES, LOG = "dnsmasq.pid", "dnsmasq.leases", "dnsmasq.log"
LOADER = "ipxe.efi"
"""The loader's name in tftp/ (the file PXE firmware asks for)."""


class Mode(StrEnum):
    DHCP = "dhcp"
    """Full DHCP on an isolated provisioning network: dnsmasq gives the addresses of `range`."""
    PROXY = "proxy"
    """Proxy DHCP beside the site's DHCP server: dnsmasq gives only boot information (PXE only)."""


class NetbootNode(BaseModel):
    """One node dnsmasq answers: its name and the MAC of the NIC it boots the installer from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    mac: str = Field(pattern=MAC.pattern)
    http_boot: bool = False
    """Its method is http_boot (UEFI HTTP boot: a full DHCP range is needed)."""

    @property
    def tag(self) -> str:
        return "pv-" + re.sub(r"[^A-Za-z0-9-]", "-", self.name)


class NetbootSettings(BaseModel):
    """Where and how dnsmasq serves (`provision netboot up` options)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: Path
    interface: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,15}$")
    mode: Mode
    network: IPv4Network
    """The provisioning network on `interface` (proxy: the site's subnet there)."""
    first: IPv4Address | None = None
    last: IPv4Address | None = None
    """The range dnsmasq leases from (DHCP mode only)."""
    site_ranges: tuple[IPv4Network, ...] = ()
    """Ranges the site's DHCP already leases (or otherwise owns): a DHCP range must not overlap them."""
    http_loader: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """The loader's URL for UEFI HTTP boot (None: no HTTP boot offered)."""
    lease_s: int = Field(default=3600, ge=120)

    @model_validator(mode="after")
    def _range(self) -> NetbootSettings:
        if self.mode is Mode.DHCP:
            if self.first is None or self.last is None:
                raise ValueError("a DHCP range needs its first and last address (--range FIRST-LAST)")
            if int(self.first) > int(self.last):
                raise ValueError(f"range {self.first}-{self.last}: the first address is after the last")
            if self.first not in self.network or self.last not in self.network:
                raise ValueError(f"range {self.first}-{self.last} is not inside {self.network}")
        elif self.first is not None or self.last is not None:
            raise ValueError("a proxy gives no addresses: --range is for --mode dhcp")
        return self


def parse_range(text: str) -> tuple[IPv4Address, IPv4Address]:
    """'10.0.0.10-10.0.0.50' -> both ends; InputError in one line."""
    first, sep, last = text.partition("-")
    try:
        if not sep:
            raise ValueError("no '-'")
        return IPv4Address(first.strip()), IPv4Address(last.strip())
    except ValueError:
        raise InputError(f"--range {text!r}: not FIRST-LAST (two IPv4 addresses)") from None


def normal_mac(text: str) -> str | None:
    """`text` as aa:bb:cc:dd:ee:ff (lowercase; '-' separators accepted); None: not a MAC."""
    mac = text.strip().lower().replace("-", ":")
    return mac if MAC.match(mac) else None


def refusals(settings: NetbootSettings, nodes: dict[str, str | None], http_boot: frozenset[str] = frozenset()
             ) -> list[NetbootNode]:
    """The nodes (name -> MAC, None: unknown) as NetbootNodes; InputError, one line, for the first thing wrong:
    a node without a MAC, a MAC given twice, a range overlapping the site's, HTTP boot without its loader
    or behind a proxy."""
    if not nodes:
        raise InputError("netboot: no node selected")
    missing = sorted(n for n, m in nodes.items() if not m)
    if missing:
        raise InputError(f"netboot: {', '.join(missing)}: no provisioning MAC (set provision_provisioning_mac, or a "
                         "BMC that lists the system's EthernetInterfaces)")
    seen: dict[str, str] = {}
    for name, mac in sorted(nodes.items()):
        assert mac is not None
        if mac in seen:
            raise InputError(f"netboot: MAC {mac} given twice: {seen[mac]} and {name}")
        seen[mac] = name
    if settings.mode is Mode.DHCP:
        assert settings.first is not None and settings.last is not None
        for site in settings.site_ranges:
            if int(settings.first) <= int(site.broadcast_address) and int(site.network_address) <= int(settings.last):
                raise InputError(f"netboot: range {settings.first}-{settings.last} overlaps the site's {site}")
    web = sorted(n for n in nodes if n in http_boot)
    if web and settings.mode is Mode.PROXY:
        raise InputError(f"netboot: {', '.join(web)}: http_boot needs --mode dhcp (a proxy answers PXE clients only)")
    if web and settings.http_loader is None:
        raise InputError(f"netboot: {', '.join(web)}: http_boot needs --http-loader URL (the iPXE EFI binary)")
    return [NetbootNode(name=n, mac=m or "", http_boot=n in http_boot) for n, m in sorted(nodes.items())]


def render_conf(settings: NetbootSettings, user: str) -> str:
    """dnsmasq.conf: DHCP (full or proxy) on the interface only, no DNS, TFTP of the loader, HTTP boot."""
    d = settings.directory
    net = settings.network
    lines = ["# written by `provision netboot up`: rewritten on each run, do not edit",
             "port=0", f"interface={settings.interface}", "bind-interfaces", f"user={user}",
             f"dhcp-leasefile={d / LEASES}", f"dhcp-hostsfile={d / HOSTS}",
             "log-dhcp", f"log-facility={d / LOG}", f"pid-file={d / PID}",
             "enable-tftp", f"tftp-root={d / TFTP}", "tftp-unique-root=mac",
             "dhcp-userclass=set:ipxe,iPXE", "dhcp-match=set:ipxe,175",
             "dhcp-match=set:efi-http,option:client-arch,16"]
    lines += ["dhcp-ignore=tag:!known"]  # a MAC the hosts file does not name is told nothing, in either mode
    if settings.mode is Mode.DHCP:
        lines += [f"dhcp-range={settings.first},{settings.last},{net.netmask},{settings.lease_s}",
                  "dhcp-authoritative",
                  "dhcp-option=option:router"]  # no default route through the controller: none sent
    else:
        lines += [f"dhcp-range={net.network_address},proxy,{net.netmask}"]
    lines += ["# PXE firmware of a known node: the iPXE loader over TFTP; iPXE: the node's own boot script",
              f"dhcp-boot=tag:known,tag:!ipxe,tag:!efi-http,{LOADER}", f"dhcp-boot=tag:known,tag:ipxe,{SCRIPT}"]
    if settings.mode is Mode.PROXY:  # PXE firmware behind a proxy asks the boot server (port 4011) for its file
        lines += [f'pxe-service=tag:!ipxe,X86-64_EFI,"provision",{LOADER}']
    if settings.http_loader is not None:
        lines += ["# UEFI HTTP boot firmware of a known node: the loader over HTTP",
                  "dhcp-option-force=tag:known,tag:efi-http,tag:!ipxe,60,HTTPClient",
                  f"dhcp-boot=tag:known,tag:efi-http,tag:!ipxe,{settings.http_loader}"]
    return "\n".join(lines) + "\n"


def render_hosts(nodes: list[NetbootNode]) -> str:
    """dhcp-hostsfile: one line per node, its MAC setting its own tag (dnsmasq sets `known` too)."""
    return "".join(f"{n.mac},set:{n.tag}\n" for n in nodes)


def mac_dir(mac: str) -> str:
    """The name tftp-unique-root=mac gives a MAC's TFTP root: aa-bb-cc-dd-ee-ff."""
    return mac.lower().replace(":", "-")


def ipxe_script(kernel: str, initrd: str, image: str, seed: str, cmdline: str = "") -> str:
    """The node's iPXE boot script: the installer's kernel and initrd, the image and the seed's URL (NoCloud's
    `ds=nocloud-net;s=`, and `provision.seed=` for an installer that is not cloud-init)."""
    extra = f" {cmdline}" if cmdline else ""
    args = f"initrd=initrd ip=dhcp url={image} ds=nocloud-net;s={seed} provision.seed={seed}{extra}"
    return f"#!ipxe\nkernel --name vmlinuz {kernel} {args}\ninitrd --name initrd {initrd}\nboot\n"


def network_of(text: str, what: str) -> IPv4Network:
    try:
        return ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        raise InputError(f"{what} {text!r}: not an IPv4 network (ADDRESS/PREFIX)") from None

"""The os stage over the network (software.os_installer.method pxe or http_boot): what refuses a new
install before anything is written, and the three steps that differ from virtual media.

Refused in one line (observe, before os-hostkey): the installer's kernel or initrd URL not answering; the
BMC not offering the boot target (Pxe / UefiHttp) in BootSourceOverrideTarget@Redfish.AllowableValues; no
provisioning MAC (provision_provisioning_mac, else the one physical interface of the system's
EthernetInterfaces); the netboot directory (provision netboot up) without the node, or with another MAC.

os-netboot: the seed's files (seed.py's tree) are registered with the stage's image server (unguessable
prefix); the node's iPXE script, naming them, goes to tftp/<mac>/, which dnsmasq serves to that MAC only.
os-netboot-off: tftp/<mac>/ removed; the image server stops with the stage's apply.
"""

from __future__ import annotations

import http.client
import ipaddress
import urllib.error
from pathlib import Path

from provision.bringup.stages import os_media
from provision.errors import ProvisionError
from provision.journal.location import redact_url
from provision.netboot import service
from provision.netboot.config import ipxe_script
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import netif
from provision.redfish.ops.session import Node
from provision.spec import HostEntry
from provision.spec.software import InstallMethod, OsInstaller


def refusals(host: HostEntry, node: Node, installer: OsInstaller, method: InstallMethod, directory: Path) -> list[str]:
    """Why a network install cannot start (empty: it can)."""
    why = []
    for what, url in (("kernel", installer.kernel), ("initrd", installer.initrd)):
        if url is not None and (bad := answers(url, host)) is not None:
            why.append(f"installer {what}: {bad}")
    allowed = node.system.boot.allowed_targets
    if allowed and method.boot_target not in allowed:
        why.append(f"the BMC does not offer boot target {method.boot_target} (it offers {', '.join(allowed)})")
    mac = host.installer.provisioning_mac
    if mac is None:
        mac, detail = netif.provisioning_mac(netif.host_nics(node))
        if mac is None:
            why.append(f"no provisioning MAC: {detail}")
    entry = service.hosts_entry(directory, host.name)
    if entry is None:
        why.append(f"netboot {directory} has no entry for it (provision netboot up {host.name})")
    elif mac is not None and entry.mac != mac:
        why.append(f"netboot {directory} answers MAC {entry.mac}, its provisioning MAC is {mac} "
                   "(provision netboot up again)")
    return why


def server_refusal(bind: str, advertise: str | None) -> str | None:
    """Why a node could not fetch from the stage's image server over the network (None: it may)."""
    shown = advertise or bind
    try:
        loopback = ipaddress.ip_address(shown).is_loopback or ipaddress.ip_address(shown).is_unspecified
    except ValueError:  # a name: the site's to resolve
        loopback = shown == "localhost"
    if loopback:
        return (f"the image server would be advertised as {shown}: a node cannot fetch its seed from it over the "
                "network (--image-bind / --image-advertise: an address of the provisioning network)")
    return None


def answers(url: str, host: HostEntry) -> str | None:
    """None when `url` answers a ranged GET of its first bytes; else why, in words."""
    try:
        tls = os_media.tls_context(host.installer)
        os_media.read_range(url, 0, 512, 15.0, tls)
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"{redact_url(url)}: HTTP {exc.code}"
    except (OSError, http.client.HTTPException, ProvisionError) as exc:
        return f"{redact_url(url)} does not answer: {getattr(exc, 'reason', exc)}"
    return None


def netboot_on(host: HostEntry, installer: OsInstaller, server: ImageServer, seed_files: list[Path],
               directory: Path, image: str) -> None:
    """os-netboot: the seed and the boot script served; the node's boot entry written."""
    entry = service.hosts_entry(directory, host.name)
    if entry is None:
        raise service.NetbootError(f"{host.name}: os-netboot: netboot {directory} no longer has its entry")
    urls = [server.url_for(f) for f in seed_files]
    seed = urls[0].rsplit("/", 1)[0] + "/"
    assert installer.kernel is not None and installer.initrd is not None
    service.add_boot_entry(directory, entry, ipxe_script(installer.kernel, installer.initrd, image, seed,
                                                         installer.cmdline))


def netboot_off(host: HostEntry, directory: Path) -> None:
    """os-netboot-off: the node's boot entry removed."""
    service.remove_boot_entry(directory, host.name)

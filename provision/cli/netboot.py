"""`provision netboot up|down|status`: dnsmasq for the os stage's network installs, from the inventory.

up: one host entry per selected node that installs over the network (pxe or http_boot), by its provisioning
MAC (provision_provisioning_mac, else read from its BMC's EthernetInterfaces); every refusal before anything
is written or started (exit 2). --write-only: the files only, for a site that runs dnsmasq itself.
down: no dnsmasq process, port or file left. status: what runs and what it leased.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from provision.cli.options import DEFAULT_INVENTORY, InsecureOpt, InventoryOpt, JsonOpt, load_hosts
from provision.cli.output import Format, OutputOpt, choose, console, emit_json
from provision.errors import InputError, RedfishError
from provision.netboot import service
from provision.netboot.config import Mode, NetbootSettings, network_of, parse_range, refusals
from provision.redfish.ops import netif, session
from provision.redfish.ops.session import CredentialsMissing, open_node
from provision.spec import HostEntry
from provision.spec.software import InstallMethod

app = typer.Typer(help="dnsmasq for network installs (PXE, UEFI HTTP boot): up, down, status.", no_args_is_help=True)
DirOpt = Annotated[Path | None, typer.Option("--dir", help=f"Its files (default {service.DEFAULT_DIR}; env "
                                                           f"{service.DIR_ENV})")]


def _mac_of(host: HostEntry, insecure: bool) -> str | None:
    if host.installer.provisioning_mac:
        return host.installer.provisioning_mac
    try:
        with open_node(session.options_for(host.name, host.bmc, insecure), whole_command=True) as node:
            mac, why = netif.provisioning_mac(netif.host_nics(node))
    except (RedfishError, CredentialsMissing) as exc:
        raise InputError(f"netboot: {host.name}: no provision_provisioning_mac and its BMC could not be read: "
                         f"{exc}") from None
    if mac is None:
        raise InputError(f"netboot: {host.name}: no provisioning MAC: {why}")
    return mac


@app.command("up")
def up_command(
    patterns: Annotated[list[str] | None, typer.Argument(help="Host patterns (default: all)")] = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    interface: Annotated[str, typer.Option("--interface", help="The provisioning network's interface")] = "",
    network: Annotated[str, typer.Option("--network", help="Its subnet, ADDRESS/PREFIX")] = "",
    mode: Annotated[Mode, typer.Option("--mode", help="dhcp (isolated range) or proxy (beside the site's DHCP)")]
    = Mode.DHCP,
    address_range: Annotated[str | None, typer.Option("--range", help="dhcp: FIRST-LAST leased")] = None,
    site_range: Annotated[list[str] | None, typer.Option(
        "--site-range", help="A range the site owns there (repeatable): never overlapped")] = None,
    loader: Annotated[Path, typer.Option("--loader", help="iPXE EFI binary for PXE (TFTP)")] = service.DEFAULT_LOADER,
    http_loader: Annotated[str | None, typer.Option("--http-loader", help="Its URL, for UEFI HTTP boot")] = None,
    directory: DirOpt = None,
    write_only: Annotated[bool, typer.Option("--write-only", help="Write the files; the site runs dnsmasq")] = False,
    insecure: InsecureOpt = False,
) -> None:
    """Write dnsmasq's config for the selected network-install nodes and (unless --write-only) start it."""
    if not interface or not network:
        raise InputError("netboot up: --interface and --network are required")
    first, last = parse_range(address_range) if address_range else (None, None)
    try:
        settings = NetbootSettings(directory=directory or service.default_dir(), interface=interface, mode=mode,
                                   network=network_of(network, "--network"), first=first, last=last,
                                   site_ranges=tuple(network_of(s, "--site-range") for s in site_range or ()),
                                   http_loader=http_loader)
    except ValidationError as exc:
        raise InputError(f"netboot up: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    hosts = [h for h in load_hosts(inventory, patterns) if h.install_method is not InstallMethod.VIRTUAL_MEDIA]
    if not hosts:
        raise InputError(f"netboot up: {inventory}: no selected host installs over the network "
                         "(software.os_installer.method or provision_os_install_method: pxe or http_boot)")
    macs = {h.name: _mac_of(h, insecure) for h in hosts}
    web = frozenset(h.name for h in hosts if h.install_method is InstallMethod.HTTP_BOOT)
    nodes = refusals(settings, macs, web)
    pid = service.up(settings, nodes, loader, run=not write_only)
    what = f"dnsmasq pid {pid}" if pid is not None else "files only (--write-only)"
    console.print(f"netboot up on {interface} ({mode.value}): {len(nodes)} node(s) "
                  f"[{', '.join(f'{n.name} {n.mac}' for n in nodes)}]; {what}; {settings.directory}",
                  markup=False, soft_wrap=True)


@app.command("down")
def down_command(directory: DirOpt = None) -> None:
    """Stop dnsmasq and remove every file netboot wrote."""
    d = directory or service.default_dir()
    took = service.down(d)
    console.print(f"netboot down: {d} {'removed' if took else 'was not up'}", markup=False, soft_wrap=True)


@app.command("status")
def status_command(directory: DirOpt = None, json_out: JsonOpt = False, output: OutputOpt = None) -> None:
    """Whether dnsmasq runs, the nodes it answers, their leases, the installs under way."""
    st = service.status(directory or service.default_dir())
    fmt = choose(output, json_out)
    if fmt is Format.JSON:
        emit_json(st.model_dump(mode="json"))
        return
    leases = [f"{lease.mac} {lease.address}" for lease in st.leases]
    if fmt is Format.PLAIN:  # one field per line, tab-separated, lists comma-separated; `-` for none
        fields = {"directory": str(st.directory), "written": "yes" if st.written else "no",
                  "dnsmasq_pid": str(st.pid or "-"), "nodes": ",".join(st.nodes) or "-",
                  "leases": ",".join(leases) or "-", "installing": ",".join(st.installing) or "-"}
        for key, value in fields.items():
            print(f"{key}\t{value}")
        return
    if not st.written:
        console.print(f"netboot: not up ({st.directory})", markup=False, soft_wrap=True)
        return
    run = f"dnsmasq pid {st.pid}" if st.pid else "dnsmasq not running (written only)"
    console.print(f"netboot: {run}; nodes: {', '.join(st.nodes) or 'none'}; leases: "
                  f"{', '.join(leases) or 'none'}; installing: "
                  f"{', '.join(st.installing) or 'none'}", markup=False, soft_wrap=True)

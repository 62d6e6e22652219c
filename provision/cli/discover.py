"""`provision discover` (find BMCs: read-only) and `provision enroll` (the same, then new hosts written).

Exit codes: 0 every Redfish service that answered was identified (enroll: and written, or nothing to do);
1 one answered but could not be identified (password change required, credentials refused, certificate not
verified, no ComputerSystem); 2 bad input (nothing sent, or nothing written).
"""

from __future__ import annotations

import datetime
import socket
from pathlib import Path
from typing import Annotated

import typer

from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt, journal_at
from provision.cli.output import Format, OutputOpt, add_row, choose, console, emit_json, new_table, note, show
from provision.discover import enroll as enroll_ops
from provision.discover.leases import Lease, LeaseFormat, read_leases
from provision.discover.match import Known, Standing, Verdict, judge_all
from provision.discover.probe import Outcome, Settings, discover
from provision.discover.targets import DEFAULT_MAX, DEFAULT_PORT, Target, parse_range
from provision.errors import CheckFailed, InputError, InventoryError, SpecError
from provision.spec import load_fleet
from provision.spec.ansible_inventory import inventory_dir
from provision.spec.fleet import HostEntry
from provision.spec.loader import SiteDefaults, site_defaults

RangeOpt = Annotated[str | None, typer.Option(
    "--range", "-r", metavar="RANGE",
    help="Addresses to ask: a CIDR (10.1.0.0/22, 10.1.0.0/22:8443) or a comma list of addresses[:port]")]
FileOpt = Annotated[Path | None, typer.Option(
    "--from-file", "-f", metavar="FILE", help="BMC addresses from a CSV (ip, mac, serial columns), an ISC dhcpd "
    "lease file or a dnsmasq lease file")]
FormatOpt = Annotated[LeaseFormat | None, typer.Option("--format", help="The file's format (default: guessed)")]
PortOpt = Annotated[int, typer.Option("--port", help="Port where a range term names none")]
MaxOpt = Annotated[int, typer.Option("--max", help="Refuse a range of more addresses than this (nothing sent)")]
CaOpt = Annotated[Path | None, typer.Option("--ca-file", help="CA bundle the BMCs' certificates are verified "
                                            "against (enroll records it as each host's provision_bmc_ca_file)")]
InsecureOpt = Annotated[bool, typer.Option("--insecure", help="Do NOT verify BMC TLS certificates (warns)")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds per request (connect + read)")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", help="Addresses asked at once for their service "
                                              "root (then at most 16 BMCs identified at once)")]


SsdpOpt = Annotated[str | None, typer.Option(
    "--ssdp", metavar="IFACE[,IFACE]", help="Find BMCs by SSDP (DSP0266 M-SEARCH for redfish-rest), sent only on "
    "these interfaces")]
SsdpWaitOpt = Annotated[float, typer.Option("--ssdp-wait", help="Seconds to wait for SSDP answers")]


def _targets(range_: str | None, from_file: Path | None, ssdp_ifaces: str | None, fmt: LeaseFormat | None,
             port: int, max_addresses: int) -> tuple[list[Target], dict[str, Lease]]:
    """Before anything is sent: the range, the file or the SSDP interfaces, exactly one of them (SSDP's
    targets come later, from its answers: `_ssdp_targets`)."""
    if sum(x is not None for x in (range_, from_file, ssdp_ifaces)) != 1:
        raise InputError("give exactly one of --range RANGE, --from-file FILE or --ssdp IFACE[,IFACE]")
    if ssdp_ifaces is not None:
        _interfaces(ssdp_ifaces)
        return [], {}
    if range_ is not None:
        return parse_range(range_, port=port, max_addresses=max_addresses), {}
    assert from_file is not None
    leases = read_leases(from_file, fmt)
    if len(leases) > max_addresses:
        raise InputError(f"{from_file}: {len(leases)} addresses, more than --max {max_addresses}; nothing sent")
    return [Target(host=lease.ip, port=port) for lease in leases], {lease.ip: lease for lease in leases}


def _interfaces(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError("--ssdp: name at least one network interface")
    for name in names:
        try:
            socket.if_nametoindex(name)
        except OSError:
            raise InputError(f"--ssdp {name}: no such network interface; nothing sent") from None
    return names


def _ssdp_targets(text: str, wait_s: float, max_addresses: int) -> list[Target]:
    from provision.discover import ssdp

    if not 0 < wait_s <= 60:
        raise InputError(f"--ssdp-wait {wait_s}: must be more than 0 and at most 60 seconds")
    note(f"SSDP M-SEARCH on {text} ({wait_s:g} s)")
    answers = ssdp.search(_interfaces(text), wait_s)
    if len(answers) > max_addresses:
        raise InputError(f"--ssdp {text}: {len(answers)} services answered, more than --max {max_addresses}")
    return [a.target for a in answers]


def _known(hosts: list[HostEntry], inventory: Path) -> list[Known]:
    """The inventory's hosts with their recorded serial/UUID: provision_bmc_identity, else the journal's last
    reading (read-only; no journal, no reading)."""
    last = _journal_identities(inventory, [h.name for h in hosts if h.identity is None])
    out = []
    for h in hosts:
        serial = h.identity.serial if h.identity else None
        uuid = h.identity.uuid if h.identity else None
        if h.identity is None and h.name in last:
            serial, uuid = last[h.name]
        out.append(Known(name=h.name, address=h.bmc.address, serial=serial, uuid=uuid))
    return out


def _journal_identities(inventory: Path, names: list[str]) -> dict[str, tuple[str | None, str | None]]:
    from provision.journal.identities import identities
    from provision.journal.location import recorded
    from provision.journal.store import Journal

    if not names:
        return {}
    where = journal_at(None, inventory)
    if not recorded(where):
        return {}
    out: dict[str, tuple[str | None, str | None]] = {}
    with Journal(where, read_only=True) as journal:
        for name in names:
            readings = identities(journal, name)
            if readings:
                s = readings[-1].identity.system
                out[name] = (s.serial_number, s.uuid)
    return out


def _inventory_hosts(inventory: Path) -> list[HostEntry]:
    """Every host (none yet is fine: an inventory of profiles only)."""
    try:
        return list(load_fleet(inventory).hosts.values())
    except InventoryError as exc:
        if "defines no hosts" in str(exc):
            return []
        raise


def _settings(site: SiteDefaults, ca_file: Path | None, insecure: bool, timeout: float,
              concurrency: int) -> Settings:
    if not site.username or not site.password.get_secret_value():
        raise InputError("no BMC credentials: set PROVISION_BMC_USERNAME and PROVISION_BMC_PASSWORD, or "
                         "provision_bmc_username / provision_bmc_password (vaulted) in group_vars/all; nothing sent")
    if ca_file is not None and not ca_file.is_file():
        raise InputError(f"--ca-file {ca_file}: no such file; nothing sent")
    if insecure:
        note("warning: TLS certificate verification is OFF (--insecure)")
    if not 1 <= concurrency <= 1024:
        raise InputError(f"--concurrency {concurrency}: must be 1..1024")
    if not 0 < timeout <= 120:
        raise InputError(f"--timeout {timeout}: must be more than 0 and at most 120 seconds")
    return Settings(username=site.username, password=site.password, ca_file=ca_file, verify_tls=not insecure,
                    timeout_s=timeout, concurrency=concurrency, identify_concurrency=min(16, concurrency))


def _run(inventory: Path, targets: list[Target], leases: dict[str, Lease], settings: Settings,
         site: SiteDefaults) -> list[Verdict]:
    hosts = _inventory_hosts(inventory)
    known = _known(hosts, inventory)
    note(f"asking {len(targets)} address(es) for a Redfish service ({settings.concurrency} at once)")
    found = discover(targets, settings, leases)
    profiles = {name: spec.described_platforms for name, spec in site.profiles.items()}
    return judge_all(found, profiles, known)


def row(v: Verdict) -> dict[str, object]:
    f = v.found
    ident = f.identity
    return {
        "address": f.address, "outcome": f.outcome.value, "detail": f.detail or None,
        "manufacturer": ident.manufacturer if ident else None, "model": ident.model if ident else None,
        "serial": f.serial, "uuid": f.uuid, "bmc_mac": f.bmc_mac, "bmc_firmware": f.firmware,
        "bmc_model": ident.bmc.model if ident and ident.bmc else None,
        "profile": v.profile, "fits": list(v.fits), "inventory": v.standing.value, "host": v.host,
        "inventory_address": v.inventory_address, "note": v.note or None,
        "file": f.lease.model_dump() if f.lease else None, "service_uuid": f.service_uuid,
    }


def _profile_cell(v: Verdict) -> str:
    if v.profile:
        return v.profile
    return f"several: {', '.join(v.fits)}" if v.fits else "-"


def render(verdicts: list[Verdict], fmt: Format, scanned: int) -> None:
    if fmt is Format.JSON:
        emit_json({"scanned": scanned, "found": [row(v) for v in verdicts]})
        return
    table = new_table("address", "state", "manufacturer", "model", "serial", "uuid", "bmc mac", "bmc firmware",
                      "profile", "inventory", "note",
                      title=f"{len(verdicts)} Redfish service(s) at {scanned} address(es)")
    for v in verdicts:
        r = row(v)
        state = v.found.outcome.value
        inv = v.standing.value + (f": {v.host}" if v.host else "")
        if v.standing is Standing.MOVED:
            inv += f" (was {v.inventory_address})"
        add_row(table, r["address"], state, r["manufacturer"], r["model"], r["serial"], r["uuid"], r["bmc_mac"],
                r["bmc_firmware"], _profile_cell(v), inv, v.note or None)
    show(table, fmt)
    if fmt is Format.TABLE:
        for v in verdicts:
            if v.found.detail and v.found.outcome is not Outcome.IDENTIFIED:
                console.print(f"  {v.found.address}: {v.found.detail}", markup=False, highlight=False,
                              soft_wrap=True)


def _unidentified(verdicts: list[Verdict], enrolled: frozenset[str] = frozenset()) -> None:
    """CheckFailed naming the services not identified (`enrolled`: addresses enroll wrote as the vendor's file
    vouched for them, not counted)."""
    bad = [v for v in verdicts if v.found.outcome is not Outcome.IDENTIFIED and v.found.address not in enrolled]
    if bad:
        raise CheckFailed(f"{len(bad)} Redfish service(s) not identified: "
                          + ", ".join(f"{v.found.address} ({v.found.outcome.value})" for v in bad))


def discover_command(range_: RangeOpt = None, from_file: FileOpt = None, ssdp_ifaces: SsdpOpt = None,
                     ssdp_wait: SsdpWaitOpt = 3.0, file_format: FormatOpt = None,
                     port: PortOpt = DEFAULT_PORT, max_addresses: MaxOpt = DEFAULT_MAX,
                     inventory: InventoryOpt = DEFAULT_INVENTORY, ca_file: CaOpt = None, insecure: InsecureOpt = False,
                     timeout: TimeoutOpt = 3.0, concurrency: ConcurrencyOpt = 256, as_json: JsonOpt = False,
                     output: OutputOpt = None) -> None:
    """Find Redfish BMCs (a range or a file): each one's identity, the profile it fits, whether the inventory
    has it already (by serial or UUID). Writes nothing."""
    fmt = choose(output, as_json)
    targets, leases = _targets(range_, from_file, ssdp_ifaces, file_format, port, max_addresses)
    site = site_defaults(inventory)
    settings = _settings(site, ca_file, insecure, timeout, concurrency)
    if ssdp_ifaces is not None:
        targets = _ssdp_targets(ssdp_ifaces, ssdp_wait, max_addresses)
    verdicts = _run(inventory, targets, leases, settings, site)
    render(verdicts, fmt, len(targets))
    _unidentified(verdicts)


NameOpt = Annotated[str, typer.Option(
    "--name", help="Host name pattern: {index} {index:02} {rack} {serial} {uuid} {mac} {ip} {manufacturer} {model} "
    "{profile}, e.g. gpu{rack}-{index:02} or {serial}")]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="The profile of every BMC enrolled (default: the "
                                                "one profile each BMC's platform fits)")]
GroupOpt = Annotated[str | None, typer.Option("--group", help="The group the hosts join (default: the group whose "
                                              "group_vars set the profile)")]
RackOpt = Annotated[str | None, typer.Option("--rack", help="provision_rack of each host, and {rack} in --name")]
StartOpt = Annotated[int, typer.Option("--start", help="The first {index}")]
PlanOpt = Annotated[bool, typer.Option("--plan", help="Show what would be written; write nothing")]


def enroll_command(name: NameOpt, range_: RangeOpt = None, from_file: FileOpt = None,
                   ssdp_ifaces: SsdpOpt = None, ssdp_wait: SsdpWaitOpt = 3.0, file_format: FormatOpt = None,
                   port: PortOpt = DEFAULT_PORT, max_addresses: MaxOpt = DEFAULT_MAX,
                   inventory: InventoryOpt = DEFAULT_INVENTORY, profile: ProfileOpt = None, group: GroupOpt = None,
                   rack: RackOpt = None, start: StartOpt = 1, ca_file: CaOpt = None, insecure: InsecureOpt = False,
                   timeout: TimeoutOpt = 3.0, concurrency: ConcurrencyOpt = 256, plan_only: PlanOpt = False,
                   as_json: JsonOpt = False, output: OutputOpt = None) -> None:
    """Discover (as `provision discover`), then write a host for each new BMC: host_vars/NAME.yml and the host
    under its profile's group in hosts.yml. Existing hosts are never changed. A BMC that requires a password
    change (its factory state) is enrolled only with --profile and a --from-file that gives its serial."""
    fmt = choose(output, as_json)
    enroll_ops.check_pattern(name)
    targets, leases = _targets(range_, from_file, ssdp_ifaces, file_format, port, max_addresses)
    hosts_path = enroll_ops.hosts_file(inventory)
    site = site_defaults(inventory)
    if profile is not None and profile not in site.profiles:
        raise InputError(f"--profile {profile}: not a profile of {inventory} "
                         f"(known: {', '.join(sorted(site.profiles))})")
    settings = _settings(site, ca_file, insecure, timeout, concurrency)
    groups = enroll_ops.profile_groups(inventory_dir(inventory))
    if group is not None:
        groups = {p: group for p in site.profiles}
    existing = {h.name for h in _inventory_hosts(inventory)}
    if ssdp_ifaces is not None:
        targets = _ssdp_targets(ssdp_ifaces, ssdp_wait, max_addresses)
    verdicts = _run(inventory, targets, leases, settings, site)
    chosen = site.profiles[profile].described_platforms if profile else None
    the_plan = enroll_ops.plan(
        verdicts, name, existing=existing, groups=groups, profile=profile, rack=rack, start=start,
        chooses=(lambda _p, v: chosen.fits(v.found.identity)) if chosen is not None else None)
    written: list[Path] = []
    if not plan_only:
        written = enroll_ops.apply(inventory, the_plan, rack=rack, ca_file=ca_file, validate=_valid)
    _render_plan(the_plan, verdicts, fmt, plan_only, hosts_path, written)
    _unidentified(verdicts, frozenset(h.verdict.found.address for h in the_plan.hosts))


def _valid(inventory: Path) -> None:
    """What `spec validate` refuses, refused here (SpecError, its first error line)."""
    from provision.cli.spec import errors_of

    errors = errors_of(inventory, load_fleet(inventory))
    if errors:
        raise SpecError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))


def _render_plan(the_plan: enroll_ops.EnrollPlan, verdicts: list[Verdict], fmt: Format, plan_only: bool,
                 hosts_path: Path, written: list[Path]) -> None:
    done = "would write" if plan_only else "written"
    if fmt is Format.JSON:
        emit_json({"plan": plan_only, "hosts": [{**row(h.verdict), "host": h.name, "profile": h.profile,
                                                  "group": h.group} for h in the_plan.hosts],
                   "skipped": [s.model_dump() for s in the_plan.skipped], "files": [str(p) for p in written],
                   "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")})
        return
    table = new_table("host", "profile", "group", "address", "serial", "uuid", title=f"hosts {done} ({hosts_path})")
    for h in the_plan.hosts:
        add_row(table, h.name, h.profile, h.group, h.verdict.found.address, enroll_ops.serial_of(h.verdict.found),
                h.verdict.found.uuid)
    show(table, fmt)
    for s in the_plan.skipped:
        note(f"not enrolled: {s.address}: {s.why}")
    if not the_plan.hosts:
        note(f"nothing to enroll ({len(verdicts)} Redfish service(s) found); nothing written")

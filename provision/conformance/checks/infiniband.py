"""InfiniBand checks: ports of the spec's link layer Active/LinkUp at the spec rate; IPoIB netdevs."""

from __future__ import annotations

from provision.conformance.checks import netdev
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.infiniband import IbCa, IbPort, parse_ibstat
from provision.spec.hardware import InfiniBand
from provision.spec.model import NodeSpec

AREA = "infiniband"
SECTION = "ibstat"


def ibstat_probe() -> Probe:
    return Probe(name=SECTION, command="ibstat")


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    ib = spec.network.infiniband
    if ib is None or not ib.count:
        return []
    return [ibstat_probe(), netdev.probe()] if ib.ipoib else [ibstat_probe()]


def evaluate(ctx: Context) -> None:
    ib = ctx.spec.network.infiniband
    if ib is None or not ib.count:
        return
    desc = f"ports with link layer {ib.link_layer}"
    try:
        report = ctx.parsed(SECTION, parse_ibstat)
    except Unreadable as why:
        ctx.unreadable("infiniband.ports", AREA, desc, ib.count, why.reason)
        return
    ports = [(ca.name, p) for ca in report.cas for p in ca.ports if p.link_layer == ib.link_layer]
    ctx.equal("infiniband.ports", AREA, desc, ib.count, len(ports))
    for name, port in ports:
        _port(ctx, ib, f"{name}/{port.number}", port)
    _firmware(ctx, [ca for ca in report.cas if any(p.link_layer == ib.link_layer for p in ca.ports)])
    if ib.ipoib is not None and ctx.level is not Level.QUICK:
        _ipoib(ctx, ib)


def _firmware(ctx: Context, cas: list[IbCa]) -> None:
    """In-band firmware (spec component ib_nic, updated_by os) read from ibstat, at or above the baseline."""
    from provision.redfish.vendors.versions import VersionsNotComparable, compare

    baseline = next((f for f in ctx.spec.firmware if f.component == "ib_nic" and f.updated_by == "os"), None)
    if baseline is None:
        return
    for ca in cas:
        cid, desc = f"infiniband.{ca.name}.firmware", f"{ca.name} firmware at or above the baseline"
        try:
            ok = compare(ca.firmware_version, baseline.version, baseline.version_scheme) >= 0
        except VersionsNotComparable as exc:  # never "at or above": an error naming both strings
            ctx.error(cid, AREA, desc, f">= {baseline.version}", exc.against("baseline"))
            continue
        ctx.record(cid, AREA, desc, f">= {baseline.version}", ca.firmware_version, ok)


def _port(ctx: Context, ib: InfiniBand, label: str, port: IbPort) -> None:
    pid = f"infiniband.{label}"
    ctx.equal(f"{pid}.state", AREA, f"{label} state", "Active", port.state)
    ctx.equal(f"{pid}.physical_state", AREA, f"{label} physical state", "LinkUp", port.physical_state)
    desc = f"{label} rate (Gb/s, {ib.generation})"
    if port.state != "Active":
        ctx.error(f"{pid}.rate", AREA, desc, ib.rate_gbps, f"port {port.state}: no negotiated rate to read")
        return
    ctx.record(f"{pid}.rate", AREA, desc, ib.rate_gbps, f"{port.rate_gbps:g}", port.rate_gbps == ib.rate_gbps)


def _ipoib(ctx: Context, ib: InfiniBand) -> None:
    ipoib = ib.ipoib
    assert ipoib is not None
    desc = "IPoIB interfaces"
    try:
        devs = [d for d in netdev.netdevs(ctx) if d.link_type == "infiniband"]
    except Unreadable as why:
        ctx.unreadable("infiniband.ipoib", AREA, desc, ib.count, why.reason)
        return
    ctx.equal("infiniband.ipoib", AREA, desc, ib.count, len(devs))
    for dev in devs:
        ctx.equal(f"infiniband.{dev.name}.mtu", AREA, f"{dev.name} IPoIB MTU", ipoib.mtu, dev.mtu)
        ctx.equal(f"infiniband.{dev.name}.mode", AREA, f"{dev.name} IPoIB mode", ipoib.mode, dev.mode)
        ctx.record(f"infiniband.{dev.name}.address", AREA, f"{dev.name} has an IPv4 address", "an address",
                   dev.ipv4 or "none", bool(dev.ipv4))

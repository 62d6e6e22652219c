"""Ethernet checks: enough physical ports at the spec's link speed, with the spec's MTU."""

from __future__ import annotations

from provision.conformance.checks import netdev
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.checks.infiniband import SECTION as IBSTAT
from provision.conformance.checks.infiniband import ibstat_probe
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.infiniband import parse_ibstat
from provision.spec.model import NodeSpec

AREA = "ethernet"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    return [netdev.probe(), ibstat_probe()]


def evaluate(ctx: Context) -> None:
    eth = ctx.spec.network.ethernet
    expected = f"{eth.count} at {eth.speed_gbps} Gb/s"
    desc = "physical Ethernet ports at the spec speed"
    try:
        devs = netdev.netdevs(ctx)
    except Unreadable as why:
        ctx.unreadable("ethernet.ports", AREA, desc, expected, why.reason)
        return
    nics = [d for d in devs if d.link_type == "ether" and d.physical]
    if nics:
        fast = [d for d in nics if d.speed_mbps == eth.speed_gbps * 1000]
        seen = ", ".join(f"{d.name} {_gbps(d.speed_mbps)}" for d in nics)
        ctx.record("ethernet.ports", AREA, desc, expected, f"{len(fast)} ({seen})", len(fast) >= eth.count)
        for dev in fast:
            ctx.equal(f"ethernet.{dev.name}.mtu", AREA, f"{dev.name} MTU", eth.mtu, dev.mtu)
        return
    _from_ibstat(ctx, desc, expected)


def _from_ibstat(ctx: Context, desc: str, expected: str) -> None:
    """No physical NIC in sysfs: ConnectX ports in Ethernet mode still show in ibstat."""
    eth = ctx.spec.network.ethernet
    try:
        report = ctx.parsed(IBSTAT, parse_ibstat)
    except Unreadable as why:
        ctx.record("ethernet.ports", AREA, desc, expected, f"no physical NIC; ibstat: {why.reason}", False)
        return
    ports = [(ca.name, p) for ca in report.cas for p in ca.ports if p.link_layer == "Ethernet"]
    fast = [(n, p) for n, p in ports if p.state == "Active" and p.rate_gbps == eth.speed_gbps]
    seen = ", ".join(f"{n}/{p.number} {p.state} {p.rate_gbps:g} Gb/s" for n, p in ports) or "none"
    note = "no physical NIC in sysfs; Ethernet-mode ConnectX ports from ibstat"
    ctx.record("ethernet.ports", AREA, desc, expected, f"{len(fast)} ({seen})", len(fast) >= eth.count, note)
    for name, _port in fast:
        ctx.error(f"ethernet.{name}.mtu", AREA, f"{name} MTU", eth.mtu, "no netdev to read the MTU from")


def _gbps(mbps: int | None) -> str:
    return "no link" if mbps is None else f"{mbps / 1000:g} Gb/s"

"""Rack power: do the nodes of each rack fit its budget? (pure; `provision spec validate` prints the findings)

The inventory names each host's rack (`provision_rack`, a host or group variable) and each rack's budget
(`provision_racks: {r01: {power_budget_w: 40000}}`, usually in group_vars/all). A rack's load is the sum of
its nodes' `power.peak_draw_w`: the figure a node is sized for (seed 5.1, 5.5 kW for ML-PROD-V4), not what
it draws today, so the budget holds when every node runs flat out at once. Hosts with no rack are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from provision.spec.fleet import Fleet


@dataclass(frozen=True)
class RackLoad:
    """One rack's nodes and their summed peak draw against its budget."""

    rack: str
    hosts: tuple[str, ...]
    peak_w: int
    budget_w: int

    @property
    def over(self) -> bool:
        return self.peak_w > self.budget_w


def rack_loads(fleet: Fleet) -> list[RackLoad]:
    """Every rack of the inventory (in name order), with the hosts in it and their summed peak draw."""
    out = []
    for name, rack in sorted(fleet.racks.items()):
        hosts = sorted(h.name for h in fleet.hosts.values() if h.rack == name)
        peak = sum(fleet.hosts[h].spec.power.peak_draw_w for h in hosts)
        out.append(RackLoad(rack=name, hosts=tuple(hosts), peak_w=peak, budget_w=rack.power_budget_w))
    return out

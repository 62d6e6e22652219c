"""Read what the BMC checks need through provision.redfish (connector, inventory, vendor plugin)."""

from __future__ import annotations

from typing import Any

from provision.conformance.checks.bmc import BiosSetting, BmcFacts, FirmwareSeen
from provision.redfish.connector import Connector
from provision.redfish.ops.inventory import observe
from provision.redfish.ops.session import connect, node_facts, options_for
from provision.redfish.resources import AttributeRegistry, Bios, LogEntry
from provision.redfish.retry import RetryPolicy
from provision.redfish.vendors import VendorPlugin
from provision.spec.model import HostEntry, NodeSpec

# Log services that hold the system event log, by Id (DMTF mockups, Supermicro, Dell, AMI).
_SEL_IDS = ("SEL", "Sel", "Log1", "EventLog", "IPMI")


def read_bmc(host: HostEntry) -> BmcFacts:
    """One inventory pass plus BIOS and SEL; raises RedfishError when the BMC cannot be read."""
    retry = RetryPolicy(attempts=2, base_delay_s=0.2, timeout_s=15)
    with connect(options_for(host.name, host.bmc, retry=retry)) as conn:
        node = node_facts(conn)
        inv = observe(conn)
        bios = _bios(conn, node.system.uri, node.vendor, host.spec)
        entries, sel_read = _sel(conn, node.system.uri, node.manager_uri)
    firmware = tuple(
        FirmwareSeen(
            component=fw.component,
            versions=tuple(
                v for e in node.vendor.match_firmware(fw.component, inv.firmware, fw.match)
                if (v := node.vendor.parse_version(e.version))
            ),
        )
        for fw in host.spec.firmware
    )
    return BmcFacts(vendor=node.vendor.name, bios=bios, firmware=firmware, power=tuple(inv.power),
                    thermal=tuple(inv.thermal), sel=entries, sel_read=sel_read)


def _bios(conn: Connector, system_uri: str, vendor: VendorPlugin, spec: NodeSpec) -> tuple[BiosSetting, ...]:
    raw = conn.get_optional(f"{system_uri}/Bios") or {}
    bios = Bios.parse(raw)
    registry = AttributeRegistry.infer(bios.attributes)
    out = []
    for key, value in spec.bios.settings.items():
        target = vendor.resolve_bios(key, value, bios.attributes, registry)
        out.append(BiosSetting(
            key=key,
            attribute=target.attribute if target else None,
            wanted=target.value if target else None,
            current=bios.attributes.get(target.attribute) if target else None,
        ))
    return tuple(out)


def _sel(conn: Connector, system_uri: str, manager_uri: str | None) -> tuple[tuple[LogEntry, ...], bool]:
    services: list[dict[str, Any]] = []
    for base in (system_uri, manager_uri):
        if base:
            services += conn.members(f"{base}/LogServices")
    sel = [s for s in services if str(s.get("Id", "")) in _SEL_IDS]
    if not sel:
        return (), False
    entries: list[LogEntry] = []
    for service in sel:
        ref = service.get("Entries")
        if isinstance(ref, dict) and ref.get("@odata.id"):
            entries += [LogEntry.parse(e) for e in conn.members(str(ref["@odata.id"]))]
    return tuple(entries), True

"""Read what the BMC checks need through the Redfish layer's public operations (read-only).

`read_connected` reads over a session the caller already holds (the bring-up keeps one per node and
hands it to verify: no second login); `read_bmc` opens one session for `provision verify`, honouring
--insecure and the host's CA file (provision_bmc_ca_file), and reads over it.

BIOS: provision.redfish.ops.bios.observe (current values + registry) and the vendor plugin's
neutral-key mapping; firmware: ops.firmware.observe/status; power, thermal (the sensors' roles from the
vendor plugin's temperature_roles) and memory: ops.inventory;
SEL: ops.sel.read.
"""

from __future__ import annotations

from provision.conformance.checks.bmc_facts import BiosSetting, BmcFacts, FirmwareSeen
from provision.errors import RedfishError
from provision.redfish.connector import Connector
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops import sel as sel_ops
from provision.redfish.ops.inventory import observe
from provision.redfish.ops.session import Node, node_facts, open_endpoint, options_for
from provision.redfish.resources import LogEntry
from provision.redfish.retry import RetryPolicy
from provision.redfish.vendors.bios_names import AmbiguousBiosKey
from provision.spec.fleet import HostEntry
from provision.spec.model import NodeSpec

# A verify that opens its own session gives up sooner than the bring-up's (a dead BMC is an ERROR row).
VERIFY_RETRY = RetryPolicy(attempts=2, base_delay_s=0.2, timeout_s=15)


def read_bmc(host: HostEntry, insecure: bool = False) -> BmcFacts:
    """One session of its own (logged out after) and one read-only pass; raises RedfishError (a
    ProvisionError) when the BMC cannot be read. TLS is verified against provision_bmc_ca_file (or the
    system bundle) unless `insecure`."""
    with open_endpoint(options_for(host.name, host.bmc, insecure=insecure, retry=VERIFY_RETRY)) as conn:
        return read_connected(conn, host.spec)


def read_connected(conn: Connector, spec: NodeSpec) -> BmcFacts:
    """One read-only pass over an open session (no login here), bounded by the connector's command
    deadline. The node facts are read afresh: a BIOS change or a reset since the session opened shows."""
    with conn.deadline():
        node = node_facts(conn)
        identity = platform_identity.of_node(node)
        inv = observe(conn)
        bios = _bios(node, spec)
        fw_state = fw.observe(conn)
        entries, sel_read = _sel(node)
    statuses = fw.status(spec.firmware, fw_state, node.vendor)
    firmware = tuple(
        FirmwareSeen(component=s.component, versions=tuple(e.version for e in s.entries if e.version),
                     entries=len([e for e in s.entries if e.verdict != "absent"]),
                     absent=tuple(f"{e.id} {e.raw_version}" for e in s.entries if e.verdict == "absent"))
        for s in statuses
    )
    inlet, ambient = node.vendor.temperature_roles([t for th in inv.thermal for t in th.temperatures])
    return BmcFacts(vendor=node.vendor.name, bios=bios, firmware=firmware, power=tuple(inv.power),
                    thermal=tuple(inv.thermal), sel=entries, sel_read=sel_read, ambient=ambient, inlet=inlet,
                    memory=tuple(inv.memory), gpus=tuple(inv.gpus), identity=identity)


def _bios(node: Node, spec: NodeSpec) -> tuple[BiosSetting, ...]:
    state = bios_ops.observe(node)
    current = state.current.attributes
    out = []
    for key, value in spec.bios.settings.items():
        try:
            target = node.vendor.resolve_bios(key, value, current, state.registry)
        except AmbiguousBiosKey as exc:  # never a guess: the check says why it could not be made
            out.append(BiosSetting(key=key, attribute=None, wanted=None, current=None, error=str(exc)))
            continue
        out.append(BiosSetting(
            key=key,
            attribute=target.attribute if target else None,
            wanted=target.value if target else None,
            current=current.get(target.attribute) if target else None,
            proof=None if target else node.vendor.prove_bios(key, value, node.system),
        ))
    return tuple(out)


def _sel(node: Node) -> tuple[tuple[LogEntry, ...], bool]:
    try:
        return tuple(sel_ops.read(node)), True
    except RedfishError as exc:
        if "no SEL log service" in str(exc):
            return (), False
        raise

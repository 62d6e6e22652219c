"""The BMC source of a verify: where the BMC checks' facts come from (read-only), and the BMC half of a node's check.

A source is one of: `OwnSession` (`provision verify`: one session of its own per node, honouring --insecure and
the host's CA file, provision_bmc_ca_file), `HeldSession` (the bring-up keeps one session per node and hands it
to verify: no second login), `NoBmc` (the BMC checks are waived with a reason: --no-bmc, or --local on a node
that holds no BMC credentials). `check_bmc` reads through the source and hands the facts to the pure checks
(checks/bmc.py); a BMC that cannot be read makes every BMC check an ERROR naming why, never a pass.

BIOS: provision.redfish.ops.bios.observe (current values + registry) and the vendor plugin's
neutral-key mapping; firmware: ops.firmware.observe/status; power, thermal (the sensors' roles from the
vendor plugin's temperature_roles) and memory: ops.inventory;
SEL: ops.sel.read.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

from provision.conformance.checks._base import Context
from provision.conformance.checks.bmc import bmc_problem, error_all, evaluate_bmc, waive_all
from provision.conformance.checks.bmc_facts import BiosSetting, BmcFacts, FirmwareSeen
from provision.conformance.target import Target
from provision.errors import InventoryError, ProvisionError, RedfishError
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
from provision.spec.model import NodeSpec

# A verify that opens its own session gives up sooner than the bring-up's (a dead BMC is an ERROR row).
VERIFY_RETRY = RetryPolicy(attempts=2, base_delay_s=0.2, timeout_s=15)


@dataclass(frozen=True)
class OwnSession:
    """One session of its own per node (logged out after); `insecure`: TLS not verified (--insecure)."""

    insecure: bool = False

    def read(self, host: Target) -> BmcFacts:
        return read_bmc(host, insecure=self.insecure)


@dataclass(frozen=True)
class HeldSession:
    """A session the caller already holds: `open()` lends it (a context manager yielding the Connector)."""

    open: Callable[[], AbstractContextManager[Connector]]

    def read(self, host: Target) -> BmcFacts:
        with self.open() as conn:
            return read_connected(conn, host.spec)


@dataclass(frozen=True)
class NoBmc:
    """The BMC is not read: every BMC check is WAIVED with `reason`."""

    reason: str


BmcSource = OwnSession | HeldSession | NoBmc


def check_bmc(ctx: Context, host: Target, source: BmcSource, since: datetime | None = None) -> None:
    """Record every BMC check of `host` from `source`: waived (NoBmc), judged on what was read, or an ERROR each
    with the reason when the BMC cannot be read (never a pass)."""
    if isinstance(source, NoBmc):
        waive_all(ctx, source.reason)
        return
    try:
        facts = source.read(host)
    except ProvisionError as exc:
        error_all(ctx, bmc_problem(exc))
        return
    evaluate_bmc(ctx, facts, since)


def read_bmc(host: Target, insecure: bool = False) -> BmcFacts:
    """One session of its own (logged out after) and one read-only pass; raises RedfishError (a
    ProvisionError) when the BMC cannot be read. TLS is verified against provision_bmc_ca_file (or the
    system bundle) unless `insecure`."""
    if host.bmc is None:
        raise InventoryError(f"{host.name}: no BMC endpoint in the inventory")
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

"""The two ways to open a BMC, and the node facts every operation starts from.

`open_node(opts)`: logged in and the node's facts read (root, systems, first manager, vendor plugin): what
an operation on a node starts from (CLI commands, bring-up stages, campaigns). `open_endpoint(opts)`: logged
in, nothing read beyond the service root: a bare endpoint (verify's own BMC read, discovery). `options_for`
builds the options from an inventory host's BmcEndpoint (--insecure, retries, concurrency).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from provision.errors import InventoryError, RedfishError
from provision.redfish.connector import ROOT, Connector, ConnectorOptions, Json
from provision.redfish.resources import ComputerSystem, ServiceRoot
from provision.redfish.retry import RetryPolicy
from provision.redfish.transport_warnings import warn_once
from provision.redfish.vendors import VendorPlugin, detect
from provision.spec.fleet import BmcEndpoint


def cause_of(node: str, text: str) -> str:
    """An error's text without the node's own prefix ("host node01: ", "node01 BMC (https://...): ",
    "node01: "), so a cause many nodes share can be said once."""
    return re.sub(rf"^(?:host )?{re.escape(node)}(?: BMC \([^)]*\))?: ", "", text, count=1)


class CredentialsMissing(InventoryError):
    """An inventory host without BMC credentials: nothing is sent to its BMC (a command that only reads counts
    it as a node it could not read)."""


def options_for(name: str, bmc: BmcEndpoint, insecure: bool = False, retry: RetryPolicy | None = None,
                max_parallel: int = 4) -> ConnectorOptions:
    """Connector options from an inventory BMC endpoint; --insecure turns verification off. Refuses an
    endpoint without credentials (nothing is sent to the BMC then)."""
    missing = [key for key, value in (("provision_bmc_username", bmc.username),
                                      ("provision_bmc_password", bmc.password.get_secret_value())) if not value]
    if missing:
        raise CredentialsMissing(f"host {name}: {' and '.join(missing)} not set: give them as host or group vars "
                             "(the password vaulted), or set PROVISION_BMC_USERNAME and PROVISION_BMC_PASSWORD")
    opts = ConnectorOptions(**{**dict(bmc), "verify_tls": bmc.verify_tls and not insecure},
                            retry=retry or RetryPolicy(), max_parallel=max_parallel, name=name)
    if opts.plain_http:
        warn_once(opts.where, "plain HTTP (provision_bmc_insecure_http): the BMC password travels in clear")
    return opts


@dataclass(frozen=True)
class Node:
    """A logged-in BMC with its root, first system and vendor plugin."""

    conn: Connector
    root: ServiceRoot
    system: ComputerSystem
    manager_uri: str | None
    vendor: VendorPlugin
    systems: tuple[Json, ...] = ()
    """Every ComputerSystem as read for the facts (the platform identity reads its host among them)."""

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Log out of the BMC (best effort; never raises)."""
        self.conn.close()


def host_system(systems: list[Json]) -> Json:
    """The host: the first system with a Bios, else the first (an HGX baseboard listed before it has none)."""
    return next((s for s in systems if isinstance(s.get("Bios"), dict)), systems[0] if systems else {})


def node_facts(conn: Connector) -> Node:
    """Root, the host system (host_system), the Manager it names in Links.ManagedBy (else the first), vendor
    plugin."""
    root = ServiceRoot.parse(conn.root)
    systems = conn.members(f"{ROOT}/Systems")
    if not systems:
        raise RedfishError(f"{conn.opts.where}: no ComputerSystem under {ROOT}/Systems")
    body = host_system(systems)
    system = ComputerSystem.parse(body)
    links = body.get("Links")
    refs = links.get("ManagedBy") if isinstance(links, dict) else None
    named = [str(m["@odata.id"]) for m in refs if isinstance(m, dict) and m.get("@odata.id")] \
        if isinstance(refs, list) else []
    if not named:
        managers = conn.get_optional(f"{ROOT}/Managers") or {}
        named = [str(m.get("@odata.id")) for m in managers.get("Members", []) if isinstance(m, dict)]
    return Node(conn=conn, root=root, system=system, manager_uri=named[0] if named else None,
                vendor=detect(root, system), systems=tuple(systems))


def open_node(opts: ConnectorOptions, *, whole_command: bool = False) -> Node:
    """A node: logged in and its facts read (node_facts) within one deadline (`opts.deadline_s`); nothing is
    left open on failure. The Node is a context manager that logs out at its end (or call `node.close()`).
    `whole_command`: everything sent until then counts against that same deadline (a CLI command; the waits
    it makes, a firmware Task, a PowerState, a BMC reset, are bounded by their own timeouts meanwhile:
    Connector.waiting). Otherwise each later use bounds itself with `node.conn.deadline()` (a session kept
    across the bring-up stages, a campaign's node)."""
    conn = Connector(opts)
    try:
        if whole_command:
            conn.hold_deadline()  # released by conn.close()
        with conn.deadline():
            conn.open()
            return node_facts(conn)
    except BaseException:
        conn.close()
        raise


def open_endpoint(opts: ConnectorOptions, *, whole_command: bool = False) -> Connector:
    """A bare BMC endpoint: logged in within one deadline (`opts.deadline_s`), nothing read beyond the service
    root (no node facts); nothing left open on failure. The Connector is a context manager that logs out
    at its end. `whole_command` as for open_node."""
    conn = Connector(opts)
    try:
        if whole_command:
            conn.hold_deadline()  # released by conn.close()
        with conn.deadline():
            conn.open()
        return conn
    except BaseException:
        conn.close()
        raise

"""Open a connector for an inventory host, and the node facts every operation starts from."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from provision.errors import InventoryError, RedfishError
from provision.redfish.connector import ROOT, Connector, ConnectorOptions, Json
from provision.redfish.resources import ComputerSystem, ServiceRoot
from provision.redfish.retry import RetryPolicy
from provision.redfish.transport_warnings import warn_once
from provision.redfish.vendors import VendorPlugin, detect
from provision.spec.model import BmcEndpoint, HostEntry


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
    opts = ConnectorOptions(
        address=bmc.address, username=bmc.username, password=bmc.password, ca_file=bmc.ca_file,
        verify_tls=bmc.verify_tls and not insecure, auth=bmc.auth, retry=retry or RetryPolicy(),
        max_parallel=max_parallel, name=name, insecure_http=bmc.insecure_http,
        deadline_s=bmc.deadline_s,  # provision_bmc_deadline_s
    )
    if opts.address.startswith("http://"):
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


def node_facts(conn: Connector) -> Node:
    """Root, first System (and first Manager), vendor plugin."""
    root = ServiceRoot.parse(conn.root)
    systems = conn.members(f"{ROOT}/Systems")
    if not systems:
        raise RedfishError(f"{conn.opts.where}: no ComputerSystem under {ROOT}/Systems")
    system = ComputerSystem.parse(systems[0])
    managers = conn.get_optional(f"{ROOT}/Managers") or {}
    mgr = [str(m.get("@odata.id")) for m in managers.get("Members", []) if isinstance(m, dict)]
    return Node(conn=conn, root=root, system=system, manager_uri=mgr[0] if mgr else None,
                vendor=detect(root, system), systems=tuple(systems))


def open_node(opts: ConnectorOptions) -> Node:
    """Log in and read the node facts within one deadline (`opts.deadline_s`); the caller closes `node.conn`
    (nothing is left open on failure)."""
    conn = Connector(opts)
    try:
        with conn.deadline():
            conn.open()
            return node_facts(conn)
    except BaseException:
        conn.close()
        raise


@contextmanager
def connect(opts: ConnectorOptions) -> Iterator[Connector]:
    conn = Connector(opts)
    conn.open()
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def session(opts: ConnectorOptions) -> Iterator[Node]:
    """Log in and read the node facts within one deadline (`opts.deadline_s`); logged out at the end. For
    a session kept across the bring-up stages, each of which bounds its own use with
    `node.conn.deadline()`: a BMC that stalls fails with one line naming the node and the URI."""
    conn = Connector(opts)
    try:
        with conn.deadline():
            conn.open()
            node = node_facts(conn)
        yield node
    finally:
        conn.close()


@contextmanager
def open_host(host: HostEntry, insecure: bool = False) -> Iterator[tuple[HostEntry, Node]]:
    """Log in to an already-loaded host's BMC, and yield its entry and node facts. Everything the
    command sends inside runs within one deadline (`ConnectorOptions.deadline_s`); the waits it makes
    (a firmware Task, a PowerState, a BMC reset) are bounded by their own timeouts meanwhile
    (Connector.waiting)."""
    conn = Connector(options_for(host.name, host.bmc, insecure=insecure))
    try:
        with conn.deadline():  # the login and the facts count too
            conn.open()
            yield host, node_facts(conn)
    finally:
        conn.close()

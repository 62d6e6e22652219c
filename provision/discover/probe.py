"""Ask each target for a Redfish service: the service root without credentials, then, where one answers,
the platform identity and the BMC's MAC with them (observe: read-only; nothing is written to a BMC).

Bounded: at most `concurrency` targets at once, each with a per-request timeout and a deadline for its
whole conversation. A target that refuses the connection or does not answer is simply not a BMC (left
out); one that answers HTTP but no Redfish root is left out too. A Redfish service that then cannot be
identified is still reported, with why: credentials refused, a password change required, a certificate
that does not verify, no ComputerSystem.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Any

import urllib3
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from provision.discover.leases import Lease, mac_of
from provision.discover.targets import Target
from provision.errors import ProvisionError
from provision.redfish.connector import ROOT, Connector, ConnectorOptions, Json
from provision.redfish.errors import RedfishAuthError, RedfishPasswordChangeRequired, RedfishTlsError
from provision.redfish.ops import identity as identity_ops
from provision.redfish.ops.session import open_endpoint
from provision.redfish.retry import RetryPolicy
from provision.redfish.transport import SendFailed, Transport, default_ca_bundle
from provision.spec.platforms import PlatformIdentity

LOG = logging.getLogger("provision.discover")


class Outcome(StrEnum):
    IDENTIFIED = "identified"
    PASSWORD_CHANGE = "password change required"
    REFUSED = "credentials refused"
    TLS = "certificate not verified"
    NO_SYSTEM = "no ComputerSystem"
    FAILED = "identity not read"


class Settings(BaseModel):
    """How discovery talks to each target."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    username: str
    password: SecretStr
    ca_file: Path | None = None
    verify_tls: bool = True
    timeout_s: float = Field(default=3.0, gt=0, description="Per request: connect + read")
    deadline_s: float = Field(default=30.0, gt=0, description="One BMC's whole conversation")
    concurrency: int = Field(default=256, ge=1, le=1024, description="Service roots asked at once")
    identify_concurrency: int = Field(default=16, ge=1, le=256, description="BMCs identified at once")


class Found(BaseModel):
    """One Redfish service that answered, and what it is (or why that could not be read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(description="The BMC's URL, as provision_bmc_address takes it")
    ip: str
    outcome: Outcome
    detail: str = ""
    service_uuid: str | None = Field(default=None, description="The service root's UUID (no credentials)")
    product: str | None = None
    redfish_version: str | None = None
    identity: PlatformIdentity | None = None
    bmc_mac: str | None = None
    lease: Lease | None = Field(default=None, description="What the file said of it, when read from one")

    @property
    def serial(self) -> str | None:
        return self.identity.system.serial_number or (self.identity.chassis.serial_number if self.identity.chassis
                                                      else None) if self.identity else None

    @property
    def uuid(self) -> str | None:
        return self.identity.system.uuid if self.identity and self.identity.system.uuid else None

    @property
    def firmware(self) -> str | None:
        return self.identity.bmc.firmware_version if self.identity and self.identity.bmc else None


def discover(targets: list[Target], settings: Settings, leases: dict[str, Lease] | None = None) -> list[Found]:
    """Every target that answers as a Redfish service, in the targets' order. Two rounds: every address's
    service root (`concurrency` at once: mostly waiting on silent addresses), then the identity of those that
    answered (`identify_concurrency` at once: that round is CPU, TLS and JSON, on one GIL)."""
    leases = leases or {}
    if not targets:
        return []
    if not settings.verify_tls:  # said once by the command (--insecure), not once per address by urllib3
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    with ThreadPoolExecutor(max_workers=min(settings.concurrency, len(targets))) as pool:
        roots = list(pool.map(lambda t: answer(t, settings, leases.get(t.host)), targets))
    answered = [(t, r) for t, r in zip(targets, roots, strict=True) if r is not None]
    if not answered:
        return []
    with ThreadPoolExecutor(max_workers=min(settings.identify_concurrency, len(answered))) as pool:
        return list(pool.map(lambda pair: identified(pair[0], pair[1], settings), answered))


def answer(target: Target, settings: Settings, lease: Lease | None = None) -> Found | None:
    """Round one for one target: None when no Redfish service answers there; else a Found not yet
    identified (or one whose certificate does not verify, which nothing further is sent to)."""
    try:
        root = service_root(target, settings)
    except RedfishTlsError as exc:
        return Found(address=target.url, ip=target.host, outcome=Outcome.TLS, detail=_short(exc), lease=lease)
    if root is None:
        return None
    return Found(address=target.url, ip=target.host, outcome=Outcome.FAILED, lease=lease,
                 service_uuid=_str(root.get("UUID")), product=_str(root.get("Product")),
                 redfish_version=_str(root.get("RedfishVersion")))


def identified(target: Target, base: Found, settings: Settings) -> Found:
    """Round two: the identity with credentials, or why it could not be read."""
    if base.outcome is Outcome.TLS:
        return base
    try:
        ident, mac, outcome = identify(target, settings)
    except RedfishPasswordChangeRequired as exc:
        return base.model_copy(update={"outcome": Outcome.PASSWORD_CHANGE, "detail": _short(exc)})
    except RedfishAuthError as exc:
        return base.model_copy(update={"outcome": Outcome.REFUSED, "detail": _short(exc)})
    except RedfishTlsError as exc:
        return base.model_copy(update={"outcome": Outcome.TLS, "detail": _short(exc)})
    except ProvisionError as exc:  # unavailable, a deadline, unreadable: said, never a crash
        return base.model_copy(update={"detail": _short(exc)})
    return base.model_copy(update={"identity": ident, "bmc_mac": mac, "outcome": outcome})


def service_root(target: Target, settings: Settings) -> Json | None:
    """GET /redfish/v1/ without credentials, on the one BMC transport (its proxies and same-host redirects):
    the root when it is a Redfish service root, else None. RedfishTlsError when a TLS service answered with a
    certificate that does not verify."""
    transport = Transport(target.url, _cafile(settings), maxsize=1)
    try:
        resp = transport.send("GET", f"{ROOT}/", headers={"Accept": "application/json"}, timeout=settings.timeout_s)
    except SendFailed as exc:
        if exc.tls and _handshake_answered(exc):
            raise RedfishTlsError(f"{target.url}: TLS certificate does not verify ({_ssl_reason(exc)}); give "
                                  "--ca-file, or --insecure") from None
        LOG.debug("%s: no answer (%s)", target.url, exc.kind)
        return None
    finally:
        transport.close()
    body = resp.body if resp.status == 200 else None
    return body if _is_root(body) else None


def _is_root(body: Any) -> bool:
    """A ServiceRoot: `RedfishVersion`, or `@odata.id` /redfish/v1 (DSP0266: the root answers unauthenticated)."""
    if not isinstance(body, dict):
        return False
    return "RedfishVersion" in body or str(body.get("@odata.id", "")).rstrip("/") == ROOT


def _cafile(settings: Settings) -> str | None:
    """The CA file the transport verifies against; None: verification OFF (--insecure)."""
    if not settings.verify_tls:
        return None
    return str(settings.ca_file) if settings.ca_file else default_ca_bundle()


def _handshake_answered(exc: Exception) -> bool:
    """A certificate refused (the service is there) rather than a connection that broke off."""
    text = str(exc)
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text or "hostname" in text.lower()


def _ssl_reason(exc: Exception) -> str:
    text = str(exc)
    for key in ("self-signed certificate", "unable to get local issuer certificate", "certificate has expired",
                "Hostname mismatch", "IP address mismatch"):
        if key.lower() in text.lower():
            return key
    return "certificate verify failed"


def identify(target: Target, settings: Settings) -> tuple[PlatformIdentity | None, str | None, Outcome]:
    """Log in and read the identity (identity.read) and the BMC MAC; the outcome NO_SYSTEM when the BMC lists
    no ComputerSystem."""
    opts = ConnectorOptions(
        address=target.url, username=settings.username, password=settings.password, ca_file=settings.ca_file,
        verify_tls=settings.verify_tls, retry=RetryPolicy(attempts=2, base_delay_s=0.2, timeout_s=settings.timeout_s),
        deadline_s=settings.deadline_s, max_parallel=2, use_expand=True, name="",
        insecure_http=target.scheme == "http")
    with open_endpoint(opts, whole_command=True) as conn:
        systems = conn.members(f"{ROOT}/Systems")
        if not systems:
            return None, None, Outcome.NO_SYSTEM
        ident = identity_ops.read(conn, systems)
        return ident, bmc_mac(conn, ident, target.host), Outcome.IDENTIFIED


def bmc_mac(conn: Connector, ident: PlatformIdentity, ip: str) -> str | None:
    """The MAC of the BMC's interface that holds `ip`, else of its first interface that gives one."""
    manager = ident.bmc.uri if ident.bmc and ident.bmc.uri else None
    if manager is None:
        return None
    nics = conn.members(f"{manager}/EthernetInterfaces")
    holding = [n for n in nics if ip in _addresses(n)]
    for nic in holding + nics:
        for key in ("MACAddress", "PermanentMACAddress"):
            value = nic.get(key)
            if isinstance(value, str) and value.strip():
                try:
                    return mac_of(value, "")
                except ProvisionError:
                    continue
    return None


def _addresses(nic: Json) -> set[str]:
    out: set[str] = set()
    for key in ("IPv4Addresses", "IPv6Addresses", "IPv4StaticAddresses"):
        for a in nic.get(key) or []:
            if isinstance(a, dict) and isinstance(a.get("Address"), str):
                out.add(a["Address"])
    return out


def _str(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) and str(value) else None


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]

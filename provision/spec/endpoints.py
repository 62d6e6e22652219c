"""A host's endpoints from its inventory variables: the BMC (credentials, TLS, plain HTTP, deadline), SSH and the
installer the os stage boots; one line naming inventory, host and variable for each problem."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from provision.errors import InventoryError
from provision.redact import register_secret
from provision.spec.bmc_setup import BmcSetup
from provision.spec.fleet import BmcEndpoint, HostEntry, InstallerAccess, SshEndpoint
from provision.spec.model import NodeSpec
from provision.spec.software import InstallMethod
from provision.spec.validation import describe

CREDENTIAL_ENV = ("PROVISION_BMC_USERNAME", "PROVISION_BMC_PASSWORD")
BMC_AUTH_MODES = ("auto", "session", "basic")
DEADLINE_VAR = "provision_bmc_deadline_s"
MAC_RE = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
DEFAULT_BMC_DEADLINE_S = 120.0


def bmc_endpoint(inventory: Path, base: Path, host: str, hv: dict[str, Any],
                  setup: BmcSetup | None = None) -> BmcEndpoint:
    """The host's BMC endpoint; without provision_bmc_ca_file, a host whose `bmc:` section installs a site
    certificate verifies its BMC against that site CA (a factory BMC before it: --insecure, once)."""
    address = hv.get("provision_bmc_address")
    if not address:
        raise InventoryError(f"{inventory}: host {host}: provision_bmc_address is not set")
    ca = hv.get("provision_bmc_ca_file")
    ca_path = setup.certificate.ca_cert if setup is not None and setup.certificate is not None else None
    if ca:
        ca_path = Path(str(ca)) if Path(str(ca)).is_absolute() else base / str(ca)
        if not ca_path.is_file():
            raise InventoryError(f"{inventory}: host {host}: provision_bmc_ca_file: {ca_path} does not exist")
    insecure_http = _flag(hv.get("provision_bmc_insecure_http", False))
    user = hv.get("provision_bmc_username") or os.environ.get(CREDENTIAL_ENV[0]) or ""
    password = hv.get("provision_bmc_password") or os.environ.get(CREDENTIAL_ENV[1]) or ""
    register_secret(str(password))  # scrubbed from logs, journal rows and hook output from now on
    auth = hv.get("provision_bmc_auth", "auto")
    if auth not in BMC_AUTH_MODES:
        raise InventoryError(f"{inventory}: host {host}: provision_bmc_auth: {auth!r} is not one of "
                             f"{', '.join(BMC_AUTH_MODES)}")
    try:
        return BmcEndpoint(
            address=str(address),
            username=str(user),
            password=str(password),
            ca_file=ca_path,
            verify_tls=_verify_tls(inventory, host, hv.get("provision_bmc_verify_tls", True)),
            insecure_http=insecure_http,
            auth=auth,
            deadline_s=_deadline(inventory, host, hv),
        )
    except ValidationError as exc:
        first = exc.errors()[0]  # a rule over the whole endpoint (plain HTTP) names its own keys
        text = describe(exc, "provision_bmc") if first["loc"] else first["msg"].removeprefix("Value error, ")
        raise InventoryError(f"{inventory}: host {host}: {text}") from None


def _deadline(inventory: Path, host: str, hv: dict[str, Any]) -> float:
    """`provision_bmc_deadline_s`: a positive number of seconds (a numeric string, as INI gives, too)."""
    raw = hv.get(DEADLINE_VAR, DEFAULT_BMC_DEADLINE_S)
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InventoryError(f"{inventory}: host {host}: {DEADLINE_VAR}: must be a positive number of seconds "
                             f"(got {raw!r})")
    return value


def installer_access(inventory: Path, base: Path, host: str, hv: dict[str, Any], spec: NodeSpec) -> InstallerAccess:
    """The os stage's preflight settings: provision_os_installer_* (a CA file relative to the inventory)."""
    ca = hv.get("provision_os_installer_ca_file")
    ca_path = None
    if ca:
        ca_path = Path(str(ca)) if Path(str(ca)).is_absolute() else base / str(ca)
        if not ca_path.is_file():
            raise InventoryError(f"{inventory}: host {host}: provision_os_installer_ca_file: {ca_path} does not exist")
    method = hv.get("provision_os_install_method")
    if method is not None and str(method) not in InstallMethod._value2member_map_:
        raise InventoryError(f"{inventory}: host {host}: provision_os_install_method: {method!r} is not one of "
                             f"{', '.join(InstallMethod)}")
    pinned = spec.software.os_installer
    if method is not None and method != "virtual_media" and pinned is not None and pinned.kernel is None:
        raise InventoryError(f"{inventory}: host {host}: provision_os_install_method: {method} boots a kernel and an "
                             "initrd, and its profile's software.os_installer names none (.kernel, .initrd)")
    mac = hv.get("provision_provisioning_mac")
    if mac is not None and not MAC_RE.match(str(mac).strip().lower().replace("-", ":")):
        hint = " (YAML read it as a number: quote it)" if isinstance(mac, int) else ""
        raise InventoryError(f"{inventory}: host {host}: provision_provisioning_mac: {mac!r} is not a MAC address "
                             f"(six hex pairs){hint}")
    return InstallerAccess(ca_file=ca_path,
                           skip_boot_check=_flag(hv.get("provision_os_installer_skip_boot_check", False)),
                           method=InstallMethod(str(method)) if method is not None else None,
                           provisioning_mac=str(mac).strip().lower().replace("-", ":") if mac is not None else None)


def _flag(value: Any) -> bool:
    """A yes/no variable: YAML booleans, or the strings an INI inventory gives ('true', 'yes', '1')."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "yes", "1")


def _verify_tls(inventory: Path, host: str, value: Any) -> bool:
    """`provision_bmc_verify_tls`: off only when said so ('false', 'no', '0', 'off' from an INI inventory too);
    a value that is neither yes nor no is refused, never read as off."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes", "1", "on"):
        return True
    if word in ("false", "no", "0", "off"):
        return False
    raise InventoryError(f"{inventory}: host {host}: provision_bmc_verify_tls: {value!r} is not true or false")


def ssh_endpoint(host: str, hv: dict[str, Any]) -> SshEndpoint | None:
    address = hv.get("ansible_host")
    if not address:
        return None
    key = hv.get("ansible_ssh_private_key_file")
    known = hv.get("provision_ssh_known_hosts")
    return SshEndpoint(
        host=str(address),
        port=int(hv.get("ansible_port", 22)),
        user=str(hv.get("ansible_user", "root")),
        key_file=Path(str(key)) if key else None,
        known_hosts=Path(str(known)) if known else None,
        common_args=str(hv.get("ansible_ssh_common_args", "")),
    )


def refuse_shared_bmcs(inventory: Path, entries: dict[str, HostEntry]) -> None:
    seen: dict[str, str] = {}
    for name, entry in entries.items():
        addr = entry.bmc.address.rstrip("/")
        if addr in seen:
            raise InventoryError(f"{inventory}: hosts {seen[addr]} and {name} share BMC address {addr}")
        seen[addr] = name

"""Read an Ansible inventory with Ansible's own loader and build the typed Fleet.

Any inventory Ansible accepts (YAML, INI, dynamic plugins) works; the roles read the
same variables. Every problem becomes one InputError line naming file, host and key.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from provision.errors import InputError, InventoryError, SpecError
from provision.redact import register_secret
from provision.spec.bmc_setup import BmcSetup
from provision.spec.fleet import (
    BmcEndpoint,
    Fleet,
    HostEntry,
    InstallerAccess,
    LabDeclaration,
    Rack,
    RecordedIdentity,
    SshEndpoint,
    Waiver,
)
from provision.spec.model import NodeSpec
from provision.spec.patterns import HostPatterns, ansible_env
from provision.spec.slurm import SLURM_VAR, SlurmSettings
from provision.spec.software import InstallMethod
from provision.spec.strict_yaml import load_strict, vars_files, yaml_files
from provision.spec.validation import describe

PROFILE_VAR = "provision_profile"
LAB_VAR = "provision_lab"
WAIVERS_VAR = "provision_lab_waivers"
STANDINS_VAR = "provision_lab_standins"
NOTICE_VAR = "provision_lab_notice"
PROFILE_PREFIX = "provision_profile_"
RACK_VAR = "provision_rack"
RACKS_VAR = "provision_racks"
CREDENTIAL_ENV = ("PROVISION_BMC_USERNAME", "PROVISION_BMC_PASSWORD")
BMC_AUTH_MODES = ("auto", "session", "basic")
DEADLINE_VAR = "provision_bmc_deadline_s"
MAC_RE = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
DEFAULT_BMC_DEADLINE_S = 120.0


def load_fleet(inventory: Path) -> Fleet:
    """Load every host of `inventory` with its spec; raise InputError on any problem.

    The spec comes back resolved: every firmware image path is absolute, relative paths taken from
    the inventory's directory (the directory given with -i, or the one holding the file given), so no
    code below reads the inventory's location again."""
    inventory = Path(inventory)
    if not inventory.exists():
        raise InventoryError(f"{inventory}: inventory path does not exist")
    _precheck_yaml(inventory)
    hosts_vars, manager = _ansible_host_vars(inventory)
    if not hosts_vars:
        raise InventoryError(f"{inventory}: inventory defines no hosts")
    base = inventory_dir(inventory)
    entries = {name: _host_entry(inventory, base, name, groups, hv) for name, (groups, hv) in hosts_vars.items()}
    _refuse_shared_bmcs(inventory, entries)
    racks = _racks(inventory, hosts_vars)
    _refuse_unknown_racks(inventory, entries, racks)
    fleet = Fleet(inventory=inventory, hosts=entries, profiles=_all_profiles(base, hosts_vars), racks=racks)
    fleet._patterns = HostPatterns(manager, str(inventory))  # node patterns: Ansible's own, on this inventory
    return fleet


class SiteDefaults(BaseModel):
    """What a host not yet in the inventory would get from group `all` (discovery's view of the site): the
    profiles and the BMC credentials (group vars, vaulted, else PROVISION_BMC_USERNAME/PASSWORD)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profiles: dict[str, NodeSpec]
    username: str
    password: SecretStr


def site_defaults(inventory: Path) -> SiteDefaults:
    """SiteDefaults read through Ansible's own loader with a host added in memory only (nothing written);
    works on an inventory with no host yet. InputError (one line) as load_fleet."""
    inventory = Path(inventory)
    if not inventory.exists():
        raise InventoryError(f"{inventory}: inventory path does not exist")
    _precheck_yaml(inventory)
    probe = "provision-discover-defaults"
    hosts_vars, _ = _ansible_host_vars(inventory, extra_host=probe)
    groups, hv = hosts_vars[probe]
    base = inventory_dir(inventory)
    profiles = _all_profiles(base, {probe: (groups, hv)})
    user = hv.get("provision_bmc_username") or os.environ.get(CREDENTIAL_ENV[0]) or ""
    password = hv.get("provision_bmc_password") or os.environ.get(CREDENTIAL_ENV[1]) or ""
    register_secret(str(password))
    return SiteDefaults(profiles=profiles, username=str(user), password=SecretStr(str(password)))


def inventory_dir(inventory: Path) -> Path:
    """The directory relative paths of an inventory are taken from: one rule for a file or a directory."""
    inventory = Path(inventory)
    return (inventory if inventory.is_dir() else inventory.parent).resolve()


def _all_profiles(
    base: Path, hosts_vars: dict[str, tuple[tuple[str, ...], dict[str, Any]]]
) -> dict[str, NodeSpec]:
    """Every profile the inventory defines, used by a host or not, validated once."""
    name, (groups, hv) = next(iter(hosts_vars.items()))
    profiles: dict[str, NodeSpec] = {}
    for var, raw in hv.items():
        if var.startswith(PROFILE_PREFIX):
            profile = var.removeprefix(PROFILE_PREFIX)
            profiles[profile] = _absolute_images(base, _build_spec(_where(base, name, groups, var), name, profile, raw))
    return profiles


def _precheck_yaml(inventory: Path) -> None:
    """Strictly parse the inventory's YAML and the vars directories beside it."""
    base = inventory if inventory.is_dir() else inventory.parent
    paths = yaml_files(inventory) if inventory.is_file() else []
    for sub in ([inventory] if inventory.is_dir() else [base / "group_vars", base / "host_vars"]):
        if sub.exists():
            paths += yaml_files(sub)
    for path in paths:
        load_strict(path)


def _ansible_host_vars(inventory: Path, extra_host: str | None = None
                       ) -> tuple[dict[str, tuple[tuple[str, ...], dict[str, Any]]], Any]:
    """Every host's groups and variables, and the InventoryManager that read them (`extra_host`: a host
    added in memory, in group all only: what any new host would get)."""
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_FAILED", "True")
    os.environ.setdefault("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "True")
    ansible_env()
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    _setup_vault(loader)
    try:
        inv = InventoryManager(loader=loader, sources=[str(inventory)])
        if extra_host is not None:
            inv.add_host(extra_host, group="all")
        vm = VariableManager(loader=loader, inventory=inv)
        result: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {}
        for host in inv.get_hosts():
            hv = vm.get_vars(host=host, include_hostvars=False)
            groups = tuple(sorted(g.name for g in host.get_groups() if g.name not in ("all", "ungrouped")))
            result[host.name] = (groups, _resolve(Templar(loader=loader, variables=hv), hv))
    except AnsibleError as exc:
        first = str(exc.message if hasattr(exc, "message") else exc).strip().splitlines()[0]
        raise InventoryError(f"{inventory}: {first}") from None
    return result, inv


def _resolve(templar: Any, hv: dict[str, Any]) -> dict[str, Any]:
    """Template only the variables we read (profiles are plain data)."""
    wanted = {k: v for k, v in hv.items() if k.startswith(("provision_bmc_", "ansible_")) or k == PROFILE_VAR}
    out = dict(hv)
    for key, value in wanted.items():
        out[key] = templar.template(value)
    return out


def _setup_vault(loader: Any) -> None:
    password_file = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    if not password_file:
        return
    from ansible.cli import CLI

    secrets = CLI.setup_vault_secrets(loader, vault_ids=[], vault_password_files=[password_file])
    loader.set_vault_secrets(secrets)


def _host_entry(
    inventory: Path, base: Path, name: str, groups: tuple[str, ...], hv: dict[str, Any]
) -> HostEntry:
    profile = hv.get(PROFILE_VAR)
    if not profile:
        raise SpecError(f"{inventory}: host {name}: {PROFILE_VAR} is not set (which node class is it?)")
    raw = hv.get(PROFILE_PREFIX + str(profile))
    if raw is None:
        known = sorted(k.removeprefix(PROFILE_PREFIX) for k in hv if k.startswith(PROFILE_PREFIX))
        raise SpecError(f"{inventory}: host {name}: {PROFILE_VAR}: unknown profile {profile!r}; known: {known}")
    spec = _absolute_images(base, _build_spec(_where(base, name, groups, PROFILE_PREFIX + str(profile)), name,
                                              str(profile), raw))
    _check_images(base, name, spec)
    spec = _bmc_setup(base, name, groups, hv, spec, str(profile))
    return HostEntry(
        name=name,
        profile=str(profile),
        groups=groups,
        spec=spec,
        bmc=_bmc_endpoint(inventory, base, name, hv, spec.bmc),
        ssh=_ssh_endpoint(name, hv),
        installer=_installer_access(inventory, base, name, hv, spec),
        lab=_lab_declaration(inventory, name, hv),
        slurm=_slurm_settings(inventory, name, hv),
        rack=_rack_of(inventory, name, hv),
        identity=_recorded_identity(inventory, name, hv),
    )


IDENTITY_VAR = "provision_bmc_identity"


def _recorded_identity(inventory: Path, host: str, hv: dict[str, Any]) -> RecordedIdentity | None:
    """`provision_bmc_identity` (what enroll recorded), None when unset."""
    raw = hv.get(IDENTITY_VAR)
    if raw is None:
        return None
    return _validated(RecordedIdentity, raw, f"{inventory}: host {host}", IDENTITY_VAR, InventoryError)


def _rack_of(inventory: Path, host: str, hv: dict[str, Any]) -> str | None:
    """`provision_rack`: the name of the rack the host sits in (a string), or None when unset."""
    raw = hv.get(RACK_VAR)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise InventoryError(f"{inventory}: host {host}: {RACK_VAR}: must be a rack name (got {raw!r})")
    return raw.strip()


def _racks(inventory: Path, hosts_vars: dict[str, tuple[tuple[str, ...], dict[str, Any]]]) -> dict[str, Rack]:
    """`provision_racks` (rack name -> {power_budget_w}) as every host sees it; one rack given two budgets
    (by two groups' vars) is refused."""
    racks: dict[str, tuple[Rack, str]] = {}
    for host, (_groups, hv) in hosts_vars.items():
        raw = hv.get(RACKS_VAR)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise InventoryError(f"{inventory}: host {host}: {RACKS_VAR}: must be a mapping of rack name -> "
                                 "{power_budget_w: W}")
        for name, body in raw.items():
            try:
                rack = Rack.model_validate(plain_data(body))
            except ValidationError as exc:
                raise InventoryError(f"{inventory}: host {host}: {describe(exc, f'{RACKS_VAR}.{name}')}") from None
            seen = racks.get(str(name))
            if seen is not None and seen[0] != rack:
                raise InventoryError(f"{inventory}: {RACKS_VAR}.{name}: hosts {seen[1]} and {host} see different "
                                     f"budgets ({seen[0].power_budget_w} W, {rack.power_budget_w} W)")
            racks.setdefault(str(name), (rack, host))
    return {name: rack for name, (rack, _host) in sorted(racks.items())}


def _refuse_unknown_racks(inventory: Path, entries: dict[str, HostEntry], racks: dict[str, Rack]) -> None:
    for name, entry in entries.items():
        if entry.rack is not None and entry.rack not in racks:
            known = ", ".join(racks) or "none"
            raise InventoryError(f"{inventory}: host {name}: {RACK_VAR}: rack {entry.rack!r} has no entry in "
                                 f"{RACKS_VAR} (known: {known})")


def _slurm_settings(inventory: Path, host: str, hv: dict[str, Any]) -> SlurmSettings | None:
    """`provision_slurm` (a mapping, see SlurmSettings) of one host, or None when unset."""
    raw = hv.get(SLURM_VAR)
    if raw is None:
        return None
    return _validated(SlurmSettings, raw, f"{inventory}: host {host}", SLURM_VAR, InventoryError,
                      " (drain_on_fail, scontrol, ...)")


def _lab_declaration(inventory: Path, host: str, hv: dict[str, Any]) -> LabDeclaration:
    """`provision_lab` (a bool) and `provision_lab_waivers` (check id or pattern -> reason) of one host."""
    lab = hv.get(LAB_VAR, False)
    if not isinstance(lab, bool):
        raise InventoryError(f"{inventory}: host {host}: {LAB_VAR}: must be true or false (got {lab!r})")
    standins = _lab_standins(inventory, host, hv, lab)
    notice = _lab_notice(inventory, host, hv, lab)
    raw = hv.get(WAIVERS_VAR)
    if raw is None:
        return LabDeclaration(lab=lab, standins=standins, notice=notice)
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR} is set but {LAB_VAR} is not true "
                             "(waivers are for declared lab hosts)")
    if not isinstance(raw, dict):
        raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR}: must be a mapping of check id -> reason")
    waivers = []
    for pattern, reason in raw.items():
        if not isinstance(reason, str) or not reason.strip():
            raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR}.{pattern}: needs a reason (a string)")
        try:
            waivers.append(Waiver(pattern=str(pattern), reason=str(reason)))
        except ValidationError as exc:
            raise InventoryError(f"{inventory}: host {host}: {describe(exc, WAIVERS_VAR)}") from None
    return LabDeclaration(lab=True, waivers=tuple(waivers), standins=standins, notice=notice)


def _lab_notice(inventory: Path, host: str, hv: dict[str, Any], lab: bool) -> str:
    """`provision_lab_notice`: the one line a declared lab host's reports show beside its results."""
    raw = hv.get(NOTICE_VAR)
    if raw is None:
        return ""
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {NOTICE_VAR} is set but {LAB_VAR} is not true")
    if not isinstance(raw, str) or not raw.strip() or "\n" in raw.strip():
        raise InventoryError(f"{inventory}: host {host}: {NOTICE_VAR}: must be one line of text")
    return raw.strip()


def _lab_standins(inventory: Path, host: str, hv: dict[str, Any], lab: bool) -> tuple[str, ...]:
    """`provision_lab_standins`: the names of a declared lab host's stand-in tools (a list of strings)."""
    raw = hv.get(STANDINS_VAR)
    if raw is None:
        return ()
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {STANDINS_VAR} is set but {LAB_VAR} is not true")
    if not isinstance(raw, list) or not all(isinstance(t, str) and t for t in raw):
        raise InventoryError(f"{inventory}: host {host}: {STANDINS_VAR}: must be a list of tool names")
    return tuple(sorted(raw))


def _build_spec(where: str, host: str, profile: str, raw: Any) -> NodeSpec:
    return _validated(NodeSpec, raw, f"{where}: host {host}", PROFILE_PREFIX + profile, SpecError)


_Model = TypeVar("_Model", bound=BaseModel)


def _validated(model: type[_Model], raw: Any, where: str, key: str, error: type[InputError],
               keys_hint: str = "") -> _Model:
    """`raw`, the mapping under `key`, as `model`; else one `error` line `WHERE: KEY...: what is wrong`."""
    if not isinstance(raw, dict):
        raise error(f"{where}: {key}: must be a mapping{keys_hint}")
    try:
        return model.model_validate(plain_data(raw))
    except ValidationError as exc:
        raise error(f"{where}: {describe(exc, key)}") from None


def plain_data(value: Any) -> Any:
    """Ansible's tagged containers and strings become plain Python data (JSON-able)."""
    if isinstance(value, dict):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    if isinstance(value, bool | int | float) or value is None:
        return value
    return str(value)


def _where(base: Path, host: str, groups: tuple[str, ...], var: str) -> str:
    """The file that defines `var` for this host, as best we can tell (for error messages)."""
    candidates = [base / "host_vars" / host, *(base / "group_vars" / g for g in reversed(groups))]
    candidates.append(base / "group_vars" / "all")
    for cand in candidates:
        for path in vars_files(cand):
            if f"{var}:" in path.read_text(encoding="utf-8", errors="replace"):
                return str(path)
    return str(base)


def _absolute_images(base: Path, spec: NodeSpec) -> NodeSpec:
    """The spec with every local firmware image path made absolute against `base` (URLs stay as given), and
    the `bmc:` section's files too."""
    firmware = tuple(
        fw if "://" in fw.image or Path(fw.image).is_absolute()
        else fw.model_copy(update={"image": str((base / fw.image).resolve())})
        for fw in spec.firmware
    )
    return spec.model_copy(update={"firmware": firmware, "bmc": spec.bmc.resolved(base) if spec.bmc else None})


BMC_SETUP_VAR = "provision_bmc_setup"


def _bmc_setup(base: Path, host: str, groups: tuple[str, ...], hv: dict[str, Any], spec: NodeSpec,
               profile: str) -> NodeSpec:
    """The profile's `bmc:` section, or `provision_bmc_setup` of the host or its groups in its place; its CA
    certificate and key files must exist (one line naming the file that sets them and the key)."""
    raw = hv.get(BMC_SETUP_VAR)
    setup = spec.bmc
    var = f"{PROFILE_PREFIX}{profile}.bmc" if raw is None else BMC_SETUP_VAR
    if raw is not None:
        where = f"{_where(base, host, groups, BMC_SETUP_VAR)}: host {host}"
        setup = _validated(BmcSetup, raw, where, BMC_SETUP_VAR, SpecError).resolved(base)
    cert = setup.certificate if setup is not None else None
    if cert is not None:
        for key, path in (("ca_cert", cert.ca_cert), ("ca_key", cert.ca_key)):
            if path is not None and not path.is_file():
                raise SpecError(f"{_where(base, host, groups, var.split('.')[0])}: host {host}: "
                                f"{var}.certificate.{key}: file {path} does not exist")
    return spec if raw is None else spec.model_copy(update={"bmc": setup})


def _check_images(base: Path, host: str, spec: NodeSpec) -> None:
    for fw in spec.firmware:
        if "://" in fw.image:
            continue
        path = Path(fw.image)
        if not path.is_file():
            raise SpecError(f"{base}: host {host}: firmware.{fw.component}.image: file {path} does not exist")


def _bmc_endpoint(inventory: Path, base: Path, host: str, hv: dict[str, Any],
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


def _installer_access(inventory: Path, base: Path, host: str, hv: dict[str, Any], spec: NodeSpec) -> InstallerAccess:
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


def _ssh_endpoint(host: str, hv: dict[str, Any]) -> SshEndpoint | None:
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


def _refuse_shared_bmcs(inventory: Path, entries: dict[str, HostEntry]) -> None:
    seen: dict[str, str] = {}
    for name, entry in entries.items():
        addr = entry.bmc.address.rstrip("/")
        if addr in seen:
            raise InventoryError(f"{inventory}: hosts {seen[addr]} and {name} share BMC address {addr}")
        seen[addr] = name


def var_file(inventory: Path, var: str) -> str:
    """The YAML file that sets `var` (for messages), or the inventory directory."""
    base = inventory_dir(inventory)
    for path in yaml_files(base):
        if f"{var}:" in path.read_text(encoding="utf-8", errors="replace"):
            return str(path)
    return str(base)


def profile_file(inventory: Path, profile: str) -> str:
    """The YAML file that defines profile `profile` (for messages), or the inventory directory."""
    base = inventory_dir(inventory)
    var = f"{PROFILE_PREFIX}{profile}:"
    for path in yaml_files(base):
        if var in path.read_text(encoding="utf-8", errors="replace"):
            return str(path)
    return str(base)

"""Read an Ansible inventory with Ansible's own loader and build the typed Fleet.

Any inventory Ansible accepts (YAML, INI, dynamic plugins) works; the roles read the
same variables. Every problem becomes one InputError line naming file, host and key.
Reading the inventory is provision/spec/ansible_inventory.py; a host's endpoints, endpoints.py; its lab, rack,
Slurm and identity settings, host_settings.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

from provision.errors import InventoryError, SpecError
from provision.redact import register_secret
from provision.spec.ansible_inventory import (
    PROFILE_PREFIX,
    PROFILE_VAR,
    ansible_host_vars,
    as_model,
    defining_file,
    inventory_dir,
    precheck_yaml,
)
from provision.spec.bmc_setup import BmcSetup
from provision.spec.endpoints import CREDENTIAL_ENV, bmc_endpoint, installer_access, refuse_shared_bmcs, ssh_endpoint
from provision.spec.fleet import Fleet, HostEntry
from provision.spec.host_settings import (
    inventory_racks,
    lab_declaration,
    rack_of,
    recorded_identity,
    refuse_unknown_racks,
    slurm_settings,
)
from provision.spec.model import NodeSpec
from provision.spec.patterns import HostPatterns


def load_fleet(inventory: Path) -> Fleet:
    """Load every host of `inventory` with its spec; raise InputError on any problem.

    The spec comes back resolved: every firmware image path is absolute, relative paths taken from
    the inventory's directory (the directory given with -i, or the one holding the file given), so no
    code below reads the inventory's location again."""
    inventory = Path(inventory)
    if not inventory.exists():
        raise InventoryError(f"{inventory}: inventory path does not exist")
    precheck_yaml(inventory)
    hosts_vars, manager = ansible_host_vars(inventory)
    if not hosts_vars:
        raise InventoryError(f"{inventory}: inventory defines no hosts")
    base = inventory_dir(inventory)
    specs: dict[tuple[str, int], NodeSpec] = {}  # one validation per profile value (hosts_vars keeps them alive)
    entries = {name: _host_entry(inventory, base, name, groups, hv, specs)
               for name, (groups, hv) in hosts_vars.items()}
    refuse_shared_bmcs(inventory, entries)
    racks = inventory_racks(inventory, hosts_vars)
    refuse_unknown_racks(inventory, entries, racks)
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
    precheck_yaml(inventory)
    probe = "provision-discover-defaults"
    hosts_vars, _ = ansible_host_vars(inventory, extra_host=probe)
    groups, hv = hosts_vars[probe]
    base = inventory_dir(inventory)
    profiles = _all_profiles(base, {probe: (groups, hv)})
    user = hv.get("provision_bmc_username") or os.environ.get(CREDENTIAL_ENV[0]) or ""
    password = hv.get("provision_bmc_password") or os.environ.get(CREDENTIAL_ENV[1]) or ""
    register_secret(str(password))
    return SiteDefaults(profiles=profiles, username=str(user), password=SecretStr(str(password)))


def _all_profiles(
    base: Path, hosts_vars: dict[str, tuple[tuple[str, ...], dict[str, Any]]]
) -> dict[str, NodeSpec]:
    """Every profile the inventory defines, used by a host or not, validated once."""
    name, (groups, hv) = next(iter(hosts_vars.items()))
    profiles: dict[str, NodeSpec] = {}
    for var, raw in hv.items():
        if var.startswith(PROFILE_PREFIX):
            profile = var.removeprefix(PROFILE_PREFIX)
            where = defining_file(base, name, groups, var)
            profiles[profile] = _absolute_images(base, _build_spec(where, name, profile, raw))
    return profiles


def _host_entry(
    inventory: Path, base: Path, name: str, groups: tuple[str, ...], hv: dict[str, Any],
    specs: dict[tuple[str, int], NodeSpec] | None = None,
) -> HostEntry:
    """`specs`: the profiles already validated, by name and the identity of the value Ansible gave (hosts
    whose profile comes from one group file share it): a 1,000-host fleet validates each profile once."""
    profile = hv.get(PROFILE_VAR)
    if not profile:
        raise SpecError(f"{inventory}: host {name}: {PROFILE_VAR} is not set (which node class is it?)")
    raw = hv.get(PROFILE_PREFIX + str(profile))
    if raw is None:
        known = sorted(k.removeprefix(PROFILE_PREFIX) for k in hv if k.startswith(PROFILE_PREFIX))
        raise SpecError(f"{inventory}: host {name}: {PROFILE_VAR}: unknown profile {profile!r}; known: {known}")
    key = (str(profile), id(raw))
    spec = None if specs is None else specs.get(key)
    if spec is None:
        var = PROFILE_PREFIX + str(profile)
        spec = _absolute_images(base, _build_spec(lambda: defining_file(base, name, groups, var), name,
                                                  str(profile), raw))
        _check_images(base, name, spec)
        if specs is not None:
            specs[key] = spec
    spec = _bmc_setup(base, name, groups, hv, spec, str(profile))
    return HostEntry(
        name=name,
        profile=str(profile),
        groups=groups,
        spec=spec,
        bmc=bmc_endpoint(inventory, base, name, hv, spec.bmc),
        ssh=ssh_endpoint(name, hv),
        installer=installer_access(inventory, base, name, hv, spec),
        lab=lab_declaration(inventory, name, hv),
        slurm=slurm_settings(inventory, name, hv),
        rack=rack_of(inventory, name, hv),
        identity=recorded_identity(inventory, name, hv),
    )


def _build_spec(where: str | Callable[[], str], host: str, profile: str, raw: Any) -> NodeSpec:
    return as_model(NodeSpec, raw, lambda: f"{where if isinstance(where, str) else where()}: host {host}",
                    PROFILE_PREFIX + profile, SpecError)


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
        where = f"{defining_file(base, host, groups, BMC_SETUP_VAR)}: host {host}"
        setup = as_model(BmcSetup, raw, where, BMC_SETUP_VAR, SpecError).resolved(base)
    cert = setup.certificate if setup is not None else None
    if cert is not None:
        for key, path in (("ca_cert", cert.ca_cert), ("ca_key", cert.ca_key)):
            if path is not None and not path.is_file():
                raise SpecError(f"{defining_file(base, host, groups, var.split('.')[0])}: host {host}: "
                                f"{var}.certificate.{key}: file {path} does not exist")
    return spec if raw is None else spec.model_copy(update={"bmc": setup})


def _check_images(base: Path, host: str, spec: NodeSpec) -> None:
    for fw in spec.firmware:
        if "://" in fw.image:
            continue
        path = Path(fw.image)
        if not path.is_file():
            raise SpecError(f"{base}: host {host}: firmware.{fw.component}.image: file {path} does not exist")



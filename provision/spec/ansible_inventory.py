"""An inventory's hosts and variables as Ansible's own loader reads them (any inventory Ansible accepts:
YAML, INI, dynamic plugins), each raw variable as a typed model, and the file that sets a variable (for messages)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from provision.errors import InputError, InventoryError
from provision.spec.patterns import ansible_env
from provision.spec.strict_yaml import load_strict, vars_files, yaml_files
from provision.spec.validation import describe

PROFILE_VAR = "provision_profile"
PROFILE_PREFIX = "provision_profile_"


def inventory_dir(inventory: Path) -> Path:
    """The directory relative paths of an inventory are taken from: one rule for a file or a directory."""
    inventory = Path(inventory)
    return (inventory if inventory.is_dir() else inventory.parent).resolve()


def precheck_yaml(inventory: Path) -> None:
    """Strictly parse the inventory's YAML and the vars directories beside it."""
    base = inventory if inventory.is_dir() else inventory.parent
    paths = yaml_files(inventory) if inventory.is_file() else []
    for sub in ([inventory] if inventory.is_dir() else [base / "group_vars", base / "host_vars"]):
        if sub.exists():
            paths += yaml_files(sub)
    for path in paths:
        load_strict(path)


def ansible_host_vars(inventory: Path, extra_host: str | None = None
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


_Model = TypeVar("_Model", bound=BaseModel)


def as_model(model: type[_Model], raw: Any, where: str | Callable[[], str], key: str, error: type[InputError],
               keys_hint: str = "") -> _Model:
    """`raw`, the mapping under `key`, as `model`; else one `error` line `WHERE: KEY...: what is wrong` (`where`
    may be worked out only then: finding the file that sets a variable reads files)."""
    if not isinstance(raw, dict):
        raise error(f"{where if isinstance(where, str) else where()}: {key}: must be a mapping{keys_hint}")
    try:
        return model.model_validate(plain_data(raw))
    except ValidationError as exc:
        raise error(f"{where if isinstance(where, str) else where()}: {describe(exc, key)}") from None


def plain_data(value: Any) -> Any:
    """Ansible's tagged containers and strings become plain Python data (JSON-able)."""
    if isinstance(value, dict):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    if isinstance(value, bool | int | float) or value is None:
        return value
    return str(value)


def defining_file(base: Path, host: str, groups: tuple[str, ...], var: str) -> str:
    """The file that defines `var` for this host, as best we can tell (for error messages)."""
    candidates = [base / "host_vars" / host, *(base / "group_vars" / g for g in reversed(groups))]
    candidates.append(base / "group_vars" / "all")
    for cand in candidates:
        for path in vars_files(cand):
            if f"{var}:" in path.read_text(encoding="utf-8", errors="replace"):
                return str(path)
    return str(base)


def var_file(inventory: Path, var: str) -> str:
    """The YAML file that sets `var` (for messages), or the inventory directory."""
    base = inventory_dir(inventory)
    for path in yaml_files(base):
        if f"{var}:" in path.read_text(encoding="utf-8", errors="replace"):
            return str(path)
    return str(base)


def profile_file(inventory: Path, profile: str) -> str:
    """The YAML file that defines profile `profile` (for messages), or the inventory directory."""
    return var_file(inventory, f"{PROFILE_PREFIX}{profile}")

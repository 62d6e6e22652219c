"""The digest of everything a site.yml run on one host reads: if it is unchanged, so is what the run applies.

Inputs: the project's Ansible content (every file under roles/ and playbooks/, and ansible.cfg, by path,
mode and content), the host's effective inventory variables as the run sees them (templated by Ansible
itself, so a lookup's value is in the digest, not its text), this host's group names, the ANSIBLE_*
environment, and the provision and ansible-core versions. Left out on purpose: where files live
(inventory_dir, playbook_dir, ...), and the membership of every other group (`groups`): the roles read
neither, nor `hostvars` (a unit test keeps that true: tests/unit/bringup/test_configure_digest.py).

Only the digest is kept (sha256 over the canonical JSON), never the values: variables can hold secrets.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from provision import __version__
from provision.errors import InventoryError
from provision.spec.ansible_inventory import plain_data

# Magic variables that say where things are (or are empty/unknown outside a play), not what is applied.
LOCATION_VARS = frozenset({
    "ansible_config_file", "ansible_playbook_python", "ansible_facts", "ansible_version", "groups",
    "inventory_dir", "inventory_file", "playbook_dir", "omit",
})
_SKIP_PARTS = frozenset({"__pycache__", ".git"})
_ansible_lock = threading.Lock()  # Ansible's loaders keep global state: one thread in them at a time


def content_digest(root: Path) -> str:
    """sha256 over roles/, playbooks/ and ansible.cfg of the project at `root` (path, exec bit, bytes)."""
    digest = hashlib.sha256()
    for path in _content_files(root):
        rel = path.relative_to(root).as_posix()
        executable = os.access(path, os.X_OK)
        digest.update(f"{rel}\0{int(executable)}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _content_files(root: Path) -> Iterable[Path]:
    for top in ("roles", "playbooks"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and not _SKIP_PARTS.intersection(path.parts) and path.suffix != ".pyc":
                yield path
    if (root / "ansible.cfg").is_file():
        yield root / "ansible.cfg"


class HostVariables:
    """Every host's effective variables of one inventory, read once (Ansible's own loader) and kept."""

    def __init__(self, inventory: Path) -> None:
        self.inventory = inventory
        self._manager: Any = None
        self._cache: dict[str, dict[str, Any]] = {}

    def of(self, host: str) -> dict[str, Any]:
        """The host's variables, templated, as plain data; InventoryError naming the host when they cannot be."""
        with _ansible_lock:
            if host not in self._cache:
                self._cache[host] = self._read(host)
            return self._cache[host]

    def _read(self, host: str) -> dict[str, Any]:
        from ansible.errors import AnsibleError

        try:
            inv, vm, loader = self._loaded()
            entry = inv.get_host(host)
            if entry is None:
                raise InventoryError(f"{self.inventory}: host {host} is not in the inventory")
            from ansible.template import Templar

            hv = vm.get_vars(host=entry, include_hostvars=False)
            templar = Templar(loader=loader, variables=hv)
            return {k: plain_data(templar.template(v)) for k, v in hv.items() if k not in LOCATION_VARS}
        except AnsibleError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise InventoryError(f"{self.inventory}: host {host}: variables cannot be templated: {first}") from None

    def _loaded(self) -> tuple[Any, Any, Any]:
        if self._manager is None:
            from ansible.inventory.manager import InventoryManager
            from ansible.parsing.dataloader import DataLoader
            from ansible.plugins.loader import init_plugin_loader
            from ansible.vars.manager import VariableManager

            with warnings.catch_warnings():  # "already configured" when a loader of this process did it
                warnings.simplefilter("ignore", UserWarning)
                init_plugin_loader()  # lookups (e.g. ansible.builtin.vars in group_vars/all/main.yml) need it
            loader = DataLoader()
            inv = InventoryManager(loader=loader, sources=[str(self.inventory)])
            self._manager = (inv, VariableManager(loader=loader, inventory=inv), loader)
        manager: tuple[Any, Any, Any] = self._manager
        return manager


def inputs_digest(variables: dict[str, Any], content: str, environ: dict[str, str] | None = None) -> str:
    """The digest of one host's site.yml inputs (pure): its variables, the content digest, the versions."""
    import ansible

    env = os.environ if environ is None else environ
    blob = {
        "provision": __version__,
        "ansible-core": ansible.__version__,
        "content": content,
        "variables": variables,
        "environment": {k: v for k, v in env.items() if k.startswith("ANSIBLE_")},
    }
    text = json.dumps(blob, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()

"""The journal an inventory names: `provision_journal_url` in group_vars/all (or the inventory file's
`all: vars:`), so every controller of a site opens the same PostgreSQL journal without an environment variable.

Read without Ansible's loader (a read-only command must not template a whole fleet to find its journal): the
value is one literal URL. A vault-encrypted or templated value is refused, and so is a password in the URL:
an inventory is a file others read and commit; the password goes where the environment path takes it from
(PROVISION_JOURNAL_PASSWORD_FILE, PGPASSFILE or ~/.pgpass; provision.journal.location).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InventoryError
from provision.redact import redact_url
from provision.spec.strict_yaml import load_strict, vars_files, yaml_files

VAR = "provision_journal_url"


class InventoryUrl(BaseModel):
    """A journal URL and the file and key that set it (what messages name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(repr=False)
    where: str


def _candidates(inventory: Path) -> list[tuple[Path, bool]]:
    """The files that may set a variable of group `all`, in Ansible's order (later ones win), each with whether
    it is an inventory file (its `all: vars:`) rather than a vars file."""
    base = inventory if inventory.is_dir() else inventory.parent
    sources = sorted(p for p in base.glob("*") if p.is_file() and p.suffix in {".yml", ".yaml"}) \
        if inventory.is_dir() else yaml_files(inventory)
    return [(p, True) for p in sources] + [(p, False) for p in vars_files(base / "group_vars" / "all")]


def _value(path: Path, data: Any, inventory_file: bool) -> object:
    if not isinstance(data, dict):
        return None
    if inventory_file:  # hosts.yml: all: {vars: {...}}
        group = data.get("all")
        data = group.get("vars") if isinstance(group, dict) else None
        if not isinstance(data, dict):
            return None
    return data.get(VAR)


def journal_url(inventory: Path) -> InventoryUrl | None:
    """The inventory's `provision_journal_url`, checked (a literal postgresql:// URL without a password), or None
    when it sets none (or the inventory does not exist: a command that needs it says so itself)."""
    inventory = Path(inventory)
    if not inventory.exists():
        return None
    found: InventoryUrl | None = None
    for path, inventory_file in _candidates(inventory):
        value = _value(path, load_strict(path, allow_empty=True), inventory_file)
        if value is None:
            continue
        found = InventoryUrl(url=_checked(path, value), where=f"{path}: {VAR}")
    return found


def _checked(path: Path, value: object) -> str:
    where = f"{path}: {VAR}"
    if not isinstance(value, str) or not value.strip():
        raise InventoryError(f"{where}: expected a postgresql://user@host/database URL")
    text = value.strip()
    if text.startswith("$ANSIBLE_VAULT") or "{{" in text or "{%" in text:
        raise InventoryError(f"{where}: must be a literal URL (not vaulted, not templated); keep the password "
                             "out of it: PROVISION_JOURNAL_PASSWORD_FILE, PGPASSFILE or ~/.pgpass")
    parts = urlsplit(text)
    if parts.password or any(kv.lower().startswith("password=") for kv in parts.query.split("&")):
        raise InventoryError(f"{where}={redact_url(text)}: a password in the inventory is refused (a file others "
                             "read); give it in PROVISION_JOURNAL_PASSWORD_FILE, PGPASSFILE or ~/.pgpass")
    return text

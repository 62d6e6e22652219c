"""Host names of an inventory, read with Ansible's own loader (no spec or BMC checks)."""

from __future__ import annotations

import os
from pathlib import Path

from provision.errors import InventoryError


def inventory_hosts(inventory: Path) -> list[str]:
    """Every host name the inventory defines; InventoryError when it cannot be read."""
    if not inventory.exists():
        raise InventoryError(f"{inventory}: inventory path does not exist")
    os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "False")
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    try:
        manager = InventoryManager(loader=DataLoader(), sources=[str(inventory)])
        return sorted(host.name for host in manager.get_hosts())
    except AnsibleError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise InventoryError(f"{inventory}: {first}") from None


def check_nodes(inventory: Path, nodes: list[str]) -> None:
    """Refuse node names the inventory does not define (one line naming them)."""
    known = inventory_hosts(inventory)
    unknown = [n for n in nodes if n not in known]
    if unknown:
        shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
        raise InventoryError(f"{inventory}: unknown node(s) {', '.join(unknown)}; known: {shown or 'none'}")

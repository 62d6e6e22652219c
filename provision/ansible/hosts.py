"""Host names of an inventory, read with Ansible's own loader (no spec or BMC checks)."""

from __future__ import annotations

from pathlib import Path

from provision.spec.patterns import HostPatterns


def inventory_hosts(inventory: Path) -> list[str]:
    """Every host name the inventory defines; InventoryError when it cannot be read."""
    return sorted(HostPatterns.from_inventory(inventory).names)


def select_nodes(inventory: Path, patterns: list[str], limit: str | None = None) -> list[str]:
    """The host names the patterns select, narrowed by --limit; InputError naming a pattern that matches none."""
    return HostPatterns.from_inventory(inventory).select(patterns, limit)

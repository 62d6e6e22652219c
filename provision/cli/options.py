"""Options shared by every command group."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from provision.spec import HostEntry, load_fleet

DEFAULT_INVENTORY = Path(os.environ.get("PROVISION_INVENTORY", "inventory/hosts.yml"))

InventoryOpt = Annotated[
    Path,
    typer.Option(
        "--inventory",
        "-i",
        help="Ansible inventory (file, directory or plugin config). Env: PROVISION_INVENTORY.",
        envvar="PROVISION_INVENTORY",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (same as --output json).")]
InsecureOpt = Annotated[
    bool, typer.Option("--insecure", help="Do NOT verify BMC TLS certificates (prints a warning).")
]


def load_host(inventory: Path, name: str) -> HostEntry:
    """The inventory loaded once, here at the CLI, and one host of it (the code below never reloads it)."""
    return load_fleet(inventory).select([name])[0]

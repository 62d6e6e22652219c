"""What an operator chooses for a bring-up run."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from provision.conformance.model import Level
from provision.netboot.service import default_dir


class BringupOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    inventory: Path
    insecure: bool = False
    allow_downgrade: bool = False
    image_bind: str = "127.0.0.1"
    image_advertise: str | None = None
    poll_s: float = 1.0
    os_image: str | None = None  # virtual-media URL of an installer; None: the OS must already answer SSH
    ssh_wait_s: float = 300.0
    install_timeout_s: float = 3600.0  # os: from power-on until the installer powers the host off
    seed_fetch_wait_s: float = 60.0  # os: how long to wait for the BMC to download the seed (not an error)
    netboot_dir: Path = Field(default_factory=default_dir)  # os, network installs: provision netboot's files
    first_boot_timeout_s: float = 900.0  # os: from the boot from the disks until SSH answers with the seeded key
    verify_level: Level = Level.FULL
    strategy: Literal["linear", "mitogen"] = "linear"
    forks: int = 8
    recheck: bool = False  # configure: run check mode even when the journal and a node probe say converged

"""What an operator chooses for a clean."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provision.bringup.options import BringupOptions
from provision.clean.model import CleanLevel


class CleanOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    bringup: BringupOptions
    """The BMC session and the BIOS and reset stages, as bring-up runs them."""
    level: CleanLevel = CleanLevel.SANITIZE
    include_boot: bool = False
    erase_timeout_s: float = 4 * 3600.0
    """How long one drive's sanitize may run (a block erase of a large drive takes tens of minutes)."""
    ssh_timeout_s: float = 120.0
    by: str = ""
    """Who runs the clean (user@host), journaled with it."""

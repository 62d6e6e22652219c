"""What the journal says is staged on a BMC and waits for the next host reset.

A firmware image staged for OnReset does not change FirmwareInventory until the host resets, so
the BMC alone cannot tell "not sent" from "sent, waiting". The journal can: every send is recorded
(intent first), and a host reset closes the window. An interrupted send (intent, no outcome) counts
as staged: it is never sent twice; if it did not take, the check after the reset finds it.
"""

from __future__ import annotations

from provision.journal import ActionRecord, Journal

STAGE_KIND = "stage-firmware"
FLASH_KIND = "flash"
RESET_KIND = "host-reset"


def staged_since_reset(journal: Journal | None, node: str) -> set[str]:
    """Targets ("component version") staged since the node's last completed host reset."""
    if journal is None:
        return set()
    staged: set[str] = set()
    for action in journal.actions(node):
        if action.action == RESET_KIND and action.outcome == "ok":
            staged.clear()
        elif action.action == STAGE_KIND and action.outcome in ("ok", None):
            staged.add(action.target)
    return staged


def open_flashes(journal: Journal | None, node: str) -> list[ActionRecord]:
    """Immediate flashes that were started and never finished (the process died meanwhile)."""
    if journal is None:
        return []
    return [a for a in journal.open_actions(node) if a.action == FLASH_KIND]

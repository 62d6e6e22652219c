"""Node twins: systemd-nspawn containers with real systemd and sshd that present a spec'd GPU server.

Only the hardware is simulated (by the personality, provision.lab.twins.personality). Public API:

    up(lab_dir, nodes, spec_for) -> list[TwinInfo]   start twins (cached Debian rootfs, netns, sshd)
    down(lab_dir)                                     stop all and remove everything; idempotent
    status(lab_dir) -> list[TwinInfo]
    power(lab_dir, node, on)                          off: clean shutdown; on: boot
    fault(lab_dir, node, kind, clear)                 hardware faults, delegated to the personality
"""

from __future__ import annotations

from typing import Any

from provision.lab.twins.hooks import fault_kinds as _fault_kinds
from provision.lab.twins.lifecycle import down, fault, power, status, up
from provision.lab.twins.models import TwinInfo, TwinRequest

FAULT_KINDS: frozenset[str]  # the personality's fault kinds, read when first asked for


def __getattr__(name: str) -> Any:
    if name == "FAULT_KINDS":
        return _fault_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["FAULT_KINDS", "TwinInfo", "TwinRequest", "down", "fault", "power", "status", "up"]

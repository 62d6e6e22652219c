"""Faults injected into one BMC, live; every change is written to the SEL and the simulator log."""

from __future__ import annotations

from collections.abc import Callable

from provision.lab.bmcsim.sel import Sel

# kind -> (default value, what it does)
FAULTS: dict[str, tuple[float, str]] = {
    "latency": (500.0, "every request waits VALUE ms before it is answered"),
    "unavailable": (5.0, "every request gets 503 with Retry-After: VALUE seconds"),
    "drop": (0.0, "every connection is closed without an answer"),
    "session-expiry": (0.0, "every session expires now (one-shot; 401 on the next use)"),
    "answer-lost": (1.0, "the next VALUE POSTs that start a task (202) are carried out, then their connection "
                         "is closed without an answer"),
    "task-stall": (50.0, "new tasks stop at VALUE percent until cleared"),
    "task-fail": (50.0, "new tasks end in Exception at VALUE percent"),
    "update-noop": (0.0, "updates report success but leave the version unchanged"),
    "bmc-reset-mid-update": (0.0, "the BMC reboots halfway through an update; the update fails"),
    "bios-stuck-pending": (0.0, "pending BIOS settings stay pending after a host reset"),
    "csr-never-completes": (0.0, "GenerateCSR answers 202 with a Task that stays Running (no CSR, no key)"),
    "password-change-500-after-effect": (1.0, "the next VALUE PATCHes of an account's Password take effect, "
                                              "then answer 500 InternalError"),
    # hardware (provision/lab/bmcsim/hardware.py): what the BMC reports, restored when cleared
    "inlet-hot": (45.0, "every chassis inlet sensor reads VALUE C"),
    "psu-lost": (0.0, "the last PSU goes UnavailableOffline/Critical (the Redundancy group left as it was)"),
    "fan-failed": (0.0, "the first fan goes Critical, reading 0"),
    "dimm-missing": (0.0, "the last populated DIMM of the first system is Absent, 0 MiB"),
}
BMC_FAULT_KINDS = frozenset(FAULTS)
ONE_SHOT = frozenset({"session-expiry"})


class Faults:
    """Active faults of one BMC: kind -> value."""

    __slots__ = ("_active", "_listeners", "_sel")

    def __init__(self, sel: Sel) -> None:
        self._sel = sel
        self._active: dict[str, float] = {}
        self._listeners: dict[str, Callable[[bool], None]] = {}

    def on_change(self, kind: str, listener: Callable[[bool], None]) -> None:
        self._listeners[kind] = listener

    def set(self, kind: str, value: float | None = None) -> None:
        if kind not in FAULTS:
            raise KeyError(kind)
        val = FAULTS[kind][0] if value is None else value
        self._sel.add(f"Fault injected: {kind} ({val:g})", severity="Warning", fault=kind, value=val)
        if kind not in ONE_SHOT:
            self._active[kind] = val
        if kind in self._listeners:
            self._listeners[kind](True)

    def clear(self, kind: str) -> None:
        if kind not in FAULTS:
            raise KeyError(kind)
        was = self._active.pop(kind, None)
        self._sel.add(f"Fault cleared: {kind}", fault=kind, cleared=True, was_active=was is not None)
        if kind in self._listeners:
            self._listeners[kind](False)

    def take(self, kind: str) -> bool:
        """One use of a counted fault (VALUE uses): True while any is left; cleared after the last."""
        left = self._active.get(kind)
        if left is None:
            return False
        if left <= 1:
            self.clear(kind)
        else:
            self._active[kind] = left - 1
        return True

    def get(self, kind: str) -> float | None:
        return self._active.get(kind)

    def active(self) -> dict[str, float]:
        return dict(self._active)

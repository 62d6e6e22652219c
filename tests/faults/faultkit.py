"""Helpers of the fault-matrix suite: inject lab faults on a schedule, run one bring-up stage in-process,
read a node's end state straight from its simulated BMC, check the journal, write docs/fault-matrix.md.

A cell = one fault kind x one stage (or a campaign wave). Its outcome is one of:
  recovered      the stage (or the node's campaign) reached its target despite the fault
  failed cleanly the stage failed with a one-line typed error naming the reason, nothing open in the journal
  BUG: ...       anything else (an exception escaping, a hang, a secret or traceback in the error)
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from provision.bringup.engine import run_bringup, select_stages
from provision.bringup.model import Outcome
from provision.bringup.options import BringupOptions
from provision.bringup.stages import default_stages
from provision.journal import Journal
from provision.lab import manager
from provision.lab.state import LabState
from provision.redfish.ops.waiting import Clock
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "fault-matrix.md"
FW_IDS = {"bmc": "BMC", "bios": "BIOS", "gpu": "HGX_FW_GPU_SXM_1", "nvswitch": "HGX_FW_NVSwitch_1"}
RECOVERED, FAILED_CLEANLY = "recovered", "failed cleanly"
EITHER = "recovered or failed cleanly"  # a cell whose outcome a race decides; the run's own is in its reason


# --- the simulator's event log ------------------------------------------------------------
class Events:
    """Tail of the simulator's JSON-lines log (bmcsim.log), from the moment it is made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def new(self) -> list[dict[str, Any]]:
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    def wait(self, node: str, event: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("node") == node and e.get("event") == event for e in self.new()):
                return True
            time.sleep(0.02)
        return False


@dataclass(frozen=True)
class Fault:
    """A lab fault and when it acts: before the run (default) or when the node logs `on` (e.g. task.start);
    cleared `clear_after` seconds after it was set (None: stays until the cell ends)."""

    kind: str
    value: float | None = None
    on: str | None = None
    clear_after: float | None = None

    def describe(self) -> str:
        val = f" {self.value:g}" if self.value is not None else ""
        when = f" at {self.on}" if self.on else ""
        how = f", cleared after {self.clear_after:g} s" if self.clear_after is not None else \
            ("" if self.kind == "session-expiry" else ", persistent")
        return f"{self.kind}{val}{when}{how}"


@contextmanager
def injected(lab_dir: Path, node: str, fault: Fault | None) -> Iterator[None]:
    """Set the fault now or on its trigger (in a thread), clear it on schedule and always at the end."""
    if fault is None:
        yield
        return
    stop = threading.Event()
    events = Events(lab_dir / manager.SIM_LOG)
    if fault.on is None:
        manager.fault(lab_dir, node, fault.kind, False, fault.value)

    def act() -> None:
        if fault.on is not None:
            while not events.wait(node, fault.on, 0.5):
                if stop.is_set():
                    return
            manager.fault(lab_dir, node, fault.kind, False, fault.value)
        if fault.clear_after is not None and not stop.wait(fault.clear_after):
            manager.fault(lab_dir, node, fault.kind, True, None)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
        if fault.kind != "session-expiry":
            manager.fault(lab_dir, node, fault.kind, True, None)


# --- a lab's nodes, their BMCs and the journal --------------------------------------------
@dataclass
class FaultLab:
    state: LabState
    workdir: Path
    _free: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._free = [n.name for n in self.state.nodes]

    @property
    def lab_dir(self) -> Path:
        return self.state.lab_dir

    @property
    def inventory(self) -> Path:
        return self.state.inventory

    @property
    def journal_path(self) -> Path:
        return self.workdir / "journal.db"

    def take(self) -> str:
        """A node nobody used yet (each cell starts from the lab's initial, deliberately wrong, state)."""
        return self._free.pop(0)

    def host_vars(self, node: str) -> dict[str, Any]:
        return dict(yaml.safe_load((self.inventory.parent / "host_vars" / f"{node}.yml").read_text()))

    def secrets(self) -> list[str]:
        return [str(self.host_vars(n.name)["provision_bmc_password"]) for n in self.state.nodes]

    def _get(self, node: str, uri: str) -> dict[str, Any]:
        hv = self.host_vars(node)
        resp = requests.get(f"{hv['provision_bmc_address']}{uri}",
                            auth=(hv["provision_bmc_username"], hv["provision_bmc_password"]),
                            verify=hv["provision_bmc_ca_file"], timeout=30)
        resp.raise_for_status()
        return dict(resp.json())

    def firmware(self, node: str) -> dict[str, str]:
        """Running versions, read straight from the simulated BMC (not through the code under test)."""
        inv = "/redfish/v1/UpdateService/FirmwareInventory/"
        return {comp: str(self._get(node, inv + ident).get("Version")) for comp, ident in FW_IDS.items()}

    def pending_bios(self, node: str) -> list[str]:
        current = self._get(node, "/redfish/v1/Systems/1/Bios").get("Attributes") or {}
        staged = self._get(node, "/redfish/v1/Systems/1/Bios/SD").get("Attributes") or {}
        return sorted(k for k, v in staged.items() if current.get(k) != v)

    def end_state(self, node: str) -> str:
        fw = self.firmware(node)
        pending = self.pending_bios(node)
        return (f"fw bmc {fw['bmc']}, bios {fw['bios']}, gpu {fw['gpu']}; "
                f"pending BIOS: {len(pending) or 'none'}")


@dataclass
class JournalCheck:
    stages: int
    actions: int
    open_stages: int
    open_actions: int
    summary: str

    @property
    def whole(self) -> bool:
        return self.open_stages == 0 and self.open_actions == 0


def journal_check(path: Path, node: str) -> JournalCheck:
    """Every stage started has ended with an outcome; every action started has an outcome."""
    with Journal(path) as jr:
        stages = jr.stages(node)
        actions = jr.actions(node)
    open_stages = [s for s in stages if s.ended_at is None or s.outcome is None]
    open_actions = [a for a in actions if a.open]
    outcomes: dict[str, int] = {}
    for a in actions:
        key = f"{a.action}:{a.outcome or 'OPEN'}"
        outcomes[key] = outcomes.get(key, 0) + 1
    shown = ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())) or "no actions"
    return JournalCheck(len(stages), len(actions), len(open_stages), len(open_actions),
                        f"{len(stages)} stage rows, {shown}; open: {len(open_stages) + len(open_actions)}")


# --- running one stage ----------------------------------------------------------------------
@dataclass
class StageRun:
    outcome: str  # converged/applied/failed, or "escaped"/"hang"
    error: str
    seconds: float


def lab_clock(speed: float, poll_s: float = 0.2) -> Clock:
    """Deadlines counted in simulated seconds: the lab's clock runs `speed` times faster than the wall."""
    return Clock(poll_s=poll_s, now=lambda: time.monotonic() * speed)


def run_stages(lab: FaultLab, node: str, names: list[str], speed: float, *, ssh_wait_s: float = 60.0,
               timeout: float = 900.0, inventory: Path | None = None) -> StageRun:
    """Run the named bring-up stages for one node in-process (journaled); never raises."""
    inv = inventory or lab.inventory
    opts = BringupOptions(inventory=inv, poll_s=0.2, ssh_wait_s=ssh_wait_s)
    stages = [s for s in select_stages(default_stages(opts)) if s.name in names]
    for stage in stages:
        if hasattr(stage, "clock"):
            stage.clock = lab_clock(speed)
    hosts = load_fleet(inv).select([node])
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            with Journal(lab.journal_path) as jr:
                box["result"] = run_bringup(hosts, stages, journal=jr, concurrency=1)
        except BaseException as exc:  # recorded as a BUG cell, never swallowed silently
            box["escaped"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(timeout)
    seconds = round(time.monotonic() - started, 1)
    if thread.is_alive():
        return StageRun("hang", f"no result after {timeout:.0f} s", seconds)
    if "escaped" in box:
        exc = box["escaped"]
        return StageRun("escaped", f"{type(exc).__name__}: {exc}", seconds)
    stage_results = box["result"].nodes[0].stages
    failed = next((s for s in stage_results if s.outcome is Outcome.FAILED), None)
    if failed is not None:
        return StageRun("failed", f"{failed.stage}: {failed.error}", seconds)
    return StageRun("applied" if any(s.outcome is Outcome.APPLIED for s in stage_results) else "converged", "",
                    seconds)


def classify(run: StageRun, secrets: list[str]) -> str:
    """recovered / failed cleanly / BUG: why."""
    if run.outcome in ("hang", "escaped"):
        return f"BUG: {run.outcome} ({run.error[:120]})"
    if run.outcome == "failed":
        if any(s and s in run.error for s in secrets):
            return "BUG: a secret in the error text"
        if "\n" in run.error.strip() or "Traceback" in run.error or not run.error.strip():
            return "BUG: error is not one clear line"
        return FAILED_CLEANLY
    return RECOVERED


# --- the matrix document --------------------------------------------------------------------
@dataclass
class Row:
    fault: str
    stage: str
    outcome: str
    reason: str
    end_state: str
    journal: str
    rerun: str = ""
    expected: str = ""
    note: str = ""

    def cells(self) -> list[str]:
        shown = self.outcome if not self.note else f"{self.outcome} ({self.note})"
        return [self.fault, self.stage, shown, self.reason, self.end_state, self.journal, self.rerun or "-"]


HEADER = ("| fault | stage | outcome | reason (error text, abridged) | node end state | journal | "
          "after clearing the fault |\n|---|---|---|---|---|---|---|\n")


def stable(text: str) -> str:
    """What differs from run to run taken out of a cell: the ports the lab picked."""
    return re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:PORT", text)


def _md(text: str) -> str:
    return re.sub(r"\s+", " ", stable(text).replace("|", "\\|")).strip()


def write_section(name: str, title: str, intro: str, rows: list[Row]) -> None:
    """Replace (or add) the section `name` of docs/fault-matrix.md with these rows."""
    body = "".join("| " + " | ".join(_md(c) for c in r.cells()) + " |\n" for r in rows)
    recovered = sum(r.outcome == RECOVERED for r in rows)
    clean = sum(r.outcome == FAILED_CLEANLY for r in rows)
    either = sum(r.outcome == EITHER for r in rows)
    other = len(rows) - recovered - clean - either
    timed = f"{either} either (timing), " if either else ""
    block = (f"<!-- begin {name} -->\n## {title}\n\n{intro}\n\n{len(rows)} cells: {recovered} recovered, "
             f"{clean} failed cleanly, {timed}{other} other.\n\n{HEADER}{body}<!-- end {name} -->\n")
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text() if DOC.exists() else (
        "# Fault matrix\n\nGenerated by the fault-matrix suite (`pytest tests/faults -m lab`); do not edit by "
        "hand. Every fault kind of the lab against every stage where it applies: the outcome (recovered, or "
        "failed cleanly with the reason), the node's end state read straight from its simulated BMC, and the "
        "journal's rows for the node (every started stage and action has an outcome; `open` counts those "
        "without one).\n\n")
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->.*?<!-- end {re.escape(name)} -->\n", re.S)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    DOC.write_text(text)


def one_line(text: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


Check = Callable[[FaultLab, str], str | None]

"""In-memory stand-ins for the Redfish side: BMCs with firmware versions, tasks that outlive the caller."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from provision.campaign.catalog import Catalog, Component
from provision.campaign.updater import FirmwareState, GateResult, Guard, Target, UpdateFailed, unguarded
from provision.errors import RedfishError
from provision.spec.platforms import PlatformIdentity

SHA = "0" * 64
ROOT = Path(__file__).resolve().parents[3]


def halted_journal(path: Path, waves: list[list[str]], n2_detail: str, wave0_done: bool = False) -> Path:
    """A journal at `path` holding campaign c1 halted in wave 0: n1 updated (bmc 1.0 -> 2.0, flashed), n2
    failed with `n2_detail`, the rest pending; wave 0 active (then done, with `wave0_done`)."""
    from provision.journal import Journal
    from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState

    with Journal(path) as j:
        store = CampaignStore(j)
        store.create("c1", str(ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"), SHA, waves)
        store.node_started("c1", "n1", {"bmc": "1.0"})
        store.node_flashing("c1", "n1", ["bmc"])
        store.node_finished("c1", "n1", NodeState.DONE, {"bmc": "2.0"})
        store.node_started("c1", "n2", {"bmc": "1.0"})
        store.node_finished("c1", "n2", NodeState.FAILED, {"bmc": "1.0"}, n2_detail)
        store.wave_state("c1", 0, WaveState.ACTIVE)
        if wave0_done:
            store.wave_state("c1", 0, WaveState.DONE, "ok")
        store.set_state("c1", CampaignState.HALTED, "1 node(s) failed (max_failures 0); last: n2")
    return path


def catalog(policy: dict | None = None, components: list[dict] | None = None) -> Catalog:
    comps = components or [
        {"component": "bmc", "version": "2.0", "image": "bmc.bin", "sha256": SHA, "order": 10,
         "needs_host_reset": False, "apply_time": "Immediate"},
        {"component": "bios", "version": "3.0", "image": "bios.bin", "sha256": SHA, "order": 20},
    ]
    comps = [{"applies_to": "any", **c} for c in comps]  # a test that means a platform says so
    return Catalog.model_validate({"name": "test", "components": comps, "policy": policy or {}})


class FakeBmcs:
    """Every node's firmware; updates take `flash_s`; faults per node: 'fail', 'noop', 'unreadable'."""

    def __init__(self, nodes: Sequence[str], versions: dict[str, str], flash_s: float = 0.0) -> None:
        self.versions = {n: dict(versions) for n in nodes}
        self.faults: dict[str, str] = {}
        self.flash_s = flash_s
        self.flashes: Counter[tuple[str, str]] = Counter()
        self.resets: Counter[str] = Counter()
        self.order: list[str] = []
        self.busy_until: dict[str, float] = {}
        self.staged: dict[str, dict[str, str]] = {}
        self.incomparable: dict[str, dict[str, str]] = {}  # node -> component -> why its version is not ordered
        self.prepared: list[str] = []
        self.prepared_after: list[int | None] = []  # each prepare's after_turns
        self.sessions: list[tuple[str, bool]] = []  # (node, afresh) per turn
        self.released = 0
        self.identities: dict[str, PlatformIdentity] = {}  # what each node's BMC says it is (unset: not read)
        self.observed: Counter[str] = Counter()
        self.lock = threading.Lock()

    def flashed(self, target: Target, comp: Component) -> None:
        """A component's update request was just sent (tests hook in here)."""

    # NodeUpdater
    def session(self, target: Target, afresh: bool = False) -> AbstractContextManager[object]:
        with self.lock:
            self.sessions.append((target.name, afresh))
        return nullcontext()

    def prepare(self, targets: Sequence[Target], components: Sequence[Component], after_turns: int | None = 0) -> None:
        with self.lock:
            self.prepared.extend(t.name for t in targets)
            self.prepared_after.append(after_turns)

    def release(self) -> None:
        with self.lock:
            self.released += 1

    def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
        if self.faults.get(target.name) == "unreadable":
            raise UpdateFailed(f"{target.name}: BMC unreachable")
        with self.lock:
            self.observed[target.name] += 1
            busy = self.busy_until.get(target.name, 0) > time.monotonic()
            return FirmwareState(
                versions={c.component: self.versions[target.name].get(c.component) for c in components},
                busy=busy, staged=dict(self.staged.get(target.name, {})),
                incomparable=dict(self.incomparable.get(target.name, {})),
                identity=self.identities.get(target.name),
            )

    def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
        """Each component through `guard` then flashed (`flash_s` each once all are sent), the reset through
        `guard` too: what the guard refuses is not done, as a real BMC would not be sent it."""
        with self.lock:
            self.order.append(target.name)
        for comp in flash:
            guard(f"{comp.component} {comp.version} update")
            self.flashed(target, comp)
            with self.lock:
                self.flashes[(target.name, comp.component)] += 1
        time.sleep(self.flash_s)
        if reset:
            guard("host reset")
        fault = self.faults.get(target.name)
        if fault == "fail":
            raise UpdateFailed(f"{target.name}: task ended in Exception")
        with self.lock:
            if reset:
                self.resets[target.name] += 1
            if fault == "noop":
                return
            staged = self.staged.pop(target.name, {})
            for comp in flash:
                self.versions[target.name][comp.component] = comp.version
            for comp, version in staged.items():
                self.versions[target.name][comp] = version


class FakeHealth:
    """The gate's BMC-side reads: `sick` nodes report a problem, `unreadable` ones raise (the BMC does not
    answer), `mute` ones say not ok without naming a problem."""

    def __init__(self, sick: set[str] | None = None, unreadable: set[str] | None = None,
                 mute: set[str] | None = None) -> None:
        self.sick = sick or set()
        self.unreadable = unreadable or set()
        self.mute = mute or set()
        self.checked: list[str] = []

    def check(self, target: Target, components: Sequence[Component], *, redfish_health: bool,
              conformance: bool) -> GateResult:
        self.checked.append(target.name)
        if target.name in self.unreadable:
            raise RedfishError(f"{target.name} BMC: GET /redfish/v1/Systems/1: connection refused")
        if target.name in self.sick:
            return GateResult(ok=False, problems=("System Status.Health is Critical",))
        if target.name in self.mute:
            return GateResult(ok=False)
        return GateResult(ok=True)


def targets(nodes: Sequence[str]) -> dict[str, Target]:
    return {n: Target(name=n) for n in nodes}


def at_baseline(bmcs: FakeBmcs, cat: Catalog) -> list[str]:
    want = {c.component: c.version for c in cat.components}
    return sorted(n for n, v in bmcs.versions.items() if all(v.get(k) == ver for k, ver in want.items()))

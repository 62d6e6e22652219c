"""The health gate between waves: Redfish-side health, the BMC-side conformance subset, and an
optional full verify command per node. Any problem halts the campaign before the next wave.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from provision.campaign.catalog import Catalog
from provision.campaign.hooks import HookRunner, run_hook
from provision.campaign.updater import HealthGate, Target
from provision.errors import ProvisionError


class GateRunner:
    """Runs the gate of a catalog's policy over the nodes a wave finished."""

    def __init__(self, health: HealthGate | None, hook_runner: HookRunner = run_hook, workers: int | None = None):
        self.health = health
        self.hook_runner = hook_runner
        self.workers = workers

    def run(self, targets: Sequence[Target], catalog: Catalog) -> list[str]:
        """Problems found, one line per node and problem; empty when the gate passes."""
        if not targets:
            return []
        workers = min(self.workers or catalog.policy.concurrency, len(targets))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gate") as pool:
            found = list(pool.map(lambda t: self._node(t, catalog), targets))
        return [line for lines in found for line in lines]

    def _node(self, target: Target, catalog: Catalog) -> list[str]:
        policy = catalog.policy.gate
        problems: list[str] = []
        if self.health is not None and (policy.redfish_health or policy.conformance):
            try:
                result = self.health.check(
                    target, catalog.ordered(), redfish_health=policy.redfish_health,
                    conformance=policy.conformance,
                )
                problems += [f"{target.name}: {p}" for p in result.problems]
                if not result.ok and not result.problems:
                    problems.append(f"{target.name}: unhealthy")
            except ProvisionError as exc:
                problems.append(f"{target.name}: health check failed: {exc}")
        if policy.full_verify:
            res = self.hook_runner(policy.full_verify, target.name, catalog.name, policy.timeout_s,
                                   env_allow=catalog.policy.hooks.env_allow)
            if not res.ok:
                problems.append(f"{target.name}: full verify failed ({res.describe()})")
        return problems

"""The leader's decisions on a campaign: a wave started, a wave closed (its gate, done or halt), the campaign ended.

Exactly one controller leads at a time (the leader lease, provision.journal.claims); with one controller it
is that one. Each decision is written in `Claims.decide`'s transaction, so a leader whose lease went stale or
was taken writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from provision.campaign.catalog import Catalog
from provision.campaign.gates import GateRunner
from provision.campaign.updater import Target
from provision.campaign.window import inside, next_opening
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveRecord, WaveState
from provision.journal.claims import Claims, NotDecided

LOG = logging.getLogger(__name__)


@dataclass
class WaveLeader:
    """What the controller holding the leader lease decides, each in one journal transaction."""

    catalog: Catalog
    store: CampaignStore
    targets: dict[str, Target]
    gate: GateRunner
    now: Callable[[], datetime]
    claims: Claims

    def decide(self, what: str, write: Callable[..., object], *args: Any) -> bool:
        """One leader decision, `write(*args, db=the transaction)`, written only while this controller's term is
        fresh and still the lease's (Claims.decide); False, and a line in the log, when it was not."""
        try:
            with self.claims.decide(what) as db:
                write(*args, db=db)
        except NotDecided as exc:
            LOG.warning("%s", exc)
            return False
        return True

    def before_wave(self, wave: int) -> tuple[CampaignState, str] | None:
        """Why wave `wave` may not start now (outside the maintenance window), or None."""
        window = self.catalog.policy.window
        moment = self.now()
        if not inside(window, moment):
            assert window is not None
            opens = next_opening(window, moment).isoformat(timespec="minutes")
            return CampaignState.PAUSED, f"outside the maintenance window before wave {wave}; opens {opens}"
        return None

    def close_wave(self, wave: WaveRecord) -> bool:
        """Once every node of the wave is finished: gate what nobody gated, then done or halt; whether it was
        decided (False: a node still unfinished, or this controller may not decide now)."""
        name = self.catalog.name
        nodes = self.store.nodes(name, wave.wave)
        if any(n.state in (NodeState.PENDING, NodeState.ACTIVE) for n in nodes) or not self.claims.fresh():
            return False
        count = self.store.since_start(name)  # after the wave's turns, before its gate
        too_many = self.catalog.policy.halt.share_reason(wave.wave, count.failed, count.finished)
        if too_many:
            return self.decide("halt", self.store.halt, name, too_many)
        problems: list[str] = []
        for n in nodes:
            if n.state is not NodeState.DONE:
                continue
            found = n.gate
            if found is None:  # finished before a crash, or by a controller gone before its gate
                if n.node in self.targets:
                    found = self.gate.run([self.targets[n.node]], self.catalog)
                    self.store.node_gated(name, n.node, found)
                else:
                    found = [f"{n.node}: not gated (its controller is gone and this one does not reach it)"]
            problems += found
        if problems:
            reason = f"health gate failed after wave {wave.wave}: {problems[0]}" + (
                f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")

            def failed(db: Any) -> None:
                self.store.wave_state(name, wave.wave, WaveState.GATE_FAILED, "; ".join(problems), db=db)
                self.store.halt(name, reason, db=db)
            return self.decide(f"wave {wave.wave}'s gate", failed)
        return self.decide(f"wave {wave.wave} done", self.store.wave_state, name, wave.wave, WaveState.DONE, "ok")

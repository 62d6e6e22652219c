"""Where a campaign wave's time goes, node by node, from the simulator's event log (real clock) and
the journal: used by campaign_scale.py; also runnable on a kept work dir (`--keep`):

    python bench/campaign_phases.py /tmp/h8-campaign-bench-XXXX

Phases of one node (components = bmc + bios, as the bench runs them):
  start   wave start -> its first update task starts (observe, upload)
  flash1  the first task (the simulator's flash time)
  back    first task done -> second task starts, less the BMC's simulated reboot
          (detecting the BMC is back, re-login, upload)
  flash2  the second task
  reset   second task done -> host powering off (detecting the end, reset request)
  power   powering off -> On (the simulator's power cycle)
  finish  On -> the node's turn ends (detecting On, re-observe, gate)
and per wave: tail = wave end - last node's end (the wave's gate and bookkeeping).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provision.journal.campaigns import CampaignNode, WaveRecord
from provision.lab.campaign_kit import SimLog

PHASES = ("start", "flash1", "back", "flash2", "reset", "power", "finish")


def node_events(log: SimLog) -> dict[str, dict[str, list[float]]]:
    """node -> event key -> times; keys: task.start, task.done, power.<State>."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for e in log.events:
        key = e["event"] if e["event"] != "power" else f"power.{e.get('state')}"
        if key in ("task.start", "task.done") or key.startswith("power."):
            out[e["node"]][key].append(float(e["t"]))
    return out


def node_phases(ev: dict[str, list[float]], wave_start: float, ended: float, reboot_s: float) -> dict[str, float]:
    starts, dones = sorted(ev["task.start"]), sorted(ev["task.done"])
    off, on = min(ev["power.PoweringOff"]), max(ev["power.On"])
    return {
        "start": starts[0] - wave_start, "flash1": dones[0] - starts[0],
        "back": starts[1] - dones[0] - reboot_s, "flash2": dones[1] - starts[1],
        "reset": off - dones[1], "power": on - off, "finish": ended - on,
    }


def wave_phases(waves: list[WaveRecord], nodes: list[CampaignNode], log: SimLog, reboot_s: float) -> list[dict]:
    """Per wave: mean, max and last node's seconds in each phase, and the tail."""
    events = node_events(log)
    rows = []
    for w in waves:
        members = [n for n in nodes if n.wave == w.wave and n.ended_at is not None]
        if not members or w.started_at is None or w.ended_at is None:
            continue
        per = {n.node: node_phases(events[n.node], w.started_at, n.ended_at or 0, reboot_s) for n in members}
        last = max(members, key=lambda n: n.ended_at or 0)
        rows.append({
            "wave": w.wave, "nodes": len(members),
            "mean": {p: round(statistics.fmean(v[p] for v in per.values()), 2) for p in PHASES},
            "max": {p: round(max(v[p] for v in per.values()), 2) for p in PHASES},
            "last_node": {p: round(per[last.node][p], 2) for p in PHASES},
            "tail": round(w.ended_at - (last.ended_at or 0), 2),
        })
    return rows


if __name__ == "__main__":
    from provision.journal import Journal
    from provision.journal.campaigns import CampaignStore
    from provision.lab.bmcsim.config import Timings

    work_dir = Path(sys.argv[1])
    speed = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    with Journal(work_dir / "state" / "provision.db") as journal:
        store = CampaignStore(journal)
        rows = wave_phases(store.waves("bench"), store.nodes("bench"), SimLog(work_dir / "lab" / "bmcsim.log"),
                           Timings().bmc_reboot / speed)
    print(json.dumps(rows, indent=2))

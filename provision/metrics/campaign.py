"""Metric families of a campaign's state, from its report (the journal): see docs/metrics.md.

Written by `provision campaign status CAMPAIGN --prom FILE` (run it from a timer while a campaign runs):
the journal is the one source of truth, so any process can export it, whichever one drives the campaign.
"""

from __future__ import annotations

from provision.campaign.report import CampaignReport
from provision.journal.campaigns import CampaignState, NodeState, WaveState
from provision.metrics.textfile import Family

PREFIX = "provision_campaign"


def current_wave(report: CampaignReport) -> int:
    """The wave being worked on (0-based): the first not done; the number of waves once all are done."""
    return next((w.wave for w in report.waves if w.state is not WaveState.DONE), len(report.waves))


def families(report: CampaignReport, controller_running: bool, exported: float) -> list[Family]:
    """Every series of one campaign, labelled campaign=NAME."""
    name = report.campaign
    state = Family(f"{PREFIX}_state", "1 for the campaign's current state, 0 for the others.")
    for s in CampaignState:
        state.add(1 if report.state is s else 0, campaign=name, state=s.value)
    nodes = Family(f"{PREFIX}_nodes", "The campaign's nodes in each state (pending, active, done, failed).")
    counts = dict.fromkeys(NodeState, 0)
    for n in report.nodes:
        counts[n.outcome] += 1
    for node_state, count in counts.items():
        nodes.add(count, campaign=name, state=node_state.value)
    done_waves = sum(1 for w in report.waves if w.state is WaveState.DONE)
    out = [
        Family(f"{PREFIX}_info", "The campaign (value 1) and the file it was started from.")
        .add(1, campaign=name, source=report.source),
        state,
        Family(f"{PREFIX}_halted", "1 when the campaign is halted (a gate or a failure budget stopped it).")
        .add(1 if report.state is CampaignState.HALTED else 0, campaign=name),
        nodes,
        Family(f"{PREFIX}_wave", "The wave being worked on (0-based); equals the wave count once all are done.")
        .add(current_wave(report), campaign=name),
        Family(f"{PREFIX}_waves", "Waves planned.").add(len(report.waves), campaign=name),
        Family(f"{PREFIX}_waves_done", "Waves done (their gate passed).").add(done_waves, campaign=name),
        Family(f"{PREFIX}_nodes_updated", "Nodes whose firmware was flashed and verified.")
        .add(report.summary.updated, campaign=name),
        Family(f"{PREFIX}_controller_running", "1 when a controller process is driving the campaign now.")
        .add(1 if controller_running else 0, campaign=name),
        Family(f"{PREFIX}_export_timestamp_seconds", "When this file was written, in seconds since the epoch.")
        .add(exported, campaign=name),
    ]
    if report.duration_s is not None:
        out.append(Family(f"{PREFIX}_duration_seconds", "How long the campaign has run, in seconds.")
                   .add(report.duration_s, campaign=name))
    return out

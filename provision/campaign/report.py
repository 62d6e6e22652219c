"""The campaign report: per node versions before/after, duration and outcome; a fleet summary.

Built from the journal only (no BMC is contacted); rendered as JSON or a self-contained HTML page.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jinja2 import Environment, select_autoescape
from pydantic import BaseModel, ConfigDict

from provision.conformance.provenance import provision_version
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState


class NodeLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    wave: int
    outcome: NodeState
    before: dict[str, str | None]
    after: dict[str, str | None]
    flashed: list[str]
    duration_s: float | None
    error: str


class WaveLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    wave: int
    nodes: int
    state: WaveState
    duration_s: float | None
    gate: str


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int
    done: int
    failed: int
    pending: int
    updated: int
    already_at_baseline: int
    node_seconds_median: float | None
    node_seconds_max: float | None


class CampaignReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: str
    source: str
    digest: str = ""  # sha256 of the campaign file when the campaign was started
    provision_version: str = ""  # of the provision that wrote this report
    generated: str = ""  # when this report was built from the journal
    state: CampaignState
    reason: str
    created: str
    ended: str | None
    duration_s: float | None
    summary: Summary
    waves: list[WaveLine]
    nodes: list[NodeLine]


def build_report(store: CampaignStore, name: str) -> CampaignReport:
    record = store.get(name)
    nodes = [
        NodeLine(node=n.node, wave=n.wave, outcome=n.state, before=n.before, after=n.after, flashed=n.flashed,
                 duration_s=n.duration_s, error=n.error)
        for n in store.nodes(name)
    ]
    sizes = [len(w) for w in record.waves]
    waves = [
        WaveLine(wave=w.wave, nodes=sizes[w.wave] if w.wave < len(sizes) else 0, state=w.state,
                 duration_s=_span(w.started_at, w.ended_at), gate=w.gate)
        for w in store.waves(name)
    ]
    return CampaignReport(
        campaign=name, source=record.source, digest=record.digest, provision_version=provision_version(),
        generated=datetime.now(UTC).isoformat(timespec="seconds"), state=record.state, reason=record.reason,
        created=_iso(record.created_at), ended=_iso(record.ended_at) if record.ended_at else None,
        duration_s=_span(record.created_at, record.ended_at or record.updated_at),
        summary=_summary(nodes), waves=waves, nodes=nodes,
    )


def _summary(nodes: list[NodeLine]) -> Summary:
    times = sorted(n.duration_s for n in nodes if n.duration_s is not None and n.flashed)
    count = {s: sum(1 for n in nodes if n.outcome is s) for s in NodeState}
    return Summary(
        nodes=len(nodes), done=count[NodeState.DONE], failed=count[NodeState.FAILED],
        pending=count[NodeState.PENDING] + count[NodeState.ACTIVE],
        updated=sum(1 for n in nodes if n.outcome is NodeState.DONE and n.flashed),
        already_at_baseline=sum(1 for n in nodes if n.outcome is NodeState.DONE and not n.flashed),
        node_seconds_median=times[len(times) // 2] if times else None,
        node_seconds_max=times[-1] if times else None,
    )


def _span(start: float | None, end: float | None) -> float | None:
    return round(end - start, 3) if start is not None and end is not None else None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Campaign {{ r.campaign }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top;font-size:.9em}
th{background:#f3f3f3}.done{color:#176317}.failed{color:#b00020;font-weight:bold}.pending,.active{color:#8a6d00}
code{font-size:.95em}
</style></head><body>
<h1>Campaign {{ r.campaign }}: <span class="{{ r.state.value }}">{{ r.state.value }}</span></h1>
<p>{{ r.reason }}</p>
<p>Source <code>{{ r.source }}</code>; created {{ r.created }}{% if r.ended %}; ended {{ r.ended }}{% endif %}
{% if r.duration_s is not none %}; {{ '%.1f' % r.duration_s }} s{% endif %}.</p>
<p id="provenance">Campaign file sha256 <code>{{ r.digest }}</code>; report by provision {{ r.provision_version }}
at {{ r.generated }}.</p>
<h2>Summary</h2>
<table><tr><th>nodes</th><th>done</th><th>updated</th><th>already at baseline</th><th>failed</th><th>pending</th>
<th>median node s</th><th>max node s</th></tr>
<tr><td>{{ s.nodes }}</td><td>{{ s.done }}</td><td>{{ s.updated }}</td><td>{{ s.already_at_baseline }}</td>
<td class="{{ 'failed' if s.failed else '' }}">{{ s.failed }}</td><td>{{ s.pending }}</td>
<td>{{ s.node_seconds_median if s.node_seconds_median is not none else '' }}</td>
<td>{{ s.node_seconds_max if s.node_seconds_max is not none else '' }}</td></tr></table>
<h2>Waves</h2>
<table><tr><th>wave</th><th>nodes</th><th>state</th><th>seconds</th><th>gate</th></tr>
{% for w in r.waves %}<tr><td>{{ w.wave }}</td><td>{{ w.nodes }}</td><td>{{ w.state.value }}</td>
<td>{{ w.duration_s if w.duration_s is not none else '' }}</td><td>{{ w.gate }}</td></tr>
{% endfor %}</table>
<h2>Nodes</h2>
<table><tr><th>node</th><th>wave</th><th>outcome</th><th>component: before &rarr; after</th><th>seconds</th>
<th>error</th></tr>
{% for n in r.nodes %}<tr><td>{{ n.node }}</td><td>{{ n.wave }}</td>
<td class="{{ n.outcome.value }}">{{ n.outcome.value }}</td><td>
{% for c in (n.before.keys() | list) + ((n.after.keys() | reject('in', n.before) | list)) %}
{{ c }}: {{ n.before.get(c) or '?' }} &rarr; {{ n.after.get(c) or '?' }}{% if c in n.flashed %} (flashed){% endif %}<br>
{% endfor %}</td><td>{{ n.duration_s if n.duration_s is not none else '' }}</td><td>{{ n.error }}</td></tr>
{% endfor %}</table>
</body></html>
"""


def render_html(report: CampaignReport) -> str:
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    return env.from_string(_HTML).render(r=report, s=report.summary)

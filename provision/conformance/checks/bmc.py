"""BMC-side checks through the Redfish layer: BIOS, firmware baseline, PSUs, fans, temperatures, SEL.

`observe_bmc` reads the BMC over a session of its own (bmc_read; a caller that already holds the node's
session, as the bring-up does, passes `read`) into typed BmcFacts (bmc_facts); `evaluate_bmc` compares
them with the spec (pure, tested on tables). When the BMC cannot be read (unreachable, credentials
refused, TLS) every BMC check is an ERROR naming why, never a pass; `--no-bmc` waives them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from provision.conformance.checks._base import Context
from provision.conformance.checks.bmc_facts import BiosSetting, BmcFacts, FirmwareSeen
from provision.conformance.checks.bmc_read import read_bmc
from provision.conformance.model import Outcome, Threshold, worst
from provision.errors import ProvisionError
from provision.redfish.resources.log import LogEntry
from provision.redfish.resources.power import Temperature
from provision.spec.model import Cooling, HostEntry, NodeSpec
from provision.spec.model import Power as PowerSpec

AREA = "bmc"
BmcRead = Callable[[HostEntry], BmcFacts]
"""Reads a host's BMC facts (from a session the caller keeps, or one it opens); raises ProvisionError."""

__all__ = ["AREA", "POWER_DESC", "BiosSetting", "BmcFacts", "BmcRead", "FirmwareSeen", "bmc_problem",
           "draw_threshold", "error_all", "evaluate_bmc", "observe_bmc", "planned", "run_bmc_checks",
           "sensor_threshold", "waive_all"]


def evaluate_bmc(ctx: Context, facts: BmcFacts, since: datetime | None = None) -> None:
    """Record every BMC check from facts already read."""
    _bios(ctx, facts)
    _firmware(ctx, facts)
    _psus(ctx, facts)
    _fans(ctx, facts)
    _temperatures(ctx, facts)
    _power_draw(ctx, facts)
    _sel(ctx, facts, since)


def planned(spec: NodeSpec) -> list[tuple[str, str, str]]:
    """(id, description, expected) of every BMC check the spec asks for, for rows that cannot be judged."""
    rows = [(f"bmc.bios.{key}", f"BIOS {key}", str(value)) for key, value in spec.bios.settings.items()]
    rows += [(f"bmc.firmware.{fw.component}", f"{fw.component} firmware at or above the baseline", f">= {fw.version}")
             for fw in spec.firmware if fw.updated_by == "bmc"]
    rows.append(("bmc.psu", "PSUs present and healthy", str(spec.power.psu_count)))
    if spec.power.redundancy != "none":
        rows.append(("bmc.psu_redundancy", "PSU redundancy", spec.power.redundancy))
    rows.append(("bmc.fans", "fans present and healthy", f">= {spec.cooling.min_fans}"))
    rows.append(("bmc.temperatures", "temperatures within limits", "within limits"))
    rows.append(("bmc.power_draw", POWER_DESC, draw_threshold(spec.power).describe()))
    rows.append(("bmc.sel", "no critical SEL entry since the last bring-up", "none"))
    return rows


def error_all(ctx: Context, why: str) -> None:
    """The BMC could not be read: every BMC check is an ERROR with the reason (never a pass)."""
    for cid, desc, expected in planned(ctx.spec):
        ctx.error(cid, AREA, desc, expected, why)


def waive_all(ctx: Context, why: str) -> None:
    """The operator turned the BMC checks off: every BMC check is WAIVED with the reason."""
    for cid, desc, expected in planned(ctx.spec):
        ctx.waive(cid, AREA, desc, expected, why)


def bmc_problem(exc: ProvisionError) -> str:
    """One line saying why the BMC could not be read, by kind (the message never holds a secret)."""
    from provision.redfish.errors import RedfishAuthError, RedfishTimeout, RedfishTlsError, RedfishUnavailable

    kinds: tuple[tuple[type[ProvisionError], str], ...] = (
        (RedfishAuthError, "BMC refused the credentials"),
        (RedfishTlsError, "BMC TLS verification failed"),
        (RedfishTimeout, "BMC did not answer in time"),
        (RedfishUnavailable, "BMC not reachable"),
    )
    label = next((text for kind, text in kinds if isinstance(exc, kind)), "BMC could not be read")
    return f"{label}: {exc}"


def _bios(ctx: Context, facts: BmcFacts) -> None:
    for s in facts.bios:
        desc = f"BIOS {s.key}" + (f" ({s.attribute})" if s.attribute else "")
        want = ctx.spec.bios.settings[s.key]
        if s.attribute is None and s.proof is not None:
            ctx.record(f"bmc.bios.{s.key}", AREA, desc, want, s.proof.evidence, s.proof.holds,
                       f"no BIOS attribute for {s.key}; judged from {s.proof.evidence}")
            continue
        if s.attribute is None:
            ctx.error(f"bmc.bios.{s.key}", AREA, desc, want,
                      f"{facts.vendor} BIOS has no attribute for {s.key} and no other evidence")
            continue
        ctx.record(f"bmc.bios.{s.key}", AREA, desc, f"{want} ({s.wanted})", s.current, s.current == s.wanted)


def _firmware(ctx: Context, facts: BmcFacts) -> None:
    from provision.redfish.vendors.versions import compare

    seen = {f.component: f.versions for f in facts.firmware}
    for fw in (f for f in ctx.spec.firmware if f.updated_by == "bmc"):  # in-band ones are checked on the node
        versions = seen.get(fw.component, ())
        desc = f"{fw.component} firmware at or above the baseline"
        if not versions:
            entries = next((f.entries for f in facts.firmware if f.component == fw.component), 0)
            why = "running version unreadable" if entries else "not in FirmwareInventory"
            ctx.error(f"bmc.firmware.{fw.component}", AREA, desc, f">= {fw.version}", f"{fw.component} {why}")
            continue
        low = [v for v in versions if compare(v, fw.version) < 0]
        ctx.record(f"bmc.firmware.{fw.component}", AREA, desc, f">= {fw.version}", sorted(set(versions)),
                   not low, f"below baseline: {', '.join(sorted(set(low)))}" if low else "")


def _healthy(status: object) -> bool:
    health = getattr(status, "get", lambda _k: None)("Health")
    return health in (None, "OK")


def _psus(ctx: Context, facts: BmcFacts) -> None:
    power = ctx.spec.power
    psus = [p for pw in facts.power for p in pw.power_supplies if p.present]
    good = [p for p in psus if _healthy(p.status)]
    ctx.record("bmc.psu", AREA, "PSUs present and healthy", power.psu_count,
               f"{len(good)} healthy of {len(psus)} present", len(good) >= power.psu_count)
    groups = [r for pw in facts.power for r in pw.redundancy]
    if power.redundancy == "none":
        return
    if groups:
        bad = [r.name or "group" for r in groups if not _healthy(r.status)]
        ctx.record("bmc.psu_redundancy", AREA, "PSU redundancy", power.redundancy,
                   "; ".join(f"{r.mode or '?'} {r.status.get('Health', '?')}" for r in groups), not bad)
    else:
        # No Redundancy block: N+1/2N hold when every spec'd PSU is healthy (one can fail and power remains).
        ctx.record("bmc.psu_redundancy", AREA, "PSU redundancy", power.redundancy,
                   f"{len(good)} healthy PSUs (no Redundancy block)", len(good) >= power.psu_count >= 2)


def _fans(ctx: Context, facts: BmcFacts) -> None:
    fans = [f for t in facts.thermal for f in t.fans if f.status.get("State") != "Absent"]
    good = [f for f in fans if _healthy(f.status)]
    want = ctx.spec.cooling.min_fans
    ctx.record("bmc.fans", AREA, "fans present and healthy", f">= {want}", f"{len(good)} of {len(fans)}",
               len(good) >= want)


def sensor_threshold(cool: Cooling, t: Temperature, ambient: bool) -> Threshold:
    """The tiers of one temperature sensor: the spec's limits, tightened by the sensor's own thresholds.

    Inlet: fails above max_inlet_c. Internal ambient: warns above warn_internal_ambient_c. Every other
    sensor: fails above critical_component_c. UpperThresholdCritical lowers the failure tier and
    UpperThresholdNonCritical the warning tier (DMTF Thermal.v1 Temperatures).
    """
    inlet = "inlet" in (t.name or "").lower() or t.physical_context == "Intake"
    fail = cool.max_inlet_c if inlet else cool.critical_component_c
    if t.upper_threshold_critical is not None:
        fail = min(fail, t.upper_threshold_critical)
    tiers = [w for w in (t.upper_threshold_non_critical, None if inlet or not ambient
                         else cool.warn_internal_ambient_c) if w is not None]
    warn = min(tiers) if tiers else None
    return Threshold(fail=fail, warn=warn if warn is not None and warn < fail else None, unit="C")


def _temperatures(ctx: Context, facts: BmcFacts) -> None:
    cool = ctx.spec.cooling
    desc = "temperatures within limits"
    expected = (f"inlet <= {cool.max_inlet_c:g} C, internal ambient warns above {cool.warn_internal_ambient_c:g} C, "
                f"components <= {cool.critical_component_c:g} C")
    readings = [t for th in facts.thermal for t in th.temperatures if t.reading_celsius is not None]
    if not readings:
        ctx.error("bmc.temperatures", AREA, desc, expected, "the BMC reports no temperature reading")
        return
    findings: list[tuple[Outcome, str]] = []
    for t in readings:
        reading = t.reading_celsius or 0.0
        tiers = sensor_threshold(cool, t, t.name in facts.ambient)
        outcome = tiers.judge(reading)
        if outcome is Outcome.FAIL:
            findings.append((outcome, f"{t.name} {reading:g} C (limit {tiers.fail:g})"))
        elif outcome is Outcome.WARN:
            findings.append((outcome, f"{t.name} {reading:g} C (warn above {tiers.warn:g})"))
    verdict = worst(o for o, _ in findings)
    ordered = [text for o, text in findings if o is Outcome.FAIL] + [text for o, text in findings if o is Outcome.WARN]
    ctx.result("bmc.temperatures", AREA, desc, expected, "; ".join(ordered) or f"{len(readings)} sensors within limits",
               verdict, f"{len(ordered)} of {len(readings)} sensors beyond a tier" if ordered else "")


POWER_DESC = "power draw (BMC PowerControl) vs the spec's peak and the PSUs' capacity"


def draw_threshold(power: PowerSpec) -> Threshold:
    """Above the spec's peak draw warns; above the installed PSUs' capacity fails."""
    capacity = float(power.psu_count * power.psu_watts)
    peak = float(power.peak_draw_w)
    return Threshold(warn=peak, fail=capacity, unit="W") if capacity > peak else Threshold(fail=peak, unit="W")


def _power_draw(ctx: Context, facts: BmcFacts) -> None:
    """The highest of PowerConsumedWatts and PowerMetrics.MaxConsumedWatts over every chassis' PowerControl (or
    its PSU chassis' EnvironmentMetrics reading, see ops.inventory)."""
    tiers = draw_threshold(ctx.spec.power)
    controls = [pc for pw in facts.power for pc in pw.power_control]
    now = [pc.power_consumed_watts for pc in controls if pc.power_consumed_watts is not None]
    peak = [w for pc in controls if (w := pc.interval_max_watts) is not None]
    if not now and not peak:
        ctx.error("bmc.power_draw", AREA, POWER_DESC, tiers.describe(),
                  "the BMC reports no power reading (Power.PowerControl, or the PSU chassis' EnvironmentMetrics)")
        return
    value = max(now + peak)
    detail = f"now {max(now):g} W" if now else ""
    if peak:
        detail += (", " if detail else "") + f"interval max {max(peak):g} W"
    ctx.tiered("bmc.power_draw", AREA, POWER_DESC, value, tiers, detail)


def _sel(ctx: Context, facts: BmcFacts, since: datetime | None) -> None:
    desc = "no critical SEL entry" + (f" since {since.isoformat()}" if since else "")
    if not facts.sel_read:
        ctx.error("bmc.sel", AREA, desc, "none", "the BMC exposes no SEL log service")
        return
    critical = [e for e in facts.sel if (e.severity or "").lower() == "critical" and _after(e, since)]
    ctx.record("bmc.sel", AREA, desc, "none",
               "; ".join(f"{e.created} {e.message}" for e in critical[:3]) or "none", not critical,
               f"{len(critical)} critical entries" if critical else "")


def _after(entry: LogEntry, since: datetime | None) -> bool:
    if since is None or not entry.created:
        return True
    try:
        created = datetime.fromisoformat(entry.created.replace("Z", "+00:00"))
    except ValueError:
        return True
    if created.tzinfo is None or since.tzinfo is None:
        return created.replace(tzinfo=None) >= since.replace(tzinfo=None)
    return created >= since


def observe_bmc(host: HostEntry, insecure: bool = False) -> BmcFacts:
    """Read BIOS, firmware, power, thermal and SEL over a session of its own (raises ProvisionError)."""
    return read_bmc(host, insecure=insecure)


def run_bmc_checks(ctx: Context, host: HostEntry, since: datetime | None = None, *, read: BmcRead | None = None,
                   insecure: bool = False) -> None:
    """Read then evaluate; a BMC that cannot be read makes every BMC check an ERROR with the reason.

    `read` reads over a session the caller already holds (the bring-up's one session per node); without
    it the facts are read over a session opened here (`insecure`: TLS not verified)."""
    try:
        facts = read(host) if read is not None else observe_bmc(host, insecure)
    except ProvisionError as exc:
        error_all(ctx, bmc_problem(exc))
        return
    evaluate_bmc(ctx, facts, since)

"""BMC-side checks through the Redfish layer: BIOS, firmware baseline, PSUs and their redundancy, fans and
their redundancy, inlet / internal ambient / component temperatures, power draw, memory population, SEL.

The BMC source (provision/conformance/bmc_source.py) reads the BMC into typed BmcFacts (bmc_facts);
`evaluate_bmc` compares them with the spec (pure, tested on tables). When the BMC cannot be read (unreachable,
credentials refused, TLS) every BMC check is an ERROR naming why (`error_all`), never a pass; `--no-bmc`
waives them (`waive_all`).
"""

from __future__ import annotations

from datetime import datetime

from provision.conformance.checks._base import Context
from provision.conformance.checks.bmc_facts import BiosSetting, BmcFacts, FirmwareSeen
from provision.conformance.checks.memory_layout import layout, redfish_places
from provision.conformance.model import Outcome, Threshold, worst
from provision.errors import ProvisionError
from provision.redfish.ops.drift import shown
from provision.redfish.resources.log import LogEntry
from provision.redfish.resources.power import Temperature
from provision.spec.acceptance import Comparison
from provision.spec.hardware import Cooling
from provision.spec.hardware import Power as PowerSpec
from provision.spec.model import NodeSpec
from provision.spec.platforms import DeviceKind

AREA = "bmc"

__all__ = ["AREA", "POWER_DESC", "BiosSetting", "BmcFacts", "FirmwareSeen", "ambient_threshold",
           "bmc_problem", "draw_threshold", "error_all", "evaluate_bmc", "fan_spares", "gpu_expected",
           "inlet_threshold", "memory_expected", "planned", "psu_healthy",
           "sensor_threshold", "waive_all"]


def evaluate_bmc(ctx: Context, facts: BmcFacts, since: datetime | None = None) -> None:
    """Record every BMC check from facts already read."""
    _platform(ctx, facts)
    _bios(ctx, facts)
    _firmware(ctx, facts)
    _psus(ctx, facts)
    _fans(ctx, facts)
    _fan_redundancy(ctx, facts)
    _inlet(ctx, facts)
    _internal_ambient(ctx, facts)
    _temperatures(ctx, facts)
    _power_draw(ctx, facts)
    _memory_population(ctx, facts)
    _gpu_count(ctx, facts)
    _sel(ctx, facts, since)


def planned(spec: NodeSpec) -> list[tuple[str, str, str]]:
    """(id, description, expected) of every BMC check the spec asks for, for rows that cannot be judged."""
    rows = [("bmc.platform", PLATFORM_DESC, platform_expected(spec))]
    rows += [(f"bmc.bios.{key}", f"BIOS {key}", str(value)) for key, value in spec.bios.settings.items()]
    rows += [(f"bmc.firmware.{fw.component}", f"{fw.component} firmware at or above the baseline", f">= {fw.version}")
             for fw in spec.firmware if fw.updated_by == "bmc"]
    rows.append(("bmc.psu", "PSUs present and healthy", str(spec.power.psu_count)))
    if spec.power.redundancy != "none":
        rows.append(("bmc.psu_redundancy", "PSU redundancy", spec.power.redundancy))
    rows.append(("bmc.fans", "fans present and healthy", f">= {spec.cooling.min_fans}"))
    if spec.cooling.fan_redundancy != "none":
        rows.append(("bmc.fan_redundancy", FAN_REDUNDANCY_DESC, spec.cooling.fan_redundancy))
    rows.append(("bmc.inlet", INLET_DESC, inlet_threshold(spec.cooling).describe()))
    rows.append(("bmc.internal_ambient", AMBIENT_DESC, ambient_threshold(spec.cooling).describe()))
    rows.append(("bmc.temperatures", TEMPS_DESC, f"<= {spec.cooling.critical_component_c:g} C"))
    rows.append(("bmc.power_draw", POWER_DESC, draw_threshold(spec.power).describe()))
    rows.append(("bmc.memory_population", MEMORY_DESC, memory_expected(spec)))
    rows.append(("bmc.gpu_count", GPU_DESC, gpu_expected(spec)))
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


PLATFORM_DESC = "the platform the BMC reports is one the profile describes"


def platform_expected(spec: NodeSpec) -> str:
    return str(spec.platforms) if spec.platforms is not None else "(no platforms: key absent)"


def _platform(ctx: Context, facts: BmcFacts) -> None:
    """A node is what its BMC says it is: every other figure can match on the wrong board."""
    expected = platform_expected(ctx.spec)
    if facts.identity is None:
        ctx.error("bmc.platform", AREA, PLATFORM_DESC, expected, "the BMC's platform identity was not read")
        return
    found = facts.identity
    compute = found.kind is DeviceKind.COMPUTE  # a profile describes a compute node
    ok = compute and ctx.spec.described_platforms.fits(found)
    detail = "" if ok else (f"the BMC reports {found.described}; profile {ctx.spec.profile} describes "
                            f"{'' if compute else 'compute nodes: '}{expected}")
    ctx.record("bmc.platform", AREA, PLATFORM_DESC, expected, found.described, ok, detail)


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
                      s.error or f"{facts.vendor} BIOS has no attribute for {s.key} and no other evidence")
            continue
        ctx.record(f"bmc.bios.{s.key}", AREA, desc, f"{want} ({s.wanted})", s.current, s.current == s.wanted)


def _firmware(ctx: Context, facts: BmcFacts) -> None:
    from provision.redfish.vendors.versions import VersionsNotComparable, compare

    seen = {f.component: f.versions for f in facts.firmware}
    for fw in (f for f in ctx.spec.firmware if f.updated_by == "bmc"):  # in-band ones are checked on the node
        versions = seen.get(fw.component, ())
        desc = f"{fw.component} firmware at or above the baseline"
        if not versions:
            row = next((f for f in facts.firmware if f.component == fw.component), None)
            why = "running version unreadable" if row and row.entries else (
                f"listed Absent in FirmwareInventory ({', '.join(row.absent)})" if row and row.absent
                else "not in FirmwareInventory")
            ctx.error(f"bmc.firmware.{fw.component}", AREA, desc, f">= {fw.version}", f"{fw.component} {why}")
            continue
        low, unordered = [], []
        for v in sorted(set(versions)):
            try:
                if compare(v, fw.version, fw.version_scheme) < 0:
                    low.append(v)
            except VersionsNotComparable as exc:  # never "at or above": an error naming both strings
                unordered.append(exc.against("baseline"))
        if unordered:
            ctx.error(f"bmc.firmware.{fw.component}", AREA, desc, f">= {fw.version}", "; ".join(unordered))
            continue
        ctx.record(f"bmc.firmware.{fw.component}", AREA, desc, f">= {fw.version}", sorted(set(versions)),
                   not low, f"below baseline: {', '.join(sorted(set(low)))}" if low else "")


def _healthy(status: object) -> bool:
    health = getattr(status, "get", lambda _k: None)("Health")
    return health in (None, "OK")


def psu_healthy(status: dict[str, object]) -> bool:
    """A PSU that carries load: Health OK (or unreported) and State Enabled (or unreported); a PSU
    UnavailableOffline, Disabled or StandbyOffline (Redfish Resource.State) has been lost."""
    return _healthy(status) and status.get("State") in (None, "Enabled")


def _psus(ctx: Context, facts: BmcFacts) -> None:
    power = ctx.spec.power
    psus = [p for pw in facts.power for p in pw.power_supplies if p.present]
    good = [p for p in psus if psu_healthy(p.status)]
    lost = [p.name or p.member_id or "PSU" for p in psus if not psu_healthy(p.status)]
    if not psus:
        why = "the BMC reports no PSU (Power.PowerSupplies, PowerSubsystem/PowerSupplies)"
        ctx.error("bmc.psu", AREA, "PSUs present and healthy", power.psu_count, why)
        if power.redundancy != "none":
            ctx.error("bmc.psu_redundancy", AREA, "PSU redundancy", power.redundancy, why)
        return
    ctx.record("bmc.psu", AREA, "PSUs present and healthy", power.psu_count,
               f"{len(good)} healthy of {len(psus)} present", len(good) >= power.psu_count,
               f"not carrying load: {', '.join(lost)}" if lost else "")
    if power.redundancy != "none":
        _psu_redundancy(ctx, facts, len(good), lost)


def _psu_redundancy(ctx: Context, facts: BmcFacts, good: int, lost: list[str]) -> None:
    """N+1, 2N, N+N hold only while every PSU the spec counts carries load: one lost PSU has spent the
    redundancy (a 2-PSU 2N node runs on one), whatever the BMC's Redundancy group still says. The group
    (Power.Redundancy, PowerSubsystem PowerSupplyRedundancy) fails the check when its Health is not OK."""
    power = ctx.spec.power
    groups = [r for pw in facts.power for r in pw.redundancy]
    bad = [r.name or "group" for r in groups if not _healthy(r.status)]
    said = "; ".join(f"{r.mode or '?'} {r.status.get('Health', '?')}" for r in groups) or "no Redundancy block"
    why = [f"{', '.join(lost)} lost"] if lost else []
    why += [f"{', '.join(bad)} not OK"] if bad else []
    if good < power.psu_count and not lost:
        why.append(f"{good} of {power.psu_count} PSUs present")
    ctx.record("bmc.psu_redundancy", AREA, "PSU redundancy", power.redundancy,
               f"{good} healthy PSUs; {said}", not why and good >= power.psu_count >= 2, "; ".join(why))


FAN_REDUNDANCY_DESC = "fan redundancy (every fan healthy, the BMC's fan Redundancy group OK)"


def _fans(ctx: Context, facts: BmcFacts) -> None:
    fans = [f for t in facts.thermal for f in t.fans if f.status.get("State") != "Absent"]
    good = [f for f in fans if _healthy(f.status)]
    want = ctx.spec.cooling.min_fans
    if not fans:
        ctx.error("bmc.fans", AREA, "fans present and healthy", f">= {want}", "the BMC reports no fan")
        return
    ctx.record("bmc.fans", AREA, "fans present and healthy", f">= {want}", f"{len(good)} of {len(fans)}",
               len(good) >= want)


def fan_spares(redundancy: str) -> int:
    """Spare fans a redundancy figure keeps: N+1 one, N+2 two, none zero."""
    return {"N+1": 1, "N+2": 2}.get(redundancy, 0)


def _fan_redundancy(ctx: Context, facts: BmcFacts) -> None:
    """N+k holds while min_fans (which counts the spares) are healthy and no present fan has failed: one
    failed fan of an N+1 set has spent the spare. Thermal.Redundancy / ThermalSubsystem FanRedundancy,
    where the BMC has it, fails the check when its Health is not OK."""
    cool = ctx.spec.cooling
    if cool.fan_redundancy == "none":
        return
    fans = [f for t in facts.thermal for f in t.fans if f.status.get("State") != "Absent"]
    if not fans:
        ctx.error("bmc.fan_redundancy", AREA, FAN_REDUNDANCY_DESC, cool.fan_redundancy, "the BMC reports no fan")
        return
    failed = [f.name or "fan" for f in fans if not _healthy(f.status)]
    groups = [r for t in facts.thermal for r in t.redundancy]
    bad = [r.name or "group" for r in groups if not _healthy(r.status)]
    good = len(fans) - len(failed)
    why = [f"failed: {', '.join(failed)}"] if failed else []
    why += [f"{', '.join(bad)} not OK"] if bad else []
    if good < cool.min_fans:
        why.append(f"{good} healthy, {cool.min_fans} needed ({cool.fan_redundancy}: "
                   f"{cool.min_fans - fan_spares(cool.fan_redundancy)} + {fan_spares(cool.fan_redundancy)} spare)")
    said = "; ".join(f"{r.mode or '?'} {r.status.get('Health', '?')}" for r in groups) or "no fan Redundancy group"
    ctx.record("bmc.fan_redundancy", AREA, FAN_REDUNDANCY_DESC, cool.fan_redundancy,
               f"{good} of {len(fans)} fans healthy; {said}", not why, "; ".join(why))


INLET_DESC = "inlet temperature (the chassis' intake air) within the spec's limit"
AMBIENT_DESC = "internal ambient temperature within the spec's tiers"
TEMPS_DESC = "component temperatures within limits"


def inlet_threshold(cool: Cooling) -> Threshold:
    """The inlet fails above max_inlet_c."""
    return Threshold(fail=cool.max_inlet_c, unit="C")


def ambient_threshold(cool: Cooling) -> Threshold:
    """The internal ambient warns above warn_internal_ambient_c (seed 5.2: 35 C) and fails above
    fail_internal_ambient_c (else critical_component_c)."""
    return Threshold(warn=cool.warn_internal_ambient_c, fail=cool.ambient_fail_c, unit="C")


def sensor_threshold(base: Threshold, t: Temperature) -> Threshold:
    """One sensor's tiers: the spec's, tightened by the sensor's own thresholds (DMTF Thermal.v1
    Temperatures): UpperThresholdCritical lowers the failure tier, UpperThresholdNonCritical the warning
    tier (a sensor's warning at or above the failure tier is none)."""
    fail = base.fail
    if t.upper_threshold_critical is not None:
        fail = min(fail, t.upper_threshold_critical)
    tiers = [w for w in (t.upper_threshold_non_critical, base.warn) if w is not None]
    warn = min(tiers) if tiers else None
    return Threshold(fail=fail, warn=warn if warn is not None and warn < fail else None, unit="C")


def _judge(ctx: Context, cid: str, desc: str, base: Threshold, sensors: list[Temperature], absent: str) -> None:
    """Record one row over `sensors` (each judged on its own tiers); none with a reading is an ERROR."""
    readings = [t for t in sensors if t.reading_celsius is not None]
    if not readings:
        ctx.error(cid, AREA, desc, base.describe(), absent)
        return
    findings: list[tuple[Outcome, str]] = []
    for t in readings:
        reading = t.reading_celsius or 0.0
        tiers = sensor_threshold(base, t)
        outcome = tiers.judge(reading)
        if outcome is Outcome.FAIL:
            findings.append((outcome, f"{t.name} {reading:g} C (limit {tiers.fail:g})"))
        elif outcome is Outcome.WARN:
            findings.append((outcome, f"{t.name} {reading:g} C (warn above {tiers.warn:g})"))
    verdict = worst(o for o, _ in findings)
    ordered = [text for o, text in findings if o is Outcome.FAIL] + [text for o, text in findings if o is Outcome.WARN]
    within = ", ".join(f"{t.name} {t.reading_celsius:g} C" for t in readings[:3]) if len(readings) <= 3 \
        else f"{len(readings)} sensors within limits"
    ctx.result(cid, AREA, desc, base.describe(), "; ".join(ordered) or within, verdict,
               f"{len(ordered)} of {len(readings)} sensors beyond a tier" if ordered else "")


def _sensors(facts: BmcFacts) -> list[Temperature]:
    return [t for th in facts.thermal for t in th.temperatures]


def _inlet(ctx: Context, facts: BmcFacts) -> None:
    inlet = [t for t in _sensors(facts) if t.name in facts.inlet]
    _judge(ctx, "bmc.inlet", INLET_DESC, inlet_threshold(ctx.spec.cooling), inlet,
           "the BMC reports no inlet reading (no sensor of PhysicalContext Intake, nor one named as the inlet)")


def _internal_ambient(ctx: Context, facts: BmcFacts) -> None:
    ambient = [t for t in _sensors(facts) if t.name in facts.ambient]
    _judge(ctx, "bmc.internal_ambient", AMBIENT_DESC, ambient_threshold(ctx.spec.cooling), ambient,
           f"the BMC reports no internal ambient reading ({facts.vendor}: no sensor its plugin maps to the "
           "internal ambient)")


def _temperatures(ctx: Context, facts: BmcFacts) -> None:
    """Every sensor that is neither the inlet nor the internal ambient fails above critical_component_c."""
    cool = ctx.spec.cooling
    rest = [t for t in _sensors(facts) if t.name not in facts.inlet and t.name not in facts.ambient]
    _judge(ctx, "bmc.temperatures", TEMPS_DESC, Threshold(fail=cool.critical_component_c, unit="C"), rest,
           "the BMC reports no temperature reading")


POWER_DESC = "power draw (BMC PowerControl) vs the spec's peak draw"
NEAR_PEAK = 0.9


def draw_threshold(power: PowerSpec) -> Threshold:
    """Above 90% of the spec's peak draw warns, above the peak fails.

    peak_draw_w is what the rack's budget is summed from (`spec validate`) and what the node's circuits
    are sized for (seed 5.1): a node drawing more breaks both, whatever its PSUs could still deliver, so
    it fails. Within 10% of it the headroom is gone (a training job's load steps are that size): a warning."""
    peak = float(power.peak_draw_w)
    return Threshold(warn=round(peak * NEAR_PEAK, 1), fail=peak, unit="W")


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


MEMORY_DESC = "every memory channel populated as the spec says (Redfish MemoryLocation)"


def memory_expected(spec: NodeSpec) -> str:
    mem = spec.memory
    return f"{spec.cpu.sockets} socket(s) x {mem.channels_per_socket} channel(s) x {mem.dimms_per_channel} DIMM(s)"


def _memory_population(ctx: Context, facts: BmcFacts) -> None:
    """The node-side layout judgement (memory_layout.layout) over the BMC's Memory members."""
    spec, expected = ctx.spec, memory_expected(ctx.spec)
    if not facts.memory:
        ctx.error("bmc.memory_population", AREA, MEMORY_DESC, expected, "the BMC lists no Memory members")
        return
    found = layout(redfish_places(facts.memory), spec.cpu.sockets, spec.memory.channels_per_socket,
                   spec.memory.dimms_per_channel)
    if found.unmapped:
        ctx.error("bmc.memory_population", AREA, MEMORY_DESC, expected,
                  f"no MemoryLocation (Socket, Channel) for {', '.join(found.unmapped[:4])}"
                  + (f" and {len(found.unmapped) - 4} more" if len(found.unmapped) > 4 else ""))
        return
    ctx.record("bmc.memory_population", AREA, MEMORY_DESC, expected, found.summary, not found.problems,
               "; ".join(found.problems))


GPU_DESC = "GPUs the BMC lists vs the spec (none when it has no gpu section)"


def gpu_expected(spec: NodeSpec) -> str:
    """The spec's GPU count; a spec without a gpu section expects none, exactly (a minimum of 0 holds for any)."""
    if spec.gpu is None:
        return "0 (no gpu section)"
    return f">= {spec.gpu.count}" if spec.comparison("gpu.count") == Comparison.MINIMUM else str(spec.gpu.count)


def _gpu_count(ctx: Context, facts: BmcFacts) -> None:
    """The count the BMC sees, held against the spec. Unlike the node-side gpu.* checks (absent without a gpu
    section: there is no nvidia-smi to ask), this one needs no GPU to be made, so it is always made: GPUs on a
    profile that has none fail it (expected 0, found 8 x ...), as a missing GPU on a profile that has them does.
    The BMC listing no GPU at all is a finding, not an unreadable: the vendor plugin reads every place GPUs sit."""
    gpu = ctx.spec.gpu
    seen = len(facts.gpus)
    found = shown([g.model for g in facts.gpus])
    if gpu is None:
        ok = seen == 0
    else:
        ok = seen >= gpu.count if ctx.spec.comparison("gpu.count") == Comparison.MINIMUM else seen == gpu.count
    ctx.record("bmc.gpu_count", AREA, GPU_DESC, gpu_expected(ctx.spec), found, ok,
               "" if ok else f"expected {gpu.count if gpu else 0}, found {seen}")


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

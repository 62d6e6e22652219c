"""NVSwitch fabric: the fabric manager runs at exactly the driver version, every GPU registered."""

from __future__ import annotations

from provision.conformance.checks import packages, services
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.checks.gpu import QUERY
from provision.conformance.checks.names import FABRIC_MANAGER_UNIT, fabric_manager_package
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.spec.model import NodeSpec

AREA = "fabric"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if spec.gpu is None or not spec.gpu.fabric_manager:  # no NVSwitch (or no GPUs): no fabric checks
        return []
    return [services.units_probe(spec), packages.dpkg_probe(spec)]


def evaluate(ctx: Context) -> None:
    if ctx.spec.gpu is None or not ctx.spec.gpu.fabric_manager:
        return
    _service(ctx)
    _version(ctx)
    _registration(ctx)


def _service(ctx: Context) -> None:
    desc = f"{FABRIC_MANAGER_UNIT} active"
    try:
        state = services.unit_state(ctx, FABRIC_MANAGER_UNIT)
    except Unreadable as why:
        ctx.unreadable("fabric.service", AREA, desc, "active", why.reason)
        return
    ctx.record("fabric.service", AREA, desc, "active", state.describe() if state else "absent",
               bool(state and state.running))


def _version(ctx: Context) -> None:
    driver = ctx.spec.need_driver().version
    name = fabric_manager_package(ctx.spec)
    desc = f"{name} at exactly the driver version"
    try:
        running = ctx.parsed(QUERY, parse_nvidia_smi_query).driver_version
        detail = "driver version as nvidia-smi reports it"
    except Unreadable:
        running, detail = driver, "nvidia-smi unreadable: compared with the spec's driver version"
    try:
        pkg = packages.installed(ctx, name)
    except Unreadable as why:
        ctx.unreadable("fabric.version", AREA, desc, running, why.reason)
        return
    found = pkg.version.split(":")[-1].rsplit("-", 1)[0] if pkg and pkg.installed else None
    ctx.record("fabric.version", AREA, desc, running, found or "not installed", found == running, detail)


def _registration(ctx: Context) -> None:
    expected = "Completed / Success"
    try:
        report = ctx.parsed(QUERY, parse_nvidia_smi_query)
    except Unreadable as why:
        ctx.unreadable("fabric.state", AREA, "NVLink fabric state of every GPU", expected, why.reason)
        return
    for index, gpu in enumerate(report.gpus):
        fab = gpu.fabric
        found = f"{fab.state} / {fab.status}" if fab else "no Fabric section"
        ctx.record(f"fabric.{index}.state", AREA, f"GPU {index} ({gpu.bus_id}) fabric registration",
                   expected, found, bool(fab and fab.completed))

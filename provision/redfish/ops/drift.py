"""Drift: the spec's figures compared with a node's observed inventory (the inventory's plan), one item per figure
with its verdict: ok, drift, or unknown where the BMC did not say."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from provision.redfish.ops.inventory import NodeInventory
from provision.redfish.resources import Drive
from provision.spec.acceptance import Comparison
from provision.spec.model import NodeSpec
from provision.spec.storage import Storage as StorageSpec

Verdict = Literal["ok", "drift", "unknown"]


class DriftItem(BaseModel):
    """One spec figure compared with what the BMC reports."""

    model_config = ConfigDict(frozen=True)

    key: str
    expected: str
    observed: str
    verdict: Verdict
    kind: Comparison = Comparison.EXACT
    """exact: observed must equal the spec; minimum: observed must be at least the spec."""


class DriftReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    items: list[DriftItem]

    @property
    def drifted(self) -> list[DriftItem]:
        return [i for i in self.items if i.verdict == "drift"]


def _norm(text: str | None) -> str:
    t = re.sub(r"\((r|tm)\)", "", (text or "").lower())
    t = re.sub(r"\b(cpu|processor|nvidia)\b|@.*$", " ", t)
    return " ".join(t.split())


def _holds(kind: Comparison, value: float, want: float) -> bool:
    return value >= want if kind == Comparison.MINIMUM else value == want


def _item(key: str, kind: Comparison, want: object, observed: object, ok: bool | None) -> DriftItem:
    verdict: Verdict = "unknown" if ok is None else ("ok" if ok else "drift")
    expected = f">= {want}" if kind == Comparison.MINIMUM else str(want)
    return DriftItem(key=key, expected=expected, observed=str(observed), verdict=verdict, kind=kind)


def _expected(spec: NodeSpec, key: str, want: object) -> str:
    return f">= {want}" if spec.comparison(key) == Comparison.MINIMUM else str(want)


def _figure(spec: NodeSpec, key: str, want: float, values: list[float | None]) -> DriftItem:
    """A per-part figure (DIMM size, PSU watts): every part that reports it must hold; unknown if none does."""
    kind = spec.comparison(key)
    known = [v for v in values if v is not None]
    ok = all(_holds(kind, v, want) for v in known) if known else None
    return _item(key, kind, want, sorted(set(known)), ok)


def _count(spec: NodeSpec, key: str, want: int, seen: int, known: bool = True) -> DriftItem:
    kind = spec.comparison(key)
    return _item(key, kind, want, seen, _holds(kind, seen, want) if known else None)


def _span(spec: NodeSpec, key: str, want: int, known: int, maybe: int, observed: str, seen: bool = True,
          kind: Comparison | None = None) -> DriftItem:
    """A count of which `known` parts are certain and up to `maybe` more may be (a drive whose protocol, a port
    whose technology, the BMC does not state): ok or drift only where every possibility agrees, else unknown
    (and unknown when the BMC showed nothing to count, `seen` False)."""
    kind = kind or spec.comparison(key)
    if kind == Comparison.MINIMUM:
        ok: bool | None = True if known >= want else (False if known + maybe < want else None)
    else:
        ok = (known == want) if maybe == 0 else (False if known > want or known + maybe < want else None)
    return _item(key, kind, want, observed, ok if seen else None)


def _maybe(known: int, maybe: int, what: str) -> str:
    """"3" or "3 (+ 8 of unknown protocol)": how many are certain, and how many more might be."""
    return str(known) if not maybe else f"{known} (+ {maybe} of unknown {what})"


def _text(key: str, want: str, seen: list[str | None], same: Callable[[str, str], bool]) -> DriftItem:
    known = [x for x in seen if x]
    if any(not same(want, x) for x in known):
        ok: bool | None = False
    else:
        ok = True if seen and len(known) == len(seen) else None
    shown = ", ".join(sorted({x or "?" for x in seen}))
    return _item(key, Comparison.EXACT, want, shown, ok)


def drift(spec: NodeSpec, inv: NodeInventory) -> DriftReport:
    """Pure: compare spec and inventory figure by figure (unknown where the BMC does not say), each figure as
    exact or as a minimum (spec.comparison). A figure read from a place the BMC did not give (a collection
    answered 5xx or malformed JSON, or paging that loops) is unknown, naming that URI: counted from part of the
    hardware, it is neither ok nor drift."""
    items = _cpu_drift(spec, inv) + _memory_drift(spec, inv) + _gpu_drift(spec, inv)
    items += _storage_drift(spec, inv) + _network_drift(spec, inv) + _power_drift(spec, inv)
    holes = _holes(inv)
    out = []
    for item in items:
        uris = holes.get(item.key.split(".", 1)[0])
        if uris:
            item = item.model_copy(update={"verdict": "unknown",
                                           "observed": f"{item.observed} (unreadable: {', '.join(uris)})"})
        out.append(item)
    return DriftReport(items=out)


_AREAS: dict[str, frozenset[str]] = {  # the URI segments each drift area is read from
    "cpu": frozenset({"Processors"}),
    "gpu": frozenset({"Processors", "PCIeDevices", "PCIeFunctions"}),
    "memory": frozenset({"Memory"}),
    "storage": frozenset({"Storage", "Drives", "SimpleStorage"}),
    "network": frozenset({"NetworkAdapters", "Ports", "NetworkPorts"}),
    "power": frozenset({"Power", "PowerSubsystem", "PowerSupplies"}),
}
_CHASSIS_AREAS = ("gpu", "storage", "network", "power")


def _holes(inv: NodeInventory) -> dict[str, list[str]]:
    """Drift area -> the unreadable URIs its figures were read from (a whole system: every area; a whole
    chassis: what chassis hold)."""
    out: dict[str, list[str]] = {}
    for u in inv.unreadable:
        parts = u.uri.rstrip("/").split("/")
        tail = parts[3:] if parts[:3] == ["", "redfish", "v1"] else parts
        if tail[:1] == ["Systems"] and len(tail) <= 2:
            areas: tuple[str, ...] = tuple(_AREAS)
        elif tail[:1] == ["Chassis"] and len(tail) <= 2:
            areas = _CHASSIS_AREAS
        else:
            areas = tuple(a for a, segs in _AREAS.items() if segs & set(tail))
        for area in areas:
            out.setdefault(area, []).append(u.uri)
    return out


def _cpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """A CPU whose BMC gives no Model shows its ProcessorId identity and makes the model unknown, not "?"."""
    cores = [c.total_cores for c in inv.cpus]
    model = _text("cpu.model", spec.cpu.model, [c.model for c in inv.cpus], lambda a, b: _norm(a) == _norm(b))
    unnamed = sorted({c.identity for c in inv.cpus if not c.model and c.identity})
    if unnamed:
        named = sorted({c.model for c in inv.cpus if c.model})
        model = model.model_copy(update={"observed": ", ".join(named + [f"{u} (ProcessorId)" for u in unnamed])})
    return [
        model,
        _count(spec, "cpu.sockets", spec.cpu.sockets, len(inv.cpus)),
        _figure(spec, "cpu.cores_per_socket", spec.cpu.cores_per_socket, [float(c) if c else None for c in cores]),
    ]


def _memory_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    dimms = [m for m in inv.memory if m.populated]
    sizes = [round((m.capacity_mib or 0) / 1024) for m in dimms]
    total = sum(sizes)
    return [
        _count(spec, "memory.dimm_count", spec.memory.dimm_count, len(dimms)),
        _figure(spec, "memory.dimm_size_gb", spec.memory.dimm_size_gb, [float(x) for x in sizes]),
        _count(spec, "memory.total_gb", spec.memory.total_gb, total),
        _text("memory.type", spec.memory.type, [m.memory_device_type for m in dimms] if dimms else [],
              lambda a, b: a.upper() == b.upper()),
    ]


def _gpu_match(want: str, seen: str) -> bool:
    a, b = _norm(want), _norm(seen)
    return bool(b) and (b in a or a in b)


def shown(names: list[str | None]) -> str:
    """What the BMC lists, counted by name: "8 x NVIDIA H100 80GB HBM3", "2 x ?, 1 x ConnectX-7", "0"."""
    if not names:
        return "0"
    counts: dict[str, int] = {}
    for n in names:
        counts[n or "?"] = counts.get(n or "?", 0) + 1
    return ", ".join(f"{c} x {n}" for n, c in sorted(counts.items()))


def _absent(key: str, section: str, seen: int, observed: str, known: bool = True) -> DriftItem:
    """A figure of an optional section the spec does not have: it expects none of that hardware, exactly (a
    `comparisons:` minimum would make 0 hold for anything), and drifts when the BMC shows some."""
    return _item(key, Comparison.EXACT, f"0 (no {section} section)", observed, seen == 0 if known else None)


def _gpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    if spec.gpu is None:  # no gpu section: no GPU expected, so every GPU the BMC lists is drift
        return [_absent("gpu.count", "gpu", len(inv.gpus), shown([g.model for g in inv.gpus]))]
    gpu = spec.gpu
    mems = [None if g.memory_gib is None else float(round(g.memory_gib)) for g in inv.gpus]
    return [
        _count(spec, "gpu.count", gpu.count, len(inv.gpus)),
        _text("gpu.model", gpu.model, [g.model for g in inv.gpus], _gpu_match),
        _figure(spec, "gpu.memory_gb", gpu.memory_gb, mems),
    ]


def _near(tb: float | None, want: float) -> bool:
    return tb is not None and abs(tb - want) <= 0.1 * want


def _storage_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    return _nvme_drift(spec, inv) + _sas_sata_drift(spec, inv)


def _sas_sata_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """Without a storage.jbod section the only SAS/SATA drives expected are SAS/SATA boot drives: any other the
    BMC lists (a JBOD, a disk left in a bay) is drift, held exactly as every absent section is; a drive of unknown
    protocol may be one, so it makes the figure unknown unless the known ones already drift."""
    st = spec.storage
    if st.jbod is not None:
        return []
    seen = [d for d in inv.drives if (d.protocol or "").upper() in ("SAS", "SATA")]
    unknown = [d for d in inv.drives if not d.protocol_known]
    boot = st.boot.count if st.boot.interface in ("sas", "sata") else 0
    expected = f"{boot} ({'the SAS/SATA boot drives only: ' if boot else ''}no storage.jbod section)"
    observed = shown([f"{d.protocol.upper() if d.protocol else '?'} {d.model or '?'}" for d in seen])
    if unknown:
        observed += f" (+ {len(unknown)} of unknown protocol)"
    item = _span(spec, "storage.sas_sata_drives", boot, len(seen), len(unknown), observed, kind=Comparison.EXACT)
    return [item.model_copy(update={"expected": expected})]


def _sized(drives: list[Drive], *sizes: float) -> list[Drive]:
    return [d for d in drives if any(_near(d.capacity_tb, s) for s in sizes)]


def _nvme_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """NVMe drives counted as the BMC states their protocol; a drive whose protocol it does not state may be one
    (counted as "unknown protocol"), so it can leave a figure unknown, never make it hold."""
    nvme = [d for d in inv.drives if d.is_nvme]
    unknown = [d for d in inv.drives if not d.protocol_known]
    sized = bool([d for d in nvme + unknown if d.capacity_tb])
    st = spec.storage

    def role(key: str, want: int, *sizes: float) -> DriftItem:
        known, maybe = len(_sized(nvme, *sizes)), len(_sized(unknown, *sizes))
        return _span(spec, key, want, known, maybe, _maybe(known, maybe, "protocol"), sized)

    total = _maybe(len(nvme), len(unknown), "protocol")
    if st.scratch is None:  # boot drives only: every NVMe drive the BMC lists is one, any more is drift
        return [
            _span(spec, "storage.nvme_drives", st.boot.count, len(nvme), len(unknown), total).model_copy(
                update={"expected": f"{_expected(spec, 'storage.nvme_drives', st.boot.count)} "
                                    "(boot only: no storage.scratch section)"}),
            role("storage.boot.count", st.boot.count, st.boot.size_tb).model_copy(
                update={"expected": f"{st.boot.count} x {st.boot.size_tb} TB"}),
        ]
    boot_sizes: tuple[float, ...] = (st.boot.size_tb,)
    scratch_sizes: tuple[float, ...] = (st.scratch.size_tb,)
    want_boot, want_scratch = st.boot.count, st.scratch.count
    if _near(st.boot.size_tb, st.scratch.size_tb) or _near(st.scratch.size_tb, st.boot.size_tb):
        # One drive size for both roles (e.g. eight 7.68 TB U.2 drives, two of them the RAID1 boot pair): the
        # BMC cannot tell a boot drive from a scratch drive, so both roles are held against the drives of that
        # size together, never each against all of them.
        boot_sizes = scratch_sizes = (st.boot.size_tb, st.scratch.size_tb)
        want_boot = want_scratch = st.boot.count + st.scratch.count
    return [
        _span(spec, "storage.nvme_drives", st.boot.count + st.scratch.count, len(nvme), len(unknown), total),
        role("storage.boot.count", want_boot, *boot_sizes).model_copy(
            update={"expected": _roles(st, want_boot != st.boot.count, f"{st.boot.count} x {st.boot.size_tb} TB")}),
        role("storage.scratch.count", want_scratch, *scratch_sizes).model_copy(
            update={"expected": _roles(st, want_scratch != st.scratch.count,
                                       f"{st.scratch.count} x {st.scratch.size_tb} TB")}),
    ]


def _roles(st: StorageSpec, shared: bool, own: str) -> str:
    """The expected text: the role's own drives, or both roles' when they share one drive size."""
    if not shared or st.scratch is None:
        return own
    return (f"{st.boot.count} x {st.boot.size_tb} TB boot + {st.scratch.count} x {st.scratch.size_tb} TB scratch "
            "(one drive size: counted together)")


def _network_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """NIC ports by the technology each states; a port that states none is unknown and may be either, so the
    figures say how many are unknown ("1 (Ethernet 1, InfiniBand 1, unknown 8)") and hold only where every
    possibility agrees. A BMC that lists no port at all leaves both unknown."""
    t = inv.ports
    seen = t.total > 0

    def shown_as(n: int) -> str:
        return str(n) if not t.unknown and seen else f"{n} ({t.shown() if seen else 'the BMC lists no NIC port'})"

    eth = _span(spec, "network.ethernet.count", spec.network.ethernet.count, t.ethernet, t.unknown,
                shown_as(t.ethernet), seen)
    if spec.network.infiniband is None:  # no InfiniBand expected: every IB port the BMC lists is drift
        ib = [a for a in inv.adapters if a.port_tally.infiniband]
        observed = shown([a.adapter.model for a in ib]) if ib else "0"
        if t.unknown or not seen:
            observed += f" ({t.shown() if seen else 'the BMC lists no NIC port'})"
        item = _span(spec, "network.infiniband.count", 0, t.infiniband, t.unknown, observed, seen,
                     kind=Comparison.EXACT)
        return [eth, item.model_copy(update={"expected": "0 (no network.infiniband section)"})]
    return [eth, _span(spec, "network.infiniband.count", spec.network.infiniband.count, t.infiniband, t.unknown,
                       shown_as(t.infiniband), seen)]


def _power_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    psus = [p for pw in inv.power for p in pw.power_supplies if p.present]
    watts = [None if p.power_capacity_watts is None else float(int(p.power_capacity_watts)) for p in psus]
    return [
        _count(spec, "power.psu_count", spec.power.psu_count, len(psus), bool(inv.power)),
        _figure(spec, "power.psu_watts", spec.power.psu_watts, watts),
    ]

"""BIOS: observe current + pending + registry; plan the changes the spec needs (pure, validated);
apply them to the pending resource; verify after the host reset."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InputError
from provision.redfish.errors import RedfishOperationFailed
from provision.redfish.ops.bios_registry import check_value, fetch_registry, forced_value, locked_by
from provision.redfish.ops.session import Node
from provision.redfish.resources import AttributeRegistry, Bios, ComputerSystem
from provision.redfish.resources.bios import AttrValue
from provision.redfish.vendors import VendorPlugin
from provision.redfish.vendors.base import BiosProof
from provision.redfish.vendors.bios_names import AmbiguousBiosKey
from provision.spec.firmware import Bios as BiosSpec


class BiosValidationError(InputError):
    """The spec asks for BIOS values this BMC's registry refuses; nothing was sent."""


class BiosState(BaseModel):
    """What observe() read."""

    model_config = ConfigDict(frozen=True)

    current: Bios
    pending: dict[str, AttrValue]
    """Values waiting in the pending resource that differ from current."""
    pending_uri: str
    registry: AttributeRegistry
    system: ComputerSystem | None = None
    """The ComputerSystem, for settings a vendor plugin proves without a BIOS attribute."""


class BiosChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    """Neutral key (e.g. sriov) or vendor:<attribute> for raw vendor attributes."""
    attribute: str
    current: AttrValue
    target: AttrValue
    pending: bool = False
    """Already written to the pending resource; waits for the host reset."""


class BiosPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    vendor: str
    pending_uri: str
    changes: list[BiosChange] = Field(default_factory=list)
    invalid: list[str] = Field(default_factory=list)
    unmapped: list[str] = Field(default_factory=list)
    """Neutral keys with no attribute on this BIOS and no other evidence: they could not be checked."""
    proven: list[BiosProof] = Field(default_factory=list)
    """Keys with no BIOS attribute judged from other evidence (a vendor plugin's prove_bios)."""
    forced: list[str] = Field(default_factory=list)
    """Attributes a registry dependency sets to the wanted value (and locks) once the planned changes
    apply (an HPE WorkloadProfile sets NumaGroupSizeOpt): nothing to write, not a refusal."""
    found: list[str] = Field(default_factory=list)
    """Keys no plugin table names, found through the registry, with what they were found by (for an operator
    to check): "numa -> NumaEn (registry: DisplayName 'NUMA')"."""
    apply_time: str | None = None
    registry: str = ""

    @property
    def unmet(self) -> list[BiosProof]:
        """Proven keys whose evidence contradicts the spec (no attribute to change them with)."""
        return [p for p in self.proven if not p.holds]

    @property
    def differs(self) -> bool:
        """Something differs from the spec or is refused (the BIOS does not match)."""
        return bool(self.changes or self.invalid or self.unmet)

    def problems(self) -> list[str]:
        """One line per spec key that could not be checked (never reported as matching)."""
        return [f"BIOS {key}: no attribute on this {self.vendor} BIOS and no other evidence: could not check"
                for key in self.unmapped]

    @property
    def writes(self) -> dict[str, AttrValue]:
        return {c.attribute: c.target for c in self.changes if not c.pending}

    @property
    def needs_reset(self) -> bool:
        return bool(self.changes)


def observe(node: Node) -> BiosState:
    conn = node.conn
    link = conn.get(node.system.uri).get("Bios") or {}
    if not link.get("@odata.id"):
        raise RedfishOperationFailed(f"{conn.opts.where}: the system has no Bios resource")
    current = Bios.parse(conn.get(str(link["@odata.id"])))
    pending_uri = node.vendor.pending_uri(current)
    staged = Bios.parse(conn.get_optional(pending_uri) or {}).attributes
    pending = {k: v for k, v in staged.items() if current.attributes.get(k) != v}
    return BiosState(current=current, pending=pending, pending_uri=pending_uri,
                     registry=fetch_registry(conn, current), system=node.system)


class _Keys(BaseModel):
    """Where each neutral key of the spec landed on this BIOS (see plan)."""

    targets: dict[str, tuple[str, AttrValue]] = Field(default_factory=dict)  # attribute -> (key, value)
    unmapped: list[str] = Field(default_factory=list)
    proven: list[BiosProof] = Field(default_factory=list)
    found: list[str] = Field(default_factory=list)
    ambiguous: list[str] = Field(default_factory=list)


def _resolve_keys(spec: BiosSpec, state: BiosState, vendor: VendorPlugin, registry: AttributeRegistry) -> _Keys:
    """Each neutral key to its attribute (plugin table, then registry names), or its proof, or unmapped. A key
    several registry attributes fit is an error unless bios.vendor_attributes names exactly one of them."""
    out = _Keys()
    named = spec.vendor_attributes.get(vendor.name, {})
    for key, wanted in sorted(spec.settings.items()):
        try:
            t = vendor.resolve_bios(key, wanted, state.current.attributes, registry)
        except AmbiguousBiosKey as exc:
            meant = [c for c in exc.candidates if c in named]
            if len(meant) == 1:  # the operator named the one meant: that vendor attribute stands for the key
                out.found.append(f"{key} -> {meant[0]} (bios.vendor_attributes.{vendor.name})")
            else:
                out.ambiguous.append(str(exc))
            continue
        if t is not None:
            out.targets[t.attribute] = (key, t.value)
            if t.via:
                out.found.append(f"{key} -> {t.attribute} ({t.via})")
            continue
        proof = vendor.prove_bios(key, wanted, state.system) if state.system is not None else None
        if proof is None:
            out.unmapped.append(key)
        else:
            out.proven.append(proof)
    for attr, raw in sorted(named.items()):
        out.targets[attr] = (f"vendor:{attr}", registry.spelling(attr, raw))
    return out


def plan(spec: BiosSpec, state: BiosState, vendor: VendorPlugin) -> BiosPlan:
    """Pure: every attribute whose current value differs from the spec, validated against the registry."""
    cur = state.current.attributes
    registry = vendor.bios_registry(state.registry, cur)  # values spelt as this BIOS's attributes are
    keys = _resolve_keys(spec, state, vendor, registry)
    targets = keys.targets
    after = {**cur, **{a: v for a, (_, v) in targets.items()}}
    changes, invalid, forced_lines = [], list(keys.ambiguous), []
    for attr, (key, value) in targets.items():
        dep = locked_by(registry, attr, after)
        forced, to = forced_value(registry, attr, after) if dep else (False, None)
        if forced and to == value:  # the planned changes set it themselves (an HPE WorkloadProfile)
            if cur.get(attr) != value:
                forced_lines.append(f"{key} -> {attr}={value!r}: set by the registry when {dep}")
            continue
        if cur.get(attr) == value and not forced:
            continue
        lock = f"set to {to!r} and locked read-only by dependency ({dep})" if forced else \
            f"locked read-only by dependency ({dep})" if dep else None
        why = check_value(registry, attr, value) or lock
        if why:
            invalid.append(f"{key} -> {attr}={value!r}: {why}")
            continue
        changes.append(BiosChange(key=key, attribute=attr, current=cur.get(attr), target=value,
                                  pending=state.pending.get(attr) == value))
    apply_time = "OnReset" if "OnReset" in state.current.supported_apply_times else None
    return BiosPlan(vendor=vendor.name, pending_uri=state.pending_uri, changes=changes, invalid=invalid,
                    unmapped=keys.unmapped, proven=keys.proven, forced=forced_lines, found=keys.found,
                    apply_time=apply_time,
                    registry="inferred from current values" if state.registry.inferred else state.registry.id)


def apply(node: Node, plan: BiosPlan) -> list[str]:
    """Write the changes not yet pending to the pending resource; returns the attributes written."""
    if plan.invalid:
        raise BiosValidationError(
            f"{node.conn.opts.where}: BIOS values refused by the attribute registry, nothing sent: "
            + "; ".join(plan.invalid))
    writes = plan.writes
    if not writes:
        return []
    body: dict[str, object] = {"Attributes": writes}
    if plan.apply_time:
        body["@Redfish.SettingsApplyTime"] = {"ApplyTime": plan.apply_time}
    node.conn.patch(plan.pending_uri, body)
    return sorted(writes)


def verify(node: Node, plan: BiosPlan) -> None:
    """After the host reset: every planned attribute must be current; else an error naming them."""
    if not plan.changes:
        return
    now = observe(node).current.attributes
    stuck = [f"{c.attribute} ({c.key}) is {now.get(c.attribute)!r}, wants {c.target!r}"
             for c in plan.changes if now.get(c.attribute) != c.target]
    if stuck:
        raise RedfishOperationFailed(
            f"{node.conn.opts.where}: BIOS settings still pending after the host reset: " + "; ".join(stuck))

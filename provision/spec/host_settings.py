"""A host's settings beside its spec and endpoints, from its inventory variables: the lab declaration (waivers,
stand-ins, notice), the rack and the racks' budgets, Slurm settings and the identity enroll recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from provision.errors import InventoryError
from provision.spec.ansible_inventory import as_model, plain_data
from provision.spec.fleet import HostEntry, LabDeclaration, Rack, RecordedIdentity, Waiver
from provision.spec.slurm import SLURM_VAR, SlurmSettings
from provision.spec.validation import describe

LAB_VAR = "provision_lab"
WAIVERS_VAR = "provision_lab_waivers"
STANDINS_VAR = "provision_lab_standins"
NOTICE_VAR = "provision_lab_notice"
RACK_VAR = "provision_rack"
RACKS_VAR = "provision_racks"


IDENTITY_VAR = "provision_bmc_identity"


def recorded_identity(inventory: Path, host: str, hv: dict[str, Any]) -> RecordedIdentity | None:
    """`provision_bmc_identity` (what enroll recorded), None when unset."""
    raw = hv.get(IDENTITY_VAR)
    if raw is None:
        return None
    return as_model(RecordedIdentity, raw, f"{inventory}: host {host}", IDENTITY_VAR, InventoryError)


def rack_of(inventory: Path, host: str, hv: dict[str, Any]) -> str | None:
    """`provision_rack`: the name of the rack the host sits in (a string), or None when unset."""
    raw = hv.get(RACK_VAR)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise InventoryError(f"{inventory}: host {host}: {RACK_VAR}: must be a rack name (got {raw!r})")
    return raw.strip()


def inventory_racks(inventory: Path, hosts_vars: dict[str, tuple[tuple[str, ...], dict[str, Any]]]) -> dict[str, Rack]:
    """`provision_racks` (rack name -> {power_budget_w}) as every host sees it; one rack given two budgets
    (by two groups' vars) is refused."""
    racks: dict[str, tuple[Rack, str]] = {}
    for host, (_groups, hv) in hosts_vars.items():
        raw = hv.get(RACKS_VAR)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise InventoryError(f"{inventory}: host {host}: {RACKS_VAR}: must be a mapping of rack name -> "
                                 "{power_budget_w: W}")
        for name, body in raw.items():
            try:
                rack = Rack.model_validate(plain_data(body))
            except ValidationError as exc:
                raise InventoryError(f"{inventory}: host {host}: {describe(exc, f'{RACKS_VAR}.{name}')}") from None
            seen = racks.get(str(name))
            if seen is not None and seen[0] != rack:
                raise InventoryError(f"{inventory}: {RACKS_VAR}.{name}: hosts {seen[1]} and {host} see different "
                                     f"budgets ({seen[0].power_budget_w} W, {rack.power_budget_w} W)")
            racks.setdefault(str(name), (rack, host))
    return {name: rack for name, (rack, _host) in sorted(racks.items())}


def refuse_unknown_racks(inventory: Path, entries: dict[str, HostEntry], racks: dict[str, Rack]) -> None:
    for name, entry in entries.items():
        if entry.rack is not None and entry.rack not in racks:
            known = ", ".join(racks) or "none"
            raise InventoryError(f"{inventory}: host {name}: {RACK_VAR}: rack {entry.rack!r} has no entry in "
                                 f"{RACKS_VAR} (known: {known})")


def slurm_settings(inventory: Path, host: str, hv: dict[str, Any]) -> SlurmSettings | None:
    """`provision_slurm` (a mapping, see SlurmSettings) of one host, or None when unset."""
    raw = hv.get(SLURM_VAR)
    if raw is None:
        return None
    return as_model(SlurmSettings, raw, f"{inventory}: host {host}", SLURM_VAR, InventoryError,
                      " (drain_on_fail, scontrol, ...)")


def lab_declaration(inventory: Path, host: str, hv: dict[str, Any]) -> LabDeclaration:
    """`provision_lab` (a bool) and `provision_lab_waivers` (check id or pattern -> reason) of one host."""
    lab = hv.get(LAB_VAR, False)
    if not isinstance(lab, bool):
        raise InventoryError(f"{inventory}: host {host}: {LAB_VAR}: must be true or false (got {lab!r})")
    standins = _lab_standins(inventory, host, hv, lab)
    notice = _lab_notice(inventory, host, hv, lab)
    raw = hv.get(WAIVERS_VAR)
    if raw is None:
        return LabDeclaration(lab=lab, standins=standins, notice=notice)
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR} is set but {LAB_VAR} is not true "
                             "(waivers are for declared lab hosts)")
    if not isinstance(raw, dict):
        raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR}: must be a mapping of check id -> reason")
    waivers = []
    for pattern, reason in raw.items():
        if not isinstance(reason, str) or not reason.strip():
            raise InventoryError(f"{inventory}: host {host}: {WAIVERS_VAR}.{pattern}: needs a reason (a string)")
        try:
            waivers.append(Waiver(pattern=str(pattern), reason=str(reason)))
        except ValidationError as exc:
            raise InventoryError(f"{inventory}: host {host}: {describe(exc, WAIVERS_VAR)}") from None
    return LabDeclaration(lab=True, waivers=tuple(waivers), standins=standins, notice=notice)


def _lab_notice(inventory: Path, host: str, hv: dict[str, Any], lab: bool) -> str:
    """`provision_lab_notice`: the one line a declared lab host's reports show beside its results."""
    raw = hv.get(NOTICE_VAR)
    if raw is None:
        return ""
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {NOTICE_VAR} is set but {LAB_VAR} is not true")
    if not isinstance(raw, str) or not raw.strip() or "\n" in raw.strip():
        raise InventoryError(f"{inventory}: host {host}: {NOTICE_VAR}: must be one line of text")
    return raw.strip()


def _lab_standins(inventory: Path, host: str, hv: dict[str, Any], lab: bool) -> tuple[str, ...]:
    """`provision_lab_standins`: the names of a declared lab host's stand-in tools (a list of strings)."""
    raw = hv.get(STANDINS_VAR)
    if raw is None:
        return ()
    if not lab:
        raise InventoryError(f"{inventory}: host {host}: {STANDINS_VAR} is set but {LAB_VAR} is not true")
    if not isinstance(raw, list) or not all(isinstance(t, str) and t for t in raw):
        raise InventoryError(f"{inventory}: host {host}: {STANDINS_VAR}: must be a list of tool names")
    return tuple(sorted(raw))

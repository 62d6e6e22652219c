"""Glue for the CLI: resolve CAMPAIGN (a file or a name), the targets, the controller's liveness."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from provision.campaign.catalog import Catalog, file_digest, load_catalog
from provision.campaign.updater import Target
from provision.errors import InputError
from provision.journal.campaigns import CampaignRecord, CampaignStore
from provision.spec.fleet import Fleet


@dataclass(frozen=True)
class Resolved:
    catalog: Catalog
    source: Path
    record: CampaignRecord | None


def resolve(store: CampaignStore, campaign: str) -> Resolved:
    """CAMPAIGN is a campaign file, or the name of a campaign in the journal (its file is re-read)."""
    path = Path(campaign)
    if path.suffix in (".yml", ".yaml") or path.is_file():
        catalog = load_catalog(path)
        return Resolved(catalog, path.resolve(), store.find(catalog.name))
    record = store.find(campaign)
    if record is None:
        raise InputError(f"{campaign}: neither a campaign file nor a campaign in {store.journal.where}")
    return Resolved(load_catalog(Path(record.source)), Path(record.source), record)


def check_unchanged(resolved: Resolved) -> None:
    """The baseline must not change under a running campaign: refuse a file edited since start."""
    if resolved.record is not None and file_digest(resolved.source) != resolved.record.digest:
        raise InputError(
            f"{resolved.source}: changed since campaign {resolved.record.name} started; "
            "start a new campaign under a new name for a new baseline"
        )


def targets(fleet: Fleet, catalog: Catalog, limit: str | None = None) -> dict[str, Target]:
    """The campaign's hosts: its targets section (host patterns and/or a group), narrowed by --limit (a host
    pattern, as everywhere: see provision/spec/patterns.py)."""
    hosts = fleet.select(target_pattern(catalog), limit)
    return {h.name: Target(name=h.name, bmc=h.bmc) for h in hosts}


def target_pattern(catalog: Catalog) -> list[str]:
    """The targets section as one host pattern: `hosts` (each a pattern), and with a `group` only those in it."""
    wanted, group = list(catalog.targets.hosts), catalog.targets.group
    if group:
        wanted = [*wanted, f"&{group}"] if wanted else [group]
    return wanted or ["all"]


def planned_targets(fleet: Fleet, store: CampaignStore, name: str) -> dict[str, Target]:
    """The hosts recorded in the campaign's waves, and those it has not planned yet (CampaignRecord.unplanned)
    (those gone from the inventory are the engine's to refuse)."""
    planned = {n.node for n in store.nodes(name)} | set(store.get(name).unplanned)
    return {h.name: Target(name=h.name, bmc=h.bmc) for h in fleet.hosts.values() if h.name in planned}


def controller_alive(record: CampaignRecord) -> bool:
    """Is the process recorded as driving the campaign still running (on this machine)?"""
    if record.pid is None or record.pid == os.getpid():
        return False
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _is_provision(record.pid)


def _is_provision(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"provision" in cmdline or b"campaign" in cmdline

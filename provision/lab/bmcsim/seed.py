"""Build the shared seed of a tree once per (tree, mode, parts) and describe where things live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provision.lab.bmcsim import capture, fill, links, synth
from provision.lab.bmcsim.bios import BiosLayout, layout
from provision.lab.bmcsim.config import Parts
from provision.lab.bmcsim.tree import ROOT, SeedTree


@dataclass(frozen=True, slots=True)
class Seed:
    tree: SeedTree
    systems: tuple[str, ...]
    managers: tuple[str, ...]
    sel_service: str
    bios: dict[str, BiosLayout]
    push_uri: str | None
    multipart_uri: str | None
    invented: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # what the capture holds that is served as captured, by file
    accounts: str = synth.accounts.ACCOUNTS  # the Accounts collection each BMC's accounts join
    accounts_own: bool = True  # it is the simulator's (member 1 a placeholder), not a captured one
    https_certs: str | None = None  # the manager's HTTPS certificate collection (CertificateService), if any


_CACHE: dict[tuple[str, bool, Parts], Seed] = {}


def get_seed(tree_dir: Path, as_captured: bool, parts: Parts) -> Seed:
    key = (str(tree_dir.resolve()), as_captured, parts)
    if key not in _CACHE:
        _CACHE[key] = build(tree_dir, as_captured, parts)
    return _CACHE[key]


def build(tree_dir: Path, as_captured: bool, parts: Parts) -> Seed:
    cap = capture.load(tree_dir)
    res = cap.resources
    invented = synth.add_services(res)
    if not as_captured:
        cap.raw.pop(f"{ROOT}/$metadata", None)  # the filled tree has types the captured one lacks
        invented += fill.complete(res, parts)
        invented += synth.add_virtual_media(res)
        invented += synth.add_certificates(res)
        invented += links.bios_registry(res)
        invented += links.fill_dangling(res)
        synth.manager_network(res)
    before = set(res)
    accounts, accounts_own = synth.accounts_collection(res, invented)
    sel = synth.sel_service(res)
    invented += sorted(set(res) - before)
    tree = SeedTree(tree_dir.name, res, cap.raw, cap.headers, cap.source if as_captured else None)
    systems = tuple(_members(tree, f"{ROOT}/Systems"))
    lays = {s: lay for s in systems if (lay := layout(tree, s)) is not None}
    upd = tree.get(f"{ROOT}/UpdateService") or {}
    return Seed(
        tree=tree, systems=systems, managers=tuple(_members(tree, f"{ROOT}/Managers")), sel_service=sel,
        bios=lays, push_uri=_uri(upd.get("HttpPushUri")), multipart_uri=_uri(upd.get("MultipartHttpPushUri")),
        invented=tuple(invented), warnings=tuple(cap.warnings), accounts=accounts, accounts_own=accounts_own,
        https_certs=synth.https_certificates(res),
    )


def _uri(value: object) -> str | None:
    return str(value).rstrip("/") if isinstance(value, str) and value else None


def _members(tree: SeedTree, coll: str) -> list[str]:
    return [str(m.get("@odata.id", "")).rstrip("/") for m in (tree.get(coll) or {}).get("Members", [])
            if tree.get(str(m.get("@odata.id", "")).rstrip("/")) is not None]

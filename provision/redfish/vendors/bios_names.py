"""Neutral BIOS keys found through the BIOS's own AttributeRegistry, after the vendor plugin's tables.

A DMTF AttributeRegistry names each attribute (`AttributeName`, what Bios.Attributes holds) and says what a
person reads in BIOS setup (`DisplayName`). A BIOS no plugin table knows (an AMI Aptio build of an ODM board:
`NumaEn` "NUMA", `VTdSupport` "Intel VT for Directed I/O (VT-d)") still names its settings the way every
vendor's setup does; this table holds those names, per neutral key:

- `names`: AttributeName patterns (a whole name, case-insensitive);
- `displays`: DisplayName patterns (the whole display name, case-insensitive, after dropping (R)/(TM)/®/™ and
  folding white space).

Sources: the captured registries (tests/fixtures/redfish/, PROVENANCE.md: Supermicro X13 AMI BIOS, Dell R750,
Lenovo XCC UEFI, HPE A42 ROM, NVIDIA BlueField DPU) and the vendors' published BIOS setup guides (Intel's
reference BIOS knobs `NumaEn`, `VTdSupport`, `SncEn`, `TurboMode`, `PCIeSRIOVSupport` as AMI Aptio builds
expose them; Dell's `SriovGlobalEnable`, `LogicalProc`, `MmioAbove4Gb`, `ProcTurboMode`).

Every attribute that fits a key's patterns is a candidate: one is the match (shown with the name or display
name it was found by, so an operator can check it); two or more are an error naming the key and every
candidate, never a guess. A table here is vendor-neutral on purpose: a vendor's own names belong in its
plugin's `bios_patterns`, which are tried first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from provision.errors import InputError
from provision.redfish.resources import AttributeRegistry

_TRADEMARKS = re.compile(r"\((?:R|TM)\)|[®™]", re.IGNORECASE)


@dataclass(frozen=True)
class RegistryNames:
    """How one neutral key's attribute is named in registries: AttributeName and DisplayName patterns."""

    names: tuple[str, ...] = ()
    displays: tuple[str, ...] = ()


REGISTRY_NAMES: dict[str, RegistryNames] = {
    "numa": RegistryNames(
        names=(r"Numa", r"NumaEn", r"NumaEnabled?", r"NumaSupport"),
        displays=(r"NUMA", r"NUMA (Support|Enabled?|Optimized)"),
    ),
    "iommu": RegistryNames(
        names=(r"VTdSupport", r"VTd", r"IntelVTd", r"Iommu", r"AmdIommu", r"IommuSupport", r"EnableSMMU", r"Smmu"),
        displays=(r"(Intel )?VT-?d( Support)?", r"(Intel )?VT for Directed I/O( \(VT-d\))?",
                  r"(AMD )?IOMMU( Support)?", r"(AMD )?I/O Virtuali[sz]ation Technology", r"(Enable )?SMMU"),
    ),
    "sriov": RegistryNames(
        names=(r"Sriov", r"SriovSupport", r"SriovEnable", r"SriovGlobalEnable", r"PcieSriovSupport"),
        displays=(r"(PCIe )?SR-?IOV( Support)?", r"SR-?IOV Global Enable"),
    ),
    "turbo": RegistryNames(
        names=(r"TurboMode", r"Turbo", r"TurboBoost", r"ProcTurbo(Mode)?", r"CorePerformanceBoost"),
        displays=(r"Turbo( Mode)?", r"(Intel )?Turbo Boost( Technology)?", r"(AMD )?Core Performance Boost"),
    ),
    "hyperthreading": RegistryNames(
        names=(r"HyperThreading", r"ProcHyperthreading", r"LogicalProc", r"Smt", r"SmtMode", r"ProcSmt"),
        displays=(r"(Intel )?Hyper-?Threading( Technology)?( \[ALL\])?", r"Logical Processors?",
                  r"(AMD )?SMT( Mode| Control)?"),
    ),
    "sub_numa_clustering": RegistryNames(
        names=(r"SncEn", r"Snc", r"SubNumaCluster(ing)?"),
        displays=(r"SNC", r"Sub[- ]?NUMA Cluster(ing)?", r"SNC \(Sub[- ]?NUMA( Clustering)?\)"),
    ),
    "above_4g_decoding": RegistryNames(
        names=(r"Above4GDecoding", r"Above4G", r"Above4GDecode", r"MmioAbove4Gb?"),
        displays=(r"Above 4 ?GB? Decoding", r"MMIO Above 4 ?GB?", r"Memory Mapped I/O Above 4 ?GB"),
    ),
    "resizable_bar": RegistryNames(
        names=(r"ResizableBar", r"ReSizeBar", r"ReBar", r"ResizeBarSupport"),
        displays=(r"Re-?Size(able)? BAR( Support)?", r"Resizable BAR( Support)?"),
    ),
    "boot_mode": RegistryNames(
        names=(r"BootMode", r"BootModeSelect", r"SystemBootMode"),
        displays=(r"Boot Mode( Select)?", r"System Boot Mode"),
    ),
}
"""power_profile has no entry: profiles differ in what they mean and what values they take, so only a plugin
that knows its vendor's profiles maps it."""


class AmbiguousBiosKey(InputError):
    """Two or more registry attributes fit one neutral key: nothing is guessed, the operator names one."""

    def __init__(self, message: str, key: str, candidates: tuple[str, ...]) -> None:
        super().__init__(message)
        self.key = key
        self.candidates = candidates


@dataclass(frozen=True)
class RegistryMatch:
    """The one attribute a neutral key was found as, and by what."""

    key: str
    attribute: str
    field: str
    """AttributeName or DisplayName."""
    text: str
    source: str = "registry"
    """registry, or `current attributes` where the BMC publishes no registry (names only, no DisplayName)."""

    @property
    def via(self) -> str:
        return f"{self.source}: {self.field} {self.text!r}"


def display(text: str) -> str:
    """A DisplayName as compared: (R), (TM), ® and ™ dropped, white space folded."""
    return " ".join(_TRADEMARKS.sub("", text).split())


def _fits(patterns: tuple[str, ...], text: str | None) -> bool:
    return text is not None and any(re.fullmatch(p, text, re.IGNORECASE) for p in patterns)


def find(key: str, registry: AttributeRegistry, table: dict[str, RegistryNames]) -> RegistryMatch | None:
    """The registry attribute `key` names by `table`; None when none fits; AmbiguousBiosKey when several do."""
    rule = table.get(key)
    if rule is None:
        return None
    found: list[RegistryMatch] = []
    source = "current attributes" if registry.inferred else "registry"
    for name, attr in sorted(registry.attributes.items()):
        shown = display(attr.display_name) if attr.display_name else None
        if _fits(rule.names, name):
            found.append(RegistryMatch(key, name, "AttributeName", name, source))
        elif _fits(rule.displays, shown):
            found.append(RegistryMatch(key, name, "DisplayName", shown or "", source))
    if len(found) > 1:
        listed = ", ".join(f"{m.attribute} ({m.field} {m.text!r})" for m in found)
        raise AmbiguousBiosKey(f"BIOS key {key}: {len(found)} attributes of registry {registry.id or '(unnamed)'} "
                               f"fit, none is guessed: {listed}; name the one meant under "
                               "bios.vendor_attributes.<vendor>", key, tuple(m.attribute for m in found))
    return found[0] if found else None

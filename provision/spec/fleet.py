"""The inventory's side of a host: its BMC, SSH and installer endpoints, lab declaration, rack and recorded
identity; and the fleet of every host."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from provision.spec.frozen import PositiveInt
from provision.spec.model import NodeSpec
from provision.spec.patterns import HostPatterns
from provision.spec.slurm import SlurmSettings
from provision.spec.software import InstallMethod


class BmcEndpoint(BaseModel):
    """How to reach a node's BMC. The password never prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(pattern=r"^https?://[^/\s]+/?$")
    username: str
    password: SecretStr
    ca_file: Path | None = None
    verify_tls: bool = True
    auth: Literal["auto", "session", "basic"] = Field(
        default="auto",
        description="provision_bmc_auth: session, basic, or auto (a session where the service root links a "
        "SessionService, else basic; basic again after a session login refused with 401)",
    )
    insecure_http: bool = Field(default=False, description="provision_bmc_insecure_http: plain http:// allowed")
    deadline_s: float = Field(default=120.0, gt=0, allow_inf_nan=False,
                              description="provision_bmc_deadline_s: seconds one BMC command's requests may take in "
                              "all (waits with their own bound, a firmware task or a reset, stand it still)")

    @model_validator(mode="after")
    def _no_plain_http(self) -> BmcEndpoint:
        """The plain-HTTP rule, in this one place: http:// only where the inventory opted in."""
        if self.plain_http and not self.insecure_http:
            raise ValueError(f"provision_bmc_address {self.address} is plain HTTP, the BMC password would travel "
                             "in clear; use https:// (or set provision_bmc_insecure_http: true for this host or group)")
        return self

    @property
    def plain_http(self) -> bool:
        """An http:// address (allowed only with insecure_http): the password travels in clear."""
        return self.address.startswith("http://")


class InstallerAccess(BaseModel):
    """How the os stage's preflight reads the installer URL (inventory variables, per host or group)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ca_file: Path | None = Field(
        default=None,
        description="provision_os_installer_ca_file: the CA bundle an https:// installer's certificate is verified "
        "against (None: the system's); verification is never off")
    skip_boot_check: bool = Field(
        default=False,
        description="provision_os_installer_skip_boot_check: the preflight only proves the URL answers; the El "
        "Torito boot check is not made (a warning says so), for a server whose catalog cannot be checked")
    method: InstallMethod | None = Field(
        default=None, description="provision_os_install_method: this host's install method (None: the profile's)")
    provisioning_mac: str | None = Field(
        default=None, pattern=r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$",
        description="provision_provisioning_mac: the MAC of the NIC the host boots the installer from over the "
        "network (None: read from the BMC's EthernetInterfaces of the system)")


class SshEndpoint(BaseModel):
    """How to reach a node's OS over SSH (Ansible's connection variables)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = 22
    user: str = "root"
    key_file: Path | None = None
    known_hosts: Path | None = None
    common_args: str = ""


_WAIVER_PATTERN_RE = re.compile(r"^[A-Za-z0-9_.*?/:\-\[\]]+$")


class Waiver(BaseModel):
    """A conformance check the inventory waives on this host: check id or glob pattern, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    pattern: str = Field(min_length=1, description="A check id, or an fnmatch pattern such as kernel.module.*")
    reason: str = Field(min_length=1, description="Why the check cannot be judged on this host")

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if not _WAIVER_PATTERN_RE.match(value):
            raise ValueError(f"{value!r} is not a check id or pattern (letters, digits, . _ - / : * ? [ ])")
        return value


class LabDeclaration(BaseModel):
    """What the inventory declares about a lab host (`provision_lab`, `provision_lab_waivers`).

    A host is a lab twin only when its inventory says so: nothing found on the node makes it one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    lab: bool = False
    waivers: tuple[Waiver, ...] = ()
    standins: tuple[str, ...] = Field(default=(), description="provision_lab_standins: the twin's stand-in tools")
    notice: str = Field(default="", description="provision_lab_notice: the line reports show beside its results")


class Rack(BaseModel):
    """One rack of `provision_racks` (inventory): what its circuits and cooling are sized for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    power_budget_w: PositiveInt = Field(description="The most its nodes may draw together (their peak_draw_w summed)")


class RecordedIdentity(BaseModel):
    """`provision_bmc_identity`: what the BMC said it was when `provision enroll` wrote the host (so a later
    discovery knows it by serial or UUID wherever its address moves)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    manufacturer: str | None = None
    model: str | None = None
    serial: str | None = None
    uuid: str | None = None
    bmc_mac: str | None = None
    bmc_firmware: str | None = None


class HostEntry(BaseModel):
    """One inventory host with its resolved spec and endpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    profile: str
    groups: tuple[str, ...]
    spec: NodeSpec
    bmc: BmcEndpoint
    ssh: SshEndpoint | None = None
    installer: InstallerAccess = InstallerAccess()
    lab: LabDeclaration = LabDeclaration()
    slurm: SlurmSettings | None = Field(default=None, description="provision_slurm: drain/resume in Slurm")
    rack: str | None = Field(default=None, description="provision_rack: the rack (of provision_racks) it sits in")
    identity: RecordedIdentity | None = Field(default=None, description="provision_bmc_identity (enroll writes it)")

    @property
    def install_method(self) -> InstallMethod:
        """How the os stage boots its installer: provision_os_install_method, else the profile's, else virtual media."""
        pinned = self.spec.software.os_installer
        return self.installer.method or (pinned.method if pinned is not None else InstallMethod.VIRTUAL_MEDIA)


class Fleet(BaseModel):
    """Every host of an inventory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inventory: Path
    hosts: dict[str, HostEntry]
    profiles: dict[str, NodeSpec] = Field(default_factory=dict)
    racks: dict[str, Rack] = Field(default_factory=dict, description="provision_racks: rack name -> its budget")
    _patterns: HostPatterns | None = PrivateAttr(default=None)

    def select(self, pattern: str | Sequence[str] | None = None, limit: str | None = None) -> list[HostEntry]:
        """Hosts an Ansible host pattern selects (a list: each element a pattern), narrowed by `limit`.

        Groups, globs, `~regex`, subscripts, `!`, `&`, comma lists, host and Slurm ranges: see
        provision/spec/patterns.py. A pattern or term that matches no host raises InputError."""
        names = self.patterns().select(pattern or "all", limit)
        return [self.hosts[n] for n in names]

    def patterns(self) -> HostPatterns:
        """The inventory's pattern resolver: the one load_fleet read, or one built from the hosts' groups."""
        if self._patterns is None:
            self._patterns = HostPatterns.from_groups({n: h.groups for n, h in self.hosts.items()},
                                                      str(self.inventory))
        return self._patterns

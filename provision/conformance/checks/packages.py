"""Pinned packages: installed at the spec's apt version, and held. One `dpkg-query` for all."""

from __future__ import annotations

import shlex

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.checks.names import pinned_packages
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.spec.model import NodeSpec

AREA = "packages"
SECTION = "dpkg_query"
TOOL = "dpkg-query -W"
FORMAT = r"${Package}\t${Version}\t${Status}\n"


class InstalledPackage(Model):
    """One package line: name, version and dpkg status (want, error flag, state)."""

    package: str
    version: str
    want: str
    state: str

    @property
    def installed(self) -> bool:
        return self.state == "installed"

    @property
    def held(self) -> bool:
        return self.want == "hold"


@tool_parser(TOOL)
def parse_dpkg_query(text: str) -> dict[str, InstalledPackage]:
    """Lines of `Package<TAB>Version<TAB>want ok state` (dpkg-query -f above)."""
    found: dict[str, InstalledPackage] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, version, status = line.split("\t")
        parts = status.split()
        if len(parts) != 3:
            fail(TOOL, f"{name}: status {status!r} is not 'want flag state'")
        found[name] = InstalledPackage(package=name, version=version, want=parts[0], state=parts[2])
    return found


def empty_ok(text: str) -> dict[str, InstalledPackage]:
    """dpkg-query prints nothing (exit 1) when none of the packages is known."""
    return parse_dpkg_query(text) if text.strip() else {}


def dpkg_probe(spec: NodeSpec) -> Probe:
    names = " ".join(shlex.quote(p.package) for p in pinned_packages(spec))
    return Probe(name=SECTION, command=f"dpkg-query -W -f={shlex.quote(FORMAT)} {names}")


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    return [dpkg_probe(spec)]


def installed(ctx: Context, package: str) -> InstalledPackage | None:
    """A package as dpkg knows it (None: not known); raises Unreadable."""
    # dpkg-query exits 1 when some of the packages are unknown: the others are still listed.
    return ctx.parsed(SECTION, empty_ok, allow_rc=(0, 1)).get(package)


def evaluate(ctx: Context) -> None:
    for pin in pinned_packages(ctx.spec):
        base = f"packages.{pin.package}"
        try:
            pkg = installed(ctx, pin.package)
        except Unreadable as why:
            ctx.unreadable(f"{base}.version", AREA, f"{pin.package} installed", pin.apt_version, why.reason)
            continue
        version = pkg.version if pkg and pkg.installed else None
        ctx.record(
            f"{base}.version", AREA, f"{pin.package} installed at the pinned version ({pin.component})",
            pin.apt_version, version or "not installed", version == pin.apt_version,
        )  # fmt: skip
        if ctx.level is not Level.QUICK:
            ctx.record(
                f"{base}.held", AREA, f"{pin.package} held (dpkg selection)", "hold",
                pkg.want if pkg else "not installed", bool(pkg and pkg.held),
            )  # fmt: skip

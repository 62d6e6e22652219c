"""Kernel checks: the running release, and the kernel modules the spec's hardware needs."""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers._base import fail, tool_parser
from provision.spec.model import NodeSpec

AREA = "kernel"
RELEASE = "kernel_release"
MODULES = "kernel_modules"
TOOL = "ls /sys/module"
MONOLITHIC = "@monolithic"
# `cat /proc/modules` fails on a kernel built without module support (as on the lab's host).
MODULES_COMMAND = f"test -r /proc/modules || echo {MONOLITHIC}; ls -1 /sys/module"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    found = [Probe(name=RELEASE, command="cat /proc/sys/kernel/osrelease; uname -r")]
    if level is not Level.QUICK:
        found.append(Probe(name=MODULES, command=MODULES_COMMAND))
    return found


def required_modules(spec: NodeSpec) -> list[str]:
    """Modules a node of this spec runs with (md raid1 shows in /proc/mdstat; see raid checks). A section the
    spec does not have (gpu, network.infiniband, storage.scratch) needs no module."""
    mods = ["nvidia", "nvidia_uvm", "nvidia_modeset"] if spec.gpu is not None else []
    ib = spec.network.infiniband
    if ib is not None and ib.count:
        mods += ["mlx5_core", "mlx5_ib", "ib_uverbs"] + (["nvidia_peermem"] if spec.gpu is not None else [])
        if ib.ipoib is not None:
            mods.append("ib_ipoib")
    if spec.storage.scratch is not None:
        mods.append("zfs")
    return mods


@tool_parser("osrelease/uname -r")
def parse_release(text: str) -> tuple[str, str | None]:
    """(/proc/sys/kernel/osrelease, uname -r): both name the running kernel, and both are judged."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        fail("osrelease/uname -r", "empty")
    return lines[0], (lines[1] if len(lines) > 1 else None)


@tool_parser(TOOL)
def parse_modules(text: str) -> tuple[bool, frozenset[str]]:
    """(kernel supports modules, module names present under /sys/module)."""
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names:
        fail(TOOL, "empty listing")
    return MONOLITHIC not in names, frozenset(n for n in names if n != MONOLITHIC)


def evaluate(ctx: Context) -> None:
    expected = ctx.spec.software.kernel.release
    desc = "running kernel release (/proc/sys/kernel/osrelease)"
    try:
        release, uname = ctx.parsed(RELEASE, parse_release)
    except Unreadable as why:
        ctx.unreadable("kernel.release", AREA, desc, expected, why.reason)
        ctx.unreadable("kernel.uname", AREA, "running kernel release (uname -r)", expected, why.reason)
    else:
        ctx.record("kernel.release", AREA, desc, expected, release, release == expected)
        ctx.record("kernel.uname", AREA, "running kernel release (uname -r)", expected, uname or "absent",
                   uname == expected)
    if ctx.level is not Level.QUICK:
        _modules(ctx)


def _modules(ctx: Context) -> None:
    wanted = required_modules(ctx.spec)
    try:
        modular, present = ctx.parsed(MODULES, parse_modules)
    except Unreadable as why:
        for mod in wanted:
            ctx.unreadable(f"kernel.module.{mod}", AREA, f"kernel module {mod} loaded", "loaded", why.reason)
        return
    for mod in wanted:
        found = "loaded" if mod in present else "not loaded" + ("" if modular else " (kernel without module support)")
        ctx.record(f"kernel.module.{mod}", AREA, f"kernel module {mod} loaded", "loaded", found, mod in present)

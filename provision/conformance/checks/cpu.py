"""CPU checks from `lscpu`: model, sockets, cores, threads and the required ISA flags; from SMBIOS (past the quick
level, as the DIMMs): each socket's base clock and L3 (checks/cpu_smbios.py)."""

from __future__ import annotations

from provision.conformance.checks import cpu_smbios
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.cpu import parse_lscpu
from provision.spec.model import NodeSpec

AREA = "cpu"
SECTION = "lscpu"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    found = [Probe(name=SECTION, command="lscpu")]
    if level is not Level.QUICK:
        found.append(Probe(name=cpu_smbios.SECTION, command=cpu_smbios.COMMAND))
    return found


def evaluate(ctx: Context) -> None:
    _lscpu(ctx)
    if ctx.level is not Level.QUICK:
        cpu_smbios.judge(ctx)


def _lscpu(ctx: Context) -> None:
    cpu = ctx.spec.cpu
    rows: list[tuple[str, str, object]] = [
        ("cpu.model", "CPU model", cpu.model),
        ("cpu.sockets", "CPU sockets", cpu.sockets),
        ("cpu.cores_per_socket", "cores per socket", cpu.cores_per_socket),
        ("cpu.threads", "logical CPUs (sockets x cores x threads per core)", cpu.total_threads),
    ]
    try:
        info = ctx.parsed(SECTION, parse_lscpu)
    except Unreadable as why:
        for cid, desc, expected in rows:
            ctx.unreadable(cid, AREA, desc, expected, why.reason)
        return
    found: list[object] = [info.model_name, info.sockets, info.cores_per_socket, info.cpus]
    for (cid, desc, expected), value in zip(rows, found, strict=True):
        ctx.equal(cid, AREA, desc, expected, value)
    flags = set(info.flags)
    for flag in cpu.isa_flags:
        present = flag in flags
        ctx.record(f"cpu.flag.{flag}", AREA, f"ISA flag {flag}", "present",
                   "present" if present else "missing", present)

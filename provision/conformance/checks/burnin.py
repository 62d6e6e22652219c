"""Burn-in tier (opt-in, --level burnin): DCGM diag, NCCL all_reduce busbw, fio on scratch, ib_write_bw.

Thresholds come from spec.acceptance. A tool that is not installed makes its check an ERROR
(could not check), never a pass. In the lab the tools are the twins' stand-ins and the result says so.
DCGM uses the shared parser; the NCCL, fio and ib_write_bw readers here are local and minimal.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable

from provision.conformance.checks._base import Context, Unreadable, section_problem
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers._base import fail, tool_parser
from provision.conformance.parsers.dcgm import DcgmTest, parse_dcgmi_diag
from provision.spec.model import NodeSpec

AREA = "burnin"
DCGM, NCCL, FIO_SEQ, FIO_RAND, IB_BW = "dcgmi_diag", "nccl_all_reduce", "fio_seq", "fio_rand", "ib_write_bw"
_BUSBW = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(?P<bw>[0-9.]+)")
_IBBW = re.compile(r"^\s*\d+\s+\d+\s+[0-9.]+\s+(?P<avg>[0-9.]+)\s+[0-9.]+\s*$")


@tool_parser("all_reduce_perf")
def parse_busbw(text: str) -> float:
    match = _BUSBW.search(text)
    if match is None:
        fail("all_reduce_perf", "no '# Avg bus bandwidth' line")
    return float(match["bw"])


@tool_parser("fio")
def parse_fio(text: str) -> tuple[float, float]:
    """(read bandwidth GB/s, read IOPS) summed over the jobs of `fio --output-format=json`."""
    jobs = json.loads(text[text.index("{"):])["jobs"]
    if not jobs:
        fail("fio", "no jobs")
    bw_kib = sum(float(j["read"]["bw"]) for j in jobs)
    iops = sum(float(j["read"]["iops"]) for j in jobs)
    return bw_kib * 1024 / 1e9, iops


@tool_parser("ib_write_bw")
def parse_ib_write_bw(text: str) -> float:
    """BW average (Gb/s, run with --report_gbits) of the last result row."""
    values = [float(m["avg"]) for line in text.splitlines() if (m := _IBBW.match(line))]
    if not values:
        fail("ib_write_bw", "no result row")
    return values[-1]


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if level is not Level.BURNIN:
        return []
    acc, mnt = spec.acceptance, shlex.quote(spec.storage.scratch.zfs.mountpoint)
    fio = f"fio --directory={mnt} --direct=1 --ioengine=libaio --runtime=30 --time_based --group_reporting " \
          "--size=4G --output-format=json"
    found = [
        Probe(name=DCGM, command=f"dcgmi diag -r {acc.dcgm_diag_level}"),
        Probe(name=NCCL, command=f"all_reduce_perf -b 8 -e 8G -f 2 -g {spec.gpu.count}"),
        Probe(name=FIO_SEQ, command=f"{fio} --name=seq --rw=read --bs=1M --numjobs=8 --iodepth=32"),
        Probe(name=FIO_RAND, command=f"{fio} --name=rand --rw=randread --bs=4k --numjobs=16 --iodepth=64"),
    ]
    ib = spec.network.infiniband
    if ib is not None and ib.count:
        found.append(Probe(name=IB_BW, command=(
            "ib_write_bw -d mlx5_0 --report_gbits -D 5 >/dev/null 2>&1 & sleep 1; "
            "ib_write_bw -d mlx5_0 --report_gbits -D 5 localhost; r=$?; wait; exit $r")))
    return found


def evaluate(ctx: Context) -> None:
    if ctx.level is not Level.BURNIN:
        return
    acc = ctx.spec.acceptance
    note = ""
    _dcgm(ctx, note)
    _measure(ctx, NCCL, "burnin.nccl_busbw", "NCCL all_reduce_perf bus bandwidth (GB/s)",
             acc.allreduce_busbw_gbs, parse_busbw, note)
    _measure(ctx, FIO_SEQ, "burnin.fio_seq_read", "fio sequential read on scratch (GB/s)",
             acc.scratch_seq_read_gbs, lambda t: parse_fio(t)[0], note)
    _measure(ctx, FIO_RAND, "burnin.fio_rand_read", "fio 4K random read on scratch (IOPS)",
             acc.scratch_rand_read_iops_4k, lambda t: parse_fio(t)[1], note)
    ib = ctx.spec.network.infiniband
    if ib is not None and ib.count:
        _measure(ctx, IB_BW, "burnin.ib_write_bw", "ib_write_bw average (Gb/s)", acc.ib_write_bw_gbps,
                 parse_ib_write_bw, note)


def _not_installed(ctx: Context, name: str) -> str | None:
    section = ctx.facts.section(name)
    if section is None or section.rc == 127:
        return section_problem(section, name)
    return None


def _dcgm(ctx: Context, note: str) -> None:
    level = ctx.spec.acceptance.dcgm_diag_level
    desc = f"dcgmi diag -r {level}: every test passes"
    if (missing := _not_installed(ctx, DCGM)) is not None:
        ctx.error("burnin.dcgm_diag", AREA, desc, "all Pass", missing)
        return
    try:
        diag = ctx.parsed(DCGM, parse_dcgmi_diag, allow_rc=(0, 1, 226))
    except Unreadable as why:
        ctx.unreadable("burnin.dcgm_diag", AREA, desc, "all Pass", why.reason)
        return
    failed = [f"{t.name}: Fail" + (f" (GPUs {_gpus(t)})" if _gpus(t) else "") for t in diag.tests
              if t.outcome == "Fail"]
    ctx.record("burnin.dcgm_diag", AREA, desc, "no Fail", "; ".join(failed) or f"{len(diag.tests)} tests, no Fail",
               diag.passed, note)


def _gpus(test: DcgmTest) -> str:
    return ", ".join(str(g) for r in test.results if r.result == "Fail" for g in (r.gpus or ()))


def _measure(
    ctx: Context, name: str, cid: str, desc: str, minimum: float, reader: Callable[[str], float], note: str
) -> None:
    if (missing := _not_installed(ctx, name)) is not None:
        ctx.error(cid, AREA, desc, f">= {minimum:g}", missing)
        return
    try:
        value = ctx.parsed(name, reader)
    except Unreadable as why:
        ctx.unreadable(cid, AREA, desc, f">= {minimum:g}", why.reason)
        return
    ctx.record(cid, AREA, desc, f">= {minimum:g}", f"{float(value):g}", float(value) >= minimum, note)

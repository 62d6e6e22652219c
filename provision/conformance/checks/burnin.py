"""Burn-in tier (opt-in, --level burnin), node-local verdicts: DCGM diag, single-node NCCL, fio on the scratch
pool past the ARC, raw sequential reads of each scratch drive.

The measurements are not part of the ordinary gather: across_burnin runs them after it, one at a time, planned
from what it found (burnin_plan), and merges their sections into the node's facts; `evaluate` here only
reads them (pure). The cross-node checks (ib_write_bw/ib_read_bw pairs, multi-node NCCL) are burnin_pairs's.
Thresholds come from spec.acceptance. A tool that is not installed makes its check an ERROR (could not
check), never a pass. NEVER RUN ON REAL HARDWARE here: see burnin_plan.
"""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable, section_problem
from provision.conformance.checks.burnin_parsers import FioJob, parse_fio_jobs, parse_nccl
from provision.conformance.checks.burnin_plan import (
    ARC_METHOD,
    DCGM,
    FIO_DRIVES,
    FIO_POOL,
    NCCL,
    drive_gate,
    pool_present,
    scratch_drives,
)
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.dcgm import DcgmTest, parse_dcgmi_diag
from provision.errors import ParseError
from provision.spec.model import NodeSpec, required

AREA = "burnin"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    """None in the ordinary gather: the burn-in runs after it (across_burnin), planned from its facts."""
    return []


def evaluate(ctx: Context) -> None:
    if ctx.level is not Level.BURNIN:
        return
    if ctx.spec.gpu is not None:  # an absent section: no burn-in checks for it
        _dcgm(ctx)
    if ctx.spec.has("gpus"):  # all_reduce on one GPU measures nothing
        _nccl(ctx)
    if ctx.spec.storage.scratch is not None:
        _pool(ctx)
        _drives(ctx)


def _dcgm(ctx: Context) -> None:
    level = required(ctx.spec.acceptance.dcgm_diag_level, "acceptance.dcgm_diag_level")
    desc = f"dcgmi diag -r {level}: every test passes"
    section = ctx.facts.section(DCGM)
    if section is None or section.rc == 127:
        ctx.error("burnin.dcgm_diag", AREA, desc, "all Pass", str(section_problem(section, DCGM)))
        return
    try:
        diag = ctx.parsed(DCGM, parse_dcgmi_diag, allow_rc=(0, 1, 226))
    except Unreadable as why:
        ctx.unreadable("burnin.dcgm_diag", AREA, desc, "all Pass", why.reason)
        return
    failed = [f"{t.name}: Fail" + (f" (GPUs {_gpus(t)})" if _gpus(t) else "") for t in diag.tests
              if t.outcome == "Fail"]
    ctx.record("burnin.dcgm_diag", AREA, desc, "no Fail", "; ".join(failed) or f"{len(diag.tests)} tests, no Fail",
               diag.passed)


def _gpus(test: DcgmTest) -> str:
    return ", ".join(str(g) for r in test.results if r.result == "Fail" for g in (r.gpus or ()))


def _nccl(ctx: Context) -> None:
    """Single-node all_reduce_perf: the largest size's bus bandwidth against the spec (the '# Avg bus bandwidth'
    line averages every size from 8 B up, so it is shown, never gated). The seed's latency is measured between
    nodes: the 8 B time is evidence here, gated by burnin.nccl_multinode.latency."""
    gate = required(ctx.spec.acceptance.allreduce_busbw_gbs, "acceptance.allreduce_busbw_gbs")
    gpus = ctx.spec.need_gpu().count
    desc = f"NCCL all_reduce_perf on this node's {gpus} GPUs: bus bandwidth at the largest size (GB/s)"
    try:
        run = ctx.parsed(NCCL, parse_nccl)
    except Unreadable as why:
        ctx.unreadable("burnin.nccl_busbw", AREA, desc, f">= {gate:g}", why.reason)
        return
    big, small = run.largest, run.smallest
    avg = f"; '# Avg bus bandwidth' {run.avg_busbw_gbs:g}" if run.avg_busbw_gbs is not None else ""
    ctx.record("burnin.nccl_busbw", AREA, desc, f">= {gate:g}", f"{big.busbw_gbs:g}", big.busbw_gbs >= gate,
               f"{big.size_bytes} B: busbw {big.busbw_gbs:g} GB/s; {small.size_bytes} B: {small.time_us:g} us{avg}; "
               f"{run.ranks} ranks")


def _pool(ctx: Context) -> None:
    acc, z = ctx.spec.acceptance, ctx.spec.need_scratch().zfs
    seq_gate = required(acc.scratch_seq_read_gbs, "acceptance.scratch_seq_read_gbs")
    rand_gate = required(acc.scratch_rand_read_iops_4k, "acceptance.scratch_rand_read_iops_4k")
    seq_desc = f"fio 1 MiB sequential read on pool {z.pool}, ARC kept out (GB/s)"
    rand_desc = f"fio 4 KiB random read on pool {z.pool}, ARC kept out (IOPS)"
    seq_exp, rand_exp = f">= {seq_gate:g}", f">= {rand_gate:g}"
    if not pool_present(ctx.spec, ctx.facts):
        why = (f"pool {z.pool} does not exist (zpool status): it could not be measured; its drives are read raw "
               "(burnin.nvme.*)")
        ctx.error("burnin.fio_seq_read", AREA, seq_desc, seq_exp, why)
        ctx.error("burnin.fio_rand_read", AREA, rand_desc, rand_exp, why)
        return
    try:
        jobs = {j.name: j for j in ctx.parsed(FIO_POOL, parse_fio_jobs)}
        evidence = _arc_evidence(ctx)
        seq, rand = _job(jobs, "seq"), _job(jobs, "rand")
    except Unreadable as why:
        ctx.unreadable("burnin.fio_seq_read", AREA, seq_desc, seq_exp, why.reason)
        ctx.unreadable("burnin.fio_rand_read", AREA, rand_desc, rand_exp, why.reason)
        return
    ctx.record("burnin.fio_seq_read", AREA, seq_desc, seq_exp, f"{seq.read_gbs:.2f}",
               seq.read_gbs >= seq_gate, evidence)
    ctx.record("burnin.fio_rand_read", AREA, rand_desc, rand_exp, f"{rand.read_iops:.0f}",
               rand.read_iops >= rand_gate, evidence)


def _job(jobs: dict[str, FioJob], name: str) -> FioJob:
    job = jobs.get(name)
    if job is None:
        raise Unreadable(f"fio: no job {name!r} in the output")
    if job.error:
        raise Unreadable(f"fio: job {name} ended with error {job.error}")
    return job


def _arc_evidence(ctx: Context) -> str:
    """The pool run's proof that the ARC was kept out: the datasets' cache properties as `zfs get` read them
    back (stderr of the probe). Anything else is Unreadable: a figure through the ARC measures memory."""
    section = ctx.facts.section(FIO_POOL)
    assert section is not None  # parsed() succeeded
    props = {}
    for line in section.stderr.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1] in ("primarycache", "secondarycache"):
            props[(parts[0], parts[1])] = parts[2]
    datasets = sorted({name for name, _ in props})
    bad = [f"{d} {p}={props.get((d, p), 'unread')}" for d in datasets
           for p, want in (("primarycache", "metadata"), ("secondarycache", "none")) if props.get((d, p)) != want]
    if len(datasets) != 2 or bad:
        raise Unreadable("the ARC was not shown kept out of the pool run: " + ("; ".join(bad) or "no zfs get lines"))
    return f"{ARC_METHOD}: " + ", ".join(f"{d} primarycache=metadata secondarycache=none" for d in datasets)


def _drives(ctx: Context) -> None:
    gate, source = drive_gate(ctx.spec)
    exp = f">= {gate:g}"
    try:
        drives = scratch_drives(ctx.spec, ctx.facts)
    except ParseError as exc:
        ctx.error("burnin.nvme.seq_read", AREA, "raw sequential read of each scratch drive (GB/s)", exp, str(exc))
        return
    if not drives:
        ctx.error("burnin.nvme.seq_read", AREA, "raw sequential read of each scratch drive (GB/s)", exp,
                  f"no NVMe namespace of the scratch size ({ctx.spec.need_scratch().size_tb:g} TB) listed")
        return
    try:
        jobs = {j.name: j for j in ctx.parsed(FIO_DRIVES, parse_fio_jobs)}
    except Unreadable as exc:
        for dev in drives:
            ctx.unreadable(_drive_id(dev), AREA, _drive_desc(dev), exp, exc.reason)
        return
    for dev in drives:
        job = jobs.get(dev.removeprefix("/dev/"))
        if job is None or job.error:
            why = f"fio: no job for {dev}" if job is None else f"fio: {dev} ended with error {job.error}"
            ctx.unreadable(_drive_id(dev), AREA, _drive_desc(dev), exp, why)
            continue
        ctx.record(_drive_id(dev), AREA, _drive_desc(dev), exp, f"{job.read_gbs:.2f}", job.read_gbs >= gate,
                   f"gate: {source}; fio --readonly, every scratch drive at once")


def _drive_id(dev: str) -> str:
    return f"burnin.nvme.{dev.removeprefix('/dev/')}.seq_read"


def _drive_desc(dev: str) -> str:
    return f"{dev} raw 1 MiB sequential read, fio --readonly (GB/s)"

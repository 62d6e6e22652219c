"""Readers of the burn-in tools' output: fio JSON, perftest (ib_write_bw/ib_read_bw), nccl-tests.

Each is a pure function from text to a typed value, raising ParseError (through `tool_parser`) on
anything it cannot read. The formats are the tools' documented ones, never a capture of our own
hardware (none was run here):
- fio: `--output-format=json` (fio HOWTO, "JSON output"): a top-level object with "fio version" and
  "jobs", each job with "jobname", "error" and per direction "read": {"bw_bytes", "bw" (KiB/s), "iops"}.
  fio may print notes on stdout before the object; the object is read from its first '{'.
- perftest 4.x: the result table after the banner, header
  ` #bytes  #iterations  BW peak[Gb/sec]  BW average[Gb/sec]  MsgRate[Mpps]` (`--report_gbits`), or
  `[MB/sec]` without it (perftest's MB is 2^20 bytes). A server may print only its banner.
- nccl-tests (README "Performance"): `#  Rank  N Group  G Pid P on HOST device D [0xBB] NAME` lines, then one
  row per size: size, count, type, redop, root, then out-of-place time (us), algbw, busbw (GB/s), #wrong,
  then the same four in place; `#wrong` is `N/A` when validation is off (-c 0).
"""

from __future__ import annotations

import json
import re

from provision.conformance.parsers._base import Model, fail, tool_parser


class FioJob(Model):
    """One job (or one reporting group) of fio's JSON output, read direction."""

    name: str
    error: int
    read_bytes_per_s: float
    read_iops: float

    @property
    def read_gbs(self) -> float:
        return self.read_bytes_per_s / 1e9


@tool_parser("fio")
def parse_fio_jobs(text: str) -> tuple[FioJob, ...]:
    """Every job of `fio --output-format=json` (bw_bytes when present, else bw KiB/s x 1024)."""
    start = text.find("{")
    if start < 0:
        fail("fio", "no JSON object in the output")
    jobs = json.loads(text[start:])["jobs"]
    if not jobs:
        fail("fio", "no jobs")
    out = []
    for job in jobs:
        read = job["read"]
        bw = float(read["bw_bytes"]) if "bw_bytes" in read else float(read["bw"]) * 1024
        out.append(FioJob(name=str(job["jobname"]), error=int(job.get("error", 0)), read_bytes_per_s=bw,
                          read_iops=float(read["iops"])))
    return tuple(out)


class PerftestBw(Model):
    """The result row of a perftest bandwidth test (ib_write_bw, ib_read_bw)."""

    size_bytes: int
    iterations: int
    peak_gbps: float
    average_gbps: float
    msg_rate_mpps: float


_PERF_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[GM]b?B?/sec)\]\s+BW average")
_PERF_ROW = re.compile(r"^\s*(?P<size>\d+)\s+(?P<iters>\d+)\s+(?P<peak>[0-9.]+)\s+(?P<avg>[0-9.]+)\s+"
                       r"(?P<rate>[0-9.]+)\s*$")
_MIB_PER_S_IN_GBPS = (1 << 20) * 8 / 1e9


@tool_parser("perftest")
def parse_perftest_bw(text: str) -> PerftestBw | None:
    """The last result row, in Gb/s; None when the output has no result table (a server's banner only)."""
    unit, found = None, None
    for line in text.splitlines():
        header = _PERF_HEADER.search(line)
        if header:
            unit = header["unit"]
            continue
        row = _PERF_ROW.match(line) if unit else None
        if row:
            scale = 1.0 if unit.startswith("Gb") else _MIB_PER_S_IN_GBPS  # type: ignore[union-attr]
            found = PerftestBw(size_bytes=int(row["size"]), iterations=int(row["iters"]),
                               peak_gbps=float(row["peak"]) * scale, average_gbps=float(row["avg"]) * scale,
                               msg_rate_mpps=float(row["rate"]))
    if unit is not None and found is None:
        fail("perftest", "a result header without a result row")
    return found


class NcclRow(Model):
    """One message size of an nccl-tests run (out-of-place figures; in-place kept for evidence)."""

    size_bytes: int
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    in_place_busbw_gbs: float


class NcclRun(Model):
    """An nccl-tests run: its ranks (with hosts) and one row per size."""

    ranks: int
    hosts: tuple[str, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw_gbs: float | None

    @property
    def largest(self) -> NcclRow:
        return max(self.rows, key=lambda r: r.size_bytes)

    @property
    def smallest(self) -> NcclRow:
        return min(self.rows, key=lambda r: r.size_bytes)


_RANK = re.compile(r"^#\s+Rank\s+(?P<rank>\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")
_NUM = r"([0-9.]+|N/A)"
_NCCL_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}"
                       rf"\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}\s*$")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(?P<bw>[0-9.]+)")


def _num(value: str) -> float:
    if value == "N/A":
        fail("all_reduce_perf", "a figure of a result row is N/A")
    return float(value)


@tool_parser("all_reduce_perf")
def parse_nccl(text: str) -> NcclRun:
    """Ranks and rows of an nccl-tests run; a run with no result row (or any #wrong) is refused."""
    ranks: dict[int, str] = {}
    rows = []
    for line in text.splitlines():
        if (rank := _RANK.match(line)) is not None:
            ranks[int(rank["rank"])] = rank["host"]
            continue
        if (m := _NCCL_ROW.match(line)) is None:
            continue
        g = m.groups()
        wrong = None if g[8] == "N/A" else int(float(g[8]))
        rows.append(NcclRow(size_bytes=int(g[0]), time_us=_num(g[5]), algbw_gbs=_num(g[6]), busbw_gbs=_num(g[7]),
                            wrong=wrong, in_place_busbw_gbs=_num(g[11])))
    if not rows:
        fail("all_reduce_perf", "no result row")
    bad = [str(r.size_bytes) for r in rows if r.wrong]
    if bad:
        fail("all_reduce_perf", f"wrong results at size(s) {', '.join(bad)} B")
    avg = _AVG.search(text)
    return NcclRun(ranks=len(ranks), hosts=tuple(dict.fromkeys(ranks[k] for k in sorted(ranks))), rows=tuple(rows),
                   avg_busbw_gbs=float(avg["bw"]) if avg else None)

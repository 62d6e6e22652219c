"""Burn-in plans (pure): what to run on each node, and which nodes run against which, from the spec and the
facts the ordinary gather already read (`nvme list`, `mdadm --detail`, `zpool status`, `ibstat`).

Burn-in runs in phases after the ordinary gather (see provision/conformance/across_burnin.py):
1. node-local, one measurement at a time (lanes=1, so fio, NCCL and DCGM never disturb each other):
   DCGM diag, single-node NCCL, fio on the scratch pool with the ARC kept out, raw reads of each scratch drive;
2. across nodes: ib_write_bw then ib_read_bw between pairs of nodes on every HCA at once (`pair_rounds`), then
   NCCL all_reduce_perf over every node of the run through `mpirun --hostfile`.

NONE OF THIS HAS RUN ON REAL HARDWARE here (no real ZFS pool of NVMe drives, no InfiniBand fabric, no GPUs):
the commands follow the tools' documentation (fio HOWTO, OpenZFS zfsprops(7), perftest README, nccl-tests
README, Open MPI mpirun(1)) and were exercised only against the lab twins' stand-ins.
"""

from __future__ import annotations

import re
import shlex

from provision.conformance.checks import infiniband, nvme, raid, zfs
from provision.conformance.facts import NodeFacts, Probe
from provision.conformance.parsers.infiniband import parse_ibstat
from provision.conformance.parsers.mdadm import parse_mdadm_detail
from provision.conformance.parsers.nvme import parse_nvme_list
from provision.conformance.parsers.zpool_status import parse_zpool_status
from provision.errors import ParseError
from provision.spec.model import NodeSpec, required

DCGM, NCCL, FIO_POOL, FIO_DRIVES = "dcgmi_diag", "nccl_all_reduce", "fio_pool", "fio_drives"
NCCL_MULTI = "nccl_multinode"
IB_TESTS = ("write", "read")  # ib_write_bw, ib_read_bw
IB_PORT_BASE = 18515  # perftest's default out-of-band TCP port; HCA i uses IB_PORT_BASE + i
IB_DURATION_S = 5
IB_CONNECT_TRIES = 40  # the client retries "Couldn't connect" every 0.25 s while the server starts (10 s)
IB_SERVER_TIMEOUT_S = 10 + IB_DURATION_S + 20
FIO_RUNTIME_S = 30
DRIVE_RUNTIME_S = 15
SIZE_TOLERANCE = 0.02  # a namespace within 2 % of the spec'd size is a drive of that set

# The ARC kept out of the pool measurement: a temporary dataset with primarycache=metadata and
# secondarycache=none (zfsprops(7): file data is then never cached in the ARC or L2ARC, so every read goes to
# the drives, on every OpenZFS version; ZFS >= 2.3's direct I/O would need a version probe and still falls back
# to the ARC for unaligned I/O). The random job gets its own dataset with recordsize=4K: with data uncached, a
# 4 KiB read of a 1 MiB record would read the whole record. Both are destroyed on exit (trap), whatever
# happens; the properties are read back (`zfs get`) into stderr as the check's evidence.
BURNIN_DATASET = "provision-burnin"
ARC_METHOD = "temporary datasets with primarycache=metadata secondarycache=none (data never cached in ARC/L2ARC)"


def _q(value: str) -> str:
    return shlex.quote(value)


# ---- what the ordinary gather found -------------------------------------------------------------------------
def scratch_drives(spec: NodeSpec, facts: NodeFacts) -> list[str]:
    """The scratch set's whole-namespace devices (/dev/nvmeXn1): `nvme list` namespaces of the spec'd scratch
    size that are not members of the boot mirror (boot and scratch drives may be of one size). Raises
    ParseError when `nvme list` could not be read."""
    scratch = spec.storage.scratch
    if scratch is None:  # no scratch set in the spec: no drives to read
        return []
    section = facts.section(nvme.LIST)
    if section is None or section.rc != 0:
        raise ParseError("nvme list", "not gathered" if section is None else f"exit {section.rc}")
    want = scratch.size_tb * 1e12
    boot = _boot_members(facts)
    found = [ns.device_path for ns in parse_nvme_list(section.stdout)
             if ns.physical_size and abs(ns.physical_size - want) <= want * SIZE_TOLERANCE
             and ns.device_path not in boot]
    return sorted(dict.fromkeys(found), key=_natural)


def _boot_members(facts: NodeFacts) -> set[str]:
    section = facts.section(raid.DETAIL)
    if section is None or section.rc != 0:
        return set()
    try:
        detail = parse_mdadm_detail(section.stdout)
    except ParseError:
        return set()
    return {re.sub(r"p\d+$", "", m.device) for m in detail.members if m.device}


def pool_present(spec: NodeSpec, facts: NodeFacts) -> bool:
    """The spec'd scratch pool exists (bring-up before configure: it does not yet)."""
    section = facts.section(zfs.STATUS)
    if spec.storage.scratch is None or section is None or section.rc != 0:
        return False
    try:
        return any(p.name == spec.need_scratch().zfs.pool for p in parse_zpool_status(section.stdout))
    except ParseError:
        return False


def ib_hcas(spec: NodeSpec, facts: NodeFacts) -> list[str]:
    """The node's HCAs of the spec's link layer as `ibstat` lists them (natural order, at most the spec's
    count); raises ParseError when ibstat could not be read."""
    ib = spec.network.infiniband
    if ib is None or not ib.count:
        return []
    section = facts.section(infiniband.SECTION)
    if section is None or section.rc != 0:
        raise ParseError("ibstat", "not gathered" if section is None else f"exit {section.rc}")
    cas = [ca.name for ca in parse_ibstat(section.stdout).cas if any(p.link_layer == ib.link_layer for p in ca.ports)]
    return sorted(cas, key=_natural)[: ib.count]


def _natural(text: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


# ---- node-local measurements ----------------------------------------------------------------------------------
def dcgm_probe(spec: NodeSpec) -> Probe:
    level = required(spec.acceptance.dcgm_diag_level, "acceptance.dcgm_diag_level")
    return Probe(name=DCGM, command=f"dcgmi diag -r {level}")


def nccl_probe(spec: NodeSpec) -> Probe:
    """all_reduce_perf on this node's GPUs (NVLink/NVSwitch only), 8 B to 8 GiB."""
    return Probe(name=NCCL, command=f"all_reduce_perf -b 8 -e 8G -f 2 -g {spec.need_gpu().count}")


def fio_pool_probe(spec: NodeSpec) -> Probe:
    """Sequential 1 MiB then random 4 KiB reads on the pool, past the ARC (see ARC_METHOD); one fio run, two
    reporting groups (`--stonewall` starts the second after the first and a new group)."""
    z = spec.need_scratch().zfs
    seq, rnd = f"{z.pool}/{BURNIN_DATASET}", f"{z.pool}/{BURNIN_DATASET}-rand"
    mseq, mrnd = f"{z.mountpoint.rstrip('/')}/{BURNIN_DATASET}", f"{z.mountpoint.rstrip('/')}/{BURNIN_DATASET}-rand"
    nocache = "-o primarycache=metadata -o secondarycache=none"
    fio = (f"fio --output-format=json --direct=1 --ioengine=libaio --runtime={FIO_RUNTIME_S} --time_based "
           "--group_reporting --size=4G "
           f"--name=seq --directory={_q(mseq)} --rw=read --bs=1M --numjobs=8 --iodepth=32 "
           f"--name=rand --stonewall --directory={_q(mrnd)} --rw=randread --bs=4k --numjobs=16 --iodepth=64")
    # In a subshell of its own: its EXIT trap must not replace the gather script's (which records the status
    # and hands the lane back). A leftover of a run killed outright is destroyed before the next one.
    command = (
        f"( zfs destroy -r {_q(seq)} 2>/dev/null; zfs destroy -r {_q(rnd)} 2>/dev/null; "
        f"trap 'zfs destroy -r {_q(seq)} 2>/dev/null; zfs destroy -r {_q(rnd)} 2>/dev/null' EXIT; "
        f"zfs create {nocache} -o mountpoint={_q(mseq)} {_q(seq)} || exit 2; "
        f"zfs create {nocache} -o recordsize=4K -o mountpoint={_q(mrnd)} {_q(rnd)} || exit 2; "
        f"zfs get -H -o name,property,value primarycache,secondarycache {_q(seq)} {_q(rnd)} >&2 || exit 2; "
        f"{fio} )"
    )
    return Probe(name=FIO_POOL, command=command)


def fio_drives_probe(drives: list[str]) -> Probe:
    """Raw sequential reads of every drive at once, one fio job per drive named after it (`--readonly`: fio
    refuses any write; the drives may be pool members)."""
    jobs = " ".join(f"--name={_q(d.removeprefix('/dev/'))} --filename={_q(d)}" for d in drives)
    return Probe(name=FIO_DRIVES, command=(
        f"fio --readonly --output-format=json --direct=1 --ioengine=libaio --rw=read --bs=1M --iodepth=32 "
        f"--numjobs=1 --runtime={DRIVE_RUNTIME_S} --time_based {jobs}"))


def local_probes(spec: NodeSpec, facts: NodeFacts) -> list[Probe]:
    """The node-local burn-in, in the order it runs (one at a time). fio on the pool only where the pool
    exists; raw drive reads wherever the scratch drives were listed."""
    found = [dcgm_probe(spec)] if spec.gpu is not None else []  # no GPUs: no DCGM
    if spec.has("gpus"):  # NCCL all_reduce needs two GPUs or more
        found.append(nccl_probe(spec))
    if pool_present(spec, facts):
        found.append(fio_pool_probe(spec))
    try:
        drives = scratch_drives(spec, facts)
    except ParseError:
        drives = []
    if drives:
        found.append(fio_drives_probe(drives))
    return found


def drive_gate(spec: NodeSpec) -> tuple[float, str]:
    """Each scratch drive's raw sequential read gate (GB/s) and where it comes from."""
    acc, scratch = spec.acceptance, spec.need_scratch()
    if acc.scratch_drive_seq_read_gbs is not None:
        return acc.scratch_drive_seq_read_gbs, "acceptance.scratch_drive_seq_read_gbs"
    array = required(acc.scratch_seq_read_gbs, "acceptance.scratch_seq_read_gbs")
    return (array / scratch.count, f"acceptance.scratch_seq_read_gbs {array:g} / {scratch.count} drives")


# ---- across nodes -------------------------------------------------------------------------------------------
Pair = tuple[str, str]  # (server, client)


def pair_rounds(nodes: list[str]) -> list[list[Pair]]:
    """Deterministic pairs of the run's nodes (sorted by name): (1st, 2nd), (3rd, 4th), ... all at once; an odd
    node out runs in a second round against the first node. One node: no pair."""
    ordered = sorted(dict.fromkeys(nodes), key=_natural)
    first = [(ordered[i], ordered[i + 1]) for i in range(0, len(ordered) - 1, 2)]
    rounds = [first] if first else []
    if len(ordered) % 2 and len(ordered) > 1:
        rounds.append([(ordered[0], ordered[-1])])
    return rounds


def ib_section(test: str, hca: str) -> str:
    return f"ib_{test}_bw:{hca}"


def ib_server_probes(test: str, hcas: list[str]) -> list[Probe]:
    """One perftest server per HCA (its own TCP port), each waiting for its client, killed if none comes."""
    return [Probe(name=ib_section(test, hca), command=(
        f"timeout {IB_SERVER_TIMEOUT_S} ib_{test}_bw -d {_q(hca)} -p {IB_PORT_BASE + i} -F --report_gbits "
        f"-D {IB_DURATION_S}")) for i, hca in enumerate(hcas)]


def ib_client_probes(test: str, hcas: list[str], server_hcas: list[str], server: str) -> list[Probe]:
    """The clients, HCA i against the server's HCA i (port IB_PORT_BASE + i), all at once. perftest exchanges
    queue-pair details over TCP with `server` (the server's inventory address); the RDMA traffic goes over the
    HCAs. A client started before its server prints "Couldn't connect to" and is retried."""
    out = []
    for i, hca in enumerate(hcas[: len(server_hcas)]):
        run = (f"ib_{test}_bw -d {_q(hca)} -p {IB_PORT_BASE + i} -F --report_gbits -D {IB_DURATION_S} "
               f"{_q(server)}")
        out.append(Probe(name=ib_section(test, hca), command=(
            f"n=0; while o=$({run} 2>&1); r=$?; [ $r -ne 0 ] && [ $r -ne 127 ] && [ $n -lt {IB_CONNECT_TRIES} ] "
            "&& printf '%s' \"$o\" | grep -q \"Couldn't connect to\"; do n=$((n+1)); sleep 0.25; done; "
            "printf '%s\\n' \"$o\"; exit $r")))
    return out


def nccl_multinode_probe(spec: NodeSpec, hosts: list[tuple[str, int]]) -> Probe:
    """all_reduce_perf over every GPU of `hosts` ((address, GPUs) each), one rank per GPU, launched by Open
    MPI from the first node with a hostfile (`ADDRESS slots=N` lines). mpirun reaches the other nodes over
    SSH: the nodes must accept each other's keys (as any MPI job needs)."""
    lines = " ".join(_q(f"{addr} slots={gpus}") for addr, gpus in hosts)
    total, per_node = sum(g for _, g in hosts), max(g for _, g in hosts)
    return Probe(name=NCCL_MULTI, command=(
        f"( hf=$(mktemp) || exit 2; trap 'rm -f \"$hf\"' EXIT; printf '%s\\n' {lines} >\"$hf\"; "
        f"mpirun --allow-run-as-root --hostfile \"$hf\" -np {total} --map-by ppr:{per_node}:node --bind-to none "
        "-x NCCL_DEBUG=WARN -x LD_LIBRARY_PATH all_reduce_perf -b 8 -e 8G -f 2 -g 1 )"))


def multinode_gate(spec: NodeSpec) -> tuple[float, str]:
    """The multi-node bus bandwidth gate (GB/s) and where it comes from."""
    acc, ib = spec.acceptance, spec.network.infiniband
    if acc.allreduce_multinode_busbw_gbs is not None:
        return acc.allreduce_multinode_busbw_gbs, "acceptance.allreduce_multinode_busbw_gbs"
    busbw = required(acc.allreduce_busbw_gbs, "acceptance.allreduce_busbw_gbs")
    if ib is None or not ib.count:
        return busbw, "acceptance.allreduce_busbw_gbs"
    ib_bw = required(acc.ib_write_bw_gbps, "acceptance.ib_write_bw_gbps")
    cap = ib.count * ib_bw / 8
    if cap < busbw:
        return cap, (f"acceptance.allreduce_busbw_gbs {busbw:g} capped at {ib.count} HCAs x "
                     f"ib_write_bw_gbps {ib_bw:g} / 8")
    return busbw, "acceptance.allreduce_busbw_gbs"

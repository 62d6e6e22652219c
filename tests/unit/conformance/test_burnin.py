"""Burn-in: the readers (fio JSON, perftest, nccl-tests in their documented formats), the plans (drives, pairs,
the ARC kept out), the shell the probes run, and the verdicts, node-local and across nodes."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path

import pytest

from provision.conformance.across_burnin import across_nodes
from provision.conformance.checks import burnin_plan as plan
from provision.conformance.checks.burnin_parsers import parse_fio_jobs, parse_nccl, parse_perftest_bw
from provision.conformance.model import Level, Outcome
from provision.conformance.node import Reach, verify
from provision.errors import ParseError
from provision.spec.fleet import HostEntry, SshEndpoint
from tests.unit.conformance.helpers import area, facts, fixture, framed, run, spec

FIO_POOL = fixture("burnin/fio-pool.json")
FIO_DRIVES = fixture("burnin/fio-drives.json")
IB_CLIENT = fixture("burnin/ib_write_bw.client.txt")
IB_READ_MB = fixture("burnin/ib_read_bw.client.mbytes.txt")
IB_SERVER = fixture("burnin/ib_write_bw.server-banner.txt")
NCCL_ONE = fixture("burnin/all_reduce_perf.single.txt")
NCCL_TWO = fixture("burnin/all_reduce_perf.2nodes.txt")
DCGM_PASS = fixture("dcgm/handwritten/dcgmi-diag-r2.pass.txt")
BOOT, SCRATCH = [f"/dev/nvme{i}n1" for i in range(2)], [f"/dev/nvme{i}n1" for i in range(2, 10)]
ARC = ("scratch/provision-burnin\tprimarycache\tmetadata\nscratch/provision-burnin\tsecondarycache\tnone\n"
       "scratch/provision-burnin-rand\tprimarycache\tmetadata\nscratch/provision-burnin-rand\tsecondarycache\tnone\n")
ZPOOL = """  pool: scratch
 state: ONLINE
config:

\tNAME            STATE     READ WRITE CKSUM
\tscratch         ONLINE       0     0     0
""" + "".join(f"\t  {d}  ONLINE       0     0     0\n" for d in SCRATCH) + "\nerrors: No known data errors\n"
IBSTAT = "".join(f"""CA '{ca}'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.1002
\tHardware version: 0
\tNode GUID: 0x946dae0300{n:06x}
\tSystem image GUID: 0x946dae0300{n:06x}
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 400
\t\tBase lid: {n + 1}
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0xa751e848
\t\tPort GUID: 0x946dae0300{n:06x}
\t\tLink layer: InfiniBand
""" for n, ca in enumerate(("mlx5_0", "mlx5_1")))


def nvme_list(boot_tb: float = 1.92, scratch_tb: float = 7.68) -> str:
    devs = [(d, boot_tb) for d in BOOT] + [(d, scratch_tb) for d in SCRATCH]
    return json.dumps({"Devices": [{"NameSpace": 1, "DevicePath": d, "Firmware": "GDC7102Q", "Index": i,
                                    "ModelNumber": "SAMSUNG MZWLO7T6HBLA-00A07", "SerialNumber": f"S7XX{i:04d}",
                                    "UsedBytes": 0, "MaximumLBA": int(tb * 1e12) // 4096,
                                    "PhysicalSize": int(tb * 1e12) // 4096 * 4096, "SectorSize": 4096}
                                   for i, (d, tb) in enumerate(devs)]})


def gathered(**extra: str | tuple[int, str, str]) -> dict[str, str | tuple[int, str, str]]:
    """What the ordinary gather read that the burn-in plans from, plus the burn-in's own sections."""
    base: dict[str, str | tuple[int, str, str]] = {"nvme_list": nvme_list(), "zpool_status": ZPOOL, "ibstat": IBSTAT}
    return base | extra


def local_ok() -> dict[str, str | tuple[int, str, str]]:
    return gathered(dcgmi_diag=DCGM_PASS, nccl_all_reduce=NCCL_ONE, fio_pool=(0, FIO_POOL, ARC),
                    fio_drives=FIO_DRIVES.replace("1100000000", "12400000000"))


# ---- readers -------------------------------------------------------------------------------------------------
def test_fio_json_jobs_after_a_note_line() -> None:
    seq, rand = parse_fio_jobs(FIO_POOL)
    assert (seq.name, round(seq.read_gbs, 1), rand.name, round(rand.read_iops)) == ("seq", 56.9, "rand", 3710423)
    old = json.loads(FIO_POOL[FIO_POOL.index("{"):])
    for job in old["jobs"]:
        del job["read"]["bw_bytes"]  # fio before 3.x: bw (KiB/s) only
    assert parse_fio_jobs(json.dumps(old))[0].read_bytes_per_s == old["jobs"][0]["read"]["bw"] * 1024


@pytest.mark.parametrize("text", ["", "fio: io_u error on file /scratch/x: Input/output error\n", '{"jobs": []}',
                                  '{"jobs": [{"jobname": "a"}]}', FIO_POOL[:400]])
def test_fio_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_fio_jobs(text)


def test_perftest_tables_in_gbits_and_mbytes_and_a_bare_server() -> None:
    row = parse_perftest_bw(IB_CLIENT)
    assert row is not None and (row.size_bytes, row.iterations, row.average_gbps) == (65536, 3688914, 386.72)
    mb = parse_perftest_bw(IB_READ_MB)
    assert mb is not None and round(mb.average_gbps, 1) == round(46100.47 * 1048576 * 8 / 1e9, 1)  # MiB/s
    assert parse_perftest_bw(IB_SERVER) is None  # a server that printed only its banner
    with pytest.raises(ParseError):
        parse_perftest_bw(IB_CLIENT.split(" 65536")[0])  # header without its row: cut short


def test_nccl_rows_ranks_and_hosts() -> None:
    one, two = parse_nccl(NCCL_ONE), parse_nccl(NCCL_TWO)
    assert (one.ranks, one.hosts, one.largest.size_bytes, one.smallest.size_bytes) == (8, ("gpu-node01",), 1 << 33, 8)
    assert one.largest.busbw_gbs > 440 and one.avg_busbw_gbs is not None and one.avg_busbw_gbs < one.largest.busbw_gbs
    assert (two.ranks, two.hosts) == (16, ("gpu-node01", "gpu-node02")) and two.smallest.time_us == 24.0
    assert parse_nccl(fixture("burnin/all_reduce_perf.novalidation.txt")).rows[0].wrong is None
    with pytest.raises(ParseError, match="wrong results at size"):
        parse_nccl(fixture("burnin/all_reduce_perf.wrong.txt"))
    with pytest.raises(ParseError):
        parse_nccl("# Avg bus bandwidth    : 371.52 \n")  # no row: the average alone is not a measurement


# ---- plans ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("nodes", "rounds"), [
    ([], []),
    (["a"], []),
    (["b", "a"], [[("a", "b")]]),
    (["a", "b", "c"], [[("a", "b")], [("a", "c")]]),
    (["n10", "n2", "n1", "n3"], [[("n1", "n2"), ("n3", "n10")]]),
    (["n1", "n2", "n3", "n4", "n5"], [[("n1", "n2"), ("n3", "n4")], [("n1", "n5")]]),
    (["a", "a", "b"], [[("a", "b")]]),
])
def test_pairs_are_deterministic_and_cover_every_node(nodes: list[str], rounds: list[list[plan.Pair]]) -> None:
    assert plan.pair_rounds(nodes) == rounds


def test_scratch_drives_by_size_and_never_the_boot_mirror() -> None:
    assert plan.scratch_drives(spec(), facts(gathered())) == SCRATCH
    # boot and scratch of one size (the captured profile): the md members are left out
    same = nvme_list(boot_tb=7.68)
    detail = fixture("mdraid/qemu-vm/mdadm-detail.clean.txt")
    members = set(re.findall(r"active sync\s+(/dev/\S+)\s*$", detail, re.M))
    detail = re.sub(r"/dev/(vd|sd)a\d*", "/dev/nvme0n1p2", re.sub(r"/dev/(vd|sd)b\d*", "/dev/nvme1n1p2", detail))
    assert len(members) == 2
    assert plan.scratch_drives(spec(), facts({"nvme_list": same, "mdadm_detail": detail})) == SCRATCH
    assert len(plan.scratch_drives(spec(), facts({"nvme_list": same}))) == 10
    with pytest.raises(ParseError):
        plan.scratch_drives(spec(), facts({"nvme_list": (127, "", "nvme: not found")}))


def test_local_plan_measures_the_pool_only_where_it_exists() -> None:
    names = [p.name for p in plan.local_probes(spec(), facts(gathered()))]
    assert names == ["dcgmi_diag", "nccl_all_reduce", "fio_pool", "fio_drives"]
    before_configure = facts(gathered(zpool_status=(1, "", "cannot open 'scratch': no such pool\n")))
    assert [p.name for p in plan.local_probes(spec(), before_configure)] == ["dcgmi_diag", "nccl_all_reduce",
                                                                            "fio_drives"]
    drives = plan.fio_drives_probe(SCRATCH).command
    assert "--readonly" in drives and all(f"--name=nvme{i}n1 --filename=/dev/nvme{i}n1" in drives for i in range(2, 10))


def _tools(tmp_path: Path, scripts: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(tmp_path / "log"), "HOME": str(tmp_path)}


def test_the_pool_run_keeps_the_arc_out_and_always_destroys_its_datasets(tmp_path: Path) -> None:
    env = _tools(tmp_path, {"zfs": 'echo "zfs $*" >>"$LOG"\n[ "$1" = get ] && printf "d\\tprimarycache\\tmetadata\\n"'
                            '\nexit 0\n', "fio": 'echo "fio $*" >>"$LOG"; echo "fio: io_u error" >&2; exit 1\n'})
    done = subprocess.run(["sh", "-c", plan.fio_pool_probe(spec()).command], env=env, capture_output=True, text=True,
                          timeout=30)
    log = Path(env["LOG"]).read_text().splitlines()
    assert done.returncode == 1  # fio's failure is the probe's
    creates = [line for line in log if line.startswith("zfs create")]
    assert len(creates) == 2 and all("-o primarycache=metadata -o secondarycache=none" in c for c in creates)
    assert "-o recordsize=4K" in creates[1] and creates[1].endswith("scratch/provision-burnin-rand")
    # destroyed after the run even though fio failed (and any leftover of an earlier run before it)
    fio_at = next(i for i, line in enumerate(log) if line.startswith("fio"))
    assert [line for line in log[fio_at:] if line.startswith("zfs destroy")] == [
        "zfs destroy -r scratch/provision-burnin", "zfs destroy -r scratch/provision-burnin-rand"]


def test_probes_with_their_own_cleanup_keep_the_gather_scripts_trap(tmp_path: Path) -> None:
    """A probe's EXIT trap must not replace the gather script's: that trap records the status and hands the lane
    back, and one lane (the burn-in runs one measurement at a time) would then hang the node's gather."""
    from provision.conformance.facts import Probe, build_script, split_sections

    env = _tools(tmp_path, {"zfs": "exit 0\n", "fio": "echo '{}'; exit 4\n", "mpirun": "exit 5\n"})
    probes = [plan.fio_pool_probe(spec()), plan.nccl_multinode_probe(spec(), [("10.0.0.1", 8), ("10.0.0.2", 8)]),
              Probe(name="after", command="echo done")]
    done = subprocess.run(["sh", "-s"], input=build_script(probes, lanes=1), env=env, capture_output=True, text=True,
                          timeout=30)
    got = split_sections(done.stdout.encode())
    assert {n: s.rc for n, s in got.items()} == {"fio_pool": 4, "nccl_multinode": 5, "after": 0}


def test_the_ib_client_retries_only_while_the_server_is_not_listening(tmp_path: Path) -> None:
    (probe,) = plan.ib_client_probes("write", ["mlx5_0"], ["mlx5_3"], "10.0.0.7")
    env = _tools(tmp_path, {"ib_write_bw": f'''echo "$*" >>"$LOG"
n=$(wc -l <"$LOG")
if [ "$n" -lt 3 ]; then echo "Couldn't connect to 10.0.0.7:18515"; echo " Unable to open file descriptor" >&2; exit 1
fi
cat <<'T'
{IB_CLIENT}T
'''})
    done = subprocess.run(["sh", "-c", probe.command], env=env, capture_output=True, text=True, timeout=60)
    calls = Path(env["LOG"]).read_text().splitlines()
    assert done.returncode == 0 and len(calls) == 3 and calls[0] == "-d mlx5_0 -p 18515 -F --report_gbits -D 5 10.0.0.7"
    assert parse_perftest_bw(done.stdout) is not None
    Path(env["LOG"]).unlink()
    env = _tools(tmp_path, {"ib_write_bw": 'echo x >>"$LOG"; echo " Port number 1 state is Down"; exit 1\n'})
    done = subprocess.run(["sh", "-c", probe.command], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and len(Path(env["LOG"]).read_text().splitlines()) == 1 and "Down" in done.stdout


def test_multinode_gate_is_capped_by_the_hcas() -> None:
    assert plan.multinode_gate(spec()) == (92.5, "acceptance.allreduce_busbw_gbs 360 capped at 2 HCAs x "
                                                 "ib_write_bw_gbps 370 / 8")
    assert plan.multinode_gate(spec(**{"acceptance.allreduce_multinode_busbw_gbs": 80}))[0] == 80
    assert plan.drive_gate(spec())[0] == 50 / 8
    assert plan.drive_gate(spec(**{"acceptance.scratch_drive_seq_read_gbs": 11}))[0] == 11


# ---- node-local verdicts --------------------------------------------------------------------------------------
def test_burnin_verdicts_from_the_measurements() -> None:
    b = area(run(spec(), local_ok(), Level.BURNIN), "burnin")
    assert area(run(spec(), local_ok(), Level.FULL), "burnin") == {}
    assert all(r.outcome is Outcome.PASS for r in b.values()), [r for r in b.values() if not r.passed]
    assert b["burnin.fio_seq_read"].found == "56.90" and "primarycache=metadata" in b["burnin.fio_seq_read"].detail
    assert {f"burnin.nvme.nvme{i}n1.seq_read" for i in range(2, 10)} <= set(b)
    assert "busbw" in b["burnin.nccl_busbw"].detail and b["burnin.nccl_busbw"].found.startswith("46")


def test_a_slow_drive_fails_by_name() -> None:
    b = area(run(spec(), local_ok() | {"fio_drives": FIO_DRIVES}, Level.BURNIN), "burnin")
    assert [i for i, r in b.items() if r.outcome is Outcome.FAIL] == ["burnin.nvme.nvme5n1.seq_read"]
    assert b["burnin.nvme.nvme5n1.seq_read"].expected == ">= 6.25"


def test_a_pool_read_without_the_arc_kept_out_is_an_error_never_a_figure() -> None:
    leaky = ARC.replace("metadata", "all", 1)
    b = area(run(spec(), local_ok() | {"fio_pool": (0, FIO_POOL, leaky)}, Level.BURNIN), "burnin")
    for cid in ("burnin.fio_seq_read", "burnin.fio_rand_read"):
        assert b[cid].outcome is Outcome.ERROR and "primarycache=all" in b[cid].detail


def test_before_configure_the_pool_is_an_error_and_the_drives_are_still_read() -> None:
    sections = local_ok() | {"zpool_status": (1, "", "cannot open 'scratch': no such pool\n")}
    sections.pop("fio_pool")
    b = area(run(spec(), sections, Level.BURNIN), "burnin")
    assert b["burnin.fio_seq_read"].outcome is Outcome.ERROR and "does not exist" in b["burnin.fio_seq_read"].detail
    assert b["burnin.nvme.nvme2n1.seq_read"].passed


@pytest.mark.parametrize("section", ["dcgmi_diag", "nccl_all_reduce", "fio_pool", "fio_drives"])
def test_a_missing_burnin_tool_is_an_error(section: str) -> None:
    sections = local_ok() | {section: (127, "", f"sh: 1: {section}: not found\n")}
    b = area(run(spec(), sections, Level.BURNIN), "burnin")
    errors = [r for r in b.values() if r.outcome is Outcome.ERROR]
    assert errors and all("not found" in r.detail for r in errors)
    assert not [r for r in b.values() if r.outcome is Outcome.FAIL]


# ---- across nodes ---------------------------------------------------------------------------------------------
def host(name: str, address: str) -> HostEntry:
    from provision.spec.fleet import BmcEndpoint

    return HostEntry(name=name, profile="ml_prod_v4", groups=("all",), spec=spec(),
                     bmc=BmcEndpoint(address="https://10.0.0.1", username="u", password="p"),  # type: ignore[arg-type]
                     ssh=SshEndpoint(host=address))


class Fabric:
    """A fake Runner per node answering probes by name; records each script it ran."""

    def __init__(self, answers: dict[str, dict[str, tuple[int, str, str]]]) -> None:
        self.answers, self.scripts = answers, []  # type: ignore[var-annotated]

    def runner_for(self, h: HostEntry):  # type: ignore[no-untyped-def]
        def runner(node: str, script: str) -> bytes:
            self.scripts.append((node, script))
            names = re.findall(r"^_run (\S+) ", script, re.M)
            mine = self.answers.get(node, {})
            return framed({n: mine.get(n, mine.get(n.split(":")[0], (127, "", f"{n}: not found"))) for n in names})
        return runner


def test_one_node_waives_every_peer_check_never_passes() -> None:
    fabric = Fabric({})
    (results,) = across_nodes([host("n1", "10.0.0.11")], {"n1": facts(gathered())}, fabric.runner_for).values()
    assert {r.id for r in results} == {"burnin.ib.mlx5_0.write_bw", "burnin.ib.mlx5_1.write_bw",
                                       "burnin.ib.mlx5_0.read_bw", "burnin.ib.mlx5_1.read_bw",
                                       "burnin.nccl_multinode.busbw", "burnin.nccl_multinode.latency"}
    assert all(r.outcome is Outcome.WAIVED and "one node in this verify run" in r.detail for r in results)
    assert fabric.scripts == []


def _ib_answers(low_on: str | None = None) -> dict[str, dict[str, tuple[int, str, str]]]:
    low = IB_CLIENT.replace("386.72 ", "231.84 ")
    out = {}
    for node in ("n1", "n2", "n3"):
        table = low if node == low_on else IB_CLIENT
        out[node] = {"ib_write_bw": (0, table, ""), "ib_read_bw": (0, table, ""),
                     "nccl_multinode": (0, NCCL_TWO, "")}
    return out


def test_two_nodes_run_every_hca_against_its_peer_and_judge_the_lower_end() -> None:
    fabric = Fabric(_ib_answers(low_on="n1"))
    hosts = [host("n2", "10.0.0.12"), host("n1", "10.0.0.11")]
    got = across_nodes(hosts, {"n1": facts(gathered()), "n2": facts(gathered())}, fabric.runner_for)
    for node in ("n1", "n2"):
        ib = {r.id: r for r in got[node] if r.id.startswith("burnin.ib.")}
        assert len(ib) == 4 and all(r.outcome is Outcome.FAIL and r.found == "231.84" for r in ib.values())
        assert "client 386.72, server 231.84" in ib["burnin.ib.mlx5_0.write_bw"].detail
    servers = [s for n, s in fabric.scripts if n == "n1" and "ib_write_bw" in s]
    clients = [s for n, s in fabric.scripts if n == "n2" and "ib_write_bw" in s]
    assert servers and clients and "10.0.0.11" in clients[0] and "10.0.0.11" not in servers[0]
    assert "-p 18515" in clients[0] and "-p 18516" in clients[0]  # every HCA at once, each its own port
    (launch,) = [s for n, s in fabric.scripts if "mpirun" in s]
    assert "10.0.0.11 slots=8" in launch and "10.0.0.12 slots=8" in launch and "-np 16" in launch
    nccl = {r.id: r for r in got["n2"] if r.id.startswith("burnin.nccl_multinode")}
    assert nccl["burnin.nccl_multinode.busbw"].passed  # 96 GB/s over 2 HCAs' 92.5 cap
    assert nccl["burnin.nccl_multinode.latency"].outcome is Outcome.FAIL  # 24 us against the seed's < 5 us


def test_three_nodes_pair_the_odd_one_with_the_first_and_ids_stay_unique() -> None:
    fabric = Fabric(_ib_answers())
    hosts = [host(n, f"10.0.0.1{i}") for i, n in enumerate(("n1", "n2", "n3"), 1)]
    got = across_nodes(hosts, {h.name: facts(gathered()) for h in hosts}, fabric.runner_for)
    for node in ("n1", "n2", "n3"):
        ids = [r.id for r in got[node] if r.id.startswith("burnin.ib.")]
        assert len(ids) == len(set(ids)) == 4 and all(r.passed for r in got[node] if r.id in ids)
    assert any(n == "n3" and "10.0.0.11" in s for n, s in fabric.scripts)  # n3 measured against n1


def test_a_peer_that_could_not_be_gathered_is_an_error_on_the_other() -> None:
    fabric = Fabric(_ib_answers())
    got = across_nodes([host("n1", "10.0.0.11"), host("n2", "10.0.0.12")], {"n1": facts(gathered()), "n2": None},
                       fabric.runner_for)
    mine = got["n1"]
    assert mine and all(r.outcome is Outcome.ERROR for r in mine)
    assert any("n2 could not be gathered" in r.detail for r in mine)


def test_fewer_hcas_than_the_spec_is_an_error_per_missing_rail() -> None:
    one_hca = IBSTAT[: IBSTAT.index("CA 'mlx5_1'")]
    got = across_nodes([host("n1", "10.0.0.11"), host("n2", "10.0.0.12")],
                       {"n1": facts(gathered()), "n2": facts(gathered(ibstat=one_hca))}, Fabric(_ib_answers()).runner_for)
    n2 = {r.id: r for r in got["n2"] if r.id.startswith("burnin.ib.")}
    assert n2["burnin.ib.mlx5_0.write_bw"].passed
    assert n2["burnin.ib.rail1.write_bw"].outcome is Outcome.ERROR and "fewer" in n2["burnin.ib.rail1.write_bw"].detail
    assert got["n1"] and {r.id for r in got["n1"] if r.outcome is Outcome.ERROR} == {"burnin.ib.mlx5_1.write_bw",
                                                                                  "burnin.ib.mlx5_1.read_bw"}


def test_missing_perftest_on_the_client_is_an_error() -> None:
    answers = _ib_answers()
    answers["n2"] = {"nccl_multinode": (0, NCCL_TWO, "")}
    got = across_nodes([host("n1", "10.0.0.11"), host("n2", "10.0.0.12")],
                       {"n1": facts(gathered()), "n2": facts(gathered())}, Fabric(answers).runner_for)
    ib = [r for r in got["n1"] if r.id.startswith("burnin.ib.")]
    assert ib and all(r.outcome is Outcome.ERROR and "client: command not found" in r.detail for r in ib)


def test_verify_at_burnin_runs_gather_then_local_then_across_nodes() -> None:
    answers = {n: {**{k: (0, v, "") if isinstance(v, str) else v for k, v in local_ok().items()},
                   **_ib_answers()[n]} for n in ("n1", "n2")}
    fabric = Fabric(answers)
    report = verify([host("n1", "10.0.0.11"), host("n2", "10.0.0.12")], Level.BURNIN, Reach(runner_for=fabric.runner_for))
    for node in report.nodes:
        ids = {r.id for r in node.results if r.area == "burnin"}
        assert {"burnin.dcgm_diag", "burnin.fio_seq_read", "burnin.ib.mlx5_1.read_bw",
                "burnin.nccl_multinode.busbw"} <= ids
    local = [s for n, s in fabric.scripts if "fio --readonly" in s]
    assert len(local) == 2 and all("_L=1" in s for s in local)  # one measurement at a time

"""`provision verify --level burnin` on two lab twins (real sshd/systemd/apt, stand-in hardware tools).

Two ML-PROD-V4 twins are brought up and converged minimally (tests/lab/verify_lab.py), then:
- without the burn-in tools installed, every measurement is an ERROR naming the missing tool, exit 3;
- with them (the stand-in .debs of nccl-tests, fio, perftest, openmpi-bin), one node passes its node-local
  burn-in with the peer checks WAIVED (exit 0), the pool's figure read past the ARC (the temporary datasets'
  cache properties in the evidence, the datasets gone after); two nodes run ib_write_bw/ib_read_bw on every
  HCA between them and NCCL across both (exit 0);
- `ib_bw_low` (an Active full-rate port that delivers 60 %) and `nvme_read_slow` (a healthy-SMART drive at
  1.2 GB/s), invisible at --level full, fail the burn-in with exit 1, naming the HCA or the drive.
The stand-ins cannot reach each other (twins reach only the lab host): each side reports its own HCA.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.lab import twins
from provision.lab.twins.models import TwinInfo
from tests.lab.verify_lab import ROOT, converge, project_spec, ssh, verify_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.timeout(900),  # the first test also brings up and converges two twins
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]

NODES = ("node01", "node02")
BURNIN_PACKAGES = "nccl-tests fio perftest openmpi-bin"
PEER = ("burnin.ib.", "burnin.nccl_multinode.")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, TwinInfo]]]:
    base = tmp_path_factory.mktemp("burnin-lab")
    with verify_lab(base, len(NODES)) as (inventory, twin_dir, infos):
        for name in NODES:
            converge(infos[name], project_spec())
        yield inventory, twin_dir, infos


@pytest.fixture(scope="module")
def tools(lab: tuple[Path, Path, dict[str, TwinInfo]]) -> tuple[Path, Path, dict[str, TwinInfo]]:
    for info in lab[2].values():
        ssh(info, f"DEBIAN_FRONTEND=noninteractive apt-get -y -qq install {BURNIN_PACKAGES} >/dev/null")
    return lab


def verify(inventory: Path, *nodes: str) -> tuple[int, dict[str, dict[str, Any]]]:
    proc = subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", "verify", *nodes, "-i",
                           str(inventory), "--level", "burnin", "--no-bmc", "--json", "-"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    return proc.returncode, {n["node"]: {r["id"]: r for r in n["results"] if r["area"] == "burnin"}
                             for n in data["nodes"]}


def not_accepted(results: dict[str, Any]) -> set[str]:
    return {cid for cid, r in results.items() if r["outcome"] in ("fail", "error")}


def test_without_the_burnin_tools_every_measurement_is_an_error(lab: tuple[Path, Path, dict[str, TwinInfo]]) -> None:
    rc, nodes = verify(lab[0], "node01")
    burnin = nodes["node01"]
    assert rc == 3
    errors = {cid: r for cid, r in burnin.items() if r["outcome"] == "error"}
    assert {"burnin.nccl_busbw", "burnin.fio_seq_read", "burnin.fio_rand_read", "burnin.nvme.nvme2n1.seq_read"} <= set(
        errors) and all("not found" in r["detail"] for r in errors.values())
    assert not [r for r in burnin.values() if r["outcome"] == "fail"]


def test_one_node_passes_its_own_burnin_and_waives_the_peer_checks(
    tools: tuple[Path, Path, dict[str, TwinInfo]],
) -> None:
    inventory, _, infos = tools
    rc, nodes = verify(inventory, "node01")
    burnin = nodes["node01"]
    assert rc == 0, not_accepted(burnin)
    peer = {cid: r for cid, r in burnin.items() if cid.startswith(PEER)}
    assert len(peer) == 6 and all(r["outcome"] == "waived" and "one node" in r["detail"] for r in peer.values())
    local = {cid: r for cid, r in burnin.items() if not cid.startswith(PEER)}
    assert all(r["outcome"] == "pass" for r in local.values())
    assert {f"burnin.nvme.nvme{i}n1.seq_read" for i in range(2, 10)} <= set(local)
    seq = local["burnin.fio_seq_read"]
    assert "primarycache=metadata secondarycache=none" in seq["detail"] and "provision-burnin" in seq["detail"]
    assert "provision-burnin" not in ssh(infos["node01"], "zfs list -H -o name")  # destroyed after the run


def test_two_nodes_measure_every_hca_between_them_and_nccl_across_both(
    tools: tuple[Path, Path, dict[str, TwinInfo]],
) -> None:
    rc, nodes = verify(tools[0], *NODES)
    assert rc == 0, {n: not_accepted(r) for n, r in nodes.items()}
    for name in NODES:
        ib = {cid: r for cid, r in nodes[name].items() if cid.startswith("burnin.ib.")}
        assert set(ib) == {f"burnin.ib.mlx5_{i}.{t}_bw" for i in (0, 1) for t in ("write", "read")}
        assert all(r["outcome"] == "pass" and "the lower is judged" in r["detail"] for r in ib.values())
        nccl = nodes[name]["burnin.nccl_multinode.busbw"]
        assert nccl["outcome"] == "pass" and "16 ranks" in nccl["detail"]


def test_ib_bw_low_fails_that_hca_on_both_ends(tools: tuple[Path, Path, dict[str, TwinInfo]]) -> None:
    inventory, twin_dir, _ = tools
    twins.fault(twin_dir, "node02", "ib_bw_low", False)
    try:
        rc, nodes = verify(inventory, *NODES)
    finally:
        twins.fault(twin_dir, "node02", "ib_bw_low", True)
    assert rc == 1
    for name in NODES:  # node02's mlx5_0 faces node01's mlx5_0; node01 launches NCCL, over its healthy HCAs
        assert not_accepted(nodes[name]) == {"burnin.ib.mlx5_0.write_bw", "burnin.ib.mlx5_0.read_bw"}, name


def test_nvme_read_slow_fails_that_drive_and_the_pool(tools: tuple[Path, Path, dict[str, TwinInfo]]) -> None:
    inventory, twin_dir, _ = tools
    twins.fault(twin_dir, "node01", "nvme_read_slow", False)
    try:
        rc, nodes = verify(inventory, "node01")
    finally:
        twins.fault(twin_dir, "node01", "nvme_read_slow", True)
    assert rc == 1
    # the first scratch drive (nvme0n1/nvme1n1 are the boot pair); a stripe reads at its slowest member's pace
    assert not_accepted(nodes["node01"]) == {"burnin.nvme.nvme2n1.seq_read", "burnin.fio_seq_read",
                                             "burnin.fio_rand_read"}

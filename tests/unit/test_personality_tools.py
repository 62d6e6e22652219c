"""The twins' simulated tools, run as subprocesses against a temp lab state: state follows the twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_personality_helpers import CONVERGED, DRIVER_PACKAGES, PIN, Twin

from provision.conformance.parsers.infiniband import parse_ibstat
from provision.conformance.parsers.nvsmi_csv import parse_query_gpu_csv
from provision.conformance.parsers.nvsmi_list import parse_nvidia_smi_list, parse_nvlink_status
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.conformance.parsers.zpool_status import parse_zpool_status


@pytest.fixture
def twin(tmp_path: Path) -> Twin:
    return Twin(tmp_path)


def test_no_driver_package_means_nvidia_smi_fails_like_the_real_one(twin: Twin) -> None:
    done = twin.run("nvidia_smi", "-L", check=False)
    assert done.returncode == 9
    assert "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" in done.stdout


def test_driver_version_follows_the_installed_stand_in(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    assert parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).driver_version == "550.127.08"
    twin.set_packages({"nvidia-driver": "560.35.03-1", "nvidia-kernel-open-dkms": "560.35.03-1"})
    report = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q"))
    assert (report.driver_version, report.cuda_version) == ("560.35.03", "12.6")


def test_eight_h100_listed_with_spec_figures(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    gpus = parse_nvidia_smi_list(twin.out("nvidia_smi", "-L"))
    assert [g.name for g in gpus] == ["NVIDIA H100 80GB HBM3"] * 8
    report = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q"))
    assert {g.power_limit_w for g in report.gpus} == {700.0}
    assert {(g.pcie.gen_current, g.pcie.width_current) for g in report.gpus} == {(5, 16)}
    assert len({g.uuid for g in report.gpus}) == 8


def test_fabric_completes_only_with_matching_fabric_manager_running(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    fabric = {g.fabric.state for g in parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus if g.fabric}
    assert fabric == {"In Progress"}
    twin.converge()
    gpus = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
    assert all(g.fabric and g.fabric.completed for g in gpus)
    twin.set_packages({**CONVERGED, "nvidia-fabricmanager-550": "550.90.07-1"})  # version != driver
    gpus = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
    assert not any(g.fabric and g.fabric.completed for g in gpus)
    twin.converge()
    twin.set_units("nvidia-dcgm.service")  # fabric manager stopped
    gpus = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus
    assert not any(g.fabric and g.fabric.completed for g in gpus)


def test_persistence_mode_from_daemon_or_pm(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    assert not any(g.persistence_mode for g in parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus)
    assert twin.out("nvidia_smi", "-pm", "1").endswith("All done.\n")
    assert all(g.persistence_mode for g in parse_nvidia_smi_query(twin.out("nvidia_smi", "-q")).gpus)


def test_query_gpu_csv_options(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    text = twin.out("nvidia_smi", "--query-gpu=index,name,memory.total,power.limit", "--format=csv")
    assert text.splitlines()[0] == "index, name, memory.total [MiB], power.limit [W]"
    table = parse_query_gpu_csv(text)
    assert len(table.rows) == 8
    bare = twin.out("nvidia_smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits")
    assert bare.splitlines() == ["81559"] * 8
    bad = twin.run("nvidia_smi", "--query-gpu=bogus.field", "--format=csv", check=False)
    assert bad.returncode == 2 and 'Field "bogus.field" is not a valid field to query.' in bad.stderr


def test_pcie_profile_has_no_nvlink_and_no_fabric(tmp_path: Path) -> None:
    twin = Twin(tmp_path, profile="ml_cost_v3")
    twin.set_packages(DRIVER_PACKAGES)
    report = parse_nvidia_smi_query(twin.out("nvidia_smi", "-q"))
    assert [g.product_name for g in report.gpus] == ["NVIDIA A100 80GB PCIe"] * 4
    assert {g.fabric.state if g.fabric else None for g in report.gpus} == {None}
    assert all(not g.links for g in parse_nvlink_status(twin.out("nvidia_smi", "nvlink", "-s")))


def test_zpool_create_makes_the_pool_status_then_shows(twin: Twin) -> None:
    assert twin.out("zpool", "status").strip() == "no pools available"
    devs = [f"/dev/disk/by-id/{d['by_id']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "-o", "ashift=12", "-O", "compression=lz4", "-O", "recordsize=1M",
             "-m", "/scratch", "scratch", *devs)  # fmt: skip
    (pool,) = parse_zpool_status(twin.out("zpool", "status"))
    assert (pool.name, pool.state) == ("scratch", "ONLINE")
    assert len(pool.root.leaves()) == 8
    again = twin.run("zpool", "create", "scratch", *devs, check=False)
    assert again.returncode == 1 and "pool already exists" in again.stderr
    assert twin.out("zfs", "get", "-Hp", "-o", "value", "recordsize", "scratch").strip() == "1048576"
    twin.out("zfs", "set", "atime=off", "scratch")
    assert twin.out("zfs", "get", "-H", "-o", "value,source", "atime", "scratch").strip() == "off\tlocal"
    assert (twin.base / "root" / "scratch").is_dir()
    twin.out("zpool", "destroy", "scratch")
    assert twin.out("zpool", "list").strip() == "no pools available"


def test_zfs_and_zpool_version_print_the_userland_and_module_as_real_zfs_does(twin: Twin) -> None:
    userland, module = twin.out("zfs", "version").splitlines()
    assert userland.startswith("zfs-2.") and module.startswith("zfs-kmod-2.") and module.endswith("-1")
    assert twin.out("zpool", "version") == twin.out("zfs", "version")


def test_zpool_refuses_boot_drives_and_unknown_devices(twin: Twin) -> None:
    boot = twin.drives("boot")[0]
    done = twin.run("zpool", "create", "scratch", f"/dev/{boot['name']}", check=False)
    assert done.returncode == 1 and "md RAID" in done.stderr
    done = twin.run("zpool", "create", "scratch", "/dev/sdz", check=False)
    assert done.returncode == 1 and "no such device" in done.stderr


def test_raidz_pool_degrades_when_a_drive_goes_missing(twin: Twin) -> None:
    from provision.lab.twins.personality import apply_fault

    devs = [f"/dev/{d['name']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "tank", "raidz2", *devs)
    apply_fault(twin.state, "scratch_drive_missing", clear=False)
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "tank"))
    assert pool.state == "DEGRADED"
    apply_fault(twin.state, "scratch_drive_missing", clear=True)
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "tank"))
    assert pool.state == "ONLINE"


def test_zpool_export_import_round_trip(twin: Twin) -> None:
    devs = [f"/dev/{d['name']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "scratch", *devs)
    twin.out("zpool", "export", "scratch")
    assert twin.out("zpool", "list").strip() == "no pools available"
    assert "pool: scratch" in twin.out("zpool", "import")
    twin.out("zpool", "import", "scratch")
    assert twin.out("zpool", "list", "-H", "-o", "name,health").strip() == "scratch\tONLINE"


def test_ib_ports_follow_spec(twin: Twin) -> None:
    report = parse_ibstat(twin.out("ibstat"))
    ib = [ca for ca in report.cas if all(p.link_layer == "InfiniBand" for p in ca.ports)]
    assert len(ib) == 2
    assert {(p.state, p.rate_gbps) for ca in ib for p in ca.ports} == {("Active", 400)}


def test_dcgmi_needs_host_engine_and_reports_faults(twin: Twin) -> None:
    from provision.lab.twins.personality import apply_fault

    twin.set_packages(CONVERGED)
    done = twin.run("dcgmi", "diag", "-r", "2", check=False)
    assert done.returncode == 255 and "Unable to connect to host engine" in done.stdout
    twin.converge()
    assert "Fail" not in twin.out("dcgmi", "diag", "-r", "3")
    apply_fault(twin.state, "nvlink_down", clear=False)
    done = twin.run("dcgmi", "diag", "-r", "2", check=False)
    assert done.returncode != 0 and "NvLink link 5 is currently down" in done.stdout


def test_fabric_manager_daemon_refuses_a_mismatched_driver(twin: Twin) -> None:
    twin.set_packages({**DRIVER_PACKAGES, "nvidia-fabricmanager-550": "550.144.03-1"})
    done = twin.run("fabricmanager", check=False)
    assert done.returncode == 1 and "incompatible" in done.stdout


def test_lab_devices_link_drives_into_dev(twin: Twin) -> None:
    from provision.lab.twins.personality import apply_fault

    twin.out("lab_devices")
    dev = twin.base / "dev"
    by_id = sorted(p.name for p in (dev / "disk/by-id").iterdir())
    assert len(by_id) == 10 and all(n.startswith("nvme-SAMSUNG_") for n in by_id)
    assert (dev / "nvme9n1").resolve() == (twin.state / "disks/nvme9n1").resolve()
    assert (dev / "nvme9n1").stat().st_size == 64 * 1024 * 1024
    apply_fault(twin.state, "scratch_drive_missing", clear=False)
    twin.out("lab_devices")
    assert not (dev / "nvme9n1").exists() and len(list((dev / "disk/by-id").iterdir())) == 9
    apply_fault(twin.state, "scratch_drive_missing", clear=True)
    twin.out("lab_devices")
    assert (dev / "nvme9n1").exists()


def test_nvme_and_smartctl_agree(twin: Twin) -> None:
    listing = json.loads(twin.out("nvme", "list", "-o", "json"))["Devices"]
    assert len(listing) == 10
    smart = json.loads(twin.out("smartctl", "-a", "-j", "/dev/nvme3"))
    assert smart["serial_number"] == listing[3]["SerialNumber"]
    log = json.loads(twin.out("nvme", "smart-log", "/dev/nvme3n1", "-o", "json"))
    assert log["percent_used"] == smart["nvme_smart_health_information_log"]["percentage_used"]


def test_unknown_state_dir_is_one_clear_line(tmp_path: Path) -> None:
    twin = Twin(tmp_path)
    (twin.state / "hardware.json").unlink()
    done = twin.run("lscpu", check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "hardware.json" in done.stderr


def test_every_tool_carries_the_stand_in_header() -> None:
    from test_personality_helpers import TOOLS

    for script in TOOLS.glob("*.py"):
        assert "LAB STAND-IN: simulated hardware, not the real tool" in script.read_text().splitlines()[1] + \
            script.read_text().splitlines()[0], script.name


@pytest.mark.parametrize("pin", [PIN])
def test_pin_is_a_catalog_version(pin: str) -> None:
    from provision.lab.twins.personality.packages import DRIVER_VERSIONS

    assert pin in DRIVER_VERSIONS


def test_nvidia_smi_id_selects_gpus_and_keeps_their_index(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    listed = twin.out("nvidia_smi", "-i", "1,3", "-L").splitlines()
    assert [line.split(":")[0] for line in listed] == ["GPU 1", "GPU 3"]
    rows = twin.out("nvidia_smi", "--id=3", "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert rows == "3, 00000000:5D:00.0\n"
    missing = twin.run("nvidia_smi", "-i", "8", "-L", check=False)
    assert missing.returncode == 6 and "No devices were found" in missing.stderr


def test_nvidia_smi_power_limit_is_checked_against_the_card(twin: Twin) -> None:
    twin.set_packages(DRIVER_PACKAGES)
    assert twin.out("nvidia_smi", "-i", "0", "-pl", "650").startswith(
        "Power limit for GPU 00000000:19:00.0 was set to 650.00 W from 700.00 W.")
    assert twin.run("nvidia_smi", "-pl", "900", check=False).returncode == 2


def test_zpool_status_full_paths_show_the_data_partition(twin: Twin) -> None:
    devs = [f"/dev/disk/by-id/{d['by_id']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "scratch", *devs)
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "-P", "scratch"))
    assert sorted(leaf.name for leaf in pool.root.leaves()) == sorted(d + "-part1" for d in devs)


def test_a_boot_runs_the_newest_installed_kernel(twin: Twin) -> None:
    osrelease = twin.state / "proc/sys/kernel/osrelease"
    inode = osrelease.stat().st_ino
    twin.set_packages({})
    twin.out("lab_kernel")
    assert osrelease.read_text() == "6.1.0-27-amd64\n"  # no kernel package: left as it was
    twin.set_packages({"linux-image-6.1.0-27-amd64": "6.1.115-1", "linux-image-6.1.0-28-amd64": "6.1.119-1"})
    twin.out("lab_kernel")
    assert osrelease.read_text() == "6.1.0-28-amd64\n" and osrelease.stat().st_ino == inode


def test_burn_in_tools_read_with_the_conformance_readers(twin: Twin) -> None:
    import shlex

    from provision.conformance.checks import burnin_plan
    from provision.conformance.checks.burnin_parsers import parse_fio_jobs, parse_nccl, parse_perftest_bw

    twin.set_packages({**CONVERGED, "libnccl2": "2.21.5-1+cuda12.4"})
    twin.set_units("nvidia-fabricmanager.service")
    nccl = parse_nccl(twin.out("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"))
    assert 440 < nccl.largest.busbw_gbs < 475 and nccl.ranks == 8
    assert nccl.avg_busbw_gbs is not None and 0 < nccl.avg_busbw_gbs < nccl.largest.busbw_gbs
    devs = [f"/dev/disk/by-id/{d['by_id']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "-m", "/scratch", "scratch", *devs)
    for name in ("provision-burnin", "provision-burnin-rand"):
        twin.out("zfs", "create", "-o", "primarycache=metadata", "-o", f"mountpoint=/scratch/{name}", f"scratch/{name}")
    fio = shlex.split(burnin_plan.fio_pool_probe(twin.spec).command.split("; fio ", 1)[1].removesuffix(" )"))
    seq, rand = parse_fio_jobs(twin.out("fio", *fio))  # the plan's own command line, as fio reads it
    assert (seq.name, rand.name) == ("seq", "rand")
    assert seq.read_gbs >= twin.spec.acceptance.scratch_seq_read_gbs
    assert rand.read_iops >= twin.spec.acceptance.scratch_rand_read_iops_4k
    drives = shlex.split(burnin_plan.fio_drives_probe([f"/dev/{d['name']}" for d in twin.drives("scratch")]).command)
    assert [j.read_gbs for j in parse_fio_jobs(twin.out("fio", *drives[1:]))] == [13.0] * 8
    for tool in ("ib_write_bw", "ib_read_bw"):
        server = parse_perftest_bw(twin.out(tool, "-d", "mlx5_0", "-p", "18515", "-F", "--report_gbits", "-D", "5"))
        client = parse_perftest_bw(twin.out(tool, "-d", "mlx5_0", "-p", "18515", "-F", "--report_gbits", "10.0.0.7"))
        assert server is not None and client is not None
        assert client.average_gbps >= twin.spec.acceptance.ib_write_bw_gbps


def test_burn_in_tools_feel_the_faults(twin: Twin) -> None:
    from provision.conformance.checks.burnin_parsers import parse_fio_jobs, parse_nccl, parse_perftest_bw
    from provision.lab.twins.personality import apply_fault

    def busbw() -> float:
        return parse_nccl(twin.out("all_reduce_perf", "-b", "1G", "-e", "8G", "-g", "8")).largest.busbw_gbs

    def ib(hca: str) -> float:
        row = parse_perftest_bw(twin.out("ib_write_bw", "-d", hca, "--report_gbits", "10.0.0.7"))
        assert row is not None
        return row.average_gbps

    twin.set_packages({**CONVERGED, "libnccl2": "2.21.5-1+cuda12.4"})
    twin.set_units("nvidia-fabricmanager.service")
    healthy = busbw()
    apply_fault(twin.state, "nvlink_down", clear=False)
    assert busbw() < healthy
    apply_fault(twin.state, "gpu_missing", clear=False)
    done = twin.run("all_reduce_perf", "-g", "8", check=False)
    assert done.returncode != 0 and "invalid device ordinal" in done.stdout
    gate = twin.spec.acceptance.ib_write_bw_gbps
    assert ib("mlx5_0") >= gate
    apply_fault(twin.state, "ib_bw_low", clear=False)  # the port stays Active at full rate, the test is slow
    assert ib("mlx5_0") < gate and "Rate: 400" in twin.out("ibstat", "mlx5_0")
    apply_fault(twin.state, "ib_bw_low", clear=True)
    apply_fault(twin.state, "ib_port_slow", clear=False)
    assert ib("mlx5_0") < gate
    apply_fault(twin.state, "ib_port_down", clear=False)
    down = twin.run("ib_write_bw", "-d", "mlx5_1", "--report_gbits", "localhost", check=False)
    assert down.returncode == 1 and "state is Down" in down.stderr
    scratch = [f"/dev/{d['name']}" for d in twin.drives("scratch")]
    twin.out("zpool", "create", "scratch", *scratch)
    whole = parse_fio_jobs(twin.out("fio", "--directory=/scratch", "--name=seq", "--rw=read", "--output-format=json"))
    apply_fault(twin.state, "nvme_read_slow", clear=False)  # the first scratch drive, and the stripe with it
    slow = parse_fio_jobs(twin.out("fio", "--readonly", "--output-format=json", "--name=a", f"--filename={scratch[0]}",
                                   "--name=b", f"--filename={scratch[1]}"))
    assert [j.read_gbs for j in slow] == [1.2, 13.0]
    stripe = parse_fio_jobs(twin.out("fio", "--directory=/scratch", "--name=seq", "--rw=read", "--output-format=json"))
    assert stripe[0].read_gbs < whole[0].read_gbs / 5
    refused = twin.run("fio", "--readonly", "--name=w", f"--filename={scratch[0]}", "--rw=write", check=False)
    assert refused.returncode == 1 and "read-only mode" in refused.stderr
    apply_fault(twin.state, "scratch_drive_missing", clear=False)
    failed = twin.run("fio", "--directory=/scratch", "--name=seq", "--rw=read", "--output-format=json", check=False)
    assert failed.returncode == 1 and "Input/output error" in failed.stdout


def test_the_pool_probe_runs_on_the_stand_ins_and_leaves_nothing_behind(twin: Twin, tmp_path: Path) -> None:
    import subprocess
    import sys

    from test_personality_helpers import TOOLS

    from provision.conformance.checks import burnin
    from provision.conformance.checks._base import Context
    from provision.conformance.checks.burnin_plan import fio_pool_probe
    from provision.conformance.facts import NodeFacts, Section
    from provision.conformance.model import Level, Outcome

    shims = tmp_path / "shims"
    shims.mkdir()
    for tool in ("zfs", "fio", "zpool"):
        (shims / tool).write_text(f'#!/bin/sh\nexec {sys.executable} {TOOLS / f"{tool}.py"} "$@"\n')
        (shims / tool).chmod(0o755)
    twin.out("zpool", "create", "-m", "/scratch", "scratch", *[f"/dev/{d['name']}" for d in twin.drives("scratch")])
    env = {**twin.env(), "PATH": f"{shims}:/usr/bin:/bin"}
    done = subprocess.run(["sh", "-c", fio_pool_probe(twin.spec).command], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    status = twin.out("zpool", "status", "-P", "scratch")
    sections = {"fio_pool": Section(name="fio_pool", rc=0, stdout=done.stdout, stderr=done.stderr),
                "zpool_status": Section(name="zpool_status", rc=0, stdout=status, stderr="")}
    ctx = Context(node="n1", spec=twin.spec, facts=NodeFacts(node="n1", sections=sections), level=Level.BURNIN)
    burnin._pool(ctx)
    seq, rand = ctx.results
    assert seq.outcome is Outcome.PASS and rand.outcome is Outcome.PASS, (seq, rand)
    assert "scratch/provision-burnin-rand primarycache=metadata secondarycache=none" in seq.detail
    assert "provision-burnin" not in twin.out("zfs", "list", "-H", "-o", "name")

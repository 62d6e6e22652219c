"""The example inventory loads into typed specs with every figure of the seed."""

from __future__ import annotations

import json

import pytest

from provision.cli import main
from provision.spec import load_fleet
from tests.conftest import EXAMPLE_INVENTORY

HOSTS = EXAMPLE_INVENTORY / "hosts.yml"


def test_example_inventory_has_eight_prod_nodes() -> None:
    fleet = load_fleet(HOSTS)
    assert sorted(fleet.hosts) == [f"node0{i}" for i in range(1, 9)]
    assert {h.profile for h in fleet.hosts.values()} == {"ml_prod_v4"}
    catalogue = {p for p in fleet.profiles if p.startswith("catalogue_")}
    assert len(catalogue) == 18  # every row of the seed's catalogue tables (tests/unit/test_seed_profiles.py)
    assert set(fleet.profiles) - catalogue == {"ml_prod_v4", "ml_density_v2", "ml_cost_v3", "sys_821ge_tnhr_captured"}


def test_ml_prod_v4_figures_match_the_seed() -> None:
    spec = load_fleet(HOSTS).hosts["node01"].spec
    assert (spec.cpu.sockets, spec.cpu.total_cores, spec.cpu.total_threads) == (2, 128, 256)
    assert {"avx512f", "amx_tile"} <= set(spec.cpu.isa_flags)
    assert (spec.memory.total_gb, spec.memory.dimm_count, spec.memory.type, spec.memory.ecc) == (
        2048, 32, "DDR5", True)
    # The seed says 4800 MT/s on 12 channels a socket; an 8592+ has 8, so 32 DIMMs are 2 per channel: 4400.
    assert (spec.memory.min_speed_mts, spec.memory.channels_per_socket, spec.memory.dimms_per_channel) == (
        4400, 8, 2)
    assert (spec.gpu.count, spec.gpu.memory_gb, spec.gpu.form_factor) == (8, 80, "SXM")
    assert spec.gpu.fabric_manager and spec.gpu.nvlink and spec.gpu.nvlink.links_per_gpu == 18
    assert (spec.gpu.pcie.generation, spec.gpu.pcie.width) == (5, 16)
    assert (spec.storage.boot.count, spec.storage.boot.size_tb, spec.storage.boot.raid.level) == (2, 1.92, "raid1")
    z = spec.storage.scratch.zfs
    assert (spec.storage.scratch.count, spec.storage.scratch.size_tb, z.layout, z.vdevs) == (8, 7.68, "stripe", 8)
    assert spec.network.ethernet.count == 2 and spec.network.ethernet.speed_gbps == 100
    assert spec.network.infiniband and spec.network.infiniband.rate_gbps == 400
    assert (spec.power.psu_count, spec.power.psu_watts, spec.power.peak_draw_w) == (2, 3200, 5500)
    assert spec.cooling.warn_internal_ambient_c == 35 and spec.cooling.fan_redundancy == "N+1"
    assert spec.acceptance.scratch_seq_read_gbs == 50
    assert spec.acceptance.scratch_rand_read_iops_4k == 3_500_000
    assert spec.software.fabric_manager and spec.software.fabric_manager.version == spec.software.nvidia_driver.version
    assert {f.component for f in spec.firmware} == {"bmc", "bios", "gpu", "nvswitch", "ib_nic"}


def test_variants_differ_where_the_seed_says() -> None:
    profiles = load_fleet(HOSTS).profiles
    density, cost = profiles["ml_density_v2"], profiles["ml_cost_v3"]
    assert density.gpu.interconnect == "pcie" and density.software.fabric_manager is None
    assert (density.memory.total_gb, density.memory.type) == (1024, "DDR4")
    assert (cost.gpu.count, cost.gpu.model, cost.memory.total_gb) == (4, "NVIDIA A100 80GB PCIe", 512)


def test_the_captured_profile_is_the_supermicro_capture_as_it_runs() -> None:
    cap = load_fleet(HOSTS).profiles["sys_821ge_tnhr_captured"]
    assert (cap.cpu.model, cap.cpu.cores_per_socket) == ("Intel(R) Xeon(R) Platinum 8462Y+", 32)
    assert (cap.memory.dimm_count, cap.memory.dimm_size_gb, cap.memory.min_speed_mts) == (32, 64, 4400)
    assert (cap.power.psu_count, cap.power.psu_watts) == (8, 3000)
    assert (cap.storage.boot.size_tb, cap.storage.scratch.size_tb, cap.storage.scratch.count) == (7.68, 7.68, 6)
    assert {f.component: f.version for f in cap.firmware}["bmc"] == "11.01.01"
    assert cap.network.infiniband is None and cap.network.ethernet.count == 11  # ports, as the X13 BMC reports them


def test_spec_is_frozen() -> None:
    spec = load_fleet(HOSTS).hosts["node01"].spec
    with pytest.raises(Exception, match="frozen"):
        spec.gpu.count = 4  # type: ignore[misc]


def test_cli_spec_show_json_prints_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "show", "node01", "-i", str(HOSTS), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "ml_prod_v4"
    for section in ("cpu", "memory", "gpu", "storage", "network", "power", "cooling", "bios", "firmware",
                    "software", "acceptance"):
        assert data["spec"][section], section
    assert data["spec"]["software"]["nvidia_driver"]["version"] == "550.127.08"


def test_cli_inventory_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", str(HOSTS), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0] == {"host": "node01", "profile": "ml_prod_v4", "groups": ["gpu_nodes", "ml_prod_v4"],
                       "bmc": "https://bmc-node01.oob.example.net", "ssh": "node01.cluster.example.net"}


def test_password_never_prints(inventory_copy, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", "Sup3r-S3cret-Zebra")
    host = load_fleet(inventory_copy).hosts["node01"]
    assert host.bmc.password.get_secret_value() == "Sup3r-S3cret-Zebra"
    assert "Sup3r" not in repr(host) and "Sup3r" not in host.model_dump_json()

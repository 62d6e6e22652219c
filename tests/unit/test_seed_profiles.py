"""Every system of the seed is a profile: the three ML classes and the 18 rows of its catalogue tables.

The seed's catalogue gives the CPU, the memory size, the drives and (for most rows) a "CPU Benchmark" figure; each
row is one file (inventory/group_vars/all/profile_catalogue_*.yml) and its benchmark is recorded under
`reference.cpu_benchmark`, as given.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from provision.spec import NodeSpec, load_fleet
from provision.spec.acceptance import Benchmark
from provision.spec.hardware import Memory

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "inventory" / "hosts.yml"

# (profile variable, CPU the row names, memory GB, boot drives, boot TB each, the seed's benchmark or None)
CATALOGUE = [
    ("catalogue_i7_6700k_7700", "i7-7700", 64, 2, 0.512, 8046),
    ("catalogue_i7_8700", "i7-8700", 64, 2, 1.0, 13124),
    ("catalogue_i9_9900k", "i9-9900K", 128, 2, 1.0, 49969),
    ("catalogue_i9_13900_64g", "i9-13900", 64, 2, 2.0, None),
    ("catalogue_i9_13900_128g", "i9-13900", 128, 2, 2.0, None),
    ("catalogue_i5_13500_64g", "i5-13500", 64, 2, 0.5, None),
    ("catalogue_i5_13500_128g", "i5-13500", 128, 2, 0.5, None),
    ("catalogue_i5_13500_ws", "i5-13500", 64, 2, 0.5, None),
    ("catalogue_ryzen5_3600", "Ryzen 5 3600", 64, 2, 0.48, 17849),
    ("catalogue_ryzen7_7700", "Ryzen 7 7700", 64, 2, 1.0, 35224),
    ("catalogue_ryzen9_5950x", "Ryzen 9 5950X", 128, 2, 4.0, 46045),
    ("catalogue_ryzen9_7950x", "Ryzen 9 7950X", 128, 2, 2.0, 63561),
    ("catalogue_epyc_7502p_128g_1t", "EPYC 7502P", 128, 1, 1.0, 48021),
    ("catalogue_epyc_7502p_128g_2t", "EPYC 7502P", 128, 1, 2.0, 48021),
    ("catalogue_epyc_7502p_128g_4t", "EPYC 7502P", 128, 2, 2.0, 48021),
    ("catalogue_epyc_7502p_256g_1t", "EPYC 7502P", 256, 1, 1.0, 48021),
    ("catalogue_epyc_7502p_256g_4t", "EPYC 7502P", 256, 2, 2.0, 48021),
    ("catalogue_epyc_9454p", "EPYC 9454P", 256, 2, 2.0, None),
]
ML = ("ml_prod_v4", "ml_density_v2", "ml_cost_v3")


@pytest.fixture(scope="module")
def profiles() -> dict[str, NodeSpec]:
    return load_fleet(HOSTS).profiles


def test_all_21_systems_of_the_seed_are_profiles(profiles: dict[str, NodeSpec]) -> None:
    assert len(CATALOGUE) == 18
    seed = {name for name, *_ in CATALOGUE} | set(ML)
    assert len(seed) == 21 and seed <= set(profiles)
    assert len({profiles[p].profile for p in seed}) == 21  # 21 distinct class names


@pytest.mark.parametrize(("name", "cpu", "memory_gb", "drives", "drive_tb", "benchmark"), CATALOGUE)
def test_each_catalogue_row_has_the_seeds_figures(profiles: dict[str, NodeSpec], name: str, cpu: str,
                                                   memory_gb: int, drives: int, drive_tb: float,
                                                   benchmark: int | None) -> None:
    spec = profiles[name]
    assert cpu in spec.cpu.model and spec.cpu.sockets == 1
    assert spec.memory.total_gb == memory_gb
    assert (spec.storage.boot.count, spec.storage.boot.size_tb, spec.storage.boot.interface) == (drives, drive_tb, "nvme")
    recorded = spec.reference.cpu_benchmark
    if benchmark is None:
        assert recorded is None  # the row gives none: nothing is made up
    else:
        assert recorded is not None and recorded.score == benchmark and "seed" in recorded.source
    assert spec.described_platforms.any_platform  # the seed names no vendor or model for its catalogue
    assert (spec.gpu is not None) == (name == "catalogue_i5_13500_ws")  # only the workstation row names a GPU


def test_desktop_parts_take_unbuffered_and_epyc_registered_dimms(profiles: dict[str, NodeSpec]) -> None:
    for name, *_ in CATALOGUE:
        spec = profiles[name]
        assert spec.memory.module == ("RDIMM" if "EPYC" in spec.cpu.model else "UDIMM"), name
    assert profiles["ml_prod_v4"].memory.module == "RDIMM"  # seed 1.4: DDR5 ECC RDIMM


def test_ml_prod_v4_keeps_both_of_the_seeds_power_figures(profiles: dict[str, NodeSpec]) -> None:
    spec = profiles["ml_prod_v4"]
    assert spec.power.peak_draw_w == 5500 and spec.cooling.max_system_power_w == 3500


def test_a_benchmark_needs_its_unit_and_source() -> None:
    with pytest.raises(ValidationError):
        Benchmark.model_validate({"score": 8046})
    with pytest.raises(ValidationError):
        Benchmark.model_validate({"score": 8046, "unit": "", "source": "seed"})


def test_a_module_kind_other_than_rdimm_or_udimm_is_refused() -> None:
    raw = {"total_gb": 64, "dimm_count": 2, "dimm_size_gb": 32, "type": "DDR5", "ecc": False, "min_speed_mts": 4800,
           "channels_per_socket": 2, "dimms_per_channel": 1}
    assert Memory.model_validate(raw).module is None
    with pytest.raises(ValidationError):
        Memory.model_validate({**raw, "module": "SODIMM"})


def test_the_lab_twin_table_has_one_profile_per_distinct_catalogue_cpu(profiles: dict[str, NodeSpec]) -> None:
    from tests.lab.test_profiles_lab import PROFILES as TWINS

    cpus = {profiles[name].cpu.model for name, *_ in CATALOGUE}
    assert len(cpus) == 11 and len(TWINS) == 11
    assert {profiles[name].cpu.model for name in TWINS} == cpus

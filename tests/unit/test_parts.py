"""The parts table (provision/spec/parts.yml) and what `spec validate` finds with it: each finding kind, a row that
must not fire beside it, the power budget's arithmetic at its boundaries, and the CLI's lines and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from provision.cli import main
from provision.errors import SpecError
from provision.spec import NodeSpec, load_fleet
from provision.spec.findings import Finding, Severity
from provision.spec.parts import cpu_part, gpu_part, load_parts, part_findings, parts
from provision.spec.power_budget import budget, budget_findings
from tests.conftest import EXAMPLE_INVENTORY

PROD = "group_vars/all/profile_ml_prod_v4.yml"


@pytest.fixture(scope="module")
def profiles() -> dict[str, NodeSpec]:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").profiles


def _with(spec: NodeSpec, section: str, **update: Any) -> NodeSpec:
    part = getattr(spec, section)
    return spec.model_copy(update={section: part.model_copy(update=update)})


def _keys(found: list[Finding], severity: Severity = Severity.FINDING) -> list[str]:
    return [f.key for f in found if f.severity is severity]


def test_every_part_a_profile_names_is_in_the_table(profiles: dict[str, NodeSpec]) -> None:
    for name, spec in profiles.items():
        assert cpu_part(spec.cpu.model) is not None, name
        assert spec.gpu is None or gpu_part(spec.gpu.model) is not None, name
        assert not _keys(part_findings(spec), Severity.WARNING), name


def test_every_row_has_its_source() -> None:
    table = parts()
    assert all(row.source for row in (*table.cpus, *table.gpus))
    assert all(("ARK" in c.source) == c.name.startswith("Intel") for c in table.cpus)
    assert all(("AMD product page" in c.source) == c.name.startswith("AMD") for c in table.cpus)
    assert all("NVIDIA" in g.source and "datasheet" in g.source for g in table.gpus)


@pytest.mark.parametrize(("model", "key"), [
    ("Intel(R) Xeon(R) Platinum 8592+", "xeon platinum 8592+"),
    ("13th Gen Intel(R) Core(TM) i9-13900", "core i9-13900"),
    ("Intel(R) Core(TM) i7-7700 CPU @ 3.60GHz", "core i7-7700"),
    ("AMD Ryzen 9 5950X 16-Core Processor", "ryzen 9 5950x"),
    ("AMD EPYC 7502P 32-Core Processor", "epyc 7502p"),
    ("Intel(R) Xeon(R) Platinum 8592", None),  # no +: another part
    ("13th Gen Intel(R) Core(TM) i9-13900K", None),  # the K part has other clocks and power
    ("Intel(R) Core(TM) i7-7700K CPU @ 4.20GHz", None),
    ("AMD EPYC 7502 32-Core Processor", None),  # the two-socket 7502, not the P part
])
def test_a_model_name_finds_its_own_part_only(model: str, key: str | None) -> None:
    part = cpu_part(model)
    assert (part.key if part else None) == key


@pytest.mark.parametrize(("model", "key"), [
    ("NVIDIA H100 80GB HBM3", "h100 sxm5 80gb"), ("H100 80GB HBM3", "h100 sxm5 80gb"),
    ("NVIDIA H100 PCIe", "h100 pcie 80gb"), ("NVIDIA H100 NVL", None), ("NVIDIA A100-SXM4-80GB", None),
])
def test_a_gpu_name_finds_its_own_board_only(model: str, key: str | None) -> None:
    part = gpu_part(model)
    assert (part.key if part else None) == key


# (key, section, update that makes it differ from the part) on a profile whose figures are the part's.
CPU_MUTATIONS = [
    ("cpu.cores_per_socket", "cpu", {"cores_per_socket": 47, "threads": 96}),  # threads as the part has them
    ("cpu.threads", "cpu", {"threads_per_core": 1}),
    ("cpu.base_clock_ghz", "cpu", {"base_clock_ghz": 2.8}),
    ("cpu.l3_cache_mb_per_socket", "cpu", {"l3_cache_mb_per_socket": 128}),
    ("cpu.pcie_lanes", "cpu", {"pcie_lanes": 160}),
    ("cpu.pcie_generation", "cpu", {"pcie_generation": 4}),
]


def test_a_profile_with_the_parts_figures_has_no_finding(profiles: dict[str, NodeSpec]) -> None:
    for name in ("catalogue_epyc_9454p", "catalogue_i5_13500_ws", "sys_821ge_tnhr_captured", "ml_cost_v3"):
        assert part_findings(profiles[name]) == [], name


@pytest.mark.parametrize(("key", "section", "update"), CPU_MUTATIONS)
def test_each_cpu_figure_that_differs_is_one_finding(profiles: dict[str, NodeSpec], key: str, section: str,
                                                     update: dict[str, Any]) -> None:
    spec = _with(profiles["catalogue_epyc_9454p"], section, **update)
    found = part_findings(spec)
    assert _keys(found) == [key]
    line = found[0].message
    assert f"{next(iter(update.values())):g}" in line or key == "cpu.threads"
    assert "AMD EPYC 9454P" in line and "[AMD product page, AMD EPYC 9454P" in line


def test_gpu_figures_the_board_cannot_have(profiles: dict[str, NodeSpec]) -> None:
    ws = profiles["catalogue_i5_13500_ws"]
    gpu = ws.need_gpu()
    at_max = ws.model_copy(update={"gpu": gpu.model_copy(update={"power_limit_w": 70})})
    assert part_findings(at_max) == []  # the board's own highest limit holds
    over = ws.model_copy(update={"gpu": gpu.model_copy(update={"power_limit_w": 71, "memory_gb": 16,
                                                               "memory_bandwidth_tbs": 0.36,
                                                               "pcie": gpu.pcie.model_copy(update={"generation": 5})})})
    found = part_findings(over)
    assert _keys(found) == ["gpu.memory_gb", "gpu.memory_bandwidth_tbs", "gpu.pcie.generation", "gpu.power_limit_w"]
    assert "71 W, above the 70 W" in found[-1].message and "RTX 4000 SFF Ada Generation datasheet" in found[-1].message


def test_unknown_parts_are_warnings_not_findings(profiles: dict[str, NodeSpec]) -> None:
    spec = _with(profiles["ml_prod_v4"], "cpu", model="Intel(R) Xeon(R) Gold 6548Y+")
    spec = _with(spec, "gpu", model="NVIDIA H200")
    found = part_findings(spec)
    assert [(f.severity, f.key) for f in found] == [(Severity.WARNING, "cpu.model"), (Severity.WARNING, "gpu.model")]
    assert [(f.severity, f.key) for f in budget_findings(spec)] == [(Severity.WARNING, "power.peak_draw_w")]


def test_ml_prod_v4_names_every_copied_cpu_figure_that_differs(profiles: dict[str, NodeSpec]) -> None:
    found = {f.key: f.message for f in part_findings(profiles["ml_prod_v4"])}
    assert set(found) == {"cpu.base_clock_ghz", "cpu.l3_cache_mb_per_socket", "cpu.pcie_lanes"}
    assert "2.5 GHz" in found["cpu.base_clock_ghz"] and "1.9 GHz" in found["cpu.base_clock_ghz"]
    assert "112 MB" in found["cpu.l3_cache_mb_per_socket"] and "320 MB" in found["cpu.l3_cache_mb_per_socket"]
    assert "112 PCIe" in found["cpu.pcie_lanes"] and "80 PCIe" in found["cpu.pcie_lanes"]
    assert all("Intel ARK, Intel Xeon Platinum 8592+" in m for m in found.values())


def test_ml_prod_v4_power_budget(profiles: dict[str, NodeSpec]) -> None:
    spec = profiles["ml_prod_v4"]
    b = budget(spec)
    assert b is not None and (b.gpu_w, b.cpu_w, b.allowance_w, b.total_w) == (5600, 700, 1000, 7300)
    found = budget_findings(spec)
    assert _keys(found) == ["power.peak_draw_w", "power.psu_watts", "cooling.max_system_power_w",
                            "cooling.max_system_power_w"]
    peak, psu, cooling, peak_vs_cooling = (f.message for f in found)
    assert "GPUs 8 x 700 W (gpu.power_limit_w) = 5600 W" in peak and "above peak_draw_w 5500 W" in peak
    assert "NVIDIA H100 Tensor Core GPU datasheet" in peak and "Intel ARK" in peak
    assert "3200 W the PSUs deliver under 2N" in psu
    assert "= 7300 W, above the chassis cooling limit of 3500 W" in cooling
    assert "peak_draw_w 5500 W is above the chassis cooling limit of 3500 W" in peak_vs_cooling


def _budget_keys(spec: NodeSpec, power: dict[str, Any], cooling_w: int | None = None) -> list[str]:
    spec = _with(spec, "power", **power)
    spec = _with(spec, "cooling", max_system_power_w=cooling_w)
    return _keys(budget_findings(spec))


# EPYC 9454P: 290 W default TDP, no GPU; with 160 W of allowance the budget is 450 W.
@pytest.mark.parametrize(("power", "cooling_w", "keys"), [
    ({"peak_draw_w": 450, "platform_allowance_w": 160}, None, []),  # exactly met: holds
    ({"peak_draw_w": 449, "platform_allowance_w": 160}, None, ["power.peak_draw_w"]),
    ({"peak_draw_w": 450, "platform_allowance_w": 160}, 450, []),
    ({"peak_draw_w": 450, "platform_allowance_w": 160}, 449, ["cooling.max_system_power_w"] * 2),
    ({"peak_draw_w": 440, "platform_allowance_w": 160}, 445, ["power.peak_draw_w", "cooling.max_system_power_w"]),
    ({"peak_draw_w": 450, "platform_allowance_w": 160, "psu_count": 2, "psu_watts": 450, "redundancy": "N+1"},
     None, []),
    ({"peak_draw_w": 450, "platform_allowance_w": 160, "psu_count": 2, "psu_watts": 449, "redundancy": "N+1"},
     None, ["power.psu_watts"]),
    ({"peak_draw_w": 450, "platform_allowance_w": 160, "psu_count": 3, "psu_watts": 225, "redundancy": "N+1"},
     None, []),  # two of three PSUs carry it
    ({"peak_draw_w": 450, "platform_allowance_w": 160, "psu_count": 4, "psu_watts": 224, "redundancy": "2N"},
     None, ["power.psu_watts"]),  # one feed of two PSUs: 448 W
])
def test_power_budget_boundaries(profiles: dict[str, NodeSpec], power: dict[str, Any], cooling_w: int | None,
                                 keys: list[str]) -> None:
    assert _budget_keys(profiles["catalogue_epyc_9454p"], power, cooling_w) == keys


def test_no_stated_allowance_counts_zero_and_says_so(profiles: dict[str, NodeSpec]) -> None:
    spec = _with(profiles["catalogue_epyc_9454p"], "power", platform_allowance_w=None, peak_draw_w=289)
    b = budget(spec)
    assert b is not None and b.total_w == 290
    (finding,) = budget_findings(spec)
    assert "no platform allowance stated" in finding.message and "= 290 W, above peak_draw_w 289 W" in finding.message


def test_a_broken_parts_table_is_one_line_naming_the_file(tmp_path: Path) -> None:
    shipped = (Path(__file__).resolve().parents[2] / "provision/spec/parts.yml").read_text()
    twice = tmp_path / "twice.yml"
    twice.write_text(shipped.replace("key: xeon platinum 8480+", "key: xeon platinum 8592+"))
    with pytest.raises(SpecError, match=r"twice\.yml: .*listed twice.*xeon platinum 8592\+"):
        load_parts(twice)
    sourceless = tmp_path / "sourceless.yml"
    sourceless.write_text(shipped.replace('    source: "AMD product page, AMD Ryzen 7 7700; AMD AM5 memory support '
                                          '(4 DIMMs: DDR5-3600)"\n', ""))
    with pytest.raises(SpecError, match=r"sourceless\.yml: cpus\.\d+\.source: Field required"):
        load_parts(sourceless)


def _inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE_INVENTORY, inv)
    (tmp_path / "firmware").symlink_to(EXAMPLE_INVENTORY.parent / "firmware")
    return inv / "hosts.yml"


def test_cli_reports_findings_and_passes_unless_strict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hosts = _inventory(tmp_path)
    assert main(["spec", "validate", "-i", str(hosts), "-o", "plain"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("finding:")]
    prod = [line for line in lines if "provision_profile_ml_prod_v4." in line]
    assert len(prod) == 7, err
    where = str(tmp_path / "inv" / PROD)
    assert all(line.startswith(f"finding: {where}: provision_profile_ml_prod_v4.") for line in prod)
    assert any("cpu.base_clock_ghz: the profile says 2.5 GHz" in line and "[Intel ARK" in line for line in prod)
    assert any("power.peak_draw_w: GPUs 8 x 700 W" in line and "5500 W" in line for line in prod)
    assert "22 profiles valid" in err
    assert main(["spec", "validate", "-i", str(hosts), "-o", "plain", "--strict"]) == 1


def test_cli_json_lists_every_class_and_the_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["spec", "validate", "-i", str(_inventory(tmp_path)), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is True and len(data["classes"]) == 22
    assert {"ML-PROD-V4", "CAT-I7-6700K-7700", "CAT-EPYC-7502P-256G-4T"} <= set(data["classes"].values())
    keys = {p["key"] for p in data["problems"] if p["severity"] == "finding"}
    assert "provision_profile_ml_prod_v4.cooling.max_system_power_w" in keys

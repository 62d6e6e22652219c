"""Memory population against the CPU table: the seed's impossible figures are flagged, the shipped ones pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from provision.cli import main
from provision.spec import load_fleet
from provision.spec.memory_population import Finding, Severity, check_profile, lookup
from provision.spec.model import NodeSpec
from tests.conftest import EXAMPLE_INVENTORY

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures/redfish/full/supermicro/redfish/v1/Systems/1"
PROD = "group_vars/all/profile_ml_prod_v4.yml"
SHIPPED_MEMORY = "    min_speed_mts: 4400\n    channels_per_socket: 8\n    dimms_per_channel: 2\n"


def _prod() -> NodeSpec:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").profiles["ml_prod_v4"]


def _with(spec: NodeSpec, cpu: dict[str, object] | None = None, **memory: object) -> NodeSpec:
    return spec.model_copy(update={"memory": spec.memory.model_copy(update=memory),
                                   "cpu": spec.cpu.model_copy(update=cpu or {})})


def _errors(found: list[Finding]) -> dict[str, str]:
    return {f.key: f.message for f in found if f.severity is Severity.ERROR}


@pytest.mark.parametrize(("model", "channels", "rated"), [
    ("Intel(R) Xeon(R) Platinum 8592+", 8, (5600, 4400)),  # lscpu / Redfish spelling
    ("Intel(R) Xeon(R) Platinum 8462Y+", 8, (4800, 4400)),  # Processors/1 Model of the Supermicro capture
    ("Intel Xeon Platinum 8480+ Processor", 8, (4800, 4400)),
    ("AMD EPYC 9454P 48-Core Processor", 12, (4800, 3600)),
    ("AMD EPYC 7502P 32-Core Processor", 8, (3200, 2933)),
])
def test_the_table_knows_the_named_parts(model: str, channels: int, rated: tuple[int, int]) -> None:
    entry = lookup(model)
    assert entry is not None and (entry.channels, entry.mts_by_dpc) == (channels, rated)


@pytest.mark.parametrize("model", ["Intel(R) Xeon(R) Platinum 8592", "Intel(R) Xeon(R) Platinum 18592+",
                                   "AMD EPYC 9454", "AMD EPYC 7502 32-Core Processor"])
def test_a_neighbouring_part_number_is_not_taken_for_a_known_one(model: str) -> None:
    assert lookup(model) is None


def test_the_capture_populates_as_the_table_says() -> None:
    """The whole Supermicro capture: 2x 8462Y+, every socket 8 channels of 2 DIMMs at the 2DPC speed."""
    model = json.loads((CAPTURE / "Processors/1/index.json").read_text())["Model"]
    entry = lookup(model)
    assert entry is not None
    dimms = [json.loads(p.read_text()) for p in (CAPTURE / "Memory").glob("*/index.json")]
    dimms = [d for d in dimms if d.get("CapacityMiB")]
    by_socket: dict[int, dict[int, int]] = {}
    for d in dimms:
        loc = d["MemoryLocation"]
        channels = by_socket.setdefault(loc["Socket"], {})
        channels[loc["Channel"]] = channels.get(loc["Channel"], 0) + 1
    assert len(dimms) == 32
    assert all(len(ch) == entry.channels and set(ch.values()) == {2} for ch in by_socket.values())
    assert {d["OperatingSpeedMhz"] for d in dimms} == {entry.mts_by_dpc[1]}


def test_the_shipped_profiles_have_no_error() -> None:
    for name, spec in load_fleet(EXAMPLE_INVENTORY / "hosts.yml").profiles.items():
        assert _errors(check_profile(spec)) == {}, name


def test_the_seed_figures_are_flagged() -> None:
    """Seed 1.4: 12 channels per CPU, 32 DIMMs, 4800 MT/s minimum, on 2x Xeon 8592+."""
    found = _errors(check_profile(_with(_prod(), channels_per_socket=12, dimms_per_channel=1, min_speed_mts=4800)))
    assert set(found) == {"memory.channels_per_socket", "memory.dimm_count"}
    assert "8 [Intel ARK" in found["memory.channels_per_socket"]
    assert "are 24" in found["memory.dimm_count"]


def test_two_dimms_per_channel_cannot_run_at_4800() -> None:
    found = _errors(check_profile(_with(_prod(), min_speed_mts=4800)))
    assert list(found) == ["memory.min_speed_mts"]
    assert "4400 MT/s with 2 DIMM(s) per channel" in found["memory.min_speed_mts"]


def test_one_dimm_per_channel_may_run_faster() -> None:
    spec = _with(_prod(), dimm_count=16, total_gb=1024, dimms_per_channel=1, min_speed_mts=5600)
    assert check_profile(spec) == []
    assert list(_errors(check_profile(_with(spec, min_speed_mts=5601)))) == ["memory.min_speed_mts"]


def test_three_dimms_per_channel_is_more_than_rated() -> None:
    spec = _with(_prod(), dimm_count=48, total_gb=3072, dimms_per_channel=3)
    assert list(_errors(check_profile(spec))) == ["memory.dimms_per_channel"]


def test_genoa_two_dimms_per_channel_is_3600() -> None:
    epyc = {"vendor": "amd", "model": "AMD EPYC 9454P 48-Core Processor", "sockets": 1}
    ok = _with(_prod(), epyc, dimm_count=12, total_gb=768, channels_per_socket=12, dimms_per_channel=1,
               min_speed_mts=4800)
    assert check_profile(ok) == []
    slow = _with(ok, dimm_count=24, total_gb=1536, dimms_per_channel=2)
    assert list(_errors(check_profile(slow))) == ["memory.min_speed_mts"]
    assert check_profile(_with(slow, min_speed_mts=3600)) == []


def test_an_unknown_cpu_is_a_warning_not_an_error() -> None:
    found = check_profile(_with(_prod(), {"model": "Intel(R) Xeon(R) Gold 6548Y+"}))
    assert [(f.severity, f.key) for f in found] == [(Severity.WARNING, "cpu.model")]
    assert "cannot judge" in found[0].message


def test_a_memory_type_the_part_does_not_take_is_a_warning() -> None:
    found = check_profile(_with(_prod(), type="DDR4"))
    assert [(f.severity, f.key) for f in found] == [(Severity.WARNING, "memory.type")]


def _inventory(tmp_path: Path, memory: str | None = None) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE_INVENTORY, inv)
    (tmp_path / "firmware").symlink_to(EXAMPLE_INVENTORY.parent / "firmware")  # images are ../firmware/*
    if memory is not None:
        path = inv / PROD
        text = path.read_text()
        assert SHIPPED_MEMORY in text, "fixture drift: the shipped ML-PROD-V4 memory figures moved"
        path.write_text(text.replace(SHIPPED_MEMORY, memory))
    return inv / "hosts.yml"


def test_cli_validate_passes_the_shipped_inventory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["spec", "validate", "-i", str(_inventory(tmp_path))]) == 0
    assert "error:" not in capsys.readouterr().err


def test_cli_validate_flags_the_seed_spec_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hosts = _inventory(tmp_path, "    min_speed_mts: 4800\n    channels_per_socket: 8\n    dimms_per_channel: 2\n")
    assert main(["spec", "validate", "-i", str(hosts)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    line = lines[0]
    assert str(tmp_path / "inv" / PROD) in line
    assert "provision_profile_ml_prod_v4.memory.min_speed_mts" in line and "4400" in line and "node01" in line


def test_cli_validate_json_lists_the_problems(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hosts = _inventory(tmp_path, "    min_speed_mts: 4400\n    channels_per_socket: 12\n    dimms_per_channel: 2\n")
    assert main(["spec", "validate", "-i", str(hosts), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is False
    keys = {p["key"] for p in data["problems"] if p["severity"] == "error"}
    assert keys == {"provision_profile_ml_prod_v4.memory.channels_per_socket",
                    "provision_profile_ml_prod_v4.memory.dimm_count"}

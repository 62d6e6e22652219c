"""nvidia-smi -q (text) and -q -x (XML) on real captures, field by field."""

from __future__ import annotations

import pytest

from provision.conformance.parsers import parse_nvidia_smi_query, parse_nvidia_smi_xml
from provision.errors import ParseError

from ._fixtures import H100_590, H100_MIG_590, H200_590, section, text

H100_535 = "nvidia-smi/gpud/nvidia-smi-q.535.161.08.h100x8.txt"


def test_h100x8_driver_535_every_gpu() -> None:
    report = parse_nvidia_smi_query(text(H100_535))
    assert report.driver_version == "535.161.08"
    assert report.cuda_version == "12.2"
    assert report.attached_gpus == 8
    assert [g.bus_id for g in report.gpus] == [
        "00000000:19:00.0",
        "00000000:3B:00.0",
        "00000000:4C:00.0",
        "00000000:5D:00.0",
        "00000000:9B:00.0",
        "00000000:BB:00.0",
        "00000000:CB:00.0",
        "00000000:DB:00.0",
    ]
    for gpu in report.gpus:
        assert gpu.product_name == "NVIDIA H100 80GB HBM3"
        assert gpu.vbios_version == "96.00.74.00.0D"
        assert gpu.persistence_mode is True
        assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (False, False)
        assert (gpu.ecc_mode_current, gpu.ecc_mode_pending) == (True, True)
        assert gpu.fb_memory_total_mib == 81559
        assert (gpu.pcie.gen_current, gpu.pcie.gen_max, gpu.pcie.width_current, gpu.pcie.width_max) == (5, 5, 16, 16)
        assert gpu.power_limit_w == 700.0
        assert gpu.fabric is not None and gpu.fabric.completed
        assert gpu.fabric.health is None  # 535 prints State/Status only
        assert gpu.remapped_rows is not None
        assert (gpu.remapped_rows.uncorrectable, gpu.remapped_rows.pending) == (0, False)


def test_h100x8_driver_535_first_gpu_details() -> None:
    gpu = parse_nvidia_smi_query(text(H100_535)).gpus[0]
    assert gpu.serial == "1650124031592"
    assert gpu.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert gpu.module_id == 2
    assert gpu.temperature_gpu_c == 29
    assert gpu.temperature_memory_c == 39
    assert gpu.power_draw_w == 67.74
    assert gpu.retired_pages is not None
    assert (gpu.retired_pages.single_bit_ecc, gpu.retired_pages.double_bit_ecc) == (None, None)


def test_h100x8_driver_535_183_fabric_completed() -> None:
    report = parse_nvidia_smi_query(text("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt"))
    assert report.driver_version == "535.183.01"
    assert len(report.gpus) == 8
    assert all(
        g.fabric is not None and (g.fabric.state, g.fabric.status) == ("Completed", "Success") for g in report.gpus
    )
    assert report.gpus[0].bus_id == "00000000:53:00.0"
    assert report.gpus[0].module_id == 7


def test_truncated_capture_raises_not_zero_gpus() -> None:
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi_query(text("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100.truncated-invalid.txt"))
    assert err.value.tool == "nvidia-smi -q"
    assert "truncated" in err.value.reason


def test_truncated_capture_raises_even_without_expect_all() -> None:
    with pytest.raises(ParseError, match="does not end with 'Processes'"):
        parse_nvidia_smi_query(
            text("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100.truncated-invalid.txt"), expect_all=False
        )


def test_dropping_last_gpu_block_is_caught_by_attached_count() -> None:
    capture = text(H100_535)
    cut = capture[: capture.index("GPU 00000000:DB:00.0")]
    with pytest.raises(ParseError, match="Attached GPUs : 8' but 7"):
        parse_nvidia_smi_query(cut)
    assert len(parse_nvidia_smi_query(cut, expect_all=False).gpus) == 7


def test_cut_inside_last_gpu_after_its_required_fields() -> None:
    capture = text(H100_535)
    cut = capture[: capture.rindex("    Fabric")]  # last GPU keeps PCIe, power, temperatures
    with pytest.raises(ParseError, match=r"GPU 00000000:DB:00\.0: block does not end with 'Processes'"):
        parse_nvidia_smi_query(cut)


def test_rtx4090_consumer_card_has_na_fields() -> None:
    report = parse_nvidia_smi_query(text("nvidia-smi/gpud/nvidia-smi-q.535.154.05.rtx4090x8.txt"))
    assert len(report.gpus) == 8
    gpu = report.gpus[0]
    assert gpu.product_name == "NVIDIA GeForce RTX 4090"
    assert gpu.serial is None
    assert gpu.mig_mode_current is None
    assert gpu.ecc_mode_current is False
    assert gpu.fb_memory_total_mib == 24564
    assert gpu.power_limit_w == 450.0
    assert gpu.fabric is not None and (gpu.fabric.state, gpu.fabric.status) == (None, None)
    assert not gpu.fabric.completed


def test_driver_590_health_block_h100() -> None:
    report = parse_nvidia_smi_query(section(H100_590, "nvidia-smi -q"))
    assert (report.driver_version, report.cuda_version, report.attached_gpus) == ("590.48.01", "13.1", 1)
    gpu = report.gpus[0]
    assert gpu.bus_id == "00000000:00:09.0"
    assert gpu.vbios_version == "96.00.A5.00.01"
    assert gpu.module_id == 7  # 590 moved it under "Platform Info"
    assert gpu.power_draw_w == 69.62  # "Instantaneous Power Draw"
    assert gpu.temperature_gpu_c == 41
    assert gpu.fabric is not None and gpu.fabric.completed
    assert gpu.fabric.clique_id == "0"
    assert gpu.fabric.cluster_uuid == "00000000-0000-0000-0000-000000000000"
    assert gpu.fabric.health is not None and gpu.fabric.health.summary is None  # N/A on this node


def test_driver_590_h200() -> None:
    gpu = parse_nvidia_smi_query(section(H200_590, "nvidia-smi -q")).gpus[0]
    assert gpu.product_name == "NVIDIA H200"
    assert gpu.fb_memory_total_mib == 143771
    assert gpu.bus_id == "00000000:83:00.0"


def test_driver_590_mig_mode() -> None:
    gpu = parse_nvidia_smi_query(section(H100_MIG_590, "nvidia-smi -q")).gpus[0]
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (True, True)
    assert gpu.mig_device_count == 4
    assert gpu.remapped_rows is None  # "Remapped Rows : N/A" in MIG mode


def test_xml_tesla_t4() -> None:
    report = parse_nvidia_smi_xml(text("nvidia-smi/telegraf/tesla-t4.xml"))
    assert (report.driver_version, report.cuda_version, report.attached_gpus) == ("515.105.01", "11.7", 1)
    gpu = report.gpus[0]
    assert gpu.product_name == "Tesla T4"
    assert gpu.uuid == "GPU-d37e67a5-91dd-3774-a5cb-99096249601a"
    assert gpu.vbios_version == "90.04.84.00.06"
    assert gpu.fb_memory_total_mib == 15360
    assert (gpu.pcie.gen_current, gpu.pcie.width_current, gpu.pcie.width_max) == (3, 8, 16)
    assert gpu.power_limit_w == 70.0  # <power_readings><power_limit> in the v11 layout
    assert gpu.retired_pages is not None
    assert (gpu.retired_pages.single_bit_ecc, gpu.retired_pages.pending) == (0, False)
    assert gpu.fabric is None


def test_xml_a10g() -> None:
    gpu = parse_nvidia_smi_xml(text("nvidia-smi/telegraf/a10g.xml")).gpus[0]
    assert gpu.product_name == "NVIDIA A10G"
    assert (gpu.pcie.gen_current, gpu.pcie.gen_max) == (1, 4)
    assert gpu.remapped_rows is not None and gpu.remapped_rows.correctable == 0


def test_xml_a100_mig_trimmed_capture() -> None:
    capture = text("nvidia-smi/telegraf/a100-sxm4-v12.xml")
    with pytest.raises(ParseError, match="attached_gpus>4</attached_gpus> but 1"):
        parse_nvidia_smi_xml(capture)  # telegraf kept 1 of the 4 GPUs
    gpu = parse_nvidia_smi_xml(capture, expect_all=False).gpus[0]
    assert gpu.product_name == "NVIDIA A100-SXM4-80GB"
    assert (gpu.mig_mode_current, gpu.mig_device_count) == (True, 4)
    assert gpu.fb_memory_total_mib == 81920
    assert gpu.power_limit_w == 500.0
    assert gpu.module_id == 4


def test_xml_truncated_is_malformed() -> None:
    capture = text("nvidia-smi/telegraf/tesla-t4.xml")
    with pytest.raises(ParseError, match="malformed XML"):
        parse_nvidia_smi_xml(capture[: len(capture) // 2])


def test_xml_entities_refused() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    with pytest.raises(ParseError, match="entity"):
        parse_nvidia_smi_xml(bomb)

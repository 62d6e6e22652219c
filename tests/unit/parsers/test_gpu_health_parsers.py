"""GPU health facts read from real nvidia-smi captures (clocks event reasons, ECC counts, P-state) and
from the hand-written documented formats of `nvidia-smi nvlink -e` and the kernel log's Xid lines."""

from __future__ import annotations

import pytest

from provision.conformance import parsers as p
from provision.errors import ParseError

from ._fixtures import H100_590, H200_590, section, text

POWER_BRAKE = "nvidia-smi/gpud/nvidia-smi-q.535.161.08.h100x8.txt"
HEALTHY = "nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt"
RTX = "nvidia-smi/gpud/nvidia-smi-q.535.154.05.rtx4090x8.txt"


def test_power_brake_capture_shows_hw_slowdown_and_power_brake_not_thermal() -> None:
    gpus = p.parse_nvidia_smi_query(text(POWER_BRAKE)).gpus
    events = [g.clock_events for g in gpus]
    assert all(e is not None for e in events)
    braked = [i for i, e in enumerate(events) if e and e.hw_power_brake_slowdown]
    assert braked and all(events[i] and events[i].hw_slowdown for i in braked)  # type: ignore[union-attr]
    assert not any(e and (e.hw_thermal_slowdown or e.sw_thermal_slowdown) for e in events)
    assert gpus[0].performance_state == "P0"


def test_h100_capture_idle_but_gpu_2_power_braked_and_sw_thermal() -> None:
    gpus = p.parse_nvidia_smi_query(text(HEALTHY)).gpus
    hot = gpus[2].clock_events
    assert gpus[2].bus_id == "00000000:75:00.0" and hot is not None
    assert (hot.idle, hot.hw_power_brake_slowdown, hot.sw_thermal_slowdown, hot.hw_slowdown) == (False, True, True, False)
    for gpu in gpus[:2] + gpus[3:]:
        e = gpu.clock_events
        assert e is not None and e.idle is True
        assert not (e.hw_slowdown or e.hw_thermal_slowdown or e.hw_power_brake_slowdown or e.sw_thermal_slowdown)
        assert gpu.ecc_errors is not None and gpu.ecc_errors.volatile_uncorrectable == 0
        assert gpu.remapped_rows is not None and gpu.remapped_rows.pending is False
        assert (gpu.pcie.gen_current, gpu.pcie.gen_max) == (5, 5)
        assert gpu.temperature_memory_c is not None and gpu.temperature_memory_c > 0


def test_ecc_counts_not_available_are_none_not_zero() -> None:
    gpu = p.parse_nvidia_smi_query(text(RTX)).gpus[0]
    assert gpu.ecc_errors is not None and gpu.ecc_errors.volatile_uncorrectable is None
    assert gpu.performance_state == "P2"


@pytest.mark.parametrize("capture", [H100_590, H200_590])
def test_590_layout_under_load_parses_clock_events(capture: str) -> None:
    gpu = p.parse_nvidia_smi_query(section(capture, "nvidia-smi -q", phase="load")).gpus[0]
    assert gpu.clock_events is not None and gpu.clock_events.hw_thermal_slowdown is False
    assert gpu.ecc_errors is not None and gpu.ecc_errors.volatile_uncorrectable == 0


def test_unknown_clock_event_value_is_a_parse_error() -> None:
    broken = text(HEALTHY).replace("HW Thermal Slowdown           : Not Active", "HW Thermal Slowdown           : Maybe", 1)
    with pytest.raises(ParseError, match="HW Thermal Slowdown"):
        p.parse_nvidia_smi_query(broken)


def test_nvlink_error_counters() -> None:
    gpus = p.parse_nvlink_errors(text("nvidia-smi/handwritten/nvlink-e.h100x2.txt"))
    assert [len(g.counters) for g in gpus] == [54, 54]
    assert gpus[0].total("CRC Errors") == 0
    assert (gpus[1].total("CRC Errors"), gpus[1].total("Replay Errors"), gpus[1].total("Recovery Errors")) == (12, 3, 0)


@pytest.mark.parametrize("bad", ["", "Link 0: CRC Errors: 0\n", "GPU 0: NVIDIA H100 (UUID: GPU-1)\n",
                                 "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: CRC Errors: lots\n"])
def test_nvlink_errors_garbage_is_a_parse_error(bad: str) -> None:
    with pytest.raises(ParseError):
        p.parse_nvlink_errors(bad)


def test_xid_events_from_kernel_log() -> None:
    events = p.parse_xid_events(text("kernel-log/handwritten/dmesg.xid.txt"))
    assert [(e.pci, e.code) for e in events] == [("0000:3b:00", 13), ("0000:19:00", 79), ("0000:4c:00", 63)]
    assert events[1].matches("00000000:19:00.0") and not events[1].matches("00000000:3B:00.0")
    assert events[0].matches("00000000:3B:00.0")  # nvidia-smi prints hex upper case, the driver lower
    assert "fallen off the bus" in events[1].message


def test_kernel_log_without_xid_is_empty_and_an_empty_log_is_an_error() -> None:
    assert p.parse_xid_events("[    0.000000] Linux version 6.1.0-27-amd64\n") == ()
    with pytest.raises(ParseError, match="empty"):
        p.parse_xid_events("\n")


def test_xml_clock_events_and_ecc() -> None:
    gpu = p.parse_nvidia_smi_xml(text("nvidia-smi/telegraf/a10g.xml")).gpus[0]
    assert gpu.performance_state == "P8" and gpu.clock_events is not None and gpu.clock_events.idle is True
    assert gpu.ecc_errors is not None and gpu.ecc_errors.volatile_uncorrectable == 0


@pytest.mark.parametrize(("counters", "corrected", "uncorrected"), [
    ([("SRAM Correctable", "1"), ("SRAM Uncorrectable Parity", "2"), ("SRAM Uncorrectable SEC-DED", "3"),
      ("DRAM Correctable", "4"), ("DRAM Uncorrectable", "5")], 5, 10),
    ([("sram_correctable", "1"), ("sram_uncorrectable_parity", "2"), ("dram_uncorrectable", "0")], 1, 2),
    ([("SRAM Correctable", "N/A"), ("DRAM Uncorrectable", "N/A")], None, None),  # N/A is not a zero
    ([("SRAM Threshold Exceeded", "No"), ("DRAM Correctable", "0"), ("SRAM Sources", None)], 0, None),
])  # fmt: skip
def test_ecc_sums_are_one_rule_for_text_and_xml(counters: list[tuple[str, str | None]], corrected: int | None,
                                                uncorrected: int | None) -> None:
    from provision.conformance.parsers.nvsmi_ecc import ecc_errors

    ecc = ecc_errors("nvidia-smi -q", "00000000:19:00.0", counters, None)
    assert (ecc.volatile_correctable, ecc.volatile_uncorrectable) == (corrected, uncorrected)
    assert (ecc.aggregate_correctable, ecc.aggregate_uncorrectable) == (None, None)


def test_text_and_xml_parsers_sum_the_same_counters_alike() -> None:
    xml = text("nvidia-smi/telegraf/a10g.xml").replace(
        "<volatile>", "<volatile><sram_uncorrectable_parity>3</sram_uncorrectable_parity>", 1)
    gpu = p.parse_nvidia_smi_xml(xml).gpus[0]
    assert gpu.ecc_errors is not None and gpu.ecc_errors.volatile_uncorrectable == 3
    with pytest.raises(ParseError, match="ECC sram_uncorrectable_parity"):
        p.parse_nvidia_smi_xml(xml.replace(">3</sram_uncorrectable_parity>", ">lots</sram_uncorrectable_parity>", 1))


def test_nvlink_error_counters_and_notes_stay_with_their_own_gpu() -> None:
    out = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n\t Link 0: CRC Errors: 1\n\t Link 1: CRC Errors: 2\n"
           "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t NVML: Unable to retrieve NVLink information\n"
           "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n\t Link 0: Replay Errors: 5\n\t Link 0: CRC Errors: N/A\n")
    gpus = p.parse_nvlink_errors(out)
    assert [(g.uuid, g.note, [(c.link, c.name, c.count) for c in g.counters]) for g in gpus] == [
        ("GPU-0", None, [(0, "CRC Errors", 1), (1, "CRC Errors", 2)]),
        ("GPU-1", "NVML: Unable to retrieve NVLink information", []),
        ("GPU-2", None, [(0, "Replay Errors", 5), (0, "CRC Errors", None)]),
    ]
    assert [g.total("CRC Errors") for g in gpus] == [3, 0, 0]

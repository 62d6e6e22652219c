"""nvidia-smi --query-gpu csv, -L, nvlink -s, topo -m and the plain table."""

from __future__ import annotations

import pytest

from provision.conformance.parsers import (
    parse_nvidia_smi_list,
    parse_nvidia_smi_table,
    parse_nvlink_status,
    parse_query_gpu_csv,
    parse_topo_matrix,
)
from provision.errors import ParseError

from ._fixtures import H100_590, H100_MIG_590, H200_590, section, text


def test_query_gpu_csv_590_all_fields() -> None:
    table = parse_query_gpu_csv(section(H100_590, "nvidia-smi --query-gpu="))
    assert len(table.fields) == 212
    assert len(table.rows) == 1
    row = table.rows[0]
    assert row.get("driver_version") == "590.48.01"
    assert row.get("name") == "NVIDIA H100 80GB HBM3"
    assert row.get("pci.bus_id") == "00000000:00:09.0"
    assert row.get("memory.total") == 81559
    assert table.units[table.fields.index("memory.total")] == "MiB"
    assert row.get("power.limit") == 700.0
    assert row.get("pcie.link.gen.current") == 5
    assert row.get("pcie.link.width.max") == 16
    assert row.get("persistence_mode") == "Enabled"
    assert row.get("ecc.mode.current") == "Enabled"
    assert row.get("fabric.state") == "Completed"
    assert row.get("fabric.status") == "Success"
    assert row.get("clocks.applications.graphics") is None  # "[Requested functionality has been deprecated]"
    assert row.get("serial") == "0000000000000"  # serials stay text: leading zeros kept


def test_query_gpu_csv_load_phase_h200() -> None:
    row = parse_query_gpu_csv(section(H200_590, "nvidia-smi --query-gpu=", phase="load")).rows[0]
    assert row.get("memory.total") == 143771
    assert row.get("temperature.gpu") == 52
    assert row.get("utilization.gpu") == 100


def test_query_gpu_csv_two_gpus_and_units() -> None:
    table = parse_query_gpu_csv(text("nvidia-smi/nvidia_gpu_exporter/query.txt"))
    assert [r.get("index") for r in table.rows] == [0, 1]
    assert [r.get("memory.used") for r in table.rows] == [575, 1234]
    assert [r.get("fan.speed") for r in table.rows] == [38, 50]
    assert table.rows[0].get("serial") is None  # [N/A]
    assert table.rows[0].get("compute_cap") == "7.5"
    with pytest.raises(ParseError, match="not queried"):
        table.rows[0].get("power.draw")


def test_query_gpu_csv_noheader_nounits() -> None:
    out = "0, NVIDIA H100 80GB HBM3, 81559, 700.00, Enabled\n1, NVIDIA H100 80GB HBM3, 81559, 700.00, Enabled\n"
    fields = ["index", "name", "memory.total", "power.limit", "persistence_mode"]
    table = parse_query_gpu_csv(out, fields=fields)
    assert [r.get("memory.total") for r in table.rows] == [81559, 81559]
    assert table.rows[1].get("power.limit") == 700.0


def test_query_gpu_csv_short_row_is_truncation() -> None:
    out = "index, memory.total [MiB]\n0, 81559 MiB\n1\n"
    with pytest.raises(ParseError, match="row 2 has 1 cells"):
        parse_query_gpu_csv(out)


def test_list_plain_and_mig() -> None:
    gpus = parse_nvidia_smi_list(section(H100_590, "nvidia-smi -L", phase="capabilities"))
    assert [(g.index, g.name, g.mig_devices) for g in gpus] == [(0, "NVIDIA H100 80GB HBM3", ())]
    mig = parse_nvidia_smi_list(section(H100_MIG_590, "nvidia-smi -L", phase="capabilities"))[0]
    assert [(m.profile, m.index) for m in mig.mig_devices] == [
        ("3g.40gb", 0),
        ("2g.20gb", 1),
        ("1g.10gb", 2),
        ("1g.10gb", 3),
    ]
    assert mig.mig_devices[1].uuid == "MIG-00000001-0000-0000-0000-000000000001"


def test_list_no_devices_is_explicit_empty() -> None:
    assert parse_nvidia_smi_list("No devices were found\n") == ()
    with pytest.raises(ParseError):
        parse_nvidia_smi_list("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


def test_nvlink_h100_18_links_at_26_562() -> None:
    gpus = parse_nvlink_status(section(H100_590, "nvidia-smi nvlink -s", phase="capabilities"))
    assert len(gpus) == 1
    assert len(gpus[0].links) == 18
    assert {link.speed_gbps for link in gpus[0].links} == {26.562}
    assert len(gpus[0].active_links) == 18


def test_nvlink_a100x8_12_links_at_25() -> None:
    gpus = parse_nvlink_status(text("nvidia-smi/gpud/nvidia-smi-nvlink-s.a100x8.txt"))
    assert [g.index for g in gpus] == list(range(8))
    assert all(g.name == "NVIDIA A100-SXM4-80GB" for g in gpus)
    assert [len(g.links) for g in gpus] == [12] * 8
    assert {link.speed_gbps for g in gpus for link in g.links} == {25.0}
    assert gpus[0].uuid == "GPU-5269b708-678a-b1a8-60f0-c90406537486"


def test_nvlink_mig_note_and_inactive_links() -> None:
    gpu = parse_nvlink_status(section(H100_MIG_590, "nvidia-smi nvlink -s", phase="capabilities"))[0]
    assert gpu.links == ()
    assert gpu.note == "Nvlink queries are not supported for Devices in MIG mode"
    out = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    links = parse_nvlink_status(out)[0].links
    assert [(link.active, link.speed_gbps) for link in links] == [(True, 26.562), (False, None)]


def test_topo_single_gpu_capture() -> None:
    matrix = parse_topo_matrix(section(H100_590, "nvidia-smi topo -m", phase="capabilities"))
    assert matrix.devices == ("GPU0",)
    assert matrix.connection("GPU0", "GPU0") == "X"
    assert matrix.rows[0].attributes == {"CPU Affinity": "0-19", "NUMA Affinity": "0", "GPU NUMA ID": None}


def test_topo_8_gpus_4_nics_handwritten() -> None:
    matrix = parse_topo_matrix(text("nvidia-smi/handwritten/topo-m.8gpu-4nic.txt"))
    assert matrix.gpus() == tuple(f"GPU{i}" for i in range(8))
    assert all(matrix.connection(a, b) == "NV18" for a in matrix.gpus() for b in matrix.gpus() if a != b)
    assert matrix.connection("GPU0", "NIC0") == "PXB"
    assert matrix.connection("GPU0", "NIC2") == "SYS"
    assert matrix.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    gpu4 = next(r for r in matrix.rows if r.device == "GPU4")
    assert gpu4.attributes["CPU Affinity"] == "56-111,168-223"
    assert gpu4.attributes["NUMA Affinity"] == "1"


def test_topo_truncated_rows() -> None:
    capture = text("nvidia-smi/handwritten/topo-m.8gpu-4nic.txt")
    cut = "\n".join(line for line in capture.splitlines() if not line.startswith("NIC3\t"))
    with pytest.raises(ParseError, match="do not match columns"):
        parse_topo_matrix(cut)


def test_table_h100x8_550() -> None:
    table = parse_nvidia_smi_table(text("nvidia-smi/gpud/nvidia-smi.550.90.07.h100x8.txt"))
    assert (table.smi_version, table.driver_version, table.cuda_version) == ("550.90.07", "550.90.07", "12.4")
    assert [g.index for g in table.gpus] == list(range(8))
    assert all(g.name == "NVIDIA H100 80GB HBM3" and g.memory_total_mib == 81559 for g in table.gpus)
    assert all(g.persistence_mode is True and g.power_cap_w == 700.0 for g in table.gpus)
    assert all(g.mig_mode == "Disabled" and g.volatile_uncorrected_ecc == "0" for g in table.gpus)
    assert [g.temperature_c for g in table.gpus] == [27, 24, 23, 23, 27, 22, 24, 23]
    assert table.gpus[7].bus_id == "00000000:DB:00.0"


def test_table_mig_590() -> None:
    table = parse_nvidia_smi_table(section(H100_MIG_590, "nvidia-smi", exact=True))
    assert table.driver_version == "590.48.01"
    assert table.gpus[0].mig_mode == "Enabled"
    assert table.gpus[0].gpu_util_pct is None


def test_table_cut_inside_processes_is_caught() -> None:
    capture = text("nvidia-smi/gpud/nvidia-smi.550.90.07.h100x8.txt")
    with pytest.raises(ParseError, match="not closed"):
        parse_nvidia_smi_table(capture[: capture.index("|  No running processes found")])


def test_table_cut_between_gpus_is_caught() -> None:
    capture = text("nvidia-smi/gpud/nvidia-smi.550.90.07.h100x8.txt")
    cut = capture[: capture.index("|   4  NVIDIA")]
    with pytest.raises(ParseError, match="Processes"):
        parse_nvidia_smi_table(cut)


def test_nvlink_links_and_notes_stay_with_their_own_gpu() -> None:
    out = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
           "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Nvlink queries are not supported for Devices in MIG mode\n"
           "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n\t Link 0: <inactive>\n\t Link 1: 13.281 GB/s\n"
           "\t Link 2: 26.562 GB/s\n")
    gpus = parse_nvlink_status(out)
    assert [(g.uuid, g.note, [(link.link, link.speed_gbps) for link in g.links]) for g in gpus] == [
        ("GPU-0", None, [(0, 26.562), (1, None)]),
        ("GPU-1", "Nvlink queries are not supported for Devices in MIG mode", []),
        ("GPU-2", None, [(0, None), (1, 13.281), (2, 26.562)]),
    ]
    with pytest.raises(ParseError, match="outside a GPU block"):  # a link after a note belongs to no GPU
        parse_nvlink_status(out.replace("GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n", ""))

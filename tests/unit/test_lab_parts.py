"""What a simulated BMC presents for a node class: its spec's parts (provision.lab.parts.spec_parts)."""

from __future__ import annotations

from provision.lab.parts import spec_parts
from provision.spec import load_fleet
from tests.conftest import EXAMPLE_INVENTORY


def test_parts_follow_the_class_spec_gpu_node_and_catalogue_server() -> None:
    profiles = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").profiles
    gpu = spec_parts(profiles["ml_prod_v4"])
    assert (gpu.gpus, gpu.boot_drives, gpu.scratch_drives, gpu.ib_ports) == (8, 2, 8, 2)
    assert (gpu.boot_drive_tb, gpu.scratch_drive_tb, gpu.dimms, gpu.dimm_mib) == (1.92, 7.68, 32, 65536)
    small = spec_parts(profiles["catalogue_i9_9900k"])
    assert (small.gpus, small.gpu_model, small.scratch_drives, small.ib_ports) == (0, "", 0, 0)
    assert (small.cpus, small.cpu_cores, small.dimms, small.dimm_type) == (1, 8, 4, "DDR4")
    assert (small.eth_ports, small.eth_speed_gbps, small.psus, small.drive_protocol) == (1, 1, 1, "NVMe")

"""The parts a simulated BMC presents for a node class: its spec's CPUs, memory, GPUs, drives, PSUs and ports."""

from __future__ import annotations

from provision.lab.bmcsim.config import Parts
from provision.spec.model import NodeSpec

PROTOCOLS = {"nvme": "NVMe", "sata": "SATA", "sas": "SAS"}


def spec_parts(spec: NodeSpec) -> Parts:
    """What a server of this class shows its BMC (the simulator fills its Redfish tree with these)."""
    st, net = spec.storage, spec.network
    return Parts(
        cpus=spec.cpu.sockets, cpu_model=spec.cpu.model, cpu_cores=spec.cpu.cores_per_socket,
        dimms=spec.memory.dimm_count, dimm_mib=spec.memory.dimm_size_gb * 1024, dimm_type=spec.memory.type,
        channels_per_socket=spec.memory.channels_per_socket, dimms_per_channel=spec.memory.dimms_per_channel,
        gpus=spec.gpu.count if spec.gpu else 0, gpu_model=spec.gpu.model if spec.gpu else "",
        boot_drives=st.boot.count, scratch_drives=st.scratch.count if st.scratch else 0,
        psus=spec.power.psu_count, psu_watts=spec.power.psu_watts, boot_drive_tb=st.boot.size_tb,
        drive_protocol=PROTOCOLS[st.boot.interface], scratch_drive_tb=st.scratch.size_tb if st.scratch else 0.0,
        eth_ports=net.ethernet.count, eth_speed_gbps=net.ethernet.speed_gbps,
        ib_ports=net.infiniband.count if net.infiniband else 0,
        ib_rate_gbps=net.infiniband.rate_gbps if net.infiniband else 400,
    )  # fmt: skip

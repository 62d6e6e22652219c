"""Tool-output parsers: pure functions from a command's text output to a typed, frozen model.

Every parser raises `provision.errors.ParseError(tool, reason)` on empty, garbage or
truncated output (never IndexError/KeyError/ValueError, never a silent "0 devices").
Where the tool itself says there is nothing (`No devices were found`, `no pools available`,
`No IB devices found`) the parser returns an empty tuple.

Parser                         Input command (what the node twins' fake tools must print)
-----------------------------  -------------------------------------------------------------
parse_nvidia_smi_query         nvidia-smi -q                        -> GpuQueryReport
parse_nvidia_smi_xml           nvidia-smi -q -x                     -> GpuQueryReport
parse_query_gpu_csv            nvidia-smi --query-gpu=F1,F2,... --format=csv[,noheader][,nounits]
                               (pass fields=... for noheader)       -> QueryGpuTable
parse_nvidia_smi_list          nvidia-smi -L                        -> tuple[GpuListEntry]
parse_nvidia_smi_table         nvidia-smi                           -> SmiTable
parse_nvlink_status            nvidia-smi nvlink -s                 -> tuple[NvlinkGpu]
parse_nvlink_errors            nvidia-smi nvlink -e                 -> tuple[NvlinkErrors]
parse_xid_events               dmesg (or journalctl -k)             -> tuple[XidEvent]
parse_topo_matrix              nvidia-smi topo -m                   -> TopoMatrix
parse_ibstat                   ibstat                               -> IbstatReport
parse_ibstatus                 ibstatus                             -> tuple[IbStatusPort]
parse_ibv_devinfo              ibv_devinfo [-v]                     -> tuple[IbvDevice]
parse_zpool_status             zpool status [POOL]                  -> tuple[Pool]
parse_zpool_list               zpool list -Hp [-o COLS] (columns=)  -> tuple[ZfsRow]
parse_zfs_list                 zfs list -Hp [-o COLS] (columns=)    -> tuple[ZfsRow]
parse_zfs_get                  zfs get -Hp PROPS [DATASET]          -> tuple[ZfsProperty]
parse_mdstat                   cat /proc/mdstat                     -> MdStat
parse_mdadm_detail             mdadm --detail /dev/mdX              -> MdDetail
parse_nvme_list                nvme list -o json                    -> tuple[NvmeNamespace]
parse_nvme_smart_log           nvme smart-log /dev/nvmeX -o json    -> NvmeSmartLog
parse_nvme_id_ctrl             nvme id-ctrl /dev/nvmeX -o json      -> NvmeIdCtrl
parse_smartctl_nvme            smartctl -a -j /dev/nvmeX            -> SmartctlNvme
parse_lsblk                    lsblk -J [-b] [-o COLS]              -> tuple[BlockDevice]
parse_dmidecode                dmidecode [-t system|memory|processor] -> DmiReport
parse_lscpu                    lscpu                                -> LscpuInfo
parse_cpuinfo                  cat /proc/cpuinfo                    -> CpuInfo
parse_meminfo                  cat /proc/meminfo                    -> MemInfo
parse_dcgmi_diag               dcgmi diag -r N                      -> DcgmDiag
parse_systemctl_show           systemctl show UNIT -p ActiveState,SubState,...  -> UnitState
parse_fabricmanager_log        cat /var/log/fabricmanager.log       -> FmLog

Written from documented formats because no real capture was available: nvidia-smi nvlink -e,
the kernel log's NVIDIA Xid lines, dcgmi diag,
zpool status, zfs get, systemctl show, and topo -m with 8 GPUs and NICs (the real captures hold
a single GPU). Everything else is tested on real captures (tests/fixtures/, PROVENANCE.md):
third-party captures, plus our own from qemu VMs: a real md RAID1 (mdadm --detail, /proc/mdstat),
emulated NVMe controllers (nvme-cli 2.3, smartctl, lsblk) and a Soft-RoCE device (ibv_devinfo,
ibstat, ibstatus); the capture scripts sit next to them.
"""

from provision.conformance.parsers.cpu import CpuInfo, CpuInfoEntry, LscpuInfo, parse_cpuinfo, parse_lscpu
from provision.conformance.parsers.dcgm import DcgmDiag, DcgmResult, DcgmTest, parse_dcgmi_diag
from provision.conformance.parsers.dmidecode import (
    BaseboardInfo,
    BiosInfo,
    DmiReport,
    MemoryArray,
    MemoryDevice,
    ProcessorInfo,
    SystemInfo,
    parse_dmidecode,
)
from provision.conformance.parsers.fabricmanager import FmLog, FmLogEntry, parse_fabricmanager_log
from provision.conformance.parsers.ibverbs import IbvDevice, IbvPort, parse_ibv_devinfo
from provision.conformance.parsers.infiniband import (
    IbCa,
    IbPort,
    IbstatReport,
    IbStatusPort,
    parse_ibstat,
    parse_ibstatus,
)
from provision.conformance.parsers.kernel_log import XidEvent, parse_xid_events
from provision.conformance.parsers.lsblk import BlockDevice, parse_lsblk
from provision.conformance.parsers.mdadm import MdDetail, MdDetailMember, parse_mdadm_detail
from provision.conformance.parsers.mdstat import MdArray, MdMember, MdStat, parse_mdstat
from provision.conformance.parsers.meminfo import MemInfo, parse_meminfo
from provision.conformance.parsers.nvme import (
    NvmeIdCtrl,
    NvmeNamespace,
    NvmeSmartLog,
    parse_nvme_id_ctrl,
    parse_nvme_list,
    parse_nvme_smart_log,
)
from provision.conformance.parsers.nvsmi_csv import QueryGpuRow, QueryGpuTable, parse_query_gpu_csv
from provision.conformance.parsers.nvsmi_errors import NvlinkCounter, NvlinkErrors, parse_nvlink_errors
from provision.conformance.parsers.nvsmi_list import (
    GpuListEntry,
    MigDeviceEntry,
    NvlinkGpu,
    NvlinkLink,
    parse_nvidia_smi_list,
    parse_nvlink_status,
)
from provision.conformance.parsers.nvsmi_models import (
    ClockEvents,
    EccErrors,
    FabricHealth,
    FabricInfo,
    GpuInfo,
    GpuQueryReport,
    PcieLink,
    RemappedRows,
    RetiredPages,
)
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.conformance.parsers.nvsmi_table import SmiTable, TableGpu, parse_nvidia_smi_table
from provision.conformance.parsers.nvsmi_topo import TopoMatrix, TopoRow, parse_topo_matrix
from provision.conformance.parsers.nvsmi_xml import parse_nvidia_smi_xml
from provision.conformance.parsers.smartctl import SmartctlNvme, parse_smartctl_nvme
from provision.conformance.parsers.systemd import UnitState, parse_systemctl_show
from provision.conformance.parsers.zfs_lists import (
    ZfsProperty,
    ZfsRow,
    parse_zfs_get,
    parse_zfs_list,
    parse_zpool_list,
)
from provision.conformance.parsers.zpool_status import Pool, Vdev, parse_zpool_status

PARSERS = (
    parse_nvidia_smi_query,
    parse_nvidia_smi_xml,
    parse_query_gpu_csv,
    parse_nvidia_smi_list,
    parse_nvidia_smi_table,
    parse_nvlink_status,
    parse_nvlink_errors,
    parse_xid_events,
    parse_topo_matrix,
    parse_ibstat,
    parse_ibstatus,
    parse_ibv_devinfo,
    parse_zpool_status,
    parse_zpool_list,
    parse_zfs_list,
    parse_zfs_get,
    parse_mdstat,
    parse_mdadm_detail,
    parse_nvme_list,
    parse_nvme_smart_log,
    parse_nvme_id_ctrl,
    parse_smartctl_nvme,
    parse_lsblk,
    parse_dmidecode,
    parse_lscpu,
    parse_cpuinfo,
    parse_meminfo,
    parse_dcgmi_diag,
    parse_systemctl_show,
    parse_fabricmanager_log,
)
"""Every parser, for callers (and fuzz tests) that want to iterate over them."""

__all__ = [
    "PARSERS",
    "BaseboardInfo",
    "BiosInfo",
    "BlockDevice",
    "ClockEvents",
    "CpuInfo",
    "CpuInfoEntry",
    "DcgmDiag",
    "DcgmResult",
    "DcgmTest",
    "DmiReport",
    "EccErrors",
    "FabricHealth",
    "FabricInfo",
    "FmLog",
    "FmLogEntry",
    "GpuInfo",
    "GpuListEntry",
    "GpuQueryReport",
    "IbCa",
    "IbPort",
    "IbStatusPort",
    "IbstatReport",
    "IbvDevice",
    "IbvPort",
    "LscpuInfo",
    "MdArray",
    "MdDetail",
    "MdDetailMember",
    "MdMember",
    "MdStat",
    "MemInfo",
    "MemoryArray",
    "MemoryDevice",
    "MigDeviceEntry",
    "NvlinkCounter",
    "NvlinkErrors",
    "NvlinkGpu",
    "NvlinkLink",
    "NvmeIdCtrl",
    "NvmeNamespace",
    "NvmeSmartLog",
    "PcieLink",
    "Pool",
    "ProcessorInfo",
    "QueryGpuRow",
    "QueryGpuTable",
    "RemappedRows",
    "RetiredPages",
    "SmartctlNvme",
    "SmiTable",
    "SystemInfo",
    "TableGpu",
    "TopoMatrix",
    "TopoRow",
    "UnitState",
    "Vdev",
    "XidEvent",
    "ZfsProperty",
    "ZfsRow",
    "parse_cpuinfo",
    "parse_dcgmi_diag",
    "parse_dmidecode",
    "parse_fabricmanager_log",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_ibv_devinfo",
    "parse_lsblk",
    "parse_lscpu",
    "parse_mdadm_detail",
    "parse_mdstat",
    "parse_meminfo",
    "parse_nvidia_smi_list",
    "parse_nvidia_smi_query",
    "parse_nvidia_smi_table",
    "parse_nvidia_smi_xml",
    "parse_nvlink_errors",
    "parse_nvlink_status",
    "parse_nvme_id_ctrl",
    "parse_nvme_list",
    "parse_nvme_smart_log",
    "parse_query_gpu_csv",
    "parse_smartctl_nvme",
    "parse_systemctl_show",
    "parse_topo_matrix",
    "parse_xid_events",
    "parse_zfs_get",
    "parse_zfs_list",
    "parse_zpool_list",
    "parse_zpool_status",
]

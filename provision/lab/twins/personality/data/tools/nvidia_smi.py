#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `nvidia-smi` for provision lab twins (stdlib only).

Output follows real captures byte-format-wise: the plain table (550.90.07, gpud), `-q`
(535.183.01 H100 x8, gpud), `-q -x` (telegraf's v12 XML), `-L`, `topo -m` and `nvlink -s`
(nvidia_gpu_exporter 590.48.01 H100) and `--query-gpu ... --format=csv`. The driver version is
the installed nvidia-kernel-(open-)dkms stand-in's; no driver -> the real tool's failure message.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

TEMPLATES = os.environ.get(
    "PROVISION_LAB_TEMPLATES", os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
)
RUN_DIR = os.environ.get("PROVISION_LAB_RUN", "/run/provision-lab")
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)
SEP = "+-----------------------------------------+------------------------+----------------------+"


class Ctx:
    """What one invocation needs: hardware, visible GPUs, driver and fabric state."""

    def __init__(self) -> None:
        self.hw = labstate.hardware()
        driver = labstate.driver_version()
        if driver is None:
            sys.stdout.write(NO_DRIVER)
            sys.exit(9)
        self.driver: str = driver
        self.cuda = labstate.cuda_version(driver)
        self.gpus = labstate.visible_gpus(self.hw)
        if not self.hw.get("gpus"):  # a server without GPUs: what nvidia-smi prints with the driver and no device
            sys.stdout.write("No devices were found\n")
            sys.exit(6)
        self.all_gpus = list(self.gpus)
        self.fabric = bool(self.hw.get("gpu_fabric"))
        self.fabric_ok = self.fabric and labstate.fabric_manager_ok(driver)
        self.persistence = labstate.service_active("nvidia-persistenced.service") or os.path.exists(
            os.path.join(RUN_DIR, "persistence")
        )

    def index(self, g: dict[str, Any]) -> int:
        """The GPU's index among the GPUs the driver enumerates (not changed by -i)."""
        return self.all_gpus.index(g)

    def fabric_state(self) -> tuple[str, str]:
        if not self.fabric:
            return "N/A", "N/A"
        return ("Completed", "Success") if self.fabric_ok else ("In Progress", "N/A")

    def values(self, minor: int, g: dict[str, Any]) -> dict[str, Any]:
        bus = g["bus_id"].split(":")[1]
        state, status = self.fabric_state()
        return {
            "bus_id": g["bus_id"], "name": g["name"], "architecture": g["architecture"],
            "persistence": "Enabled" if self.persistence else "Disabled", "mig": "Disabled",
            "serial": g["serial"], "uuid": g["uuid"], "minor": minor, "vbios": g["vbios"],
            "board_id": f"0x{bus.lower()}00", "module_id": g["module_id"], "driver": self.driver,
            "pci_bus": f"0x{bus}", "pci_bus_hex": bus, "device_id": g["device_id"],
            "device_id_hex": g["device_id"][2:], "subsystem_id": g["subsystem_id"],
            "subsystem_id_hex": g["subsystem_id"][2:], "pcie_gen": g["pcie_gen"], "pcie_width": g["pcie_width"],
            "fb_total": g["fb_mib"], "fb_free": g["fb_mib"] - 552, "ecc": "Enabled",
            "power_draw": f"{70 + g['index'] * 0.91:.2f}",
            "power_limit": g["power_limit_w"], "fabric_state": state, "fabric_status": status,
            **labstate.gpu_health(g),
        }


def _template(name: str) -> str:
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as fh:
        return fh.read()


def cmd_list(ctx: Ctx) -> str:
    return "".join(f"GPU {i}: {g['name']} (UUID: {g['uuid']})\n" for g in ctx.gpus for i in (ctx.index(g),))


def cmd_query(ctx: Ctx) -> str:
    head = (
        "==============NVSMI LOG==============\n\n"
        f"{'Timestamp':<42}: {time.asctime()}\n{'Driver Version':<42}: {ctx.driver}\n"
        f"{'CUDA Version':<42}: {ctx.cuda}\n\n{'Attached GPUs':<42}: {len(ctx.gpus)}\n"
    )
    tpl = _template("nvidia-smi-q.gpu.txt")
    return head + "\n".join(tpl.format(**ctx.values(i, g)) for g in ctx.gpus for i in (ctx.index(g),))


def cmd_query_xml(ctx: Ctx) -> str:
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
        f"    <timestamp>{time.asctime()}</timestamp>\n    <driver_version>{ctx.driver}</driver_version>\n"
        f"    <cuda_version>{ctx.cuda}</cuda_version>\n    <attached_gpus>{len(ctx.gpus)}</attached_gpus>\n"
    )
    tpl = _template("nvidia-smi-q.gpu.xml")
    body = "".join(tpl.format(**ctx.values(ctx.index(g), g)) for g in ctx.gpus)
    return head + body + "</nvidia_smi_log>\n"


def cmd_table(ctx: Ctx) -> str:
    out = [
        time.asctime(),
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {ctx.driver:<23}Driver Version: {ctx.driver:<15}CUDA Version: {ctx.cuda:<9}|",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in ctx.gpus:
        i = ctx.index(g)
        v = ctx.values(i, g)
        pers = "On" if ctx.persistence else "Off"
        usage = f"{round(float(v['power_draw']))}W"
        out += [
            f"| {i:>3}  {g['name']:<29}{pers:>4}  | {g['bus_id']:>18} Off | {0:>20} |",
            f"| N/A {v['temp']:>4}C{'P0':>6}{usage:>16} / {str(g['power_limit_w']) + 'W':>5} |"
            f" {'1MiB':>10} / {str(g['fb_mib']) + 'MiB':>9} | {'0%':>7}{'Default':>13} |",
            f"|{'':41}|{'':24}| {'Disabled':>20} |",
            SEP,
        ]
    out += [
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
        "|  No running processes found                                                             |",
        "+-----------------------------------------------------------------------------------------+",
    ]
    return "\n".join(out) + "\n"


def cmd_nvlink_status(ctx: Ctx) -> str:
    out = []
    for g in ctx.gpus:
        i = ctx.index(g)
        out.append(f"GPU {i}: {g['name']} (UUID: {g['uuid']})")
        if not g["nvlinks"]:  # a PCIe card without NVLink bridges, as the real tool words it
            out.append("\t NVML: Unable to retrieve NVLink information as all links are inActive")
        for link in range(int(g["nvlinks"])):
            speed = "<inactive>" if labstate.link_inactive(g, link) else f"{g['nvlink_gbs']:g} GB/s"
            out.append(f"\t Link {link}: {speed}")
    return "\n".join(out) + ("\n" if out else "")


def cmd_nvlink_errors(ctx: Ctx) -> str:
    """`nvidia-smi nvlink -e`: NVIDIA's documented layout (no capture): three counters per link, all 0."""
    out = []
    for g in ctx.gpus:
        out.append(f"GPU {ctx.index(g)}: {g['name']} (UUID: {g['uuid']})")
        if not g["nvlinks"]:
            out.append("\t NVML: Unable to retrieve NVLink information as all links are inActive")
        for link in range(int(g["nvlinks"])):
            out += [f"\t Link {link}: {name} Errors: 0" for name in ("Replay", "Recovery", "CRC")]
    return "\n".join(out) + ("\n" if out else "")


def _topo_cell(ctx: Ctx, a: dict[str, Any], b: dict[str, Any]) -> str:
    if a is b:
        return " X "
    links = min(_active_links(a), _active_links(b))
    if links:
        return f"NV{links}"
    return "NODE" if a["numa_node"] == b["numa_node"] else "SYS"


def _active_links(g: dict[str, Any]) -> int:
    return sum(1 for link in range(int(g["nvlinks"])) if not labstate.link_inactive(g, link))


def _affinity(ctx: Ctx, numa: int) -> str:
    cpu = ctx.hw["cpu"]
    per = cpu["cores_per_socket"]
    total = per * cpu["sockets"]
    first = f"{numa * per}-{numa * per + per - 1}"
    if cpu["threads_per_core"] > 1:
        first += f",{total + numa * per}-{total + numa * per + per - 1}"
    return first


def cmd_topo(ctx: Ctx) -> str:
    nics = ctx.hw["hcas"]
    names = [f"GPU{i}" for i in range(len(ctx.gpus))] + [f"NIC{i}" for i in range(len(nics))]
    head = "\t\x1b[4m" + "\t".join([*names, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m"
    rows = [head]
    devices = [*ctx.gpus, *nics]
    for i, a in enumerate(devices):
        cells = []
        for b in devices:
            if a is b:
                cells.append(" X ")
            elif "nvlinks" in a and "nvlinks" in b:
                cells.append(_topo_cell(ctx, a, b))
            else:
                cells.append("NODE" if a["numa_node"] == b["numa_node"] else "SYS")
        tail = [_affinity(ctx, a["numa_node"]), str(a["numa_node"]), "\tN/A"] if i < len(ctx.gpus) else []
        rows.append("\t".join([names[i], *cells, *tail]))
    legend = [
        "", "Legend:", "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
    ]
    if nics:
        legend += ["", "NIC Legend:", ""] + [f"  NIC{i}: {n['name']}" for i, n in enumerate(nics)]
    return "\n".join(rows + legend) + "\n"


# --query-gpu fields: name -> (unit, value getter)
def _fields(ctx: Ctx, i: int, g: dict[str, Any]) -> dict[str, tuple[str, str]]:
    v = ctx.values(i, g)
    state, status = ctx.fabric_state()
    return {
        "timestamp": ("", time.strftime("%Y/%m/%d %H:%M:%S.000")), "driver_version": ("", ctx.driver),
        "count": ("", str(len(ctx.gpus))), "name": ("", g["name"]), "gpu_name": ("", g["name"]),
        "serial": ("", g["serial"]), "gpu_serial": ("", g["serial"]), "uuid": ("", g["uuid"]),
        "gpu_uuid": ("", g["uuid"]), "pci.bus_id": ("", g["bus_id"]), "gpu_bus_id": ("", g["bus_id"]),
        "pci.device_id": ("", g["device_id"]), "pci.sub_device_id": ("", g["subsystem_id"]),
        "index": ("", str(i)), "persistence_mode": ("", v["persistence"]),
        "vbios_version": ("", g["vbios"]), "pstate": ("", v["pstate"]), "compute_mode": ("", "Default"),
        "pcie.link.gen.current": ("", str(v["pcie_gen_current"])), "pcie.link.gen.max": ("", str(g["pcie_gen"])),
        "pcie.link.gen.gpucurrent": ("", str(v["pcie_gen_current"])), "pcie.link.gen.gpumax": ("", str(g["pcie_gen"])),
        "pcie.link.width.current": ("", str(v["pcie_width_current"])),
        "pcie.link.width.max": ("", str(g["pcie_width"])),
        "memory.total": ("MiB", f"{g['fb_mib']} MiB"), "memory.used": ("MiB", "0 MiB"),
        "memory.reserved": ("MiB", "551 MiB"), "memory.free": ("MiB", f"{v['fb_free']} MiB"),
        "utilization.gpu": ("%", "0 %"), "utilization.memory": ("%", "0 %"),
        "ecc.mode.current": ("", "Enabled"), "ecc.mode.pending": ("", "Enabled"),
        "ecc.errors.uncorrected.volatile.total": ("", "0"), "ecc.errors.uncorrected.aggregate.total": ("", "0"),
        "ecc.errors.corrected.volatile.total": ("", "0"), "ecc.errors.corrected.aggregate.total": ("", "0"),
        "retired_pages.single_bit_ecc.count": ("", "[N/A]"), "retired_pages.double_bit.count": ("", "[N/A]"),
        "remapped_rows.correctable": ("", "0"), "remapped_rows.uncorrectable": ("", str(v["remap_unc"])),
        "remapped_rows.pending": ("", v["remap_pending"]), "remapped_rows.failure": ("", "No"),
        "temperature.gpu": ("", str(v["temp"])), "temperature.memory": ("", str(v["mem_temp"])),
        "clocks_event_reasons.hw_slowdown": ("", v["ev_hw_slowdown"]),
        "clocks_event_reasons.hw_thermal_slowdown": ("", v["ev_hw_thermal"]),
        "clocks_event_reasons.gpu_idle": ("", v["ev_idle"]),
        "power.draw": ("W", f"{v['power_draw']} W"), "power.draw.instant": ("W", f"{v['power_draw']} W"),
        "power.draw.average": ("W", f"{v['power_draw']} W"),
        "power.limit": ("W", f"{g['power_limit_w']}.00 W"), "enforced.power.limit": ("W", f"{g['power_limit_w']}.00 W"),
        "power.default_limit": ("W", f"{g['power_limit_w']}.00 W"), "power.min_limit": ("W", "200.00 W"),
        "power.max_limit": ("W", f"{g['power_limit_w']}.00 W"),
        "clocks.current.graphics": ("MHz", "345 MHz"), "clocks.current.sm": ("MHz", "345 MHz"),
        "clocks.current.memory": ("MHz", "2619 MHz"), "clocks.max.graphics": ("MHz", "1980 MHz"),
        "clocks.max.sm": ("MHz", "1980 MHz"), "clocks.max.memory": ("MHz", "2619 MHz"),
        "mig.mode.current": ("", "Disabled"), "mig.mode.pending": ("", "Disabled"),
        "fabric.state": ("", state), "fabric.status": ("", status),
        "platform.module_id": ("", str(g["module_id"])), "module_id": ("", str(g["module_id"])),
        "compute_cap": ("", "9.0" if g["architecture"] == "Hopper" else "8.0"),
        "fan.speed": ("%", "[N/A]"), "display_mode": ("", "Disabled"), "display_active": ("", "Disabled"),
    }


def cmd_query_gpu(ctx: Ctx, spec: str, fmt: str) -> str:
    names = [f.strip() for f in spec.split(",") if f.strip()]
    opts = {o.strip() for o in fmt.split(",")}
    if "csv" not in opts:
        labstate.die('"--format" must include csv', 2)
    table = [_fields(ctx, i, g) for g in ctx.gpus for i in (ctx.index(g),)]
    probe = table[0] if table else _fields(ctx, 0, ctx.hw["gpus"][0])
    for n in names:
        if n not in probe:
            labstate.die(f'Field "{n}" is not a valid field to query.', 2)
    lines = []
    if "noheader" not in opts:
        lines.append(", ".join(f"{n} [{probe[n][0]}]" if probe[n][0] else n for n in names))
    for row in table:
        cells = []
        for n in names:
            unit, value = row[n]
            if "nounits" in opts and unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1]
            cells.append(value)
        lines.append(", ".join(cells))
    return "".join(line + "\n" for line in lines)


def select(ctx: Ctx, wanted: str) -> None:
    """`-i/--id`: GPUs by index, PCI bus id or UUID (comma separated), as nvidia-smi accepts."""
    chosen = []
    for w in wanted.split(","):
        w = w.strip()
        hit = [g for i, g in enumerate(ctx.all_gpus) if w in (str(i), g["uuid"], g["bus_id"], g["bus_id"][4:])]
        if not hit:
            labstate.die("No devices were found", 6)
        chosen += hit
    ctx.gpus = chosen


def cmd_power_limit(ctx: Ctx, watts: str) -> str:
    try:
        value = float(watts)
    except ValueError:
        labstate.die(f'Invalid power limit "{watts}".', 2)
    out = []
    for g in ctx.gpus:
        limit = float(g["power_limit_w"])
        if not 200.0 <= value <= limit:
            labstate.die(f"Provided power limit {value:.2f} W is not a valid power limit which should be between "
                         f"200.00 W and {limit:.2f} W for GPU {g['bus_id']}", 2)
        out.append(f"Power limit for GPU {g['bus_id']} was set to {value:.2f} W from {limit:.2f} W.")
    return "\n".join(out) + "\nAll done.\n"


def cmd_persistence(ctx: Ctx, on: bool) -> str:
    flag = os.path.join(RUN_DIR, "persistence")
    if on:
        os.makedirs(RUN_DIR, exist_ok=True)
        open(flag, "w").close()
    elif os.path.exists(flag):
        os.remove(flag)
    word = "Enabled" if on else "Disabled"
    return "".join(f"{word} persistence mode for GPU {g['bus_id']}.\n" for g in ctx.gpus) + "All done.\n"


def _opt(args: list[str], prefix: str) -> str | None:
    for i, a in enumerate(args):
        if a.startswith(prefix + "="):
            return a.split("=", 1)[1]
        if a == prefix and i + 1 < len(args):
            return args[i + 1]
    return None


def main(args: list[str]) -> int:
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write("NVIDIA System Management Interface -- LAB STAND-IN (simulated)\n")
        return 0
    ctx = Ctx()
    wanted = _opt(args, "-i") or _opt(args, "--id")
    if wanted is not None:
        select(ctx, wanted)
    args = [a for a in args if a not in ("-i", "--id", wanted) and not a.startswith("--id=")]
    if args[:1] == ["--version"]:
        out = (f"NVIDIA-SMI version  : {ctx.driver}\nNVML version        : {ctx.driver.rsplit('.', 1)[0]}\n"
               f"DRIVER version      : {ctx.driver}\nCUDA Version        : {ctx.cuda}\n")
    elif args[:1] in (["-L"], ["--list-gpus"]):
        out = cmd_list(ctx)
    elif args[:1] == ["topo"]:
        out = cmd_topo(ctx)
    elif args[:1] == ["nvlink"] and any(a in ("-e", "--errorcounters") for a in args):
        out = cmd_nvlink_errors(ctx)
    elif args[:1] == ["nvlink"]:
        out = cmd_nvlink_status(ctx)
    elif _opt(args, "--query-gpu") is not None:
        out = cmd_query_gpu(ctx, _opt(args, "--query-gpu") or "", _opt(args, "--format") or "")
    elif any(a in ("-q", "--query") for a in args):
        out = cmd_query_xml(ctx) if any(a in ("-x", "--xml-format") for a in args) else cmd_query(ctx)
    elif _opt(args, "-pm") is not None or _opt(args, "--persistence-mode") is not None:
        value = _opt(args, "-pm") or _opt(args, "--persistence-mode") or "0"
        out = cmd_persistence(ctx, value in ("1", "ENABLED", "Enabled"))
    elif _opt(args, "-pl") is not None or _opt(args, "--power-limit") is not None:
        out = cmd_power_limit(ctx, _opt(args, "-pl") or _opt(args, "--power-limit") or "")
    elif not args:
        out = cmd_table(ctx)
    else:
        labstate.die(f"Invalid combination of input arguments ({' '.join(args)}) for the lab stand-in.", 2)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Lab helpers for campaign tests and the scale benchmark: a campaign file with lab images, and
what the simulator's event log says each BMC did (flashes, host resets)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from provision.lab.bmcsim.images import make_image

# component, image component, baseline version, apply time, needs host reset, Supermicro Id rule
LAB_COMPONENTS: tuple[tuple[str, str, str, str, bool, str], ...] = (
    ("bmc", "BMC", "11.02.05", "Immediate", False, "^BMC$"),
    ("bios", "BIOS", "2.1", "OnReset", True, "^BIOS$"),
    ("gpu", "GPU", "96.00.9F.00.04", "OnReset", True, "^HGX_FW_GPU_SXM_[0-9]+$"),
)


LAB_PLATFORM = {"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"}
"""The board the lab's BMC simulator serves (provision/lab/data/trees/supermicro: Systems/1)."""
LAB_ENTRIES: dict[str, list[dict[str, str]]] = {
    "bmc": [{"id": "BMC", "manufacturer": "Supermicro", "related_item": "/redfish/v1/Managers/*"}],
    "bios": [{"id": "BIOS", "manufacturer": "Supermicro", "related_item": "/redfish/v1/Systems/*/Bios"}],
    "gpu": [{"id": "HGX_FW_GPU_SXM_*", "software_id": "0x0020", "manufacturer": "NVIDIA"}],
}
"""The FirmwareInventory entries each lab image updates (as the captured board lists them)."""


def write_lab_campaign(directory: Path, name: str, policy: dict[str, Any], components: int = 3,
                       group: str = "ml_prod_v4") -> Path:
    """Images in the simulator's format plus a campaign file over them; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    comps = []
    for order, (comp, image_comp, version, apply_time, reset, rule) in enumerate(LAB_COMPONENTS[:components]):
        image = make_image(directory / f"{comp}-{version}.bin", image_comp, version)
        comps.append({
            "component": comp, "version": version, "image": image.name,
            "sha256": hashlib.sha256(image.read_bytes()).hexdigest(), "apply_time": apply_time,
            "needs_host_reset": reset, "order": 10 * (order + 1), "match": {"supermicro": {"id": rule}},
            "applies_to": {"platforms": [LAB_PLATFORM], "entries": LAB_ENTRIES[comp]},
        })
    doc = {"name": name, "targets": {"group": group}, "components": comps, "policy": policy}
    path = directory / f"{name}.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class SimLog:
    """The simulator's JSON-lines event log, read back."""

    def __init__(self, path: Path) -> None:
        self.events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def _count(self, predicate: Any) -> Counter[str]:
        return Counter(e["node"] for e in self.events if predicate(e))

    def update_tasks(self) -> Counter[str]:
        """Update tasks started per node (one per component flashed)."""
        return self._count(lambda e: e["event"] == "task.start" and "Update" in str(e.get("name", "")))

    def flashes(self) -> Counter[tuple[str, str]]:
        """(node, firmware) activations: `Firmware X updated to V` SEL entries."""
        out: Counter[tuple[str, str]] = Counter()
        for e in self.events:
            msg = str(e.get("message", ""))
            if e["event"] == "sel" and msg.startswith("Firmware ") and " updated to " in msg:
                out[(e["node"], msg.split()[1])] += 1
        return out

    def host_resets(self) -> Counter[str]:
        return self._count(lambda e: e["event"] == "sel" and str(e.get("message", "")).startswith("Host reset"))

    def peak_unavailable(self) -> int:
        """Most nodes down at one instant: from a node's first update task to its last power On after it."""
        first: dict[str, float] = {}
        last_on: dict[str, float] = {}
        for e in self.events:
            if e["event"] == "task.start":
                first.setdefault(e["node"], float(e["t"]))
            elif e["event"] == "power" and e.get("state") == "On" and e["node"] in first:
                last_on[e["node"]] = float(e["t"])
        edges = sorted([(t, 1) for t in first.values()] + [(last_on.get(n, float("inf")), -1) for n in first])
        peak = down = 0
        for _, step in edges:
            down += step
            peak = max(peak, down)
        return peak

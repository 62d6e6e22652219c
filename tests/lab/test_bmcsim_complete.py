"""A lab node's BMC presents the complete server of its spec: the project's own `provision bmc inventory`
reports no drift against the spec, whichever vendor tree gives the shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from provision.lab.bmcsim.config import TREES_DIR

pytestmark = pytest.mark.lab
CLI = [sys.executable, "-c", "from provision.cli import run; run()"]


@pytest.mark.parametrize("tree", ["supermicro", "dell", "public-rackmount1"])
def test_complete_lab_node_has_no_drift(tree: str, tmp_path: Path, lab_factory: Any) -> None:
    with lab_factory(tmp_path / "lab", nodes=1, bmc_tree=TREES_DIR / tree) as lab:
        inv = lab.state.inventory
        done = subprocess.run([*CLI, "bmc", "inventory", "node01", "-i", str(inv), "--json"],
                              capture_output=True, text=True, timeout=180, check=False)
        report = json.loads(done.stdout)
        verdicts = {d["key"]: d["verdict"] for d in report["drift"]}
        assert done.returncode == 0 and report["drifted"] in ([], 0, False), (done.stderr, verdicts)
        for key in ("cpu.sockets", "memory.dimm_count", "gpu.count", "storage.boot.count", "storage.scratch.count",
                    "power.psu_count"):
            assert verdicts[key] == "ok", (key, verdicts)
        got = report["inventory"]
        assert len(got["cpus"]) == 2 and len(got["gpus"]) == 8

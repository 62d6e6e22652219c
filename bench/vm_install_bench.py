"""Benchmark an OS install through the BMC's virtual media on a VM lab node (plain emulation, TCG).

    python bench/vm_install_bench.py [--boot-drive-mib 2048] [--out bench/results/vm_install_bench.json]

Builds (or reuses) the installer tree and this node's CD, starts a VM lab node (its own simulated BMC;
the host a qemu VM with UEFI and blank NVMe drives), then over Redfish: InsertMedia, a one-time CD boot,
power on; the installer's steps are timed by the guest's own clock (its console lines); then the first
boot from the md mirror until SSH answers with the host key the installer reported. Needs root and qemu,
ovmf, xorriso, grub-common, mtools, dosfstools (PROVISION_TEST_VM=1 scripts/bootstrap.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from provision.lab.twins.ssh import client_argv, lab_key  # noqa: E402
from provision.lab.vm import deploy, installer  # noqa: E402
from provision.lab.vm.node import VmNodeOptions, drive_serials, vm_node  # noqa: E402
from provision.redfish.image_server import ImageServer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boot-drive-mib", type=int, default=2048)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/vm_install_bench.json")
    ap.add_argument("--console-dir", type=Path, help="copy the VM's console logs here (also after a failure)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vm-install-bench-") as tmp:
        work = Path(tmp)
        key = lab_key(work)
        row: dict[str, Any] = {"load_before": os.getloadavg()[0]}
        t = time.monotonic()
        tree = installer.ensure_installer_tree()
        row["installer_tree_s"] = round(time.monotonic() - t, 1)
        row["installer_tree_built"] = tree.built
        with vm_node(work / "lab", VmNodeOptions(boot_drive_mib=args.boot_drive_mib, scratch_drive_mib=64)) as node:
            boot, _ = drive_serials(node.name, 2, 1)
            conf = installer.InstallConf(hostname=node.name, boot_serials=tuple(boot),
                                         authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
            www = work / "www"
            www.mkdir()
            t = time.monotonic()
            installer.make_iso(tree, conf, www / "install.iso")
            row["iso_s"] = round(time.monotonic() - t, 1)
            row["iso_mib"] = (www / "install.iso").stat().st_size >> 20
            with ImageServer() as srv:  # on 127.0.0.1, where the node's BMC fetches from
                try:
                    report = deploy.install(node, srv.url_for(www / "install.iso"))
                    row["install_wall_s"] = report.wall_s
                    row["boot_to_installer_s"] = report.steps.get("modules")
                    row["installer_steps_s"] = report.phases()
                    row["first_boot_to_ssh_s"] = deploy.first_boot(node, key, report.host_key, work / "known_hosts")
                    argv = client_argv(key, work / "known_hosts", "127.0.0.1", node.host.ssh_port)
                    probe = "findmnt -n -o SOURCE /; grep -A1 '^md' /proc/mdstat"
                    done = subprocess.run([*argv, probe], capture_output=True, text=True, timeout=120, check=False)
                    row["root_and_mdstat"] = " | ".join(done.stdout.split("\n")).strip(" |") or done.stderr.strip()
                finally:
                    if args.console_dir:
                        args.console_dir.mkdir(parents=True, exist_ok=True)
                        for log in node.console_logs():
                            shutil.copy2(log, args.console_dir / log.name)
        row["load_after"] = os.getloadavg()[0]
    for name, value in row.items():
        print(f"{name:24} {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""VM tier figures: the VM image built cold (twins' rootfs cached) and warm, boot to ssh, and the
boot_raid1 role's runs on a real md RAID1 under qemu (TCG). Needs root and qemu-system-x86.
Prints a table (and --json); the VM is always torn down. Run under the bench lock:

    flock /tmp/provision-bench.lock python bench/vm_boot_raid1.py [--skip-cold] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from provision.ansible.models import RunOptions  # noqa: E402
from provision.ansible.runner import PlayFailed, run_playbook  # noqa: E402
from provision.lab.twins.mounts import remove_tree  # noqa: E402
from provision.lab.vm import VmOptions, ensure_image, running_vm, ssh  # noqa: E402
from provision.lab.vm.inventory import write_vm_inventory  # noqa: E402


def timed(label: str, figures: dict[str, float], fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    try:
        return fn(*args, **kwargs)
    finally:
        figures[label] = round(time.monotonic() - start, 1)
        print(f"{label:<48} {figures[label]:>7.1f} s", flush=True)


def role(inventory: Path) -> str:
    options = RunOptions(playbook="storage.yml", inventory=inventory, tags=("raid",), timeout_s=1800)
    try:
        result = run_playbook(options)
    except PlayFailed as exc:
        return f"failed: {str(exc)[:100]}"
    return f"ok, changed={result.changed_total}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cold", action="store_true", help="keep the cached image (no cold build)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    outcomes: dict[str, str] = {}
    if not args.skip_cold:
        image = ensure_image()
        remove_tree(image.directory)
        timed("image build, cold (twins' rootfs cached)", figures, ensure_image)
    image = timed("image, warm (cached)", figures, ensure_image)
    with tempfile.TemporaryDirectory(prefix="vm-bench-") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        with running_vm(image, work / "run", VmOptions(name="vmbench")) as vm:
            figures["boot to ssh (+ apt lists)"] = round(time.monotonic() - started, 1)
            print(f"{'boot to ssh (+ apt lists)':<48} {figures['boot to ssh (+ apt lists)']:>7.1f} s", flush=True)
            inv = write_vm_inventory(work / "inv", vm, "ml_prod_v4", ROOT / "inventory/group_vars",
                                     {"boot_raid1_members": vm.disk_ids})  # fmt: skip
            outcomes["run 1"] = timed("role run 1: blank disks (installs mdadm)", figures, role, inv)
            disks = " ".join(ssh(vm, f"readlink -f {d}", check=True).stdout.strip() for d in vm.disk_ids)
            timed("mdadm --create + --wait (test setup)", figures, ssh, vm,
                  f"mdadm --create /dev/md0 --run --level=1 --raid-devices=2 {disks}; mdadm --wait /dev/md0",
                  check=False)  # fmt: skip
            outcomes["run 2"] = timed("role run 2: configure (initramfs handler)", figures, role, inv)
            outcomes["run 3"] = timed("role run 3: idempotent", figures, role, inv)
        figures["teardown + total"] = round(time.monotonic() - started, 1)
    for name, outcome in outcomes.items():
        print(f"{name}: {outcome}")
    if args.json:
        print(json.dumps({"figures_s": figures, "outcomes": outcomes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

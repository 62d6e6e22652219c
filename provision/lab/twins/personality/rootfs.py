"""Install the lab's simulated hardware tools into a twin root filesystem.

LAB STAND-IN. Puts the tool implementations (data/tools, stdlib Python) under
/usr/lib/provision-lab/tools, entry points for tools every server has from its factory image
(lscpu, dmidecode, nvme, and `ip`, whose JSON view presents the on-board NIC) under /usr/local/sbin,
the boot unit that presents the simulated drives,
and — into a rootfs that has a dpkg database — the stand-in packages of the factory image
(FACTORY_IMAGES: mdadm, zfsutils and, on a server with GPUs only, an older NVIDIA driver), so a fresh twin
answers `mdadm`, `zpool` and (with GPUs) `nvidia-smi -L` as a fresh server does and the roles have real
upgrades to do; a twin without GPUs has no nvidia-smi at all.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins.personality.packages import (
    FACTORY_IMAGES,
    LAB_TOOLS_DIR,
    TOOL_HEADER,
    catalog_by_name,
    entry_point,
)
from provision.lab.twins.personality.repo import stage_package
from provision.spec.model import NodeSpec

HEADER = TOOL_HEADER
# Tools of the factory image that no stand-in package provides: path -> implementation module.
BASE_TOOLS = {
    "/usr/local/sbin/lscpu": "lscpu",
    "/usr/local/sbin/dmidecode": "dmidecode",
    "/usr/local/sbin/nvme": "nvme",
    "/usr/local/sbin/blockdev": "blockdev",  # the twin's drives are files: their size, as the kernel would say
    "/usr/local/sbin/lsblk": "lsblk",  # `lsblk -d -J`: the simulated server's disks, not the lab host's
    # The twin shares the lab host's kernel: its kernel log is the simulated server's (NVIDIA lines, Xids).
    "/usr/local/sbin/dmesg": "dmesg",
}
# `ip`: only JSON output (`ip -j ...`) goes through ip.py, which presents the twin's link as the simulated
# server's on-board NIC (hardware.json `nics`); every other call is the real ip, without starting Python.
IP_ENTRY = f"""#!/bin/sh
{TOOL_HEADER}
for _pv_a; do
  case $_pv_a in -j*|--j*) _pv_tool=ip; . {LAB_TOOLS_DIR}/front.sh ;; -*) ;; *) break ;; esac
done
exec /usr/bin/ip "$@"
"""
UNITS = {
    "provision-lab-devices.service": "multi-user.target",
    "provision-lab-devices.path": "paths.target",
    "provision-lab-kernel.service": "multi-user.target",
}


def _data() -> Path:
    return Path(str(resources.files(__package__).joinpath("data")))


def _copy_tools(root: Path) -> None:
    target = root / LAB_TOOLS_DIR.lstrip("/")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(_data() / "tools", target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for script in target.glob("*.py"):
        script.chmod(0o755)


def _entry_points(root: Path) -> None:
    for path, impl in BASE_TOOLS.items():
        dest = root / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(entry_point(impl), encoding="utf-8")
        dest.chmod(0o755)
    ip = root / "usr/local/sbin/ip"
    ip.write_text(IP_ENTRY, encoding="utf-8")
    ip.chmod(0o755)


def _units(root: Path) -> None:
    unit_dir = root / "etc/systemd/system"
    for unit, target in UNITS.items():
        (unit_dir / f"{target}.wants").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_data() / "units" / unit, unit_dir / unit)
        link = unit_dir / f"{target}.wants" / unit
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(f"/etc/systemd/system/{unit}")


def factory_image(spec: NodeSpec) -> str:
    """The factory image of a twin of `spec`: a server with GPUs comes with an (older) NVIDIA driver."""
    return "gpu" if spec.gpu is not None else "no-gpu"


def _preinstall(root: Path, image: str) -> None:
    """dpkg-install the factory image's stand-ins into the rootfs (no maintainer scripts run)."""
    if image not in FACTORY_IMAGES:
        raise LabError(f"unknown factory image {image!r}; known: {', '.join(sorted(FACTORY_IMAGES))}")
    catalog = catalog_by_name()
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=False).stdout.strip() or "amd64"
    with tempfile.TemporaryDirectory(prefix="provision-factory-") as tmp:
        debs = []
        for name, version in FACTORY_IMAGES[image]:
            stage = Path(tmp) / name
            stage_package(catalog[name], version, arch, stage)
            scripts = [p.name for p in (stage / "DEBIAN").iterdir() if p.name != "control"]
            if scripts:  # they would run on the host (--force-script-chrootless): refuse
                raise LabError(f"factory package {name} has maintainer scripts {scripts}; not preinstallable")
            deb = Path(tmp) / f"{name}.deb"
            _dpkg(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(stage), str(deb)])
            debs.append(str(deb))
        _dpkg(["dpkg", f"--root={root}", "--force-not-root", "--force-script-chrootless", "-i", *debs])


def _dpkg(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"{cmd[0]} failed while preparing the twin rootfs: {done.stderr.strip()[:300]}")


def install_tools(root: Path, image: str = "gpu") -> None:
    """Install the simulated tools, boot unit and the factory `image`'s stand-in packages into a twin rootfs."""
    if not root.is_dir():
        raise LabError(f"{root}: not a root filesystem directory")
    _copy_tools(root)
    _entry_points(root)
    _units(root)
    if (root / "var/lib/dpkg/status").exists():
        _preinstall(root, image)

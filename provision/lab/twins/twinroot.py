"""What goes into one twin's own layer before it boots: identity, /proc and /sys binds (the twin's own
/sys/class/net first), the personality's tools."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

STATE_MOUNT = "/var/lib/provision-lab"
BINDS_FILE = "etc/provision-lab/proc-binds"
BIND_SCRIPT = "usr/local/sbin/provision-lab-proc-binds"
BIND_UNIT = "provision-lab-proc-binds.service"

_SCRIPT = """\
#!/bin/sh
# provision lab: present the spec'd server's /proc files (bind mounts of files the host keeps current)
set -eu
# systemd-nspawn with --network-namespace-path mounts the lab host's sysfs view: /sys/class/net lists the
# host's interfaces. A sysfs mounted here, inside the twin's network namespace, lists the twin's own; its
# net class and virtual net devices are bound over the host's, as a host's own /sys shows them.
own=/run/provision-lab/sysfs
mkdir -p "$own"
if mountpoint -q "$own" || mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$own"; then
    for d in class/net devices/virtual/net; do
        mountpoint -q "/sys/$d" || mount --bind "$own/$d" "/sys/$d"
    done
fi
while read -r src dst; do
    [ -n "$src" ] || continue
    [ -e "$src" ] || { echo "provision-lab: missing $src" >&2; continue; }
    # procfs cannot gain files: a /proc entry this kernel lacks (e.g. mdstat without md) stays absent
    [ -e "$dst" ] || { echo "provision-lab: $dst does not exist on this kernel; not presented" >&2; continue; }
    mountpoint -q "$dst" 2>/dev/null && umount "$dst" || true
    mount --bind -o ro "$src" "$dst"
done < /BINDS_FILE
""".replace("BINDS_FILE", BINDS_FILE)

_UNIT = f"""\
[Unit]
Description=provision lab: bind the spec'd /proc files
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target shutdown.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/{BIND_SCRIPT}

[Install]
WantedBy=sysinit.target
"""


# sshd runs only while the twin's presented files are mounted: a stopping twin unmounts its deepest mounts
# first (nspawn's boot_id, the /proc/sys binds) while the shallow ones stay, and an sshd still answering then
# shows the lab host's kernel and boot id (a reboot that looks done, a kernel that looks wrong).
_SSH_DROPIN = """\
[Unit]
After={units}
"""
SSH_DROPIN = "etc/systemd/system/ssh.service.d/provision-lab-binds.conf"


def write_identity(root: Path, hostname: str) -> None:
    """Hostname, /etc/hosts and a machine id of this twin's own (kept across reboots)."""
    (root / "etc/hostname").write_text(f"{hostname}\n")
    (root / "etc/hosts").write_text(
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    )
    resolv = root / "etc/resolv.conf"
    resolv.unlink(missing_ok=True)  # no name server: twins reach nothing but the lab (fail fast, locally)
    resolv.write_text("# provision lab: no DNS inside the lab; hosts are addressed by IP\n")
    machine_id = root / "etc/machine-id"
    existing = machine_id.read_text().strip() if machine_id.exists() else ""
    if not existing:
        machine_id.write_text(uuid.uuid4().hex + "\n")


def inside_path(state_dir: Path, host_file: Path) -> Path:
    """Where a host file under the twin's state dir appears inside the twin."""
    return Path(STATE_MOUNT) / host_file.resolve().relative_to(state_dir.resolve())


def write_proc_binds(root: Path, state_dir: Path, binds: dict[str, Path]) -> None:
    """Install the boot-time unit that bind-mounts `binds` (twin path -> host file in state_dir)."""
    lines = [f"{inside_path(state_dir, src)} {dst}\n" for dst, src in sorted(binds.items())]
    (root / BINDS_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / BINDS_FILE).write_text("".join(lines))
    script = root / BIND_SCRIPT
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(_SCRIPT)
    script.chmod(0o755)
    unit_dir = root / "etc/systemd/system"
    unit_dir.mkdir(parents=True, exist_ok=True)
    (unit_dir / BIND_UNIT).write_text(_UNIT)
    wants = unit_dir / "sysinit.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / BIND_UNIT
    if not link.is_symlink():
        link.symlink_to(f"/etc/systemd/system/{BIND_UNIT}")
    dropin = root / SSH_DROPIN
    dropin.parent.mkdir(parents=True, exist_ok=True)
    mounts = ["/proc/sys/kernel/random/boot_id", *sorted(d for d in binds if d.startswith("/proc/"))]
    dropin.write_text(_SSH_DROPIN.format(units=" ".join([BIND_UNIT, *map(mount_unit, mounts)])))


def mount_unit(path: str) -> str:
    """systemd's mount unit name for a path of plain letters, digits, '_' and '/' (systemd-escape --path)."""
    if not re.fullmatch(r"(/[A-Za-z0-9_]+)+", path):
        raise ValueError(f"{path}: not a plain path")
    return path.strip("/").replace("/", "-") + ".mount"

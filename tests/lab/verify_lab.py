"""Lab for the conformance tests: simulated BMCs + node twins, one inventory, a minimal convergence.

The BMCs come from `provision lab up --bmc-only` (manager), the twins from the twins API; their
SSH settings are added to the lab inventory's host_vars. Convergence is done here MINIMALLY over
SSH (apt install of the pinned stand-ins at their pinned versions + hold, services enabled,
`zpool create` of the scratch stripe, one reboot onto the pinned kernel) instead of the Ansible roles, so these tests do not depend
on `provision configure`.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from provision.conformance.checks.names import pinned_packages, required_units
from provision.lab import manager, twins
from provision.lab.declaration import lab_declaration
from provision.lab.twins.models import TwinInfo, TwinRequest
from provision.spec import NodeSpec, load_fleet
from provision.spec.containers import ContainerEngine
from provision.spec.storage import ZfsLayout, scratch_zfs

ROOT = Path(__file__).resolve().parents[2]
EXTRA_PACKAGES = ("prometheus-node-exporter", "smartmontools", "chrony")


def companion_pins(spec: NodeSpec) -> list[str]:
    """Dependencies pinned alongside (same version as their parent), as the Ansible roles pin them."""
    sw = spec.software
    pins = []
    if sw.nvidia_driver is not None:
        drv = sw.nvidia_driver.apt_version
        kmod = "nvidia-kernel-open-dkms" if sw.nvidia_driver.kernel_modules == "open" else "nvidia-kernel-dkms"
        pins += [f"{kmod}={drv}", f"nvidia-persistenced={drv}"]
    if sw.container_toolkit is not None:
        ctk = sw.container_toolkit.apt_version
        pins += [f"nvidia-container-toolkit-base={ctk}", f"libnvidia-container-tools={ctk}",
                 f"libnvidia-container1={ctk}"]
    if sw.rdma is not None:
        pins += [f"infiniband-diags={sw.rdma.apt_version}", f"ibverbs-utils={sw.rdma.apt_version}"]
    return pins


def project_spec(profile: str = "ml_prod_v4") -> NodeSpec:
    return load_fleet(ROOT / "inventory" / "hosts.yml").profiles[profile]


def ssh_argv(info: TwinInfo) -> list[str]:
    return ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
            f"UserKnownHostsFile={info.known_hosts}", "-i", str(info.key_file), "-o", "IdentitiesOnly=yes",
            "-p", str(info.port), f"{info.user}@{info.address}"]


def ssh(info: TwinInfo, command: str, timeout: float = 300) -> str:
    proc = subprocess.run([*ssh_argv(info), command], capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"ssh {info.name} {command[:80]!r}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def container_steps(spec: NodeSpec) -> list[str]:
    """The engines of spec.containers with the NVIDIA runtime and the GPU test image (the role does more)."""
    c, steps = spec.containers, []
    image, sif = shlex.quote(c.test_image.docker), shlex.quote(c.test_image.apptainer)
    if c.uses(ContainerEngine.DOCKER):
        steps += ["DEBIAN_FRONTEND=noninteractive apt-get -y -qq install docker-ce docker-ce-cli containerd.io >/dev/null",
                  "nvidia-ctk runtime configure --runtime=docker --set-as-default 2>/dev/null",
                  "systemctl restart docker", f"docker pull {image} >/dev/null"]
    if c.uses(ContainerEngine.APPTAINER):
        steps += ["DEBIAN_FRONTEND=noninteractive apt-get -y -qq install apptainer >/dev/null",
                  f"mkdir -p $(dirname {sif}); [ -e {sif} ] || apptainer pull {sif} docker://{image} >/dev/null"]
    return steps


def converge(info: TwinInfo, spec: NodeSpec, containers: bool = True) -> None:
    """The minimal convergence the conformance checks need (the Ansible roles do much more). `containers=False`
    leaves the container engines to the container_runtime role (tests/lab/test_containers.py)."""
    pins = [f"{p.package}={p.apt_version}" for p in pinned_packages(spec)] + companion_pins(spec)
    names = [p.package for p in pinned_packages(spec)]
    units = [u.unit for u in required_units(spec) if u.unit != "ssh.service"]
    scratch = spec.storage.scratch
    script = "\n".join([
        "set -e",
        f"echo 'deb [trusted=yes] {info.repo_url} ./' > /etc/apt/sources.list.d/provision-lab.list",
        "apt-get -qq update",
        "DEBIAN_FRONTEND=noninteractive apt-get -y -qq --allow-downgrades install "
        + " ".join(shlex.quote(p) for p in pins + list(EXTRA_PACKAGES)) + " >/dev/null",
        "apt-mark hold " + " ".join(names) + " >/dev/null",
        "systemctl enable --now " + " ".join(units),
    ] + ([] if scratch is None else [_zpool_create(scratch.zfs)])
      + (container_steps(spec) if containers else []))
    ssh(info, script)
    converge_checkpoints(info, spec)
    reboot(info)  # the new kernel package runs only after a reboot, as on a real server


def _zpool_create(z: ZfsLayout) -> str:
    return (
        f"zpool list {z.pool} >/dev/null 2>&1 || zpool create -f -o ashift={z.ashift} -O recordsize={z.recordsize} "
        f"-O compression={z.compression} -O atime={z.atime} -m {z.mountpoint} {z.pool} "
        "$(python3 -c 'import json; hw=json.load(open(\"/var/lib/provision-lab/hardware.json\")); "
        "print(\" \".join(\"/dev/disk/by-id/\"+d[\"by_id\"] for d in hw[\"nvme\"] if d[\"role\"]==\"scratch\"))')"
    )


def _role_template(name: str, **values: object) -> str:
    """One of roles/zfs_scratch's templates rendered with plain Jinja2 (the role's own text, no Ansible)."""
    import jinja2

    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    text = (ROOT / "roles" / "zfs_scratch" / "templates" / f"{name}.j2").read_text()
    return env.from_string(text).render(ansible_managed="written by tests/lab/verify_lab.py", **values)


def converge_checkpoints(info: TwinInfo, spec: NodeSpec) -> None:
    """What roles/zfs_scratch's checkpoints.yml does, minimally: sanoid + zfs-zed, their configuration from the
    role's templates, the scrub timer, the first snapshots and one scrub (so the checks have a scrub to judge)."""
    z = scratch_zfs(spec)
    if z is None or z.snapshots is None or z.scrub is None or z.zed is None:
        return
    files = {
        "/etc/sanoid/sanoid.conf": _role_template(
            "sanoid.conf", zfs_scratch_snapshots=z.snapshots.model_dump(),
            zfs_scratch_snapshot_datasets=list(z.dataset_names())),
        "/etc/systemd/system/provision-zfs-scrub@.service": _role_template("provision-zfs-scrub@.service"),
        "/etc/systemd/system/provision-zfs-scrub@.timer": _role_template(
            "provision-zfs-scrub@.timer", zfs_scratch_scrub_on_calendar=z.scrub.on_calendar),
        "/etc/zfs/zed.d/zed.rc": _role_template("zed.rc", zfs_scratch_zed=z.zed.model_dump()),
    }
    writes = [f"mkdir -p {shlex.quote(str(Path(p).parent))} && printf %s {shlex.quote(t)} > {shlex.quote(p)}"
              for p, t in files.items()]
    ssh(info, "\n".join([
        "set -e",
        "DEBIAN_FRONTEND=noninteractive apt-get -y -qq install sanoid "
        f"zfs-zed={shlex.quote(spec.software.zfs.apt_version)} >/dev/null",
        *writes,
        "systemctl daemon-reload",
        f"systemctl enable --now sanoid.timer provision-zfs-scrub@{z.pool}.timer zfs-zed.service",
        "systemctl start sanoid.service",
        f"zpool scrub {z.pool}",
    ]))


def boot_id(info: TwinInfo) -> str:
    return ssh(info, "cat /proc/sys/kernel/random/boot_id", timeout=30).strip()


def reboot(info: TwinInfo, timeout: float = 180) -> None:
    old = boot_id(info)
    subprocess.run([*ssh_argv(info), "systemctl reboot"], capture_output=True, timeout=60, check=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # a stopping twin can already show another boot id: done only once the new boot is running
            if boot_id(info) != old:
                state = ssh(info, "systemctl is-system-running --wait || true", timeout=120).strip()
                if state in ("running", "degraded") and boot_id(info) != old:
                    return
        except (AssertionError, subprocess.TimeoutExpired):
            pass
        time.sleep(1)
    raise AssertionError(f"{info.name} did not come back from its reboot within {timeout:.0f} s")


def _add_ssh(inventory: Path, infos: dict[str, TwinInfo]) -> None:
    for name, info in infos.items():
        path = inventory.parent / "host_vars" / f"{name}.yml"
        data = yaml.safe_load(path.read_text()) or {}
        data.update(ansible_host=info.address, ansible_port=info.port, ansible_user=info.user,
                    ansible_ssh_private_key_file=str(info.key_file), provision_ssh_known_hosts=str(info.known_hosts),
                    **lab_declaration())
        path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
        path.chmod(0o600)


@contextmanager
def verify_lab(base: Path, nodes: int, profile: str = "ml_prod_v4") -> Iterator[tuple[Path, Path, dict[str, TwinInfo]]]:
    """(inventory, twins lab dir, twins) with BMCs and twins of `profile` up; everything torn down on exit."""
    bmc_dir, twin_dir = base / "bmc", base / "twins"
    spec = project_spec(profile)
    try:
        state = manager.up(manager.UpOptions(lab_dir=bmc_dir, nodes=nodes, bmc_only=True, profile=profile,
                                             source_inventory=ROOT / "inventory" / "hosts.yml"))
        reqs = [TwinRequest(name=f"node{i:02d}", index=i, profile=profile) for i in range(1, nodes + 1)]
        infos = {i.name: i for i in twins.up(twin_dir, reqs, lambda _profile: spec)}
        _add_ssh(state.inventory, infos)
        yield state.inventory, twin_dir, infos
    finally:
        try:
            twins.down(twin_dir)
        finally:
            manager.down(bmc_dir)

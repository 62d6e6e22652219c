"""Boot the VM under qemu (plain emulation: /dev/kvm is unusable here), reach its sshd, tear it down.

Per run, in a work directory: this VM's host key, sshd drop-in, root's authorized_keys and apt source go
into its own initramfs (laid over the cached root at boot; the root image is opened snapshot=on and never
written); blank sparse data disks; the lab's apt repository server on 127.0.0.1, which the guest reaches
as 10.0.2.100, the one service its restricted network forwards (provision/lab/guestnet.py). Teardown
always stops qemu and the repository server and removes the work directory.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from provision.errors import LabError
from provision.lab import guestnet
from provision.lab.guestnet import HOST_FROM_GUEST
from provision.lab.twins import procs, repo
from provision.lab.twins.mounts import remove_tree
from provision.lab.twins.ssh import client_argv, lab_key, prepare_root, write_known_hosts
from provision.lab.vm import initrd
from provision.lab.vm.models import VmImage, VmInfo, VmOptions

DISK_SERIAL = "provision-md-{n}"
APT_SOURCE = "Types: deb\nURIs: {url}\nSuites: ./\nTrusted: yes\n"
APT_SOURCE_PATH = "etc/apt/sources.list.d/provision-lab.sources"


@contextlib.contextmanager
def running_vm(image: VmImage, work: Path, options: VmOptions | None = None) -> Iterator[VmInfo]:
    """Boot a VM from `image` with `work` as its scratch directory; yield once sshd answers."""
    options = options or VmOptions()
    work.mkdir(parents=True, exist_ok=False)
    server = None
    proc: subprocess.Popen[bytes] | None = None
    try:
        server = repo.start(image.repo, ["127.0.0.1"], work)
        repo_url = f"http://{HOST_FROM_GUEST}:{server.port}/"
        key, host_key = _prepare_inject(work, options.name, repo_url)
        boot_initrd = initrd.build(
            work / "initrd.gz", image.directory / "busybox",
            _modules_dir(image), work / "inject",
        )  # fmt: skip
        remove_tree(work / "inject")  # the host's private key now lives only in the initramfs
        disks = _data_disks(work, options)
        port = _free_port()
        known_hosts = work / "known_hosts"
        write_known_hosts(known_hosts, {f"[127.0.0.1]:{port}": host_key})
        proc = _start_qemu(image, boot_initrd, disks, (port, server.port), options, work / "console.log")
        ids = [f"/dev/disk/by-id/virtio-{DISK_SERIAL.format(n=i)}" for i in range(len(disks))]
        vm = VmInfo(
            name=options.name, pid=proc.pid, port=port, key_file=key, known_hosts=known_hosts,
            repo_url=repo_url, disk_ids=ids,
            console_log=work / "console.log", work_dir=work,
        )  # fmt: skip
        _wait_ssh(vm, proc, options.boot_timeout_s)
        # The node as the base role leaves it: the lab repository configured and its lists fetched.
        ssh(vm, "apt-get -q update", timeout=300, check=True)
        yield vm
    finally:
        if proc is not None:
            _stop(proc)
        repo.stop(server)
        remove_tree(work)


def ssh(vm: VmInfo, command: str, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `command` in the VM as root (host-key checking on); LabError when `check` and it fails."""
    argv = [*client_argv(vm.key_file, vm.known_hosts, vm.address, vm.port), command]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"vm {vm.name}: {command[:60]!r} timed out after {timeout:.0f} s") from exc
    if check and proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise LabError(f"vm {vm.name}: {command[:60]!r} failed (exit {proc.returncode}): {tail[0]}")
    return proc


def _modules_dir(image: VmImage) -> Path:
    return image.directory / "modules"


def _prepare_inject(work: Path, name: str, repo_url: str) -> tuple[Path, str]:
    """This run's client key, and the files laid over the root at boot; returns (key, host key line)."""
    key = lab_key(work)
    inject = work / "inject"
    (inject / "etc/ssh").mkdir(parents=True)
    host_key = prepare_root(inject, name, key.with_suffix(".pub").read_text())
    source = inject / APT_SOURCE_PATH
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(APT_SOURCE.format(url=repo_url))
    (inject / "etc/hostname").write_text(f"{name}\n")
    return key, host_key


def _data_disks(work: Path, options: VmOptions) -> list[Path]:
    disks = []
    for i in range(options.data_disks):
        disk = work / f"data{i}.img"
        with open(disk, "wb") as f:
            f.truncate(options.data_disk_mib * 1024 * 1024)
        disks.append(disk)
    return disks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_qemu(
    image: VmImage, boot_initrd: Path, disks: list[Path], ports: tuple[int, int], options: VmOptions, console: Path
) -> subprocess.Popen[bytes]:
    """qemu, its network restricted: `ports` are the SSH port forwarded in and the repository's forwarded out."""
    port, repo_port = ports
    argv = [
        "qemu-system-x86_64", "-accel", "tcg", "-m", str(options.memory_mib), "-smp", str(options.cpus),
        "-display", "none", "-no-reboot", "-monitor", "none", "-serial", f"file:{console}",
        "-kernel", str(image.kernel), "-initrd", str(boot_initrd),
        "-append", "console=ttyS0 rdinit=/init panic=-1 loglevel=4 net.ifnames=0",
        "-drive", f"file={image.root_image},if=none,id=root,format=raw,snapshot=on",
        "-device", f"virtio-blk-pci,drive=root,serial={initrd.ROOT_SERIAL}",
        "-nic", f"{guestnet.netdev(port, [repo_port])},model=virtio-net-pci",
    ]  # fmt: skip
    for i, disk in enumerate(disks):
        argv += [
            "-drive", f"file={disk},if=none,id=data{i},format=raw",
            "-device", f"virtio-blk-pci,drive=data{i},serial={DISK_SERIAL.format(n=i)}",
        ]  # fmt: skip
    with open(console.with_suffix(".qemu.log"), "wb") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)


def _wait_ssh(vm: VmInfo, proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Until `ssh true` succeeds with host-key checking on; LabError (with the console's tail) otherwise."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"vm {vm.name}: qemu exited {proc.returncode} while booting; {_tail(vm)}")
        try:
            done = ssh(vm, "true", timeout=20)
        except LabError:  # qemu accepts the connection before sshd runs: no banner yet
            last = "no ssh banner within 20 s"
            continue
        if done.returncode == 0:
            return
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        time.sleep(1)
    raise LabError(f"vm {vm.name}: ssh not ready after {timeout:.0f} s ({last}); {_tail(vm)}")


def _tail(vm: VmInfo) -> str:
    """The last lines qemu and the guest's console wrote (this is how a failed boot explains itself)."""
    parts = []
    for label, path in (("qemu", vm.console_log.with_suffix(".qemu.log")), ("console", vm.console_log)):
        try:
            lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            lines = []
        if lines:
            parts.append(f"{label}: " + " | ".join(lines[-3:]))
    return "; ".join(parts) or "no console output"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """qemu ends at SIGTERM; SIGKILL after 10 s."""
    procs.signal_quietly(proc.pid, 15)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        procs.signal_quietly(proc.pid, 9)
        proc.wait(timeout=10)

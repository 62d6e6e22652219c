"""up / down / status / power of a lab's twins (observe what exists, create, remove exactly that)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from provision.errors import InputError, LabError
from provision.lab.twins import hooks, layers, mounts, netns, nspawn, repo, rootfs, ssh, state, twinroot
from provision.lab.twins.models import TwinInfo, TwinRecord, TwinRequest, TwinsState
from provision.spec import NodeSpec

INOTIFY = Path("/proc/sys/fs/inotify/max_user_instances")
INOTIFY_MIN = 8192
MANY_TWINS = 12


def up(lab_dir: Path, nodes: list[TwinRequest], spec_for: Callable[[str], NodeSpec]) -> list[TwinInfo]:
    """Start one twin per request; on any failure remove everything started so far and re-raise."""
    lab_dir = lab_dir.resolve()
    _check_request(nodes)
    with state.locked(lab_dir, create=True):
        old = state.load(lab_dir)
        if old and any(nspawn.running(t) for t in old.twins):
            raise LabError(f"{lab_dir}: twins are already up; run `provision lab down` first")
        if old:
            _teardown(lab_dir, old)
        rootfs.ensure_host_tools()
        base = rootfs.ensure_rootfs()
        try:
            current = _create(lab_dir, base, nodes, spec_for)
        except BaseException:
            _teardown(lab_dir, state.load(lab_dir))
            raise
    return infos(lab_dir, current)


def _check_request(nodes: list[TwinRequest]) -> None:
    if not nodes:
        raise InputError("lab up: no twin requested")
    for label, values in (("name", [n.name for n in nodes]), ("index", [str(n.index) for n in nodes])):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise InputError(f"lab up: twin {label} given twice: {', '.join(dupes)}")
    if os.geteuid() != 0:
        raise LabError("node twins need root (network namespaces, mounts, systemd-nspawn)")


def _create(lab_dir: Path, base: Path, nodes: list[TwinRequest], spec_for: Callable[[str], NodeSpec]) -> TwinsState:
    specs = {n.profile: spec_for(n.profile) for n in nodes}
    current = TwinsState(rootfs=base)
    key = ssh.lab_key(lab_dir)
    repo.build(lab_dir / "repo", rootfs.cache_dir())
    with netns.allocation_lock():
        slots = netns.choose_slots([n.index for n in nodes], netns.used_slots())
        for node, slot in zip(nodes, slots, strict=True):
            twin_dir = state.twins_dir(lab_dir) / node.name
            record = TwinRecord(name=node.name, index=node.index, profile=node.profile, slot=slot, twin_dir=twin_dir)
            current.twins.append(record)
            state.save(lab_dir, current)
            netns.create(slot)
    _raise_inotify(len(netns.used_slots()))
    images = {p: hooks.factory_image(s) for p, s in specs.items()}
    lowers = {i: layers.tools_layer(state.twins_dir(lab_dir), base, i) for i in sorted(set(images.values()))}
    host_keys = {t.address: _prepare(t, lowers[images[t.profile]], key, specs[t.profile]) for t in current.twins}
    ssh.write_known_hosts(ssh.known_hosts_path(lab_dir), host_keys)
    current.repo = repo.start(lab_dir / "repo", [t.host_address for t in current.twins], state.twins_dir(lab_dir))
    state.save(lab_dir, current)
    for twin in current.twins:
        twin.supervisor_pid = nspawn.start(twin)
        state.save(lab_dir, current)
    for twin in current.twins:
        _wait_ready(twin, key, ssh.known_hosts_path(lab_dir))
    return current


def _wait_ready(twin: TwinRecord, key: Path, known_hosts: Path) -> None:
    try:
        ssh.wait_ssh(key, known_hosts, twin.address)
    except LabError as exc:
        raise LabError(f"{twin.name}: {exc}; console: {nspawn.console_tail(twin)}") from None


def _prepare(twin: TwinRecord, lower: list[Path], key: Path, spec: NodeSpec) -> str:
    """Mount the twin's persistent overlay and fill its own layer; return its host key line."""
    root, state_dir = nspawn.root_dir(twin), nspawn.state_dir(twin)
    state_dir.mkdir(parents=True, exist_ok=True)
    mounts.mount_overlay(lower, twin.twin_dir / "upper", twin.twin_dir / "work", root)
    twinroot.write_identity(root, twin.name)
    host_key = ssh.prepare_root(root, twin.name, key.with_suffix(".pub").read_text())
    hooks.prepare_node(state_dir, spec, twin.index)
    twinroot.write_proc_binds(root, state_dir, hooks.proc_binds(state_dir))
    return host_key


def _raise_inotify(twins_on_host: int) -> None:
    if twins_on_host > MANY_TWINS and int(INOTIFY.read_text()) < INOTIFY_MIN:
        INOTIFY.write_text(f"{INOTIFY_MIN}\n")


def down(lab_dir: Path) -> None:
    """Stop every twin of the lab and remove all it made; safe to repeat."""
    lab_dir = lab_dir.resolve()
    if not state.twins_dir(lab_dir).exists():
        return
    with state.locked(lab_dir):
        _teardown(lab_dir, state.load(lab_dir))
    mounts.remove_tree(state.twins_dir(lab_dir))


def _teardown(lab_dir: Path, current: TwinsState | None) -> None:
    errors: list[str] = []
    for twin in current.twins if current else []:
        nspawn.request_stop(twin)
    for twin in current.twins if current else []:
        for step in (nspawn.stop, lambda t: mounts.unmount_all(t.twin_dir), lambda t: netns.delete(t.slot)):
            try:
                step(twin)
            except LabError as exc:
                errors.append(str(exc))
    repo.stop(current.repo if current else None)
    for child in state.twins_dir(lab_dir).iterdir() if state.twins_dir(lab_dir).is_dir() else []:
        if child.name != ".lock":  # held by this call; the directory goes in down()
            mounts.remove_tree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    mounts.remove_tree(lab_dir / "repo")
    ssh.known_hosts_path(lab_dir).unlink(missing_ok=True)
    mounts.remove_tree(lab_dir / "ssh")
    if errors:
        raise LabError(f"{lab_dir}: teardown incomplete: {errors[0]}")


def status(lab_dir: Path) -> list[TwinInfo]:
    current = state.load(lab_dir.resolve())
    return infos(lab_dir.resolve(), current) if current else []


def infos(lab_dir: Path, current: TwinsState) -> list[TwinInfo]:
    key, known = lab_dir / "ssh" / ssh.KEY_NAME, ssh.known_hosts_path(lab_dir)
    return [
        TwinInfo(
            name=t.name, address=t.address, key_file=key, known_hosts=known,
            repo_url=repo.url(current.repo, t.host_address) if current.repo else "",
            running=nspawn.running(t),
        )
        for t in current.twins
    ]  # fmt: skip


def power(lab_dir: Path, node: str, on: bool, *, wait: bool = False) -> None:
    """Power a twin on (boot; with `wait`, until SSH answers) or off (clean shutdown, then kill)."""
    lab_dir = lab_dir.resolve()
    with state.locked(lab_dir):
        current = state.load(lab_dir)
        twin = state.find(current, lab_dir, node)
        assert current is not None
        if on and not nspawn.running(twin):
            twin.supervisor_pid = nspawn.start(twin)
            state.save(lab_dir, current)
        elif not on:
            nspawn.stop(twin)
            twin.supervisor_pid = None
            state.save(lab_dir, current)
    if on and wait:
        _wait_ready(twin, lab_dir / "ssh" / ssh.KEY_NAME, ssh.known_hosts_path(lab_dir))


def fault(lab_dir: Path, node: str, kind: str, clear: bool) -> None:
    """Inject or clear a hardware fault on one twin (the personality decides what it means)."""
    lab_dir = lab_dir.resolve()
    twin = state.find(state.load(lab_dir), lab_dir, node)
    hooks.apply_fault(nspawn.state_dir(twin), kind, clear)

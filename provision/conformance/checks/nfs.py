"""NFS checkpoint mounts: mounted from the spec's server and export, with the spec's options as the kernel
reports them, enough free space, a write/fsync/read-back through a fresh O_DIRECT open that returns the
same bytes, and (mounts marked `shared`) another node of the run reading what this node wrote.

Phase 1 is the ordinary gather (one probe per mount, parsers/nfs_probe.py). Phase 2 (after every node of the
run was gathered; run by provision/conformance/across_nfs.py, judged here) runs one read per node that shares
an export: node B reads and removes
the file node A wrote in phase 1 and its sha256 is compared with the one A computed from its own random
payload, so a pass is evidence that B's client saw, through the server, what A wrote. A run with one node on
that export WAIVES the cross-node check with the reason (never a pass). A mount that is absent, not NFS or
unreadable makes its checks FAIL or ERROR, never PASS. Real-site NFS on real hardware was never run here:
the client side ran in the vm tier against the VM kernel's own nfsd (tests/vm/test_nfs_vm.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import NodeFacts, Probe, Section
from provision.conformance.model import Level
from provision.conformance.parsers.nfs_probe import SCRIPT, NfsProbe, parse_nfs_probe
from provision.conformance.target import Target
from provision.errors import ParseError
from provision.spec.model import NodeSpec
from provision.spec.nfs import NfsMount

AREA = "nfs"
GIB = 1 << 30


def section(mount: NfsMount) -> str:
    return f"nfs.{mount.name}"


def probe_command(mode: str, mountpoint: str, arg: str) -> str:
    return f"python3 -c {shlex.quote(SCRIPT)} {mode} {shlex.quote(mountpoint)} {shlex.quote(arg)}"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    return [Probe(name=section(m), command=probe_command("write", m.mountpoint, "keep" if m.shared else "once"))
            for m in spec.nfs_mounts]


def expected_options(mount: NfsMount) -> str:
    want = mount.parsed
    parts = [f"vers={want.vers}"] if want.vers else []
    parts.append("hard" if want.hard else "soft")
    if want.nconnect is not None:
        parts.append(f"nconnect={want.nconnect}")
    parts.append("ro" if "ro" in want.items else "rw")
    return ",".join(parts)


def found_options(probe: NfsProbe) -> str:
    so = probe.super_options
    parts = [f"vers={so.get('vers', 'absent')}", "hard" if "hard" in so else "soft"]
    parts.append(f"nconnect={so.get('nconnect', '1')}")
    parts.append("ro" if "ro" in probe.mount_options else "rw")
    return ",".join(parts)


def option_problems(mount: NfsMount, probe: NfsProbe) -> list[str]:
    """What differs between the spec's options and the kernel's (empty: they agree). The kernel prints
    vers=4.2 (4.0 for a 4.0 mount), hard or soft/softerr, and nconnect only when given (absent: 1)."""
    want, so = mount.parsed, probe.super_options
    problems = []
    got = so.get("vers")
    if want.vers is not None and not (got in ("4.0", "4.1", "4.2") if want.vers == "4" else got == want.vers):
        problems.append(f"vers={got or 'absent'}, spec vers={want.vers}")
    if want.hard != ("hard" in so):
        problems.append(f"{'hard' if 'hard' in so else 'soft'} mount, spec {'hard' if want.hard else 'soft'}")
    nconnect = int(so.get("nconnect", "1"))
    if want.nconnect is not None and nconnect != want.nconnect:
        problems.append(f"nconnect={nconnect}, spec nconnect={want.nconnect}")
    writable = "rw" in probe.mount_options
    if writable == ("ro" in want.items):
        problems.append("mounted " + ("rw, spec ro" if writable else "ro, spec rw"))
    return problems


def consistency_problem(probe: NfsProbe) -> str | None:
    """Why the write/read-back does not hold (None: it does)."""
    if probe.write_error:
        return f"write failed: {probe.write_error}"
    if not probe.written_sha or probe.written_bytes is None:
        return "the probe reported no write"
    if not probe.read_sha or probe.read_bytes != probe.written_bytes:
        return f"read back {probe.read_bytes} of {probe.written_bytes} bytes"
    if probe.read_sha != probe.written_sha:
        return f"read back sha256 {probe.read_sha[:16]}..., wrote {probe.written_sha[:16]}..."
    if probe.read_mode not in ("direct", "buffered"):
        return f"unknown read mode {probe.read_mode!r}"
    if not (probe.removed or probe.kept):
        return "the probe file was neither removed nor kept"
    return None


def evaluate(ctx: Context) -> None:
    for mount in ctx.spec.nfs_mounts:
        _mount(ctx, mount)


def _ids(mount: NfsMount) -> dict[str, tuple[str, str, str]]:
    """key -> (check id, area, description)."""
    n, at = mount.name, mount.mountpoint
    return {
        "mounted": (f"nfs.{n}.mounted", AREA, f"{at} mounted from {mount.source}"),
        "options": (f"nfs.{n}.options", AREA, f"{at} options as the kernel reports them"),
        "free": (f"nfs.{n}.free", AREA, f"{at} free space (GiB)"),
        "consistency": (f"nfs.{n}.consistency", AREA, f"{at} write, fsync, read back through a fresh open"),
    }


def _mount(ctx: Context, mount: NfsMount) -> None:
    ids = _ids(mount)
    expected = {"mounted": f"{mount.fstype} {mount.source}", "options": expected_options(mount),
                "free": f">= {mount.min_free_gib:g}", "consistency": "same sha256"}
    try:
        probe = ctx.parsed(section(mount), parse_nfs_probe)
    except Unreadable as why:
        for key, names in ids.items():
            ctx.unreadable(*names, expected[key], why.reason)
        return
    if not probe.mounted or not probe.fstype.startswith("nfs"):
        found = "not mounted" if not probe.mounted else f"{probe.fstype} {probe.source}"
        ctx.record(*ids["mounted"], expected["mounted"], found, False)
        for key in ("options", "free", "consistency"):
            ctx.error(*ids[key], expected[key], f"{mount.mountpoint}: {found}, not an NFS mount: nothing probed")
        return
    found_source = f"{probe.fstype} {probe.source}"
    ctx.record(*ids["mounted"], expected["mounted"], found_source, found_source == expected["mounted"])
    problems = option_problems(mount, probe)
    ctx.record(*ids["options"], expected["options"], found_options(probe), not problems, "; ".join(problems))
    if probe.free_bytes is None:
        ctx.error(*ids["free"], expected["free"], "the probe reported no free space")
    else:
        free = probe.free_bytes / GIB
        ctx.record(*ids["free"], expected["free"], f"{free:.1f}", free >= mount.min_free_gib)
    problem = consistency_problem(probe)
    how = ("O_DIRECT read (from the server)" if probe.read_mode == "direct"
           else "buffered re-open (the client's cache after close-to-open)")
    ctx.record(*ids["consistency"], expected["consistency"], problem or f"same sha256, {how}", problem is None,
               problem or "")


# ---- phase 2: across the nodes of one verify run ----------------------------------------------------------
def cross_id(mount: NfsMount) -> tuple[str, str]:
    return f"nfs.{mount.name}.cross_node", f"{mount.mountpoint} reads what another node of the run wrote"


def pairs(hosts: Sequence[Target]) -> tuple[list[tuple[Target, NfsMount, Target, NfsMount]],
                                              list[tuple[Target, NfsMount]]]:
    """(reader, its mount, writer, its mount) for each node of a shared export (a ring: each node reads its
    predecessor's file), and the nodes alone on their export in this run. Pure."""
    groups: dict[tuple[str, str], list[tuple[Target, NfsMount]]] = {}
    for host in hosts:
        for mount in host.spec.nfs_mounts:
            if mount.shared:
                groups.setdefault((mount.server, mount.export), []).append((host, mount))
    ring, alone = [], []
    for members in groups.values():
        if len(members) == 1:
            alone.append(members[0])
            continue
        for i, (reader, r_mount) in enumerate(members):
            writer, w_mount = members[i - 1]
            ring.append((reader, r_mount, writer, w_mount))
    return ring, alone


def written(host: Target, mount: NfsMount, facts: NodeFacts | None) -> NfsProbe | str:
    """The writer's phase-1 probe with a kept file, or why there is none."""
    if facts is None:
        return f"{host.name} could not be gathered"
    found = facts.section(section(mount))
    if found is None or found.rc != 0:
        return f"{host.name}: its probe of {mount.mountpoint} did not run"
    try:
        probe = parse_nfs_probe(found.stdout)
    except ParseError as exc:
        return f"{host.name}: {exc}"
    if not probe.kept or consistency_problem(probe):
        return f"{host.name} wrote nothing to read ({consistency_problem(probe) or 'no file kept'})"
    return probe


def waive_alone(ctx: Context, host: Target, mount: NfsMount) -> None:
    """The only node of the run on its export: the cross-node read WAIVED with the reason, never passed."""
    cid, desc = cross_id(mount)
    ctx.waive(cid, AREA, desc, "same sha256 on another node",
              f"only {host.name} mounts {mount.source} in this verify run: the cross-node read "
              "needs a second node sharing the export")


def read_probe(mount: NfsMount, kept: str) -> Probe:
    return Probe(name=f"nfs_read.{mount.name}", command=probe_command("read", mount.mountpoint, kept))


def judge_read(ctx: Context, cid: str, desc: str, expected: str, writer: str, written: NfsProbe,
                got: Section | None) -> None:
    if got is None or got.rc != 0:
        why = (got.stderr.strip().splitlines() or [f"exit {got.rc}"])[-1] if got else "no answer"
        ctx.error(cid, AREA, desc, expected, f"the read on {ctx.node} did not run: {why}")
        return
    try:
        read = parse_nfs_probe(got.stdout)
    except ParseError as exc:
        ctx.unreadable(cid, AREA, desc, expected, str(exc))
        return
    if read.read_error:
        ctx.record(cid, AREA, desc, expected, f"cannot read {writer}'s file: {read.read_error}", False)
        return
    same = read.read_sha == written.written_sha and read.read_bytes == written.written_bytes
    found = f"same sha256 as {writer} wrote" if same else f"sha256 {read.read_sha[:16]}... ({read.read_bytes} bytes)"
    ctx.record(cid, AREA, desc, expected, f"{found}, {read.read_mode} read", same)

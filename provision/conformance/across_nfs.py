"""Phase 2 of the NFS checks (apply): after every node of the run was gathered, each node of a shared export
reads (and removes) what its predecessor wrote. Which reads to make and their verdicts are checks/nfs's (pure);
this module only runs the reads over each node's Runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from provision.conformance.checks._base import Context
from provision.conformance.checks.nfs import AREA as AREA_OF_NFS
from provision.conformance.checks.nfs import cross_id, judge_read, pairs, read_probe, waive_alone, written
from provision.conformance.facts import NodeFacts, Section, run_probes
from provision.conformance.model import CheckResult, Level
from provision.conformance.parsers.nfs_probe import NfsProbe
from provision.conformance.target import RunnerFor, Target
from provision.spec.nfs import NfsMount


def across_nodes(
    hosts: Sequence[Target], facts: dict[str, NodeFacts | None], runner_for: RunnerFor
) -> dict[str, list[CheckResult]]:
    """Each node of a shared export reads (and removes) what its predecessor wrote, per node name."""
    ctxs = {h.name: Context(node=h.name, spec=h.spec, facts=NodeFacts(node=h.name, sections={}),
                            level=Level.QUICK) for h in hosts}
    ring, alone = pairs(hosts)
    for host, mount in alone:
        if facts.get(host.name) is None:
            continue  # its report already says it could not be gathered
        waive_alone(ctxs[host.name], host, mount)
        kept = written(host, mount, facts.get(host.name))
        if isinstance(kept, NfsProbe):
            run_probes(host.name, [read_probe(mount, kept.kept)], runner_for(host))  # removes the kept file

    def one(job: tuple[Target, NfsMount, Target, NfsMount]) -> None:
        reader, r_mount, writer, w_mount = job
        cid, desc = cross_id(r_mount)
        ctx, expected = ctxs[reader.name], f"the sha256 {writer.name} wrote"
        wrote = written(writer, w_mount, facts.get(writer.name))
        if facts.get(reader.name) is None:
            return  # the reader's own report already says it could not be gathered
        if isinstance(wrote, str):
            ctx.error(cid, AREA_OF_NFS, desc, expected, wrote)
            return
        probe = read_probe(r_mount, wrote.kept)
        got: Section | None = run_probes(reader.name, [probe], runner_for(reader)).get(probe.name)
        judge_read(ctx, cid, desc, expected, writer.name, wrote, got)

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(ring)))) as pool:
        list(pool.map(one, ring))
    return {name: ctx.results for name, ctx in ctxs.items()}

"""Containers see every GPU: for each engine of the spec, `nvidia-smi -L` run inside a container lists the
same GPU UUIDs as the host's `nvidia-smi -q`.

- docker: `docker info --format '{{json .Runtimes}}'` names the `nvidia` runtime (what `nvidia-ctk runtime
  configure --runtime=docker` or the role's daemon.json registers), and `docker run --rm --pull=never --gpus all
  IMAGE nvidia-smi -L` lists every GPU. `--pull=never`: verify never downloads; the role puts the image there.
- apptainer: `apptainer exec --nv SIF nvidia-smi -L` lists every GPU (`--nv` binds the host's driver
  libraries and nvidia-smi, or uses nvidia-container-cli when apptainer.conf says `use nvidia-container-cli`).
- containerd alone (the CRI case) has no run check here: waived with the reason, never passed.

An engine or image that is missing, a daemon that is down, a runtime that is not configured: ERROR with the
engine's own message. A container that runs and lists fewer GPUs (or none): FAIL. A profile without GPUs: the
checks are not applicable (waived with that reason), never passed. At --level quick nothing runs (a container
start costs seconds). Docker and Apptainer on a real GPU node were never run here: the lab's stand-ins answer.
"""

from __future__ import annotations

import shlex

from provision.conformance.checks import gpu
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.containers import container_gpus, describe_failure, parse_docker_runtimes
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.errors import ParseError
from provision.spec.containers import ContainerEngine
from provision.spec.model import NodeSpec

AREA = "containers"
DOCKER_RUNTIMES = "docker_runtimes"
DOCKER_GPUS = "docker_gpus"
APPTAINER_GPUS = "apptainer_gpus"
NVIDIA_RUNTIME = "nvidia"


def gpus_expected(spec: NodeSpec) -> int:
    """How many GPUs the profile has (0: none). The one place these checks read GPU presence from: spec.gpu."""
    section = spec.gpu
    return 0 if section is None else section.count


def docker_run(image: str) -> str:
    return f"docker run --rm --pull=never --gpus all {shlex.quote(image)} nvidia-smi -L"


def apptainer_exec(sif: str) -> str:
    return f"apptainer exec --nv {shlex.quote(sif)} nvidia-smi -L"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if level is Level.QUICK or gpus_expected(spec) == 0:
        return []
    c, found = spec.containers, []
    if c.uses(ContainerEngine.DOCKER):
        found += [Probe(name=DOCKER_RUNTIMES, command="docker info --format '{{json .Runtimes}}'"),
                  Probe(name=DOCKER_GPUS, command=docker_run(c.test_image.docker))]
    if c.uses(ContainerEngine.APPTAINER):
        found.append(Probe(name=APPTAINER_GPUS, command=apptainer_exec(c.test_image.apptainer)))
    return found


def evaluate(ctx: Context) -> None:
    if ctx.level is Level.QUICK:
        return
    engines = ctx.spec.containers.engines
    if gpus_expected(ctx.spec) == 0:
        for engine in engines:
            ctx.waive(f"{AREA}.{engine}.gpus", AREA, f"a {engine} container sees every GPU", "n/a",
                      "not applicable: the profile has no GPUs")
        return
    if ContainerEngine.CONTAINERD in engines:
        ctx.waive(f"{AREA}.containerd.gpus", AREA, "a containerd container sees every GPU", "every GPU",
                  "no run check for containerd alone (a Kubernetes node's GPUs are checked by its device plugin)")
    try:
        host = [g.uuid for g in ctx.parsed(gpu.QUERY, parse_nvidia_smi_query).gpus]
    except Unreadable as why:
        for engine in (e for e in engines if e is not ContainerEngine.CONTAINERD):
            ctx.unreadable(f"{AREA}.{engine}.gpus", AREA, f"a {engine} container sees every GPU",
                           "the host's GPUs", f"host GPU list: {why.reason}")
        return
    if ContainerEngine.DOCKER in engines:
        _docker_runtime(ctx)
        image = ctx.spec.containers.test_image.docker
        _sees_all(ctx, "docker", DOCKER_GPUS, f"a docker container ({image}, --gpus all) sees every GPU", host)
    if ContainerEngine.APPTAINER in engines:
        sif = ctx.spec.containers.test_image.apptainer
        _sees_all(ctx, "apptainer", APPTAINER_GPUS, f"an apptainer container ({sif}, --nv) sees every GPU", host)


def _docker_runtime(ctx: Context) -> None:
    cid, desc = f"{AREA}.docker.runtime", "the docker daemon knows the NVIDIA runtime"
    section = ctx.facts.section(DOCKER_RUNTIMES)
    if section is not None and section.rc != 0:
        ctx.error(cid, AREA, desc, NVIDIA_RUNTIME, describe_failure(section.rc, section.stderr + section.stdout))
        return
    try:
        runtimes = ctx.parsed(DOCKER_RUNTIMES, parse_docker_runtimes)
    except Unreadable as why:
        ctx.unreadable(cid, AREA, desc, NVIDIA_RUNTIME, why.reason)
        return
    ctx.record(cid, AREA, desc, NVIDIA_RUNTIME, sorted(runtimes), NVIDIA_RUNTIME in runtimes)


def _sees_all(ctx: Context, engine: str, name: str, desc: str, host: list[str]) -> None:
    cid, expected = f"{AREA}.{engine}.gpus", f"{len(host)} GPUs, the host's UUIDs"
    section = ctx.facts.section(name)
    if section is None:
        ctx.unreadable(cid, AREA, desc, expected, f"{name}: not gathered")
        return
    try:
        seen = container_gpus(section.rc, section.stdout)
    except ParseError as exc:  # : the container printed something that is not `nvidia-smi -L`
        ctx.unreadable(cid, AREA, desc, expected, str(exc))
        return
    if seen is None:
        ctx.error(cid, AREA, desc, expected, describe_failure(section.rc, section.stderr + section.stdout))
        return
    inside = {g.uuid for g in seen}
    missing = [u for u in host if u not in inside]
    extra = sorted(inside - set(host))
    detail = "; ".join(part for part in (
        f"not seen in the container: {', '.join(missing)}" if missing else "",
        f"not the host's: {', '.join(extra)}" if extra else "",
    ) if part)  # fmt: skip
    found = f"{len(host) - len(missing)} of {len(host)}" + (f" (+{len(extra)} unknown)" if extra else "")
    ctx.record(cid, AREA, desc, expected, found, not missing and not extra, detail)

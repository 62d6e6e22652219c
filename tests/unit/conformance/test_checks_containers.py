"""The container GPU checks: `nvidia-smi -L` inside a docker/apptainer container against the host's GPUs.

Host GPU lists are real `nvidia-smi -q` captures (tests/fixtures/nvidia-smi); the in-container `-L` is the real
single-H100 capture of the same machine, or (8 GPUs) lines in that capture's format carrying the 8-GPU
capture's UUIDs. Engine errors are containers/handwritten/ (the engines' own messages, see PROVENANCE.md).
"""

from __future__ import annotations

import pytest

from provision.conformance.checks import containers
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts
from provision.conformance.model import Level, Outcome
from provision.conformance.parsers.containers import Failure, classify_failure, parse_docker_runtimes
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.errors import ParseError
from tests.unit.conformance.helpers import area, facts, fixture, run, spec
from tests.unit.parsers._fixtures import H100_590, section

Q_590 = section(H100_590, "nvidia-smi -q", exact=True)
L_590 = section(H100_590, "nvidia-smi -L", phase="capabilities")
Q_535X8 = fixture("nvidia-smi/gpud/nvidia-smi-q.535.183.01.h100x8.txt")
UUIDS_X8 = [g.uuid for g in parse_nvidia_smi_query(Q_535X8).gpus]
HW = "containers/handwritten/"
NO_RUNTIME = fixture(HW + "docker-run.no-gpu-runtime.txt")
NO_IMAGE = fixture(HW + "docker-run.no-such-image.txt")
DAEMON_DOWN = fixture(HW + "docker-run.daemon-down.txt")
NO_SMI = fixture(HW + "docker-run.no-nvidia-smi.txt")
SIF_MISSING = fixture(HW + "apptainer-exec.no-image.txt")
NO_NV = fixture(HW + "apptainer-exec.no-nv-files.txt")
RUNTIMES = fixture(HW + "docker-info-runtimes.nvidia.json")
RUNC_ONLY = fixture(HW + "docker-info-runtimes.runc-only.json")
NO_DEVICES = (6, "No devices were found\n", "")


def listing(uuids: list[str]) -> str:
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: {u})\n" for i, u in enumerate(uuids))


def check(sections: dict[str, str | tuple[int, str, str]], level: Level = Level.FULL) -> dict[str, tuple[str, str]]:
    ctx = run(spec(), {"nvidia_smi_q": Q_535X8, "docker_runtimes": RUNTIMES, **sections}, level)
    return {k: (r.outcome.value, f"{r.found} | {r.detail}") for k, r in area(ctx, "containers").items()}


def test_the_real_single_gpu_pair_passes_both_engines() -> None:
    ctx = run(spec(), {"nvidia_smi_q": Q_590, "docker_runtimes": RUNTIMES, "docker_gpus": L_590,
                       "apptainer_gpus": L_590})
    got = area(ctx, "containers")
    assert {k: r.outcome for k, r in got.items()} == {
        "containers.docker.runtime": Outcome.PASS, "containers.docker.gpus": Outcome.PASS,
        "containers.apptainer.gpus": Outcome.PASS}
    assert got["containers.docker.gpus"].found == "1 of 1"


# (case, sections, check id, outcome, text the found/detail must hold)
CASES: list[tuple[str, dict[str, str | tuple[int, str, str]], str, str, str]] = [
    ("all-8-seen", {"docker_gpus": listing(UUIDS_X8)}, "containers.docker.gpus", "pass", "8 of 8"),
    ("one-hidden", {"docker_gpus": listing(UUIDS_X8[:3] + UUIDS_X8[4:])}, "containers.docker.gpus", "fail",
     f"7 of 8 | not seen in the container: {UUIDS_X8[3]}"),
    ("none-seen", {"docker_gpus": NO_DEVICES}, "containers.docker.gpus", "fail", "0 of 8"),
    ("apptainer-none-seen", {"apptainer_gpus": NO_DEVICES}, "containers.apptainer.gpus", "fail", "0 of 8"),
    ("another-hosts-gpu", {"docker_gpus": listing([*UUIDS_X8[:7], "GPU-deadbeef-0000-0000-0000-000000000000"])},
     "containers.docker.gpus", "fail", "+1 unknown"),
    ("runtime-not-configured", {"docker_gpus": (125, "", NO_RUNTIME)}, "containers.docker.gpus", "error",
     "NVIDIA runtime is not configured"),
    ("runtime-not-registered", {"docker_runtimes": RUNC_ONLY}, "containers.docker.runtime", "fail",
     "io.containerd.runc.v2, runc"),
    ("image-missing", {"docker_gpus": (125, "", NO_IMAGE)}, "containers.docker.gpus", "error",
     "test image is not on the node"),
    ("daemon-down", {"docker_gpus": (125, "", DAEMON_DOWN)}, "containers.docker.gpus", "error",
     "daemon is not running"),
    ("daemon-down-info", {"docker_runtimes": (1, "", DAEMON_DOWN)}, "containers.docker.runtime", "error",
     "daemon is not running"),
    ("docker-not-installed", {"docker_gpus": (127, "", "sh: 1: docker: not found\n")}, "containers.docker.gpus",
     "error", "command is not installed"),
    ("image-without-nvidia-smi", {"docker_gpus": (127, "", NO_SMI)}, "containers.docker.gpus", "error",
     "nvidia-smi was not made available"),
    ("sif-missing", {"apptainer_gpus": (255, "", SIF_MISSING)}, "containers.apptainer.gpus", "error",
     "test image is not on the node"),
    ("no-nv-files", {"apptainer_gpus": (255, "", NO_NV)}, "containers.apptainer.gpus", "error",
     "no NVIDIA libraries found on the host"),
    ("apptainer-not-installed", {"apptainer_gpus": (127, "", "sh: 1: apptainer: not found\n")},
     "containers.apptainer.gpus", "error", "not installed"),
    ("garbage-at-exit-0", {"docker_gpus": "hello from the container\n"}, "containers.docker.gpus", "error",
     "unreadable"),
    ("empty-at-exit-0", {"docker_gpus": ""}, "containers.docker.gpus", "error", "unreadable"),
    ("not-gathered", {}, "containers.apptainer.gpus", "error", "not gathered"),
]


@pytest.mark.parametrize("sections,cid,outcome,text", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_container_gpu_table(sections: dict[str, str | tuple[int, str, str]], cid: str, outcome: str,
                             text: str) -> None:
    got = check(sections)
    assert got[cid][0] == outcome, got[cid]
    assert text in got[cid][1], got[cid]


def test_host_gpu_list_unreadable_is_an_error_for_every_engine() -> None:
    got = check({"nvidia_smi_q": (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                      "driver.\n", ""), "docker_gpus": listing(UUIDS_X8)})
    assert got["containers.docker.gpus"][0] == got["containers.apptainer.gpus"][0] == "error"


def test_quick_level_runs_no_container() -> None:
    assert containers.probes(spec(), Level.QUICK) == []
    assert check({"docker_gpus": listing(UUIDS_X8)}, Level.QUICK) == {}


def test_probes_name_the_real_commands_with_the_spec_images() -> None:
    s = spec(**{"containers.test_image": {"docker": "registry.example.net/cuda:12.4.1-base",
                                          "apptainer": "/srv/sif/cuda base.sif"}})
    commands = {p.name: p.command for p in containers.probes(s, Level.FULL)}
    assert commands == {
        "docker_runtimes": "docker info --format '{{json .Runtimes}}'",
        "docker_gpus": "docker run --rm --pull=never --gpus all registry.example.net/cuda:12.4.1-base nvidia-smi -L",
        "apptainer_gpus": "apptainer exec --nv '/srv/sif/cuda base.sif' nvidia-smi -L",
    }


def test_containerd_alone_is_waived_not_passed() -> None:
    s = spec(**{"containers": {"engines": ["containerd"]}})
    assert containers.probes(s, Level.FULL) == []
    (result,) = area(run(s, {"nvidia_smi_q": Q_535X8}), "containers").values()
    assert result.outcome is Outcome.WAIVED and "containerd" in result.detail


def test_a_profile_without_gpus_is_not_applicable_never_passed() -> None:
    s = spec().model_copy(update={"gpu": None})  # what a GPU-less profile holds (issue 21 item 7)
    assert containers.probes(s, Level.FULL) == []
    ctx = Context(node="n1", spec=s, facts=NodeFacts(node="n1", sections={}), level=Level.FULL)
    containers.evaluate(ctx)
    assert {r.id: (r.outcome, r.detail) for r in ctx.results} == {
        "containers.docker.gpus": (Outcome.WAIVED, "not applicable: the profile has no GPUs"),
        "containers.apptainer.gpus": (Outcome.WAIVED, "not applicable: the profile has no GPUs")}


@pytest.mark.parametrize("rc,text,failure", [
    (125, NO_RUNTIME, Failure.GPU_RUNTIME_MISSING),
    (125, "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n", Failure.GPU_RUNTIME_MISSING),
    (125, NO_IMAGE, Failure.IMAGE_MISSING),
    (125, DAEMON_DOWN, Failure.DAEMON_DOWN),
    (127, NO_SMI, Failure.NVIDIA_SMI_MISSING),
    (255, SIF_MISSING, Failure.IMAGE_MISSING),
    (255, NO_NV, Failure.NO_HOST_LIBRARIES),
    (127, "sh: 1: docker: not found\n", Failure.ENGINE_MISSING),
    (127, "", Failure.ENGINE_MISSING),
    (1, "something else went wrong\n", Failure.OTHER),
])
def test_classify_engine_errors(rc: int, text: str, failure: Failure) -> None:
    assert classify_failure(rc, text) is failure


def test_docker_runtimes_parser() -> None:
    assert sorted(parse_docker_runtimes(RUNTIMES)) == ["io.containerd.runc.v2", "nvidia", "runc"]
    assert parse_docker_runtimes(RUNTIMES)["nvidia"].path == "nvidia-container-runtime"
    for bad in ("", "null", "[]", "{}", "{not json"):
        with pytest.raises(ParseError):
            parse_docker_runtimes(bad)


def test_facts_helper_keeps_rc() -> None:  # the table above relies on (rc, stdout, stderr) sections
    assert facts({"x": NO_DEVICES}).sections["x"].rc == 6

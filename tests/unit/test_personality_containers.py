"""The twins' stand-in docker, apptainer and nvidia-ctk (LAB STAND-INs), run as subprocesses against a temp lab
state, and what the conformance check makes of their outputs: every GPU seen, the engines' own errors named,
the fault container_gpu_hidden caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_personality_helpers import DRIVER_PACKAGES, Twin

from provision.conformance.checks import containers
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts, Section
from provision.conformance.model import Level, Outcome
from provision.conformance.parsers.containers import Failure, classify_failure, parse_docker_runtimes
from provision.conformance.parsers.nvsmi_list import parse_nvidia_smi_list
from provision.lab.twins.personality import apply_fault
from provision.lab.twins.personality.packages import APPTAINER_CONF, NVLIBLIST

IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
TOOLKIT = {"nvidia-container-toolkit": "1.17.3-1", "nvidia-container-toolkit-base": "1.17.3-1",
           "libnvidia-container-tools": "1.17.3-1", "libnvidia-container1": "1.17.3-1"}
RUN = ["run", "--rm", "--pull=never", "--gpus", "all", IMAGE, "nvidia-smi", "-L"]


@pytest.fixture
def twin(tmp_path: Path) -> Twin:
    t = Twin(tmp_path)
    t.set_packages({**DRIVER_PACKAGES, **TOOLKIT, "docker-ce": "5:27.4.1-1~debian.12~bookworm",
                    "docker-ce-cli": "5:27.4.1-1~debian.12~bookworm", "apptainer": "1.3.6"})
    t.set_units("docker.service")
    return t


def failure(done) -> Failure:  # type: ignore[no-untyped-def]
    return classify_failure(done.returncode, done.stderr + done.stdout)


def test_docker_daemon_down_is_the_real_message(twin: Twin) -> None:
    twin.set_units()
    done = twin.run("docker", "info", "--format", "{{json .Runtimes}}", check=False)
    assert done.returncode == 1 and failure(done) is Failure.DAEMON_DOWN
    assert failure(twin.run("docker", *RUN, check=False)) is Failure.DAEMON_DOWN


def test_docker_runtime_registered_by_nvidia_ctk(twin: Twin) -> None:
    assert "nvidia" not in parse_docker_runtimes(twin.out("docker", "info", "--format", "{{json .Runtimes}}"))
    twin.run("nvidia_ctk", "runtime", "configure", "--runtime=docker", "--set-as-default")
    runtimes = parse_docker_runtimes(twin.out("docker", "info", "--format", "{{json .Runtimes}}"))
    assert runtimes["nvidia"].path == "nvidia-container-runtime"
    assert twin.out("docker", "info", "--format", "{{.DefaultRuntime}}").strip() == "nvidia"


def test_docker_run_sees_the_twins_gpus_only_with_image_and_toolkit(twin: Twin) -> None:
    host = [g.uuid for g in parse_nvidia_smi_list(twin.out("nvidia_smi", "-L"))]
    assert len(host) == 8
    missing = twin.run("docker", *RUN, check=False)
    assert missing.returncode == 125 and failure(missing) is Failure.IMAGE_MISSING
    assert twin.run("docker", "image", "inspect", IMAGE, check=False).returncode == 1
    twin.run("docker", "pull", IMAGE)
    assert twin.run("docker", "image", "inspect", "--format", "{{.Id}}", IMAGE).stdout.startswith("sha256:")
    assert [g.uuid for g in parse_nvidia_smi_list(twin.out("docker", *RUN))] == host
    twin.set_packages({**DRIVER_PACKAGES})  # no toolkit: no NVIDIA hook for --gpus
    assert failure(twin.run("docker", *RUN, check=False)) is Failure.GPU_RUNTIME_MISSING
    no_gpus = twin.run("docker", "run", "--rm", "--pull=never", IMAGE, "nvidia-smi", "-L", check=False)
    assert failure(no_gpus) is Failure.NVIDIA_SMI_MISSING  # neither --gpus nor the nvidia default runtime


def test_docker_save_and_load_round_trip(twin: Twin, tmp_path: Path) -> None:
    twin.run("docker", "pull", IMAGE)
    twin.run("docker", "save", "-o", str(tmp_path / "cuda.tar"), IMAGE)
    (twin.base / "root/var/lib/docker/provision-lab-images.json").unlink()
    assert twin.out("docker", "load", "--input", str(tmp_path / "cuda.tar")).strip() == f"Loaded image: {IMAGE}"


def _apptainer_conf(twin: Twin, nvccli: bool = False) -> None:
    conf = twin.base / "root/etc/apptainer"
    conf.mkdir(parents=True, exist_ok=True)
    text = APPTAINER_CONF.replace("{version}", "1.3.6")
    (conf / "apptainer.conf").write_text(text.replace("= no", "= yes") if nvccli else text)
    (conf / "nvliblist.conf").write_text(NVLIBLIST)


def test_apptainer_exec_nv(twin: Twin, tmp_path: Path) -> None:
    sif = str(tmp_path / "cuda.sif")
    exec_nv = ["exec", "--nv", sif, "nvidia-smi", "-L"]
    assert failure(twin.run("apptainer", *exec_nv, check=False)) is Failure.IMAGE_MISSING
    twin.run("apptainer", "pull", sif, f"docker://{IMAGE}")
    assert twin.run("apptainer", "pull", sif, f"docker://{IMAGE}", check=False).returncode == 255  # no overwrite
    assert failure(twin.run("apptainer", *exec_nv, check=False)) is Failure.NO_HOST_LIBRARIES  # no nvliblist
    _apptainer_conf(twin)
    assert len(parse_nvidia_smi_list(twin.out("apptainer", *exec_nv))) == 8
    assert failure(twin.run("apptainer", "exec", sif, "nvidia-smi", "-L", check=False)) is Failure.NVIDIA_SMI_MISSING
    _apptainer_conf(twin, nvccli=True)
    assert len(parse_nvidia_smi_list(twin.out("apptainer", *exec_nv))) == 8
    twin.set_packages({**DRIVER_PACKAGES})  # nvidia-container-cli gone with the toolkit
    assert twin.run("apptainer", *exec_nv, check=False).returncode == 255


def _check(twin: Twin, sif: str) -> dict[str, Outcome]:
    """The containers checks on what the stand-ins print for the check's own probe commands."""
    sections = {"nvidia_smi_q": twin.run("nvidia_smi", "-q", check=False),
                "docker_runtimes": twin.run("docker", "info", "--format", "{{json .Runtimes}}", check=False),
                "docker_gpus": twin.run("docker", *RUN, check=False),
                "apptainer_gpus": twin.run("apptainer", "exec", "--nv", sif, "nvidia-smi", "-L", check=False)}
    facts = NodeFacts(node="n1", sections={n: Section(name=n, rc=d.returncode, stdout=d.stdout, stderr=d.stderr)
                                           for n, d in sections.items()})
    s = twin.spec.model_copy(update={"containers": twin.spec.containers.model_copy(
        update={"test_image": twin.spec.containers.test_image.model_copy(update={"apptainer": sif})})})
    ctx = Context(node="n1", spec=s, facts=facts, level=Level.FULL)
    containers.evaluate(ctx)
    return {r.id: r.outcome for r in ctx.results}


def test_the_check_passes_a_configured_twin_and_catches_container_gpu_hidden(twin: Twin, tmp_path: Path) -> None:
    sif = str(tmp_path / "cuda.sif")
    assert set(_check(twin, sif).values()) == {Outcome.FAIL, Outcome.ERROR}  # nothing configured yet
    twin.run("nvidia_ctk", "runtime", "configure", "--runtime=docker")
    twin.run("docker", "pull", IMAGE)
    twin.run("apptainer", "pull", sif, f"docker://{IMAGE}")
    _apptainer_conf(twin)
    ok = _check(twin, sif)
    assert ok == {"containers.docker.runtime": Outcome.PASS, "containers.docker.gpus": Outcome.PASS,
                  "containers.apptainer.gpus": Outcome.PASS}
    apply_fault(twin.state, "container_gpu_hidden", clear=False)
    hidden = _check(twin, sif)
    assert hidden == {**ok, "containers.docker.gpus": Outcome.FAIL, "containers.apptainer.gpus": Outcome.FAIL}
    apply_fault(twin.state, "container_gpu_hidden", clear=True)
    assert _check(twin, sif) == ok

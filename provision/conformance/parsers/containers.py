"""Container engines: `docker info --format '{{json .Runtimes}}'`, and what `docker run --gpus all` or
`apptainer exec --nv` printed when `nvidia-smi -L` ran inside a container.

A container that started prints `nvidia-smi -L` (parsed by nvsmi_list); one that did not start prints the
engine's error, which `classify_failure` names (daemon down, image absent, GPU runtime not configured, no
nvidia-smi in the container, no NVIDIA libraries on the host). The messages are the engines' own, as quoted
in public documents and issue threads (tests/fixtures/PROVENANCE.md): never run against a real Docker on a GPU
node here.
"""

from __future__ import annotations

import json
from enum import StrEnum

from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.conformance.parsers.nvsmi_list import GpuListEntry, parse_nvidia_smi_list

TOOL_RUNTIMES = "docker info --format {{json .Runtimes}}"
TOOL_IN_CONTAINER = "nvidia-smi -L (in a container)"
NO_DEVICES_RC = 6  # nvidia-smi's exit status with "No devices were found"


class Runtime(Model):
    """One runtime the Docker daemon knows (`runc`, `io.containerd.runc.v2`, `nvidia`)."""

    name: str
    path: str


@tool_parser(TOOL_RUNTIMES)
def parse_docker_runtimes(text: str) -> dict[str, Runtime]:
    """The JSON object `docker info --format '{{json .Runtimes}}'` prints: runtime name -> {path, ...}."""
    data = json.loads(text.strip() or "null")
    if not isinstance(data, dict) or not data:
        fail(TOOL_RUNTIMES, "not a JSON object of runtimes")
    return {name: Runtime(name=name, path=str((value or {}).get("path", ""))) for name, value in data.items()}


class Failure(StrEnum):
    """Why a GPU container did not list the GPUs."""

    ENGINE_MISSING = "engine_missing"
    DAEMON_DOWN = "daemon_down"
    IMAGE_MISSING = "image_missing"
    GPU_RUNTIME_MISSING = "gpu_runtime_missing"
    NVIDIA_SMI_MISSING = "nvidia_smi_missing"
    NO_HOST_LIBRARIES = "no_host_libraries"
    OTHER = "other"


FAILURE_TEXT: dict[Failure, str] = {
    Failure.ENGINE_MISSING: "the engine's command is not installed",
    Failure.DAEMON_DOWN: "the engine's daemon is not running",
    Failure.IMAGE_MISSING: "the test image is not on the node",
    Failure.GPU_RUNTIME_MISSING: "the NVIDIA runtime is not configured (nvidia-ctk runtime configure)",
    Failure.NVIDIA_SMI_MISSING: "nvidia-smi was not made available inside the container",
    Failure.NO_HOST_LIBRARIES: "no NVIDIA libraries found on the host for --nv",
    Failure.OTHER: "the container did not start",
}

# (substring, failure), first match wins; the texts are Docker's and Apptainer's own.
_MARKERS: tuple[tuple[str, Failure], ...] = (
    ("Cannot connect to the Docker daemon", Failure.DAEMON_DOWN),
    ("could not select device driver", Failure.GPU_RUNTIME_MISSING),
    ('unknown or invalid runtime name: nvidia', Failure.GPU_RUNTIME_MISSING),
    ("No such image", Failure.IMAGE_MISSING),
    ("Unable to find image", Failure.IMAGE_MISSING),
    ("could not open image", Failure.IMAGE_MISSING),
    ("image file does not exist", Failure.IMAGE_MISSING),
    ("Could not find any nv files on this host", Failure.NO_HOST_LIBRARIES),
    ('"nvidia-smi": executable file not found', Failure.NVIDIA_SMI_MISSING),
    ("nvidia-smi: not found", Failure.NVIDIA_SMI_MISSING),
)


def classify_failure(rc: int, text: str) -> Failure:
    """What went wrong, from the exit status and what the engine printed (stderr and stdout)."""
    if rc == 127 and ("not found" in text or not text.strip()) and "nvidia-smi" not in text:
        return Failure.ENGINE_MISSING
    for marker, failure in _MARKERS:
        if marker in text:
            return failure
    return Failure.OTHER


def describe_failure(rc: int, text: str) -> str:
    """One line: the failure's meaning and the engine's own last line."""
    failure = classify_failure(rc, text)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1][:160] if lines else f"exit {rc}"
    return f"{FAILURE_TEXT[failure]} ({last})"


def container_gpus(rc: int, stdout: str) -> tuple[GpuListEntry, ...] | None:
    """The GPUs `nvidia-smi -L` listed inside the container, or None when the container did not get that far.

    Exit 0 with GPU lines: those GPUs. Exit 6 with "No devices were found": a container that runs but sees no
    GPU (an empty tuple). Anything else: None (see classify_failure)."""
    if rc == 0 or (rc == NO_DEVICES_RC and "No devices were found" in stdout):
        return parse_nvidia_smi_list(stdout)
    return None

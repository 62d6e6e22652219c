"""The `containers:` section of a node spec: which engines run GPU containers, where they come from, and the
image the conformance check runs to see the GPUs from inside a container.

Engines: `containerd` (Debian's package; the Kubernetes/CRI case), `docker` (docker-ce, docker-ce-cli and
containerd.io from Docker's own apt repository) and `apptainer` (from its release .deb or an apt source such as
its PPA). Docker and Apptainer may both be installed; Debian's containerd and Docker's containerd.io conflict,
so `containerd` and `docker` exclude each other.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from provision.spec.digests import check_sha256
from provision.spec.versions import check_apt_version

_URL_RE = re.compile(r"^(https?|file):/{1,3}[^\s]+$")
_IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/:@\-]*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class ContainerEngine(StrEnum):
    """A container engine the container_runtime role can install."""

    CONTAINERD = "containerd"
    DOCKER = "docker"
    APPTAINER = "apptainer"


class AptRepository(_Frozen):
    """One apt source, as roles/apt_source writes it (deb822): URIs, suite, components, signing key."""

    uri: str = Field(description="Base URL of the repository or of a local mirror")
    suite: str = Field(min_length=1, description="e.g. bookworm; a flat repository's path suite ends in /")
    components: tuple[str, ...] = ()
    signed_by: str = Field(default="", description="Absolute path of the keyring the source is Signed-By")
    key_url: str = Field(default="", description="URL the signing key is fetched from; empty: none fetched")

    @field_validator("uri", "key_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value and not _URL_RE.match(value):
            raise ValueError(f"{value!r} is not an http(s):// or file: URL")
        return value

    @field_validator("signed_by")
    @classmethod
    def _path(cls, value: str) -> str:
        if value and not value.startswith("/"):
            raise ValueError(f"{value!r} is not an absolute path")
        return value

    @model_validator(mode="after")
    def _flat_or_components(self) -> AptRepository:
        if self.suite.endswith("/") and self.components:
            raise ValueError(f"a flat suite ({self.suite}) takes no components")
        if not self.suite.endswith("/") and not self.components:
            raise ValueError(f"suite {self.suite} needs components (e.g. [stable])")
        return self


DOCKER_REPOSITORY = AptRepository(
    uri="https://download.docker.com/linux/debian",
    suite="bookworm",
    components=("stable",),
    signed_by="/etc/apt/keyrings/docker.asc",
    key_url="https://download.docker.com/linux/debian/gpg",
)
"""Docker's own repository for Debian bookworm, as docs.docker.com/engine/install/debian/ sets it up."""


class DockerSource(_Frozen):
    """Where docker-ce comes from, and at which version (empty: what the repository offers, unpinned)."""

    repository: AptRepository = DOCKER_REPOSITORY
    apt_version: str = Field(default="", description="e.g. 5:27.4.1-1~debian.12~bookworm")

    @field_validator("apt_version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_apt_version(value, unpinned_ok=True)


class ReleaseDeb(_Frozen):
    """A .deb downloaded from a release page (Apptainer's GitHub releases), checked by its SHA-256."""

    url: str
    sha256: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not _URL_RE.match(value) or not value.endswith(".deb"):
            raise ValueError(f"{value!r} is not an http(s):// or file: URL of a .deb")
        return value

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        return check_sha256(value)


class ApptainerSource(_Frozen):
    """Apptainer from its release .deb, or from an apt source (its PPA on Ubuntu, a mirror): exactly one."""

    release_deb: ReleaseDeb | None = None
    repository: AptRepository | None = None
    apt_version: str = Field(default="", description="Pinned version when installed from a repository")
    nvidia_container_cli: bool = Field(
        default=False,
        description="apptainer.conf `use nvidia-container-cli`: --nv sets the GPUs up with nvidia-container-cli "
        "(libnvidia-container) instead of binding the libraries nvliblist.conf names",
    )

    @field_validator("apt_version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_apt_version(value, unpinned_ok=True)

    @model_validator(mode="after")
    def _one_source(self) -> ApptainerSource:
        if (self.release_deb is None) == (self.repository is None):
            raise ValueError("give exactly one of release_deb (url, sha256) or repository")
        if self.release_deb is not None and self.apt_version:
            raise ValueError("apt_version applies to a repository; a release_deb is pinned by its sha256")
        return self


class GpuTestImage(_Frozen):
    """What the conformance check runs to list the GPUs from inside a container (`nvidia-smi -L`)."""

    docker: str = Field(default="nvidia/cuda:12.4.1-base-ubuntu22.04",
                        description="Image (name:tag or @digest) `docker run --gpus all` starts (verify never pulls)")
    docker_archive: str = Field(default="", description="A `docker save` tarball the role loads instead of pulling")
    apptainer: str = Field(default="/var/lib/provision/images/cuda-base.sif",
                           description="SIF file `apptainer exec --nv` runs (the role builds it from `docker`)")

    @field_validator("docker")
    @classmethod
    def _image(cls, value: str) -> str:
        if not _IMAGE_RE.match(value):
            raise ValueError(f"{value!r} is not an image reference (name[:tag][@digest], lowercase)")
        return value

    @field_validator("docker_archive", "apptainer")
    @classmethod
    def _path(cls, value: str) -> str:
        if value and not value.startswith("/"):
            raise ValueError(f"{value!r} is not an absolute path")
        return value


class Containers(_Frozen):
    """Container engines of the node class, each wired to the NVIDIA container toolkit."""

    engines: tuple[ContainerEngine, ...] = (ContainerEngine.CONTAINERD,)
    docker: DockerSource = DockerSource()
    apptainer: ApptainerSource | None = None
    test_image: GpuTestImage = GpuTestImage()

    @model_validator(mode="after")
    def _consistent(self) -> Containers:
        if not self.engines:
            raise ValueError("engines is empty (containerd, docker and/or apptainer)")
        if len(set(self.engines)) != len(self.engines):
            raise ValueError(f"an engine is listed twice: {[str(e) for e in self.engines]}")
        if {ContainerEngine.CONTAINERD, ContainerEngine.DOCKER} <= set(self.engines):
            raise ValueError("containerd and docker exclude each other (Debian's containerd conflicts with "
                             "Docker's containerd.io, which docker-ce brings)")
        if ContainerEngine.APPTAINER in self.engines and self.apptainer is None:
            raise ValueError("engine apptainer needs an apptainer: section (release_deb or repository)")
        return self

    def uses(self, engine: ContainerEngine) -> bool:
        return engine in self.engines

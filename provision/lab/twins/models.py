"""Typed records of the node twins: what callers ask for, what they get back, what `up` remembers."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"


class TwinRequest(BaseModel):
    """One twin to start: its inventory name, its 1-based index in the lab and its spec profile."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    index: int = Field(ge=1, le=250)
    profile: str = Field(min_length=1)


class TwinInfo(BaseModel):
    """How to reach a running twin over SSH, and where its apt repository is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    address: str
    port: int = 22
    user: str = "root"
    key_file: Path
    known_hosts: Path
    repo_url: str
    running: bool = True


class TwinRecord(BaseModel):
    """Everything `up` created for one twin, so that `down` can remove exactly that."""

    model_config = ConfigDict(extra="forbid")

    name: str
    index: int
    profile: str
    slot: int = Field(ge=1, le=250, description="Network slot N: netns pl-nodeNN, veth plvN, 10.203.N.0/24")
    twin_dir: Path
    supervisor_pid: int | None = None

    @property
    def netns(self) -> str:
        return f"pl-node{self.slot:02d}"

    @property
    def host_if(self) -> str:
        return f"plv{self.slot}"

    @property
    def host_address(self) -> str:
        return f"10.203.{self.slot}.1"

    @property
    def address(self) -> str:
        return f"10.203.{self.slot}.2"

    @property
    def cgroup(self) -> str:
        return f"provision-lab/{self.netns}"


class RepoServerRecord(BaseModel):
    """The lab's apt repository server process."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    port: int
    directory: Path


class TwinsState(BaseModel):
    """The twins side of one lab directory (written to <lab>/twins/state.json)."""

    model_config = ConfigDict(extra="forbid")

    rootfs: Path
    twins: list[TwinRecord] = Field(default_factory=list)
    repo: RepoServerRecord | None = None

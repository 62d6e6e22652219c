"""What `provision lab up` started, as it remembers it in `<lab>/lab.json` (no secrets: those stay in the 0600
simulator config)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from provision.errors import LabError
from provision.lab.twins.models import TwinInfo
from provision.lab.vm.lab_up import VmLabNode

STATE = "lab.json"


class NodeState(BaseModel):
    name: str
    https_port: int | None
    http_port: int | None
    tree: str | None = None  # the mockup this node's BMC serves (a lab of several trees gives each its own)
    ssh: TwinInfo | None = None
    vm: VmLabNode | None = None  # `lab up --vm`: the host is a qemu VM (its SSH port, key, installer URL)


class LabState(BaseModel):
    """What `lab up` started (no secrets: those stay in the 0600 simulator config)."""

    lab_dir: Path
    pid: int
    control_port: int
    profile: str
    tree: str  # the tree every node serves; several, joined by ",", in node order (each node's: nodes[].tree)
    as_captured: bool
    twins: bool
    inventory: Path
    factory: bool = False  # `lab up --factory`: every BMC as from the factory (bmcsim/README.md)
    nodes: list[NodeState]
    warnings: list[str] = []  # capture files served as captured (malformed JSON...), one line each
    vm: bool = False
    media_pid: int | None = None  # `lab up --vm`: the image server serving the installer CDs


def default_lab_dir() -> Path:
    return Path(os.environ.get("PROVISION_LAB_DIR", ".lab"))


def read_state(lab_dir: Path) -> LabState | None:
    path = lab_dir / STATE
    if not path.exists():
        return None
    try:
        return LabState.model_validate_json(path.read_text())
    except (OSError, UnicodeDecodeError, ValidationError) as exc:
        raise LabError(f"{path}: unreadable lab state ({exc.__class__.__name__}); remove it by hand") from None

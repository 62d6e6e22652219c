"""The node's own spec file, as `provision spec export NODE` writes it on the controller.

What a node needs to check itself (`provision verify --local --spec-file F`): its inventory name, profile,
spec, the inventory's lab declaration and its `provision_slurm` settings. Never a credential: nothing of
the BMC endpoint or the SSH settings is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from provision.errors import InputError
from provision.spec.fleet import HostEntry, LabDeclaration
from provision.spec.model import NodeSpec
from provision.spec.slurm import SlurmSettings

FORMAT: Literal["provision-node-spec/1"] = "provision-node-spec/1"


class NodeSpecFile(BaseModel):
    """One node's spec, detached from the inventory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["provision-node-spec/1"] = FORMAT
    host: str
    profile: str
    spec: NodeSpec
    lab: LabDeclaration = LabDeclaration()
    slurm: SlurmSettings | None = None

    @classmethod
    def of(cls, host: HostEntry) -> NodeSpecFile:
        return cls(host=host.name, profile=host.profile, spec=host.spec, lab=host.lab, slurm=host.slurm)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"


def read_spec_file(path: Path) -> NodeSpecFile:
    """Load and validate a spec file; one InputError line naming the file and the key otherwise."""
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"{path}: cannot read the spec file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}); see `provision spec export`") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError(f"{path}: not a provision node spec (format must be {FORMAT!r})")
    try:
        return NodeSpecFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{path}: {where}: {err['msg']}") from None

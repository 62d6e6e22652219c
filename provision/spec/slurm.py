"""`provision_slurm` (host or group var): whether and how bring-up and campaigns drain and resume nodes."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

SLURM_VAR = "provision_slurm"


class SlurmSettings(BaseModel):
    """How a controller-side run tells Slurm about a node's verdict (scontrol where slurmctld is reachable).

    ```yaml
    provision_slurm:
      drain_on_fail: true          # a node failing verify is drained, the failing check ids as reason
      resume_on_pass: true         # a node drained by provision is resumed when verify passes
      scontrol: /usr/bin/scontrol  # the command (a path, or a name looked up in PATH)
      node_name: gpu-a01           # the Slurm NodeName when it is not the inventory name
    ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    drain_on_fail: bool = False
    resume_on_pass: bool = True
    scontrol: str = Field(default="scontrol", min_length=1)
    node_name: str | None = Field(default=None, min_length=1, pattern=r"^[A-Za-z0-9._\-\[\],]+$")
    timeout_s: Annotated[float, Field(gt=0, le=300)] = 30.0

    @property
    def enabled(self) -> bool:
        return self.drain_on_fail

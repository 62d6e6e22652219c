"""What the campaign engine needs from the Redfish side, as small protocols (fakes in unit tests)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from provision.campaign.catalog import Component
from provision.errors import ProvisionError
from provision.spec.fleet import BmcEndpoint
from provision.spec.platforms import PlatformIdentity


class UpdateFailed(ProvisionError):
    """A node's firmware update did not complete."""


class Refused(ProvisionError):
    """The turn's guard refused a side effect (its node lease is stale or lost): nothing more was sent."""


Guard = Callable[[str], None]
"""Called with what is about to be sent ("bios 2.1 update", "host reset") right before each side effect on a
node; raises Refused to stop the update there."""


def unguarded(what: str) -> None:
    """The guard of an update outside any lease (tools and tests)."""


class Target(BaseModel):
    """One node of a campaign: its inventory name and how to reach its BMC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    bmc: BmcEndpoint | None = None


class FirmwareState(BaseModel):
    """A node's firmware as its BMC reports it now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    versions: dict[str, str | None] = Field(description="component -> version; None when not found")
    busy: bool = Field(default=False, description="an update task is still running on the BMC")
    running: dict[str, str] = Field(default_factory=dict, description="component -> id of its update task running")
    staged: dict[str, str] = Field(
        default_factory=dict, description="component -> version flashed but waiting for a host reset"
    )
    incomparable: dict[str, str] = Field(
        default_factory=dict, description="component -> the line naming its running version and the catalog's, "
        "which cannot be ordered (versions.compare): the node is not flashed")
    identity: PlatformIdentity | None = Field(
        default=None, description="What the node is; None: not read (then only `applies_to: any` images fit)")


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    problems: tuple[str, ...] = ()


class NodeUpdater(Protocol):
    """Reads and updates one node's firmware (thread-safe: called for many nodes at once)."""

    def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
        """Read the FirmwareInventory (read-only); raise ProvisionError when the BMC cannot be read."""
        ...

    def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
        """Flash `flash` in order, then reset the host once when `reset`; raise UpdateFailed on failure.
        `guard(what)` comes right before each component's update request and before the reset; the Refused
        it raises is raised unchanged (what was sent before it stays sent, and finished: its task was waited
        out)."""
        ...

    def session(self, target: Target, afresh: bool = False) -> AbstractContextManager[object]:
        """Calls made inside may share one connection to the target's BMC (a node's whole turn). `afresh`: the
        node was taken over from another holder, who may have changed it since anything was observed ahead of
        the turn: the turn's first observe reads the BMC now."""
        ...

    def prepare(self, targets: Sequence[Target], components: Sequence[Component], after_turns: int | None = 0) -> None:
        """These nodes' turn comes after `after_turns` turns now due: connect (and observe `components`)
        ahead of time if that helps (best effort, background; read-only)."""
        ...

    def release(self) -> None:
        """Drop whatever prepare() opened and no turn used."""
        ...


class HealthGate(Protocol):
    """Redfish-side health and the BMC-side conformance subset for one node after its wave."""

    def check(
        self, target: Target, components: Sequence[Component], *, redfish_health: bool, conformance: bool
    ) -> GateResult:
        """redfish_health: System/Chassis/Manager Status; conformance: the BMC-side subset of checks."""
        ...

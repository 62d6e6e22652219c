"""What a BMC's TaskService says about a node's updates, before anything is sent to it (generic Redfish).

A node taken over from another holder (one killed, or one that fenced itself) may have an update running,
or finished and staged for the next host reset, that its FirmwareInventory does not show yet. Its update
tasks say so: a task still running means "wait for it" (busy), a finished one that awaits activation
means "do not flash that component again: reset the host" (staged). A task names what it updates in its
messages (Update registry AwaitToActivate / UpdateSuccessful: the image or version and the device) and,
where the BMC keeps it, in its Payload (the request that started it: SimpleUpdate's ImageURI and Targets,
a push's UpdateParameters). A pure function of the tasks read, tested as a table; used by campaigns and by
the bring-up's firmware stage (a catalog Component or a spec FirmwareComponent: anything `Updatable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from provision.redfish.ops.adopt import image_name
from provision.redfish.resources import Task

APPLY_TIME = "@Redfish.OperationApplyTime"


class Updatable(Protocol):
    """A baseline component as evidence reads it."""

    @property
    def component(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def image(self) -> str: ...


C = TypeVar("C", bound=Updatable)


class Evidence(BaseModel):
    """Update tasks on one BMC, as they bear on the catalog's components."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    busy: bool = Field(default=False, description="an update task (or any task) is still running")
    running: dict[str, str] = Field(default_factory=dict, description="component -> id of its running task")
    staged: dict[str, str] = Field(default_factory=dict,
                                   description="component -> version flashed OnReset, awaiting activation")


def update_evidence(tasks: Sequence[Task], components: Sequence[C], versions: dict[str, str | None],
                    entries: dict[str, list[str]] | None = None) -> Evidence:
    """`versions`: what the inventory reports per component; `entries`: each component's FirmwareInventory
    URIs (what a task's Targets name). A component already at its catalog version is never staged."""
    entries = entries or {}
    running: dict[str, str] = {}
    staged: dict[str, str] = {}
    for task in tasks:
        named = _components(task, components, entries)
        if task.running:
            running.update({c.component: task.id for c in named})
            continue
        if not task.ok:
            continue
        for comp in components:
            if versions.get(comp.component) != comp.version and _awaits(task, comp, named):
                staged[comp.component] = comp.version
    busy = any(t.running for t in tasks)
    return Evidence(busy=busy, running=running, staged=staged)


def _awaits(task: Task, comp: C, named: list[C]) -> bool:
    """The task finished `comp`'s image at its catalog version and it waits for a reset: an AwaitToActivate
    message naming that version, or the Payload's OnReset request for exactly this component's image."""
    for msg in task.messages:
        if str(msg.get("MessageId", "")).rsplit(".", 1)[-1] != "AwaitToActivate":
            continue
        if comp.version.lower() in [str(a).lower() for a in msg.get("MessageArgs") or []]:
            return True
    body = task.payload.body() if task.payload else {}
    return body.get(APPLY_TIME) == "OnReset" and _image_name(body) == image_name(comp.image) and comp in named


def _components(task: Task, components: Sequence[C], entries: dict[str, list[str]]) -> list[C]:
    """The components a task's Payload names: its ImageURI's file name is the component's image, or its
    Targets are the component's inventory entries."""
    body = task.payload.body() if task.payload else {}
    image = _image_name(body)
    targets = {str(t).rstrip("/") for t in body.get("Targets") or [] if isinstance(t, str)}
    out = []
    for comp in components:
        mine = {u.rstrip("/") for u in entries.get(comp.component, [])}
        if (image and image == image_name(comp.image)) or (targets and targets & mine):
            out.append(comp)
    return out


def _image_name(body: dict[str, object]) -> str:
    uri = body.get("ImageURI")
    return image_name(uri) if isinstance(uri, str) and uri else ""

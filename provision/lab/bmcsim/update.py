"""UpdateService: SimpleUpdate (downloads ImageURI from a loopback server), HTTP push and multipart
push; one Task per update; Immediate or OnReset apply; a BMC image reboots the BMC."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import aiohttp

from provision.lab.bmcsim import events
from provision.lab.bmcsim.config import SimConfig
from provision.lab.bmcsim.faults import Faults
from provision.lab.bmcsim.images import ImageHeader, parse_image
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.reply import Reply, accepted, error
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.synth import TASKS
from provision.lab.bmcsim.tasks import Task, Tasks
from provision.lab.bmcsim.tree import ROOT, Json, Resources

INVENTORY = f"{ROOT}/UpdateService/FirmwareInventory"
APPLY_TIMES = ("Immediate", "OnReset")
TERMINAL = ("Completed", "Exception", "Killed", "Cancelled")


@dataclass(slots=True)
class Staged:
    targets: list[str]
    version: str
    component: str
    task_uri: str = ""
    """The task that staged it: deleting the task cancels the staged image (DSP0266: a task is cancelled by a
    DELETE)."""


class Updater:
    """One BMC's firmware update flows."""

    def __init__(self, node: str, res: Resources, tasks: Tasks, sel: Sel, faults: Faults,
                 cfg: SimConfig, reboot_bmc: Callable[[str], None]) -> None:
        self._node = node
        self._res = res
        self._tasks = tasks
        self._sel = sel
        self._faults = faults
        self._cfg = cfg
        self._reboot_bmc = reboot_bmc
        self._staged: list[Staged] = []
        self._jobs: set[asyncio.Task[None]] = set()

    # --- entry points -------------------------------------------------------------------
    def simple_update(self, body: Json) -> Reply:
        uri = body.get("ImageURI")
        if not isinstance(uri, str) or not uri:
            return error(400, "ActionParameterMissing", "UpdateService.SimpleUpdate", "ImageURI")
        url = urlparse(uri if "://" in uri else f"{body.get('TransferProtocol', 'HTTP').lower()}://{uri}")
        if url.scheme not in ("http", "https") or url.hostname not in self._cfg.allow_image_hosts:
            return error(400, "ActionParameterValueNotInList", uri, "ImageURI", "UpdateService.SimpleUpdate")
        apply_time = body.get("@Redfish.OperationApplyTime", "Immediate")
        if apply_time not in self._apply_times("simple"):
            return error(400, "ActionParameterValueNotInList", apply_time, "@Redfish.OperationApplyTime",
                         "UpdateService.SimpleUpdate")
        task = self._tasks.create("SimpleUpdate", f"{ROOT}/UpdateService/Actions/UpdateService.SimpleUpdate", body)
        self._spawn(self._download_then_flash(task, url.geturl(), body.get("Targets"), apply_time))
        return accepted(task.uri, self._tasks.body(task))

    def push(self, image: bytes, params: Json, method: str = "multipart", uri: str = "") -> Reply:
        """HTTP push or multipart push to `uri`: the image bytes are already here."""
        apply_time = params.get("@Redfish.OperationApplyTime", "Immediate")
        if apply_time not in self._apply_times(method):
            return error(400, "ActionParameterValueNotInList", apply_time, "@Redfish.OperationApplyTime",
                         "UpdateService.MultipartHttpPushUri")
        task = self._tasks.create("HttpPushUpdate", uri, params)
        self._flash(task, image, params.get("Targets"), apply_time)
        return accepted(task.uri, self._tasks.body(task))

    def _apply_times(self, method: str) -> tuple[str, ...]:
        """The apply times this tree's UpdateService says it supports for `method` (its
        OperationApplyTimeSupport, as a real BMC enforces it: an as-captured GH200 takes Immediate only on
        its multipart URI); both of APPLY_TIMES where the tree does not say."""
        service = self._res.get(f"{ROOT}/UpdateService") or {}
        if method == "http_push":  # its apply time is HttpPushUriOptions' setting, not a request parameter
            return APPLY_TIMES
        if method == "multipart":
            support = service.get("MultipartHttpPushUri@Redfish.OperationApplyTimeSupport")
        else:
            support = ((service.get("Actions") or {}).get("#UpdateService.SimpleUpdate") or {}).get(
                "@Redfish.OperationApplyTimeSupport")
        values = support.get("SupportedValues") if isinstance(support, dict) else None
        return tuple(v for v in values if v in APPLY_TIMES) if isinstance(values, list) else APPLY_TIMES

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        job = asyncio.ensure_future(coro)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    async def _download_then_flash(self, task: Task, url: str, targets: object, apply_time: str) -> None:
        try:
            timeout = aiohttp.ClientTimeout(total=60)
            async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url) as resp:
                resp.raise_for_status()
                image = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            events.record(self._node, "update.download_failed", url=url, error=exc.__class__.__name__)
            self._tasks.complete(task, False, [message("TransferFailed", url, self._node)], reason="download")
            return
        events.record(self._node, "update.downloaded", url=url, size=len(image))
        self._flash(task, image, targets, apply_time)

    # --- the flash ----------------------------------------------------------------------
    def _flash(self, task: Task, image: bytes, targets: object, apply_time: str) -> None:
        try:
            header = parse_image(image)
        except ValueError as exc:
            failed = message("ApplyFailed", "uploaded image", self._node)
            failed["Resolution"] = str(exc)
            self._tasks.complete(task, False, [failed], reason="bad image")
            return
        found = self.resolve(header, targets)
        if not found:
            failed = message("ApplyFailed", f"{header.component} {header.version}", self._node)
            failed["Resolution"] = f"no FirmwareInventory entry matches {header.component!r} (or the Targets)"
            self._tasks.complete(task, False, [failed], reason="no target")
            return
        self._tasks.run(task, self._cfg.timings.flash,
                        finish=lambda: self._finish(header, found, apply_time, task.uri),
                        midway=self._midway)

    def resolve(self, header: ImageHeader, targets: object) -> list[str]:
        """Inventory entries the image is for: Targets if given, else by component Id, then Name."""
        members = [str(m.get("@odata.id", "")).rstrip("/")
                   for m in (self._res.get(INVENTORY) or {}).get("Members", [])]
        members = [m for m in members if self._res.exists(m)]
        if isinstance(targets, list) and targets:
            return [str(t).rstrip("/") for t in targets if str(t).rstrip("/") in members]
        comp = header.component.casefold()
        by_id = [m for m in members if m.rsplit("/", 1)[1].casefold() == comp]
        if by_id:
            return by_id
        return [m for m in members if str((self._res.get(m) or {}).get("Name", "")).casefold() == comp
                and not m.rsplit("/", 1)[1].startswith(("Previous", "Available"))]

    def _midway(self) -> list[Json] | None:
        if self._faults.get("bmc-reset-mid-update") is None:
            return None
        self._sel.add("BMC reset during firmware update (fault bmc-reset-mid-update)", severity="Critical")
        self._reboot_bmc("fault bmc-reset-mid-update")
        return [message("ApplyFailed", "image", self._node)]

    def _finish(self, header: ImageHeader, targets: list[str], apply_time: str,
                task_uri: str = "") -> tuple[bool, list[Json]]:
        if self._faults.get("update-noop") is not None:
            self._sel.add(f"{header.component} update reported success, version unchanged (fault update-noop)",
                          severity="Warning", version=header.version)
            return True, [message("UpdateSuccessful", header.component, header.version)]
        if apply_time == "OnReset":
            self._staged.append(Staged(targets, header.version, header.component, task_uri))
            self._sel.add(f"{header.component} {header.version} staged; applies at next host reset")
            return True, [message("AwaitToActivate", header.version, header.component)]
        self.apply(Staged(targets, header.version, header.component))
        return True, [message("UpdateSuccessful", header.component, header.version)]

    def apply(self, staged: Staged) -> None:
        for uri in staged.targets:
            self._res.mutable(uri)["Version"] = staged.version
        comp = staged.component.upper()
        if "BIOS" in comp:
            for system in _members(self._res, f"{ROOT}/Systems"):
                self._res.mutable(system)["BiosVersion"] = staged.version
        self._sel.add(f"Firmware {staged.component} updated to {staged.version}", version=staged.version)
        if "BMC" in comp or "IDRAC" in comp or any(self._is_bmc(t) for t in staged.targets):
            for manager in _members(self._res, f"{ROOT}/Managers"):
                self._res.mutable(manager)["FirmwareVersion"] = staged.version
            self._reboot_bmc("BMC firmware activated")

    def _is_bmc(self, uri: str) -> bool:
        name = str((self._res.get(uri) or {}).get("Name", "")).upper()
        return uri.rsplit("/", 1)[1].upper() == "BMC" or "REMOTE ACCESS CONTROLLER" in name

    def delete_task(self, uri: str) -> Reply | None:
        """DELETE of a task (None: `uri` is no task): a finished one is removed, and the image it staged with it
        (it no longer applies at the next host reset); a running one is refused."""
        if not uri.startswith(TASKS + "/") or not self._res.exists(uri):
            return None
        if (self._res.get(uri) or {}).get("TaskState") not in TERMINAL:
            return error(405, "OperationNotAllowed")
        cancelled = [s for s in self._staged if s.task_uri == uri]
        self._staged = [s for s in self._staged if s.task_uri != uri]
        self._res.delete(uri)
        self._res.remove_member(TASKS, uri)
        for item in cancelled:
            self._sel.add(f"{item.component} {item.version}: staged image cancelled")
        events.record(self._node, "task.deleted", task=uri.rsplit("/", 1)[-1], cancelled=len(cancelled))
        return Reply(204)

    def apply_staged(self) -> None:
        """At a host reset."""
        staged, self._staged = self._staged, []
        for item in staged:
            self.apply(item)


def _members(res: Resources, coll: str) -> list[str]:
    return [str(m.get("@odata.id", "")).rstrip("/") for m in (res.get(coll) or {}).get("Members", [])]

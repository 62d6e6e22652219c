"""An in-memory BMC for the bring-up stages: the DMTF public-rackmount1 mockup (a real capture) served
through a connector-shaped object, with update tasks that end as the test says.

The mockup advertises only HttpPushUri; the tests add MultipartHttpPushUri (a standard UpdateService
property) so the push path of the firmware stage is exercised. Versions are set by each test.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision.redfish.connector import Response
from provision.redfish.errors import RedfishError
from provision.redfish.ops.session import Node, node_facts
from provision.redfish.ops.waiting import Clock
from tests.unit.redfish.rf_fakebmc import load_tree

CAPTURE = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "public-rackmount1"
ROOT = "/redfish/v1"
FW = f"{ROOT}/UpdateService/FirmwareInventory"
PUSH = f"{ROOT}/UpdateService/upload"
TASKS = f"{ROOT}/TaskService/Tasks"
_TREE: dict[str, Any] = {}


@dataclass
class _Opts:
    where: str = "node01 (fake BMC)"
    retry: Any = field(default_factory=lambda: type("R", (), {"timeout_s": 5.0})())


@dataclass
class FakeBmc:
    """Serves the capture; a push starts a task that runs once, then ends `task_end` (state, status).

    A task that ends Completed (OK or Warning) flashes its targets to `flash_to[target uri]` at once (Immediate) or at the next
    host reset (OnReset); a task that fails changes nothing."""

    versions: dict[str, str]
    flash_to: dict[str, str] = field(default_factory=dict)
    task_end: tuple[str, str] = ("Completed", "OK")
    tree: dict[str, Any] = field(default_factory=dict)
    pushes: list[dict[str, Any]] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """What the BMC was asked, in order: "GET uri", "PUSH targets", "PATCH uri", "RESET"."""
    patches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    opts: _Opts = field(default_factory=_Opts)
    task_blips: int = 0
    """How many polls of an update task fail to answer first (the BMC resets while its update runs)."""
    _tasks: dict[str, tuple[list[str], str, int, int]] = field(default_factory=dict)
    """uri -> (targets, apply time, polls so far, polls it answers Running before it ends)."""

    def __post_init__(self) -> None:
        if not _TREE:
            _TREE.update(load_tree(CAPTURE))
        self.tree = copy.deepcopy(_TREE)
        self.tree[f"{ROOT}/UpdateService"]["MultipartHttpPushUri"] = PUSH
        for entry, version in self.versions.items():
            self.tree[f"{FW}/{entry}"]["Version"] = version

    # -- what the connector offers ------------------------------------------------------------------
    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        yield  # answers at once: nothing to bound

    @contextmanager
    def waiting(self, seconds: float) -> Iterator[None]:
        yield

    @property
    def root(self) -> dict[str, Any]:
        return dict(self.tree[ROOT])

    def get(self, uri: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        uri = uri.rstrip("/") or "/"
        self.events.append(f"GET {uri}")
        if uri in self._tasks:
            if self.task_blips > 0:
                self.task_blips -= 1
                raise RedfishError(f"{self.opts.where}: GET {uri}: connection refused")
            return self._poll(uri)
        if uri not in self.tree:
            raise RedfishError(f"{self.opts.where}: GET {uri}: 404")
        return copy.deepcopy(self.tree[uri])

    def get_optional(self, uri: str) -> dict[str, Any] | None:
        try:
            return self.get(uri)
        except RedfishError:
            return None

    def members(self, uri: str, levels: int = 1) -> list[dict[str, Any]]:
        coll = self.get_optional(uri) or {}
        return [self.get(str(m["@odata.id"])) for m in coll.get("Members", [])]

    def request(self, method: str, uri: str, **kw: Any) -> Response:
        return Response(200, {}, self.get(uri))

    def patch(self, uri: str, body: dict[str, Any], etag: str | None = None) -> Response:
        """A write to a BIOS Settings (pending) resource, kept there until the host reset."""
        self.events.append(f"PATCH {uri}")
        self.patches.append((uri, body))
        self.tree[uri.rstrip("/")].setdefault("Attributes", {}).update(body.get("Attributes", {}))
        return Response(204, {}, None)

    def post(self, uri: str, body: Any = None, timeout: float | None = None) -> Response:
        raise RedfishError(f"{self.opts.where}: POST {uri}: not offered by the fake")

    def post_multipart(self, uri: str, parts: dict[str, Any], timeout: float | None = None) -> Response:
        params = json.loads(parts["UpdateParameters"][1])
        self.pushes.append({"uri": uri, "file": parts["UpdateFile"][0], **params})
        self.events.append(f"PUSH {','.join(params['Targets'])}")
        task = self.start_task(list(params["Targets"]), params["@Redfish.OperationApplyTime"])
        return Response(202, {"location": task}, {})

    def start_task(self, targets: list[str], when: str, running_polls: int = 1) -> str:
        """An update task, listed in the TaskService with its Payload (as a run that died leaves one)."""
        task = f"{TASKS}/{len(self._tasks) + 1}"
        self._tasks[task] = (targets, when, 0, running_polls)
        coll = self.tree.setdefault(TASKS, {"@odata.id": TASKS, "Members": []})
        coll["Members"].append({"@odata.id": task})
        return task

    # -- the BMC's own behaviour ------------------------------------------------------------------------
    def _poll(self, uri: str) -> dict[str, Any]:
        targets, when, polls, running_polls = self._tasks[uri]
        self._tasks[uri] = (targets, when, polls + 1, running_polls)
        payload = {"TargetUri": PUSH, "JsonBody": json.dumps({"Targets": targets})}
        if polls < running_polls:
            return {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], "TaskState": "Running", "TaskStatus": "OK",
                    "Payload": payload}
        state, status = self.task_end
        if polls == running_polls and state == "Completed" and status in ("OK", "Warning"):
            for target in targets:
                self._flash(target) if when == "Immediate" else self.staged.append(target)
        return {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], "TaskState": state, "TaskStatus": status,
                "Messages": [{"Message": f"update {state}"}], "Payload": payload}

    def _flash(self, target: str) -> None:
        if target in self.flash_to:
            self.tree[target]["Version"] = self.flash_to[target]

    def host_reset(self) -> None:
        """Staged images take, and the BIOS's pending values become current."""
        self.events.append("RESET")
        for target in self.staged:
            self._flash(target)
        self.staged.clear()
        bios = next(u for u in self.tree if u.endswith("/Bios") and u.startswith(f"{ROOT}/Systems/"))
        settings = self.tree[f"{bios}/Settings"]
        self.tree[bios]["Attributes"].update(settings.get("Attributes", {}))


def node_of(bmc: FakeBmc) -> Node:
    return node_facts(bmc)  # type: ignore[arg-type]


def fast_clock() -> Clock:
    """A clock whose sleeps advance time at once (timeouts end after a few polls, no waiting)."""
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += max(s, 1.0)

    return Clock(poll_s=1.0, sleep=sleep, now=lambda: now[0])

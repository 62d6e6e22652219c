"""Tasks that progress over simulated time; faults can stall or fail them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from provision.lab.bmcsim import events
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.faults import Faults
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.synth import TASKS
from provision.lab.bmcsim.tree import Json, Resources

# finish() -> (succeeded, messages)
Finish = Callable[[], tuple[bool, list[Json]]]
Midway = Callable[[], list[Json] | None]
STEPS = (10, 25, 50, 75, 90, 100)


@dataclass(slots=True)
class Task:
    ident: str
    uri: str
    duration: float = 0.0
    finish: Finish | None = None
    midway: Midway | None = None
    step: int = 0
    done: bool = False
    extra: list[Json] = field(default_factory=list)


class Tasks:
    """One BMC's TaskService."""

    __slots__ = ("_clock", "_count", "_faults", "_node", "_res", "_stalled")

    def __init__(self, node: str, res: Resources, clock: SimClock, faults: Faults) -> None:
        self._node = node
        self._res = res
        self._clock = clock
        self._faults = faults
        self._count = 0
        self._stalled: list[Task] = []
        faults.on_change("task-stall", lambda on: None if on else self._resume())

    def create(self, name: str, target_uri: str = "", body: Json | None = None) -> Task:
        """A Running task; `target_uri` and `body`: the request that started it, as the task's Payload (Task
        v1_4: TargetUri, HttpOperation, JsonBody as a string), which real BMCs keep (OpenBMC's bmcweb does)
        and which tells a later reader what the task updates."""
        self._count += 1
        ident = str(self._count)
        uri = f"{TASKS}/{ident}"
        body_json: Json = {
            "@odata.id": uri, "@odata.type": "#Task.v1_4_3.Task", "Id": ident, "Name": name,
            "TaskState": "Running", "TaskStatus": "OK", "PercentComplete": 0,
            "StartTime": self._clock.iso(), "Messages": [message("TaskStarted", ident)],
        }
        if target_uri:
            body_json["Payload"] = {"TargetUri": target_uri, "HttpOperation": "POST",
                                    "JsonBody": json.dumps(body or {}, sort_keys=True)}
        self._res.put(uri, body_json)
        self._res.add_member(TASKS, uri)
        events.record(self._node, "task.start", task=ident, name=name)
        return Task(ident, uri)

    def body(self, task: Task) -> Json:
        return dict(self._res.get(task.uri) or {})

    def run(self, task: Task, duration: float, finish: Finish, midway: Midway | None = None) -> None:
        """Progress `task` over `duration` simulated seconds, then call finish()."""
        task.duration, task.finish, task.midway = duration, finish, midway
        self._schedule(task)

    def _schedule(self, task: Task) -> None:
        prev = STEPS[task.step - 1] if task.step else 0
        delay = task.duration * (STEPS[task.step] - prev) / 100
        self._clock.later(delay, lambda: self._advance(task))

    def _advance(self, task: Task) -> None:
        if task.done:
            return
        pct = STEPS[task.step]
        if pct == 50 and self._check_midway(task):
            return
        if pct == 100:
            ok, msgs = task.finish() if task.finish else (True, [])
            self.complete(task, ok, msgs)
            return
        self._res.mutable(task.uri)["PercentComplete"] = pct
        task.step += 1
        self._schedule(task)

    def _check_midway(self, task: Task) -> bool:
        """Faults and the caller's midway hook act at 50%; True when the task stops here."""
        self._res.mutable(task.uri)["PercentComplete"] = 50
        if self._faults.get("task-stall") is not None:
            events.record(self._node, "task.stalled", task=task.ident)
            self._stalled.append(task)
            return True
        if self._faults.get("task-fail") is not None:
            self.complete(task, False, [message("GeneralError")], reason="fault task-fail")
            return True
        failure = task.midway() if task.midway else None
        if failure is not None:
            self.complete(task, False, failure, reason="midway failure")
            return True
        task.step += 1
        self._schedule(task)
        return True

    def _resume(self) -> None:
        stalled, self._stalled = self._stalled, []
        for task in stalled:
            events.record(self._node, "task.resumed", task=task.ident)
            task.step = STEPS.index(50) + 1
            self._schedule(task)

    def complete(self, task: Task, ok: bool, msgs: list[Json], reason: str = "") -> None:
        task.done = True
        res = self._res.mutable(task.uri)
        res.update(TaskState="Completed" if ok else "Exception", TaskStatus="OK" if ok else "Critical",
                   EndTime=self._clock.iso())
        if ok:
            res["PercentComplete"] = 100
        end = message("TaskCompletedOK", task.ident) if ok else message("TaskAborted", task.ident)
        res["Messages"] = [*res.get("Messages", []), *msgs, end]
        events.record(self._node, "task.done", task=task.ident, ok=ok, reason=reason,
                      messages=[m.get("MessageId") for m in msgs])

"""GenerateCSR answered with a Task: followed to its CSR, and a task that ends without one is said, never waited on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from provision.errors import CheckFailed, ProvisionError
from provision.redfish.errors import RedfishTimeout
from provision.redfish.ops import certificates as certs
from provision.redfish.ops.waiting import Clock

TASK = "/redfish/v1/TaskService/Tasks/7"


@dataclass
class Answer:
    status: int
    json: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


class TaskBmc:
    """POST answers 202 with a Location; each GET of the task answers the next body (the last one repeats)."""

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = bodies
        self.gets = 0
        self.opts = SimpleNamespace(where="n1 BMC (https://bmc)")

    def post(self, uri: str, body: dict[str, Any]) -> Answer:
        return Answer(202, {}, {"location": TASK})

    def request(self, method: str, uri: str, allow_status: tuple[int, ...] = ()) -> Answer:
        assert (method, uri) == ("GET", TASK)
        self.gets += 1
        return Answer(200, self.bodies[min(self.gets, len(self.bodies)) - 1])

    @contextmanager
    def waiting(self, seconds: float) -> Iterator[None]:
        yield


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 0.0
        super().__init__(poll_s=1.0, sleep=self._advance, now=lambda: self.t)

    def _advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.mark.parametrize(("bodies", "error", "words"), [
    ([{"TaskState": "Running"}, {"TaskState": "Running"}, {"CSRString": "-----BEGIN CSR-----"}], None, ""),
    ([{"TaskState": "Running"}, {"TaskState": "Exception"}], ProvisionError, f"the CSR task {TASK} ended Exception"),
    ([{"TaskState": "Killed"}], ProvisionError, "ended Killed"),
    ([{"TaskState": "Completed"}], CheckFailed, "completed without a CSR"),
    ([{"TaskState": "Running"}], RedfishTimeout, "did not complete within 5 s"),
])
def test_a_csr_task_is_followed_to_its_end(bodies: list[dict[str, Any]], error: type[Exception] | None,
                                           words: str) -> None:
    bmc = TaskBmc(bodies)
    clock = FakeClock()
    if error is None:
        assert certs.generate_csr(bmc, "/x/GenerateCSR", {}, 5.0, clock) == "-----BEGIN CSR-----"  # type: ignore[arg-type]
        assert bmc.gets == 3
        return
    with pytest.raises(error, match=words):
        certs.generate_csr(bmc, "/x/GenerateCSR", {}, 5.0, clock)  # type: ignore[arg-type]
    assert clock.t <= 6.0  # bounded by the timeout, never waited on after the task ended

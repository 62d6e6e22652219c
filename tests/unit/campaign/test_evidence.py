"""A BMC's update tasks as evidence for the node's next holder (provision.campaign.evidence), as a table: a running
task is waited for, one finished and awaiting activation is not flashed again (its component is staged), named by
its messages or by its Payload (the request that started it, as the lab simulator and real BMCs keep it)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from provision.campaign.evidence import Evidence, update_evidence
from provision.campaign.node import observe_settled
from provision.campaign.updater import FirmwareState, Target, UpdateFailed
from provision.redfish.resources import Task
from tests.unit.campaign.fakes import catalog

CAT = catalog()  # bmc 2.0 (Immediate, bmc.bin), bios 3.0 (OnReset, bios.bin)
INV = "/redfish/v1/UpdateService/FirmwareInventory"
ENTRIES = {"bmc": [f"{INV}/BMC"], "bios": [f"{INV}/BIOS"]}
OLD: dict[str, str | None] = {"bmc": "1.0", "bios": "2.0"}
SIMPLE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def task(ident: str, state: str, *msgs: tuple[str, list[str]], body: dict[str, Any] | None = None,
         uri: str = SIMPLE) -> Task:
    doc: dict[str, Any] = {"@odata.id": f"/redfish/v1/TaskService/Tasks/{ident}", "Id": ident, "TaskState": state,
                           "TaskStatus": "OK" if state != "Exception" else "Critical",
                           "Messages": [{"MessageId": f"Update.1.0.{m}", "MessageArgs": a} for m, a in msgs]}
    if body is not None:
        doc["Payload"] = {"TargetUri": uri, "HttpOperation": "POST", "JsonBody": json.dumps(body)}
    return Task.parse(doc)


BIOS_ON_RESET = {"ImageURI": "http://10.0.0.1:8080/bios.bin", "@Redfish.OperationApplyTime": "OnReset"}


@pytest.mark.parametrize(("tasks", "versions", "expected"), [
    ([], OLD, Evidence()),
    # running: waited for; named by its Payload's image, or by its Targets
    ([task("1", "Running", body=BIOS_ON_RESET)], OLD, Evidence(busy=True, running={"bios": "1"})),
    ([task("2", "Running", body={"Targets": [f"{INV}/BMC"]}, uri="/redfish/v1/UpdateService/upload")], OLD,
     Evidence(busy=True, running={"bmc": "2"})),
    ([task("3", "Running")], OLD, Evidence(busy=True)),  # no Payload: still busy, whatever it updates
    # finished, awaiting activation: by its message naming the version ...
    ([task("4", "Completed", ("AwaitToActivate", ["3.0", "BIOS"]))], OLD, Evidence(staged={"bios": "3.0"})),
    ([task("5", "Completed", ("AwaitToActivate", ["2.5", "BIOS"]))], OLD, Evidence()),  # another image
    # ... or, where the message names nothing, by its Payload: this component's image, OnReset
    ([task("6", "Completed", ("AwaitToActivate", []), body=BIOS_ON_RESET)], OLD, Evidence(staged={"bios": "3.0"})),
    ([task("7", "Completed", body={**BIOS_ON_RESET, "ImageURI": "http://h/bios-2.5.bin"})], OLD, Evidence()),
    ([task("8", "Completed", body={**BIOS_ON_RESET, "@Redfish.OperationApplyTime": "Immediate"})], OLD, Evidence()),
    ([task("9", "Exception", ("AwaitToActivate", ["3.0", "BIOS"]), body=BIOS_ON_RESET)], OLD, Evidence()),
    # already running the catalog version: nothing staged (the reset happened)
    ([task("10", "Completed", ("AwaitToActivate", ["3.0", "BIOS"]))], {"bmc": "1.0", "bios": "3.0"}, Evidence()),
])
def test_update_tasks_as_evidence(tasks: list[Task], versions: dict[str, str | None], expected: Evidence) -> None:
    assert update_evidence(tasks, CAT.ordered(), versions, ENTRIES) == expected


def test_the_wait_names_each_component_whose_task_still_runs() -> None:
    """observe_settled's message after its timeout: the running tasks the evidence found, by component."""
    busy = FirmwareState(versions=dict(OLD), busy=True,
                         running=update_evidence([task("1", "Running", body=BIOS_ON_RESET)], CAT.ordered(), OLD,
                                                 ENTRIES).running)
    updater = SimpleNamespace(observe=lambda target, comps: busy)
    ctx = SimpleNamespace(catalog=CAT, updater=updater, busy_timeout_s=-1.0, poll_s=0.0)
    with pytest.raises(UpdateFailed, match=r"n1: update task still running: bios \(task 1\) after -1 s"):
        observe_settled(ctx, Target(name="n1"))  # type: ignore[arg-type]

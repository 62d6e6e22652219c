"""The clean's BMC reductions: staged firmware cancelled and accounts the spec does not name removed. Plans as
tables; the stages against the in-process BMC simulator (a staged BIOS image that a DELETE of its task
cancels, so the next host reset leaves the BIOS as it was) and against a BMC that says yes but keeps what it
was told to remove."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.clean import bmc_reduce, records
from provision.clean.bmc_reduce import (
    AccountsSeen,
    ReduceAccountsStage,
    StagedFirmwareStage,
    StagedObserved,
    plan_reduce_accounts,
    plan_staged,
    staged_images,
)
from provision.clean.bmc_stages import DoneStage
from provision.clean.options import CleanOptions
from provision.errors import CheckFailed
from provision.journal import Journal
from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.images import build_image
from provision.redfish.errors import RedfishHttpError
from provision.redfish.ops.accounts import BmcAccount
from provision.redfish.resources import Task
from provision.spec import HostEntry, load_fleet
from provision.spec.bmc_setup import BmcSetup
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.test_bmcsim_bmc import SYS, call, make_bmc, run, until

OPTS = BringupOptions(inventory=Path("."), poll_s=0.0)


@pytest.fixture(scope="module")
def host() -> HostEntry:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]


def _with_setup(host: HostEntry, setup: dict[str, Any] | None) -> HostEntry:
    bmc = None if setup is None else BmcSetup.model_validate(setup)
    return host.model_copy(update={"spec": host.spec.model_copy(update={"bmc": bmc})})


def task(ident: str, state: str, msg: str, args: list[str]) -> Task:
    return Task.parse({"@odata.id": f"/redfish/v1/TaskService/Tasks/{ident}", "Id": ident, "TaskState": state,
                       "TaskStatus": "OK", "Messages": [{"MessageId": f"Update.1.1.{msg}", "MessageArgs": args}]})


@pytest.mark.parametrize(("tasks", "running", "staged"), [
    ([task("1", "Completed", "AwaitToActivate", ["2.2", "BIOS"])], ["2.1", "1.0"], ["/redfish/v1/TaskService/Tasks/1"]),
    ([task("1", "Completed", "AwaitToActivate", ["2.2", "BIOS"])], ["2.2"], []),  # activated since: not staged
    ([task("2", "Exception", "AwaitToActivate", ["2.2", "BIOS"])], [], []),  # failed: nothing staged
    ([task("3", "Completed", "UpdateSuccessful", ["BIOS", "2.2"])], [], []),  # applied at once
    ([task("4", "Running", "AwaitToActivate", ["2.2", "BIOS"])], [], []),  # still at work
    ([task("5", "Completed", "AwaitToActivate", ["bios.bin"]), task("6", "Completed", "AwaitToActivate", [])], ["1"],
     ["/redfish/v1/TaskService/Tasks/5", "/redfish/v1/TaskService/Tasks/6"]),  # named by file, or not at all
])
def test_staged_images(tasks: list[Task], running: list[str], staged: list[str]) -> None:
    assert [s.task_uri for s in staged_images(tasks, running)] == staged


def test_staged_plan(host: HostEntry) -> None:
    seen = StagedObserved(staged=staged_images([task("1", "Completed", "AwaitToActivate", ["2.2", "BIOS"])], []))
    plan = plan_staged(host, seen)
    assert [(a.kind, a.target) for a in plan.actions] == [("staged-cancel", "/redfish/v1/TaskService/Tasks/1")]
    assert "2.2 on BIOS" in plan.actions[0].before
    assert plan_staged(host, StagedObserved(staged=())).actions == ()
    unread = plan_staged(host, StagedObserved(staged=(), tasks_readable=False))
    assert "not checked" in unread.note and "no TaskService" in unread.note
    assert [(a.kind, a.target, a.changes_node) for a in unread.actions] == [("not-checked", "staged firmware", False)]


class NoTasks:
    """A BMC without a TaskService (get_optional answers None for it)."""

    root: dict[str, Any] = {"@odata.id": "/redfish/v1"}

    def get_optional(self, uri: str) -> None:
        return None

    def members(self, uri: str) -> list[dict[str, Any]]:
        raise AssertionError(f"nothing is read past the missing TaskService ({uri})")


def test_no_task_service_is_not_checked_and_the_clean_is_never_complete(
        host: HostEntry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Staged firmware on a BMC without a TaskService: journaled not-checked, and the clean's done stage fails
    naming it (could-not-check is never a pass); a clean with every item checked is done."""
    _on(monkeypatch, NoTasks())
    stage, done = StagedFirmwareStage(OPTS), DoneStage(CleanOptions(bringup=OPTS, by="op@ctl"))
    with Journal(tmp_path / "j.db") as journal:
        checked = journal.start_run(records.CLEAN, host.name, {})
        ctx = StageContext(host=host, journal=journal, run_id=checked)
        assert done.plan(host, done.observe(ctx)).note.startswith("cleaned")  # nothing unchecked yet
        plan = stage.plan(host, stage.observe(ctx))
        stage.apply(ctx, plan)
        assert records.not_checked(journal, host.name) == [f"staged firmware: {bmc_reduce.NO_TASKS}"]
        with pytest.raises(CheckFailed, match="not cleaned: not checked: staged firmware: the BMC has no TaskService"):
            done.plan(host, done.observe(ctx))
    with pytest.raises(CheckFailed, match="staged firmware not checked"):  # no journal to carry it: fails at once
        stage.apply(StageContext(host=host, journal=None, run_id=None), plan)


def _acct(user: str, role: str = "Administrator") -> BmcAccount:
    return BmcAccount(uri=f"/redfish/v1/AccountService/Accounts/{user}", user=user, role=role, enabled=True)


SETUP = {"initial": {"user": "ADMIN", "password": {"env": "X"}, "rotate_to": {"env": "Y"}},
         "accounts": [{"user": "operator", "role": "Operator", "password": {"env": "Z"}}]}


@pytest.mark.parametrize(("setup", "acting", "users", "removed"), [
    (SETUP, "provision", ["ADMIN", "operator", "provision", "tenant", "tenant2"], ["tenant", "tenant2"]),
    (SETUP, "ADMIN", ["ADMIN", "operator"], []),  # only named accounts
    ({"accounts": [], "remove_unnamed": False}, "provision", ["provision", "ADMIN"], ["ADMIN"]),  # names none
    (None, "provision", ["provision", "tenant"], []),  # no bmc: section: kept (listed)
])
def test_accounts_plan(host: HostEntry, setup: dict[str, Any] | None, acting: str, users: list[str],
                       removed: list[str]) -> None:
    h = _with_setup(host, setup)
    seen = AccountsSeen(acting=acting, accounts=tuple(_acct(u) for u in users), named=bmc_reduce.spec_accounts(h))
    plan = plan_reduce_accounts(h, seen)
    assert [a.target for a in plan.actions] == [f"account {u}" for u in removed]
    assert all(a.uri.endswith("/" + a.target.split()[-1]) for a in plan.actions)  # type: ignore[attr-defined]
    if setup is None:
        assert "tenant" in plan.note and "kept" in plan.note


class SimConn:
    """The in-process simulator behind the few Connector calls the stages make."""

    def __init__(self, bmc: Bmc) -> None:
        self.bmc = bmc

    def get(self, uri: str) -> dict[str, Any]:
        reply = call(self.bmc, "GET", uri)
        if reply.status >= 400:
            raise RedfishHttpError(f"GET {uri}: {reply.status}", uri=uri, status=reply.status)
        return json.loads(reply.raw) if reply.raw is not None else dict(reply.body or {})

    def get_optional(self, uri: str) -> dict[str, Any] | None:
        try:
            return self.get(uri)
        except RedfishHttpError:
            return None

    def members(self, uri: str) -> list[dict[str, Any]]:
        coll = self.get_optional(uri) or {}
        return [self.get(m["@odata.id"]) for m in coll.get("Members") or []]

    def delete(self, uri: str) -> None:
        reply = call(self.bmc, "DELETE", uri)
        if reply.status >= 400:
            raise RedfishHttpError(f"DELETE {uri}: {reply.status}", uri=uri, status=reply.status)


def _on(monkeypatch: pytest.MonkeyPatch, conn: Any) -> None:
    @contextmanager
    def fake(ctx: Any, opts: Any) -> Iterator[Any]:
        yield SimpleNamespace(conn=conn)

    monkeypatch.setattr(bmc_reduce, "bmc", fake)


def _bios_fw(bmc: Bmc) -> str:
    return str(json.loads(call(bmc, "GET", SYS).raw or b"{}").get("BiosVersion") or
               (call(bmc, "GET", SYS).body or {}).get("BiosVersion"))


def test_a_staged_image_is_cancelled_and_the_next_reset_leaves_the_bios_as_it_was(
        host: HostEntry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        before = _bios_fw(bmc)
        reply = bmc.updater.push(build_image("BIOS", "9.9"), {"@Redfish.OperationApplyTime": "OnReset"})
        uri = reply.headers["Location"]
        await until(lambda: "AwaitToActivate" in json.dumps(SimConn(bmc).get(uri)))
        _on(monkeypatch, SimConn(bmc))
        stage = StagedFirmwareStage(OPTS)
        ctx = StageContext(host=host, journal=None, run_id=None)
        plan = stage.plan(host, stage.observe(ctx))
        assert [a.target for a in plan.actions] == [uri]
        stage.apply(ctx, plan)
        assert stage.plan(host, stage.observe(ctx)).actions == ()
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await asyncio.sleep(0.3)  # the simulator applies a staged image at once at the reset (speed 600)
        assert _bios_fw(bmc) == before != "9.9"
    run(go)


def test_a_bmc_that_keeps_a_removed_account_fails_the_clean(host: HostEntry, monkeypatch: pytest.MonkeyPatch) -> None:
    users = {"provision": _acct("provision"), "tenant": _acct("tenant"), "operator": _acct("operator", "Operator"),
             "svc": _acct("svc")}
    deleted: list[str] = []
    allow = {users["svc"].uri: "GET, PATCH"}  # the BMC says svc cannot be deleted: kept

    class Conn:
        root: dict[str, Any] = {"@odata.id": "/redfish/v1", "RedfishVersion": "1.15.0"}  # no vendor: DELETE

        def get_optional(self, uri: str) -> dict[str, Any]:
            return {"Accounts": {"@odata.id": "/redfish/v1/AccountService/Accounts"}}

        def members(self, uri: str) -> list[dict[str, Any]]:
            return [{"@odata.id": a.uri, "UserName": a.user, "RoleId": a.role} for a in users.values()]

        def delete(self, uri: str) -> None:
            deleted.append(uri)  # says yes, keeps it

        def request(self, method: str, uri: str) -> Any:
            return SimpleNamespace(header=lambda name: allow.get(uri) if name == "allow" else None)

    _on(monkeypatch, Conn())
    h = _with_setup(host, SETUP).model_copy(update={"bmc": host.bmc.model_copy(update={"username": "provision"})})
    stage = ReduceAccountsStage(OPTS)
    ctx = StageContext(host=h, journal=None, run_id=None)
    plan = stage.plan(h, stage.observe(ctx))
    assert [(a.kind, a.target) for a in plan.actions] == [("remove-account", "account tenant"),
                                                          ("keep-account", "account svc")]
    with pytest.raises(CheckFailed, match="still lists: account tenant"):
        stage.apply(ctx, plan)
    assert deleted == [users["tenant"].uri]
    users.pop("tenant")
    stage.apply(ctx, plan)  # a BMC that removes it: done


def test_the_simulator_refuses_to_delete_a_running_task_and_keeps_its_image(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        reply = bmc.updater.push(build_image("BIOS", "9.8"), {"@Redfish.OperationApplyTime": "OnReset"})
        uri = reply.headers["Location"]
        assert SimConn(bmc).get(uri)["TaskState"] == "Running"
        assert call(bmc, "DELETE", uri).status == 405
        await until(lambda: SimConn(bmc).get(uri)["TaskState"] == "Completed")
        assert call(bmc, "DELETE", "/redfish/v1/TaskService/Tasks/999").status == 404
    run(go)

"""The Redfish side of campaigns, on recorded-style JSON through a fake connector: which
FirmwareInventory members are fetched and matched, versions in vendor formats, busy and staged."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.campaign import ahead
from provision.campaign.evidence import update_evidence
from provision.campaign.redfish_updater import RedfishUpdater, _version, matched_entries, observe_node
from provision.campaign.updater import Target
from provision.redfish.ops.waiting import Clock
from provision.redfish.resources import ComputerSystem, SoftwareInventory, Task
from provision.redfish.vendors import by_name
from provision.spec.fleet import BmcEndpoint
from tests.unit.campaign.fakes import catalog

INV = "/redfish/v1/UpdateService/FirmwareInventory"
MEMBERS = {
    "BMC": ("BMC", "11.01.01"), "BIOS": ("BIOS", "BIOS Date: 08/04/2023 Ver 1.4"), "Golden_BMC": ("Golden_BMC", "1.0"),
    "HGX_FW_GPU_SXM_1": ("Software Inventory", "96.00.61.00.01"),
    "HGX_FW_GPU_SXM_2": ("Software Inventory", "96.00.9F.00.04"),
    "NIC1": ("NIC1 System Slot1 MCX75310AAS-NEAT", "28.37.10.14"), "NIC9": ("NIC9 AOC-STGS-i2T", "3.50"),
}


@dataclass
class FakeConn:
    tasks: list[dict[str, Any]] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    root: dict[str, Any] = field(default_factory=dict)
    power: str = "On"

    expand: bool = False
    depth: int = 0  # deadline() scopes open now (Connector.deadline)

    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def expand_args(self, levels: int) -> dict[str, str] | None:
        return {"$expand": f".($levels={levels})"} if self.expand else None

    def get(self, uri: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        if uri == "/redfish/v1/Systems/1":
            return {"@odata.id": uri, "PowerState": self.power}
        assert uri == INV
        if args:
            return {"Members": [_member(f"{INV}/{m}") for m in MEMBERS]}
        return {"Members": [{"@odata.id": f"{INV}/{m}"} for m in MEMBERS]}

    def get_expanded(self, uri: str, levels: int = 1) -> dict[str, Any]:
        return self.get(uri, args=self.expand_args(levels))

    def get_many(self, uris: list[str]) -> dict[str, dict[str, Any] | None]:
        self.fetched += uris
        return {uri: _member(uri) for uri in uris}

    def members(self, uri: str) -> list[dict[str, Any]]:
        return self.tasks


def _member(uri: str) -> dict[str, Any]:
    ident = uri.rsplit("/", 1)[1]
    name, version = MEMBERS[ident]
    return {"@odata.id": uri, "Id": ident, "Name": name, "Version": version}


@dataclass
class FakeNode:
    conn: FakeConn
    vendor: Any = field(default_factory=lambda: by_name("supermicro"))
    system: ComputerSystem = field(default_factory=lambda: ComputerSystem.parse(
        {"@odata.id": "/redfish/v1/Systems/1", "PowerState": "On"}))
    manager_uri: str | None = "/redfish/v1/Managers/1"


CAT = catalog(components=[
    {"component": "bmc", "version": "11.02.05", "image": "b", "sha256": "0" * 64, "match": {"supermicro": {"id": "^BMC$"}}},
    {"component": "bios", "version": "2.1", "image": "b", "sha256": "0" * 64, "match": {"supermicro": {"id": "^BIOS$"}}},
    {"component": "gpu", "version": "96.00.9F.00.04", "image": "g", "sha256": "0" * 64,
     "match": {"supermicro": {"id": "^HGX_FW_GPU_SXM_[0-9]+$"}}},
    {"component": "ib_nic", "version": "28.39.1002", "image": "n", "sha256": "0" * 64,
     "match": {"supermicro": {"id": "^NIC[0-9]+$", "name": "MCX75310"}}},
])


def test_only_candidate_members_are_fetched_and_matched() -> None:
    conn = FakeConn()
    found = matched_entries(FakeNode(conn), CAT.ordered())  # type: ignore[arg-type]
    assert sorted(u.rsplit("/", 1)[1] for u in conn.fetched) == [
        "BIOS", "BMC", "HGX_FW_GPU_SXM_1", "HGX_FW_GPU_SXM_2", "NIC1", "NIC9"]
    assert {k: [e.id for e in v] for k, v in found.items()} == {
        "bmc": ["BMC"], "bios": ["BIOS"], "gpu": ["HGX_FW_GPU_SXM_1", "HGX_FW_GPU_SXM_2"], "ib_nic": ["NIC1"]}


def test_an_expanded_inventory_is_read_in_one_request_and_matched_alike() -> None:
    conn = FakeConn(expand=True)
    found = matched_entries(FakeNode(conn), CAT.ordered())  # type: ignore[arg-type]
    assert conn.fetched == []  # no member fetched one by one
    assert {k: [e.id for e in v] for k, v in found.items()} == {
        "bmc": ["BMC"], "bios": ["BIOS"], "gpu": ["HGX_FW_GPU_SXM_1", "HGX_FW_GPU_SXM_2"], "ib_nic": ["NIC1"]}


def test_a_component_without_a_rule_uses_the_vendor_plugin() -> None:
    cat = catalog(components=[{"component": "bmc", "version": "11.02.05", "image": "b", "sha256": "0" * 64}])
    found = matched_entries(FakeNode(FakeConn()), cat.ordered())  # type: ignore[arg-type]
    assert [e.id for e in found["bmc"]] == ["BMC"]


def _entries(*versions: str) -> list[SoftwareInventory]:
    return [SoftwareInventory.parse({"@odata.id": f"/x/{i}", "Id": str(i), "Version": v}) for i, v in enumerate(versions)]


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (("96.00.9F.00.04", "96.00.9F.00.04"), "96.00.9F.00.04"),
        (("96.00.9F.00.04", "96.00.61.00.01"), "96.00.61.00.01"),  # one GPU behind: the node is not done
        (("96.0.9F.0.4",), "96.00.9F.00.04"),  # same version, another spelling
        ((), None),
    ],
)
def test_component_version(versions: tuple[str, ...], expected: str | None) -> None:
    gpu = CAT.component("gpu")
    assert _version(FakeNode(FakeConn()), _entries(*versions), gpu) == (expected, "")  # type: ignore[arg-type]


def test_bios_version_is_parsed_from_the_vendor_string() -> None:
    bios = CAT.component("bios")
    assert _version(FakeNode(FakeConn()), _entries("BIOS Date: 08/04/2023 Ver 1.4"), bios) == ("1.4", "")  # type: ignore[arg-type]


@pytest.mark.parametrize(("component", "running"), [
    ("bios", "buildbrain-gcid-38635631"), ("bios", "2023-08-04"), ("gpu", "96.00.161.00.04"), ("gpu", "G96-9F"),
])
def test_a_version_not_comparable_with_the_catalog_is_named_with_it(component: str, running: str) -> None:
    """Read as it runs (never taken for the catalog's), with the line naming both strings."""
    comp = CAT.component(component)
    version, why = _version(FakeNode(FakeConn()), _entries(comp.version, running), comp)  # type: ignore[arg-type]
    assert version == running
    assert why.startswith(f"{component} (1): cannot compare {running!r} with catalog {comp.version!r}")


def _task(state: str, status: str, *msgs: tuple[str, list[str]]) -> dict[str, Any]:
    return {"@odata.id": "/t/1", "TaskState": state, "TaskStatus": status,
            "Messages": [{"MessageId": f"Update.1.0.{m}", "MessageArgs": args} for m, args in msgs]}


@pytest.mark.parametrize(
    ("tasks", "busy", "staged"),
    [
        ([], False, {}),
        ([_task("Running", "OK")], True, {}),
        ([_task("Completed", "OK", ("AwaitToActivate", ["2.1", "BIOS"]))], False, {"bios": "2.1"}),
        ([_task("Exception", "Critical", ("AwaitToActivate", ["2.1", "BIOS"]))], False, {}),
        # Completed with Critical is a failed update whatever its messages say; with Warning it is staged
        ([_task("Completed", "Critical", ("AwaitToActivate", ["2.1", "BIOS"]))], False, {}),
        ([_task("Completed", "Warning", ("AwaitToActivate", ["2.1", "BIOS"]))], False, {"bios": "2.1"}),
        ([_task("Completed", "OK", ("AwaitToActivate", ["1.9", "BIOS"]))], False, {}),  # an older image
        ([_task("Completed", "OK", ("UpdateSuccessful", ["BMC", "11.02.05"]))], False, {}),
    ],
)
def test_busy_and_staged(tasks: list[dict[str, Any]], busy: bool, staged: dict[str, str]) -> None:
    versions: dict[str, str | None] = {"bmc": "11.01.01", "bios": "1.4", "gpu": None, "ib_nic": None}
    evidence = update_evidence([Task.parse(t) for t in tasks], CAT.ordered(), versions)
    assert (evidence.busy, evidence.staged) == (busy, staged)


class EndingConn(FakeConn):
    """The BMC's update task ends (its image active) just as the inventory is read: before that read the task
    runs, after it the task is over; the inventory read itself still shows the old version."""

    ended = False

    def get(self, uri: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        body = super().get(uri, args)
        self.ended = self.ended or uri == INV
        return body

    def members(self, uri: str) -> list[dict[str, Any]]:
        return [_task("Completed", "OK", ("UpdateSuccessful", ["BMC", "11.02.05"]))] if self.ended else \
            [_task("Running", "OK")]


def test_tasks_are_read_before_the_inventory() -> None:
    """Read the other way round, the node would look idle with its old BMC version: flashed again."""
    state = observe_node(FakeNode(EndingConn()), CAT.ordered())  # type: ignore[arg-type]
    assert state.busy and state.versions["bmc"] == "11.01.01"  # busy: observed again once the task is over


@pytest.mark.parametrize(("power", "busy"), [("PoweringOn", True), ("PoweringOff", True), ("On", False), ("Off", False)])
def test_a_host_mid_reset_is_busy(power: str, busy: bool) -> None:
    assert observe_node(FakeNode(FakeConn(power=power)), CAT.ordered()).busy is busy  # type: ignore[arg-type]


# -- connections opened ahead of a wave ------------------------------------------------------------
@dataclass
class ClosingConn(FakeConn):
    closed: int = 0
    opts: Any = field(default_factory=lambda: SimpleNamespace(where="the fake BMC", name="fake"))
    gets: int = 0

    def get(self, uri: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        self.gets += 1
        assert self.depth, f"GET {uri} outside the command's deadline"
        if uri == "/redfish/v1/UpdateService":
            return {"@odata.id": uri, "Id": "UpdateService"}
        return super().get(uri, args)

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeNode]:
    """RedfishUpdater._open without a BMC: every call logs in to a fresh fake (kept here by node)."""
    import provision.campaign.redfish_updater as ru

    made: dict[str, FakeNode] = {}

    def fake_open(self: ru.RedfishUpdater, target: Target, retry: object = None) -> FakeNode:
        made[target.name] = FakeNode(ClosingConn())
        return made[target.name]

    monkeypatch.setattr(ru.RedfishUpdater, "_open", fake_open)
    monkeypatch.setattr(ahead, "WAIT_S", 0.0)
    return made


def _updater() -> RedfishUpdater:
    return RedfishUpdater(Path("campaign.yml"), poll_s=0.01)


def _targets(*names: str) -> list[Target]:
    bmc = BmcEndpoint(address="https://127.0.0.1:1", username="u", password="p")  # never contacted
    return [Target(name=n, bmc=bmc) for n in names]


def test_a_prepared_connection_serves_the_turn_and_is_closed_after_it(opened: dict[str, FakeNode]) -> None:
    up = _updater()
    a, b = _targets("a", "b")
    up.prepare([a, b], COMPS)
    _until(lambda: set(_ready(up)) == {"a", "b"})
    first = opened["a"]
    with up.session(a):
        assert opened["a"] is first  # the turn did not log in again
        with up.node(a) as node:
            assert node is first
    assert first.conn.closed == 1
    up.release()
    assert opened["b"].conn.closed == 1  # prepared, never used: logged out


def test_preparing_waits_for_the_starting_turns_and_skips_nodes_already_taken(
        opened: dict[str, FakeNode], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead, "WAIT_S", 30.0)
    up = _updater()
    a, b = _targets("a", "b")
    up.prepare([a, b], COMPS)
    with up.session(a):  # a turn starts (its update not sent yet): preparing holds back
        turn = opened["a"]
        time.sleep(0.3)  # the preparer's chance to (wrongly) go ahead
        assert "b" not in opened and not _ready(up)
    _until(lambda: "b" in _ready(up))
    assert opened["a"] is turn and turn.conn.closed == 1  # a was taken by its turn: not opened again
    assert list(_ready(up)) == ["b"]
    up.release()
    assert opened["b"].conn.closed == 1 and not _ready(up)


def test_the_gate_reuses_the_turns_fresh_observation(opened: dict[str, FakeNode],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.campaign.redfish_updater as ru

    up = _updater()
    (a,) = _targets("a")
    comps = CAT.ordered()[:2]
    with up.session(a):
        assert up.recent(a) is None
        seen = up.observe(a, comps)
        recent = up.recent(a)
        assert recent is not None and recent.state == seen
        assert recent.system == {"@odata.id": "/redfish/v1/Systems/1", "PowerState": "On"}
        monkeypatch.setattr(ru, "FRESH_S", -1.0)
        assert up.recent(a) is None  # too old: the gate reads again
    assert up.recent(a) is None  # outside a session nothing is reused


def test_the_next_wave_is_observed_while_the_turns_at_work_wait_on_their_hosts(opened: dict[str, FakeNode]) -> None:
    up = _updater()
    a, b = _targets("a", "b")
    with up.session(a):  # the wave at work
        up.prepare([b], COMPS)
        up._started(a)  # a sent its update: b is logged in to, not yet observed
        _until(lambda: "b" in _ready(up))
        time.sleep(0.2)
        assert _ready(up)["b"].observed is None
        up._sessions["a"].resetting = True  # a waits on its host's reset: b is observed now
        _until(lambda: _ready(up)["b"].observed is not None)
    conn = opened["b"].conn
    reads = conn.gets
    with up.session(b):
        first = up.observe(b, COMPS)
        assert conn.gets == reads  # the turn acted on the look-ahead observation: no read at its start
        assert up.observe(b, COMPS) == first and conn.gets > reads  # every later observe reads
    up.release()


def test_no_look_ahead_while_turns_of_the_wave_at_work_are_still_queued(opened: dict[str, FakeNode]) -> None:
    up = _updater()
    a, c, b = _targets("a", "c", "b")
    up.prepare([b], COMPS, after_turns=2)  # the wave at work is a and c (concurrency 1: c waits for a)
    with up.session(a):
        up._started(a)
        _until(lambda: "b" in _ready(up))
        up._sessions["a"].resetting = True
        time.sleep(0.3)
        assert _ready(up)["b"].observed is None  # c is still to come: b's turn is a whole turn away
    with up.session(c):
        up._started(c)
        up._sessions["c"].resetting = True
        _until(lambda: _ready(up)["b"].observed is not None)
    up.release()


def test_a_stale_look_ahead_is_not_acted_on(opened: dict[str, FakeNode], monkeypatch: pytest.MonkeyPatch) -> None:
    up = _updater()
    a, b = _targets("a", "b")
    with up.session(a):
        up.prepare([b], COMPS)
        up._started(a)
        up._sessions["a"].resetting = True
        _until(lambda: "b" in _ready(up) and _ready(up)["b"].observed is not None)
    monkeypatch.setattr(ahead, "LOOKAHEAD_S", -1.0)
    conn = opened["b"].conn
    reads = conn.gets
    with up.session(b):
        up.observe(b, COMPS)
        assert conn.gets > reads
    up.release()


def test_a_node_taken_over_is_observed_afresh_not_from_the_look_ahead(opened: dict[str, FakeNode]) -> None:
    """Observed ahead before another controller took it, flashed it and died: what was seen ahead is stale."""
    up = _updater()
    a, b = _targets("a", "b")
    with up.session(a):
        up.prepare([b], COMPS)
        up._started(a)
        up._sessions["a"].resetting = True
        _until(lambda: "b" in _ready(up) and _ready(up)["b"].observed is not None)
    conn = opened["b"].conn
    reads = conn.gets
    with up.session(b, afresh=True):
        up.observe(b, COMPS)
        assert conn.gets > reads  # read now: the inventory and the update tasks as they are
    up.release()


COMPS = CAT.ordered()[:2]


def _ready(up: RedfishUpdater) -> dict[str, Any]:
    return up._ahead._ledger.ready


def _until(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


# -- SimpleUpdate-only BMCs fetch the image from the campaign's image server ----------------------
@dataclass
class PostRecorder(FakeConn):
    """A BMC connection that records POSTs and answers each with a Task."""

    opts: Any = field(default_factory=lambda: SimpleNamespace(where="the fake BMC", name="fake"))
    posted: list[tuple[str, Any]] = field(default_factory=list)

    def post(self, uri: str, body: Any) -> Any:
        from provision.redfish.connector import Response

        self.posted.append((uri, body))
        return Response(202, {"location": "/redfish/v1/TaskService/Tasks/1"}, {})


def test_a_bmc_without_a_push_uri_gets_the_image_from_the_campaign_image_server(tmp_path: Path) -> None:
    import hashlib
    import urllib.request

    from provision.cli.campaign import _images
    from provision.redfish.ops import firmware as fw
    from provision.redfish.resources import UpdateService

    image = tmp_path / "bmc.bin"
    image.write_bytes(b"lab image")
    cat = catalog(components=[{"component": "bmc", "version": "11.02.05", "image": "bmc.bin",
                               "sha256": hashlib.sha256(b"lab image").hexdigest()}])
    with _images(cat, "127.0.0.1", None) as images:
        assert images is not None
        up = RedfishUpdater(tmp_path / "c.yml", images=images)
        conn = PostRecorder()
        node = FakeNode(conn)
        service = UpdateService.parse({"@odata.id": "/redfish/v1/UpdateService", "Actions": {
            "#UpdateService.SimpleUpdate": {"target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}})
        found = matched_entries(node, cat.ordered())  # type: ignore[arg-type]
        step = up._step(node, service, cat.ordered()[0], found["bmc"])  # type: ignore[arg-type]
        assert step.method == "simple"
        fw.send(node, step, fw.FirmwareState(entries=found["bmc"], service=service, tasks=frozenset()), images)  # type: ignore[arg-type]
        (uri, body), = conn.posted
        assert uri.endswith("UpdateService.SimpleUpdate") and body["TransferProtocol"] == "HTTP"
        with urllib.request.urlopen(body["ImageURI"], timeout=5) as resp:  # what the BMC downloads
            assert resp.read() == b"lab image"
    url_only = catalog(components=[{"component": "bmc", "version": "1", "image": "https://images.invalid/b.bin",
                                    "sha256": "0" * 64}])
    with _images(url_only, "127.0.0.1", None) as none:
        assert none is None  # nothing local to serve: no server started


def test_a_url_image_is_fetched_by_the_bmc_itself_even_where_push_is_offered(tmp_path: Path) -> None:
    from provision.redfish.ops import firmware as fw
    from provision.redfish.resources import UpdateService

    url = "https://images.invalid/fw/bmc_11.02.05.bin"
    cat = catalog(components=[{"component": "bmc", "version": "11.02.05", "image": url, "sha256": "0" * 64}])
    up = RedfishUpdater(tmp_path / "c.yml")
    conn = PostRecorder()
    node = FakeNode(conn)
    service = UpdateService.parse({"@odata.id": "/redfish/v1/UpdateService",
                                   "MultipartHttpPushUri": "/redfish/v1/UpdateService/upload", "Actions": {
        "#UpdateService.SimpleUpdate": {"target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}})
    found = matched_entries(node, cat.ordered())  # type: ignore[arg-type]
    step = up._step(node, service, cat.ordered()[0], found["bmc"])  # type: ignore[arg-type]
    assert (step.method, step.image_url, step.image.name) == ("simple", url, "bmc_11.02.05.bin")
    fw.send(node, step, fw.FirmwareState(entries=found["bmc"], service=service, tasks=frozenset()), None)  # type: ignore[arg-type]
    (uri, body), = conn.posted
    assert uri.endswith("UpdateService.SimpleUpdate")
    assert (body["ImageURI"], body["TransferProtocol"]) == (url, "HTTPS")


def test_a_learned_wait_first_polls_after_the_shortest_time_seen() -> None:
    t = [0.0]
    slept: list[float] = []
    up = _updater()
    up.clock = Clock(poll_s=0.5, sleep=lambda s: (slept.append(s), t.__setitem__(0, t[0] + s)), now=lambda: t[0])

    def reboot(took: float) -> Callable[[], None]:
        return lambda: t.__setitem__(0, t[0] + took)  # polls until the BMC answers, `took` after the wait began

    up._learned("bmc BMC back", reboot(3.4))
    assert slept == [0.0]  # nothing learned yet: polls at once
    up._learned("bmc BMC back", lambda: None)  # this time back at the first poll
    assert slept == [0.0, 3.4]
    up._learned("bios BMC back", lambda: None)
    assert slept[-1] == 0.0  # per kind


# -- the per-command deadline (provision_bmc_deadline_s) ---------------------------------------------
@pytest.mark.parametrize("in_session", [False, True])
def test_the_updaters_reads_run_within_the_bmcs_deadline(in_session: bool) -> None:
    """A BMC stalling the FirmwareInventory read fails observe (and the gate) at the inventory's deadline with
    one line naming the node and the URI; without a deadline the read would wait the stall out."""
    import contextlib

    from provision.campaign.redfish_updater import RedfishHealth
    from provision.errors import ProvisionError
    from tests.unit.redfish.rf_fakebmc import FakeBmc, Served
    from tests.unit.tls_bmc import TREE

    bmc = FakeBmc(tree=dict(TREE))
    with Served(bmc) as srv:
        endpoint = BmcEndpoint(address=srv.address, username="admin", password="s3cret-Pa55", insecure_http=True,
                               deadline_s=0.5)
        target = Target(name="n1", bmc=endpoint)
        up = RedfishUpdater(Path("campaign.yml"), poll_s=0.01)
        with up.session(target) if in_session else contextlib.nullcontext():
            bmc.delay[INV] = 5.0
            try:
                with pytest.raises(ProvisionError, match=rf"n1 BMC .*{INV}.*deadline"):
                    up.observe(target, COMPS)
                with pytest.raises(ProvisionError, match=rf"n1 BMC .*{INV}.*deadline"):
                    RedfishHealth(up).check(target, COMPS, redfish_health=True, conformance=True)
            finally:
                bmc.released.set()  # let the stalled handler threads go


# -- the apply time a catalog leaves unset -----------------------------------------------------------
@pytest.mark.parametrize(("apply_time", "sent"), [(None, "Immediate"), ("Immediate", "Immediate"), ("OnReset", None)])
def test_a_campaign_step_takes_an_apply_time_the_gh200_offers(tmp_path: Path, apply_time: str | None,
                                                              sent: str | None) -> None:
    """The GH200's multipart push offers Immediate only: an unset apply time becomes Immediate, an explicit
    OnReset is refused in one line before anything is sent."""
    import json

    from provision.campaign.updater import UpdateFailed
    from provision.errors import InputError
    from provision.redfish.resources import UpdateService
    from tests.conftest import ROOT

    gh200 = ROOT / "tests" / "fixtures" / "redfish" / "full" / "nvidia_gh200" / "redfish" / "v1" / "UpdateService"
    service = UpdateService.parse(json.loads((gh200 / "index.json").read_text()))
    (tmp_path / "gpu.bin").write_bytes(b"x")
    comp = catalog(components=[{"component": "gpu", "version": "2.0", "image": "gpu.bin", "sha256": "0" * 64,
                                **({"apply_time": apply_time} if apply_time else {})}]).ordered()[0]
    assert comp.apply_time == apply_time
    conn = ClosingConn(opts=SimpleNamespace(where="n1 BMC (https://bmc)", name="n1"))
    node = FakeNode(conn, vendor=by_name("nvidia_hgx"))
    up = RedfishUpdater(tmp_path / "campaign.yml")
    entries = _entries("1.0")
    if sent is None:
        with pytest.raises((InputError, UpdateFailed), match=r"n1 BMC .*apply time 'OnReset' is not offered"):
            up._step(node, service, comp, entries)  # type: ignore[arg-type]
        return
    step = up._step(node, service, comp, entries)  # type: ignore[arg-type]
    assert (step.method, step.apply_time) == ("multipart", sent)


RUNNING_TASK = {"@odata.id": "/redfish/v1/TaskService/Tasks/9", "Id": "9", "TaskState": "Running", "TaskStatus": "OK"}
AT = {"BMC": ("BMC", "11.02.05"), "BIOS": ("BIOS", "BIOS Date: 01/02/2024 Ver 2.1")}


@pytest.mark.parametrize(("power", "tasks", "members", "problems"), [
    ("On", [], AT, ()),
    ("On", [RUNNING_TASK], AT, ("an update task is still running",)),
    ("Off", [], AT, ("host power is Off, expected On",)),
    (None, [], AT, ("host power is None, expected On",)),  # not read: not a pass
    ("PoweringOn", [], AT, ("host power is PoweringOn, expected On", "an update task is still running")),
    ("On", [], {"BIOS": AT["BIOS"]}, ("bmc is 11.01.01, expected 11.02.05",)),  # the inventory's old BMC
    ("On", [], {"BMC": AT["BMC"], "BIOS": None}, ("bios is None, expected 2.1",)),  # BIOS not listed: not read
])
def test_the_conformance_gate_names_every_problem(monkeypatch: pytest.MonkeyPatch, power: str | None,
                                                  tasks: list[dict[str, Any]],
                                                  members: dict[str, tuple[str, str] | None],
                                                  problems: tuple[str, ...]) -> None:
    """The campaign's BMC-side conformance subset (RedfishHealth, conformance: true): host power On (a state
    not read is not On), no update task running (a host mid power transition counts as busy), every component
    at its catalog version (a version not read is not the version)."""
    import provision.campaign.redfish_updater as ru

    for ident, member in members.items():
        if member is None:
            monkeypatch.delitem(MEMBERS, ident)
        else:
            monkeypatch.setitem(MEMBERS, ident, member)
    monkeypatch.setattr(ru.RedfishUpdater, "_open",
                        lambda self, target, retry=None: FakeNode(ClosingConn(tasks=tasks, power=power)))  # type: ignore[arg-type]
    (a,) = _targets("a")
    result = ru.RedfishHealth(_updater()).check(a, COMPS, redfish_health=False, conformance=True)
    assert (result.ok, result.problems) == (not problems, problems)


class StatusConn:
    """Manager and Chassis bodies by URI (the System's body comes with the observation)."""

    def __init__(self, bodies: dict[str, dict[str, Any]]) -> None:
        self.bodies = bodies

    def get(self, uri: str) -> dict[str, Any]:
        return self.bodies[uri]


@pytest.mark.parametrize(("system", "manager", "chassis", "problems"), [
    ({"Health": "OK"}, {"Health": "OK"}, {"Health": "OK", "HealthRollup": "OK"}, []),
    ({"Health": "Warning"}, {"Health": "OK"}, {"Health": "OK"}, ["/redfish/v1/Systems/1 Status.Health is Warning"]),
    ({"Health": "OK"}, {"Health": "Critical"}, {"Health": "OK"}, ["/redfish/v1/Managers/1 Status.Health is Critical"]),
    # the rollup (what the chassis holds) is read before the resource's own health
    ({"Health": "OK"}, {"Health": "OK"}, {"Health": "OK", "HealthRollup": "Critical"},
     ["/redfish/v1/Chassis/1 Status.Health is Critical"]),
    ({"Health": "OK", "HealthRollup": "Warning"}, {"Health": "OK"}, {"Health": "OK"},
     ["/redfish/v1/Systems/1 Status.Health is Warning"]),
    # a resource that reports no health gives no evidence: never read as healthy
    ({}, {"Health": "OK"}, {"Health": "OK"}, ["/redfish/v1/Systems/1 reports no Status.Health: health not checked"]),
    ({"Health": "OK"}, {"State": "Enabled"}, {"Health": "OK"},
     ["/redfish/v1/Managers/1 reports no Status.Health: health not checked"]),
    ({"Health": "OK"}, {"Health": "OK"}, {"Health": None},
     ["/redfish/v1/Chassis/1 reports no Status.Health: health not checked"]),
])
def test_the_redfish_health_gate_reads_system_manager_and_chassis(system: dict[str, str], manager: dict[str, str],
                                                                  chassis: dict[str, str], problems: list[str]) -> None:
    from provision.campaign.redfish_updater import _health_problems

    conn = StatusConn({"/redfish/v1/Managers/1": {"Status": manager}, "/redfish/v1/Chassis/1": {"Status": chassis}})
    node = FakeNode(conn)  # type: ignore[arg-type]
    body = {"@odata.id": "/redfish/v1/Systems/1", "Status": system}
    assert _health_problems(node, body, ["/redfish/v1/Chassis/1"]) == problems  # type: ignore[arg-type]


def test_a_campaign_step_names_the_targets_the_bmc_offers(tmp_path: Path) -> None:
    """Where SimpleUpdate's Targets are offered, the step names the matched entries offered, even for a plugin
    that otherwise leaves the choice to the image (HPE); where none is offered, the plugin's choice stands."""
    from provision.redfish.resources import UpdateService

    up = RedfishUpdater(tmp_path / "c.yml")
    node = FakeNode(PostRecorder(), vendor=by_name("hpe"))
    service = UpdateService.parse({"@odata.id": "/redfish/v1/UpdateService", "Actions": {
        "#UpdateService.SimpleUpdate": {"target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}})
    found = matched_entries(FakeNode(PostRecorder()), CAT.ordered())  # type: ignore[arg-type]
    bios = CAT.component("bios")
    offered = (f"{INV}/BMC", f"{INV}/BIOS")
    assert up._step(node, service, bios, found["bios"], offered).targets == [f"{INV}/BIOS"]  # type: ignore[arg-type]
    assert up._step(node, service, bios, found["bios"]).targets == []  # type: ignore[arg-type]
    assert up._step(node, service, bios, found["bios"], (f"{INV}/BMC-Backup",)).targets == []  # type: ignore[arg-type]


def test_a_next_wave_planned_while_the_wave_at_work_runs_is_prepared_without_a_turn_to_come(
        opened: dict[str, FakeNode], monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary's turns all began before the later waves were planned (campaign start reads them as it runs):
    no turn of it is still to come, so preparing waits for none (it would wait WAIT_S, and the next wave would
    start with nothing prepared)."""
    monkeypatch.setattr(ahead, "WAIT_S", 30.0)
    up = _updater()
    a, b = _targets("a", "b")
    with up.session(a):
        up._started(a)
        up.prepare([b], COMPS, after_turns=None)
        _until(lambda: "b" in _ready(up))
        up._sessions["a"].resetting = True
        _until(lambda: _ready(up)["b"].observed is not None)
    up.release()

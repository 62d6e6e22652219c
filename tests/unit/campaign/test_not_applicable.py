"""A campaign over a mixed fleet: images bound to a platform flash only the nodes of that platform; the others
are listed "not applicable" and never touched (no session turn, no update, no reset)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from provision.campaign.engine import Engine
from provision.campaign.gates import GateRunner
from provision.campaign.node import applicable, not_applicable, pending
from provision.campaign.plan import build_plan, observe_all
from provision.campaign.updater import FirmwareState
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore
from provision.spec.platforms import Board, PlatformIdentity
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, catalog, targets

SMC = {"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"}
BOUND = [
    {"component": "bmc", "version": "2.0", "image": "bmc.bin", "sha256": "0" * 64, "order": 10,
     "needs_host_reset": False, "apply_time": "Immediate",
     "applies_to": {"platforms": [SMC], "entries": [{"id": "BMC"}]}},
    {"component": "bios", "version": "3.0", "image": "bios.bin", "sha256": "0" * 64, "order": 20,
     "applies_to": {"platforms": [SMC], "entries": [{"id": "BIOS"}]}},
]
OLD = {"bmc": "1.0", "bios": "2.0"}


def ident(manufacturer: str, model: str) -> PlatformIdentity:
    return PlatformIdentity(system=Board(manufacturer=manufacturer, model=model))


# the whole captures' platforms (tests/fixtures/redfish/full): two Supermicro, one HPE, one Lenovo
FLEET = {"smc1": ident("Supermicro", "SYS-821GE-TNHR"), "hpe1": ident("HPE", "ProLiant DL385 Gen10 Plus v2"),
         "lnv1": ident("Lenovo", "ThinkSystem SR670 V2"), "smc2": ident("Supermicro", "SYS-821GE-TNHR")}


@pytest.fixture
def bmcs() -> FakeBmcs:
    fake = FakeBmcs(list(FLEET), OLD)
    fake.identities = dict(FLEET)
    return fake


def test_plan_lists_other_platforms_not_applicable_and_waves_only_the_fitting(bmcs: FakeBmcs) -> None:
    cat = catalog({"waves": {"canary": 1}}, BOUND)
    plan = build_plan(cat, observe_all(list(targets(list(FLEET)).values()), cat, bmcs))
    assert plan.not_applicable == ["hpe1", "lnv1"]
    assert sorted(n for w in plan.waves for n in w) == ["smc1", "smc2"]
    assert plan.at_baseline == []
    by_node = {p.node: p for p in plan.nodes}
    assert by_node["hpe1"].updates == [] and by_node["hpe1"].not_applicable == (
        "not applicable: the node is HPE ProLiant DL385 Gen10 Plus v2; the campaign's images are for Supermicro "
        "SYS-821GE-TNHR")
    assert [u.component for u in by_node["smc1"].updates] == ["bmc", "bios"]


def test_a_mixed_campaign_flashes_only_the_supermicro_nodes(bmcs: FakeBmcs, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1}}, BOUND)
    plan = build_plan(cat, observe_all(list(targets(list(FLEET)).values()), cat, bmcs))
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    with Journal(tmp_path / "j.db") as journal:
        store = CampaignStore(journal)
        engine = Engine(cat, store, targets(list(FLEET)), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
        out = engine.start(source, plan.waves)
        assert out.ok and (out.done, out.failed) == (2, 0)
        assert {n.node for n in store.nodes("test")} == {"smc1", "smc2"}
    assert set(bmcs.flashes) == {("smc1", "bmc"), ("smc1", "bios"), ("smc2", "bmc"), ("smc2", "bios")}
    assert dict(bmcs.resets) == {"smc1": 1, "smc2": 1}
    assert {n for n, _ in bmcs.sessions} == {"smc1", "smc2"}  # the others: no turn at all


def test_a_turn_on_a_node_that_turned_out_another_platform_touches_nothing(bmcs: FakeBmcs, tmp_path: Path) -> None:
    """Waves made when the node looked different (its board swapped since): its turn observes, finds no image
    fits, and ends there: no drain, no update, no reset; the journal says why."""
    cat = catalog({"waves": {"canary": 0, "batch_size": 4}}, BOUND)
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    with Journal(tmp_path / "j.db") as journal:
        store = CampaignStore(journal)
        engine = Engine(cat, store, targets(list(FLEET)), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
        out = engine.start(source, [list(FLEET)])
        assert out.failed == 0
        assert "not applicable: the node is Lenovo ThinkSystem SR670 V2" in store.node("test", "lnv1").error
        assert store.node("test", "lnv1").flashed == []
    assert {n for n, _ in bmcs.flashes} == {"smc1", "smc2"} and set(bmcs.resets) == {"smc1", "smc2"}


@pytest.mark.parametrize(("identity", "fits"), [
    (ident("Supermicro", "SYS-821GE-TNHR"), ["bmc", "bios", "any"]),
    (ident("HPE", "ProLiant DL385 Gen10 Plus v2"), ["any"]),
    (None, ["any"]),  # not read: only what is for any platform
])
def test_applicable_table(identity: PlatformIdentity | None, fits: list[str]) -> None:
    comps = [*BOUND, {"component": "any", "version": "1", "image": "a.bin", "sha256": "0" * 64,
                      "applies_to": "any"}]
    cat = catalog(None, comps)
    state = FirmwareState(versions={"bmc": "1.0", "bios": "2.0", "any": "0"}, identity=identity)
    assert [c.component for c in applicable(cat.ordered(), state)] == fits
    assert [c.component for c in pending(cat.ordered(), state)] == fits
    assert not_applicable(cat.ordered(), state) == ""  # the `any` image fits every node


def test_the_redfish_side_reads_and_gates_only_what_is_for_the_node() -> None:
    """Over the loopback BMC serving the whole Supermicro capture: the image for another platform is neither
    read nor versioned, and the gate does not hold it against the node."""
    from provision.campaign.redfish_updater import RedfishHealth, observe_node
    from provision.campaign.updater import Target
    from provision.redfish.connector import Connector, ConnectorOptions
    from provision.redfish.ops.session import node_facts
    from provision.redfish.retry import RetryPolicy
    from tests.unit.redfish.full_captures import full_tree
    from tests.unit.redfish.rf_fakebmc import FakeBmc, Served

    hpe = {"component": "ilo", "version": "2.78", "image": "ilo.bin", "sha256": "0" * 64,
           "applies_to": {"platforms": [{"manufacturer": "HPE", "model": "ProLiant*"}], "entries": [{"id": "1"}]}}
    bios = {**BOUND[1], "version": "1.4"}
    comps = catalog(None, [bios, hpe]).ordered()
    bmc = FakeBmc(tree=full_tree("supermicro"))
    with Served(bmc) as srv:
        opts = ConnectorOptions(address=srv.address, username="admin", password="s3cret-Pa55", name="n1",
                                insecure_http=True, retry=RetryPolicy(attempts=2, base_delay_s=0.0, timeout_s=5))
        conn = Connector(opts, sleep=lambda s: None)
        conn.open()
        node = node_facts(conn)
        state = observe_node(node, comps)
        fetched = {s.path for s in bmc.seen}

        class OneNode:  # the updater side the gate uses: this node's session, no recent observation
            @contextmanager
            def node(self, target: Target) -> Iterator[object]:
                yield node

            def recent(self, target: Target) -> None:
                return None

        gate = RedfishHealth(OneNode()).check(Target(name="n1"), comps, redfish_health=False,  # type: ignore[arg-type]
                                              conformance=True)
        conn.close()
    assert state.identity is not None and state.identity.name == "Supermicro SYS-821GE-TNHR"
    assert state.versions == {"bios": "1.4"}
    assert "/redfish/v1/UpdateService/FirmwareInventory/1" not in fetched
    assert [c.component for c in applicable(comps, state)] == ["bios"]
    assert pending(comps, state) == []
    assert gate.ok, gate.problems  # the HPE image, not for this node, is not "missing"


def test_the_board_is_read_again_on_each_turn_and_an_unfit_image_is_never_sent(tmp_path: Path) -> None:
    """A turn observed the Supermicro board; the board behind that BMC address is then swapped for an HPE one.
    The next turn reads the identity afresh (nothing kept across turns), and an update asked for anyway is
    refused before any request that changes the node: no POST, no PATCH."""
    from provision.campaign.redfish_updater import RedfishUpdater
    from provision.campaign.updater import Target, UpdateFailed
    from provision.spec.fleet import BmcEndpoint
    from tests.unit.redfish.full_captures import full_tree
    from tests.unit.redfish.rf_fakebmc import FakeBmc, Served

    comps = catalog(None, [{**BOUND[1], "version": "9.9"}]).ordered()
    bmc = FakeBmc(tree=full_tree("supermicro"))
    with Served(bmc) as srv:
        endpoint = BmcEndpoint(address=srv.address, username="admin", password="s3cret-Pa55", insecure_http=True)
        target = Target(name="n1", bmc=endpoint)
        up = RedfishUpdater(tmp_path / "c.yml", poll_s=0.01)
        with up.session(target):
            first = up.observe(target, comps)
        assert first.identity is not None and first.identity.system.manufacturer == "Supermicro"
        assert [c.component for c in applicable(comps, first)] == ["bios"]
        bmc.tree = full_tree("hpe")  # the same address, another board
        with up.session(target):
            again = up.observe(target, comps)
            assert again.identity is not None and again.identity.system.manufacturer == "HPE"
            assert applicable(comps, again) == []
            before = len(bmc.seen)
            with pytest.raises(UpdateFailed, match=r"n1: bios 9\.9 \(for Supermicro SYS-821GE-TNHR\) does not fit the node, "
                                                   r"which is HPE ProLiant DL385 Gen10 Plus v2: refused, nothing sent"):
                up.update(target, comps, reset=True)
        sent = [s for s in bmc.seen[before:] if s.method not in ("GET", "DELETE")
                and not s.path.endswith("/SessionService/Sessions")]
        assert sent == []

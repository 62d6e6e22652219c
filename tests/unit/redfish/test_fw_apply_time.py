"""A firmware update's `@Redfish.OperationApplyTime` is one the BMC offers for the update method the plan
uses (MultipartHttpPushUri@Redfish.OperationApplyTimeSupport, SimpleUpdate's @Redfish.OperationApplyTimeSupport),
from the whole captures; a baseline apply time it does not offer is a one-line error before anything is sent."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
from full_captures import firmware_entries, get
from rf_fakebmc import FakeBmc, Served
from rf_support import FIXTURES, connect

from provision.errors import InputError
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.session import node_facts
from provision.redfish.resources import UpdateService
from provision.redfish.vendors import by_name
from provision.spec.firmware import FirmwareComponent
from provision.spec.platforms import AppliesTo

US = "/redfish/v1/UpdateService"


def _baseline(tmp_path: Path, component: str, apply_time: str | None) -> tuple[FirmwareComponent, ...]:
    image = tmp_path / f"{component}.bin"
    image.write_bytes(b"image")
    return (FirmwareComponent(component=component, version="999.0.0", image=str(image),
                              sha256=hashlib.sha256(b"image").hexdigest(), apply_time=apply_time,
                              applies_to=AppliesTo(any_platform=True)),)  # type: ignore[arg-type]


def _state(capture: str, service: dict[str, Any] | None = None) -> fw.FirmwareState:
    """The capture's FirmwareInventory, every entry running 1.0 (older than the baseline's 999.0.0: some captures'
    own versions, such as the GH200 BMC's GH200-24.05-2, are opaque and cannot be ordered against any baseline)."""
    entries = [e.model_copy(update={"version": "1.0"}) for e in firmware_entries(capture)]
    return fw.FirmwareState(entries=entries, service=UpdateService.parse(service or get(capture, US)),
                            where="node01 BMC (https://bmc)")


def _dell_simple_only(supported: list[str]) -> dict[str, Any]:
    """The Dell capture's UpdateService without its multipart URI, SimpleUpdate offering only `supported`."""
    from rf_fakebmc import load_tree

    svc = copy.deepcopy(load_tree(FIXTURES / "dell")[US])
    svc.pop("MultipartHttpPushUri")
    svc["Actions"]["#UpdateService.SimpleUpdate"]["@Redfish.OperationApplyTimeSupport"]["SupportedValues"] = supported
    return svc


@pytest.mark.parametrize(("capture", "vendor", "component", "apply_time", "method", "sent"), [
    # GH200 OpenBMC: MultipartHttpPushUri@Redfish.OperationApplyTimeSupport says Immediate only
    ("nvidia_gh200", "nvidia_hgx", "bmc", "Immediate", "multipart", "Immediate"),
    ("nvidia_gh200", "nvidia_hgx", "gpu", "OnReset", "multipart", None),
    ("nvidia_gh200", "nvidia_hgx", "bmc", "OnReset", "multipart", None),
    # the others do not say: the baseline's value is sent as it is
    ("hpe", "hpe", "bios", "OnReset", "simple", "OnReset"),
    ("lenovo", "lenovo", "bios", "OnReset", "multipart", "OnReset"),
    ("lenovo", "lenovo", "bmc", "Immediate", "multipart", "Immediate"),
    ("supermicro", "supermicro", "bios", "OnReset", "multipart", "OnReset"),
    # a baseline that leaves it to the BMC (None): OnReset where offered or unsaid, else what it offers
    ("nvidia_gh200", "nvidia_hgx", "gpu", None, "multipart", "Immediate"),
    ("nvidia_gh200", "nvidia_hgx", "bmc", None, "multipart", "Immediate"),
    ("hpe", "hpe", "bios", None, "simple", "OnReset"),
    ("supermicro", "supermicro", "bios", None, "multipart", "OnReset"),
])
def test_apply_time_from_each_capture(tmp_path: Path, capture: str, vendor: str, component: str,
                                      apply_time: str | None, method: str, sent: str | None) -> None:
    state = _state(capture)
    baseline = _baseline(tmp_path, component, apply_time)
    if sent is None:
        with pytest.raises(InputError) as err:
            fw.plan(baseline, state, by_name(vendor))
        text = str(err.value)
        assert "\n" not in text and "node01 BMC" in text and US in text
        assert f"apply time {apply_time!r} is not offered" in text and "['Immediate']" in text
        assert "set apply_time in the baseline to one it offers, or leave it unset" in text
        return
    plan = fw.plan(baseline, state, by_name(vendor))
    assert [(s.component, s.method, s.apply_time) for s in plan.steps] == [(component, method, sent)]


@pytest.mark.parametrize(("supported", "apply_time", "sent"), [
    (["Immediate", "OnReset", "OnStartUpdateRequest"], "OnReset", "OnReset"),  # the Dell capture as it is
    (["Immediate"], "OnReset", None),
    (["OnReset"], "Immediate", None),
    (["OnReset"], "OnReset", "OnReset"),
    (["Immediate", "OnReset", "OnStartUpdateRequest"], None, "OnReset"),  # unset: OnReset first
    (["OnStartUpdateRequest", "Immediate"], None, "Immediate"),
    (["onreset"], None, "onreset"),  # in the BMC's own spelling
    (["OnStartUpdateRequest"], None, None),  # nothing provision uses: refused, one line
])
def test_simple_update_apply_time_support(tmp_path: Path, supported: list[str], apply_time: str | None,
                                          sent: str | None) -> None:
    state = fw.FirmwareState(entries=firmware_entries("lenovo"), service=UpdateService.parse(_dell_simple_only(supported)),
                             where="node01 BMC")
    baseline = _baseline(tmp_path, "bios", apply_time)
    plugin = by_name("generic")
    if sent is not None:
        assert [s.apply_time for s in fw.plan(baseline, state, plugin).steps] == [sent]
    else:
        with pytest.raises(InputError, match=r"UpdateService\.SimpleUpdate: .*apply time.* for firmware bios \(simple"):
            fw.plan(baseline, state, plugin)


def test_a_baseline_without_apply_time_leaves_it_to_the_bmc() -> None:
    """The spec's default is None (the BMC's choice), not OnReset: only an explicit value is ever refused."""
    from provision.spec.firmware import FirmwareComponent as Fc

    comp = Fc(component="gpu", version="1.0", image="gpu.bin", sha256="0" * 64, applies_to=AppliesTo(any_platform=True))
    assert comp.apply_time is None


def test_send_refuses_a_step_built_elsewhere_with_an_apply_time_the_bmc_does_not_offer(tmp_path: Path) -> None:
    """A step not made by plan (a campaign builds its own) is checked again before the POST."""
    from full_captures import full_tree

    bmc = FakeBmc(tree=full_tree("nvidia_gh200"))
    image = tmp_path / "bmc.bin"
    image.write_bytes(b"image")
    step = fw.FirmwareStep(component="bmc", version="999.0.0", image=image, sha256=hashlib.sha256(b"image").hexdigest(),
                           method="multipart", uri=f"{US}/update-multipart", targets=[], apply_time="OnReset",
                           needs_host_reset=False, timeout_s=10)
    with Served(bmc) as srv:
        node = node_facts(connect(srv))
        state = fw.observe(node.conn)
        with pytest.raises(InputError, match=r"node01 BMC .*update-multipart: apply time 'OnReset' is not offered"):
            fw.send(node, step, state, None)
    assert not [s for s in bmc.seen if s.method == "POST" and "update-multipart" in s.path]


@pytest.mark.parametrize(("capture", "method", "apply_time", "refused"), [
    ("nvidia_gh200", "multipart", "OnReset", True),  # as its UpdateService says
    ("nvidia_gh200", "multipart", "Immediate", False),
    ("nvidia_gh200", "http_push", "OnReset", False),  # HttpPushUri's apply time is a setting, not a parameter
    ("lenovo", "multipart", "OnReset", False),  # says nothing: both taken
])
def test_the_simulator_as_captured_enforces_the_trees_apply_time_support(capture: str, method: str,
                                                                       apply_time: str, refused: bool) -> None:
    from types import SimpleNamespace

    from full_captures import full_tree

    from provision.lab.bmcsim.update import Updater

    tree = full_tree(capture)
    created: list[str] = []

    def create(kind: str, *request: object) -> None:  # (name, target URI, body)
        created.append(kind)
        raise _TaskMade

    sim = Updater.__new__(Updater)  # only what the check reads: the tree, and where a task would be made
    sim._res = SimpleNamespace(get=tree.get)  # type: ignore[assignment]
    sim._tasks = SimpleNamespace(create=create)  # type: ignore[assignment]
    if refused:
        reply = sim.push(b"image", {"@Redfish.OperationApplyTime": apply_time}, method=method)
        assert reply.status == 400 and created == []
        assert "ActionParameterValueNotInList" in json_text(reply.body)
    else:
        with pytest.raises(_TaskMade):  # past the check: a task is being made
            sim.push(b"image", {"@Redfish.OperationApplyTime": apply_time}, method=method)
        assert created == ["HttpPushUpdate"]


class _TaskMade(Exception):
    pass


def json_text(body: object) -> str:
    import json

    return json.dumps(body)

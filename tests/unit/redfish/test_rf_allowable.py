"""What the BMC offers is what is sent: reset types (inline AllowableValues or ActionInfo), boot override
values, apply times; and the BMC's own Message text in errors. Against the whole captures."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served, load_tree
from rf_support import FIXTURES, connect

from provision.errors import InputError
from provision.redfish import allowable
from provision.redfish.errors import RedfishBadRequest, extended_messages, raise_for_status
from provision.redfish.ops import power
from provision.redfish.ops.session import node_facts
from provision.redfish.resources import UpdateService

GH200_SYS = "/redfish/v1/Systems/System_0"


@cache
def _capture(name: str) -> dict[str, Any]:
    return load_tree(FIXTURES / "full" / name)


def capture(name: str) -> dict[str, Any]:
    return json.loads(json.dumps(_capture(name)))  # a private copy: tests edit it


HPE = ("On", "ForceOff", "GracefulShutdown", "ForceRestart", "Nmi", "PushPowerButton", "GracefulRestart")
GH200 = ("On", "ForceOff", "ForceOn", "ForceRestart", "GracefulRestart", "GracefulShutdown", "PowerCycle")


@pytest.mark.parametrize(("target", "state", "allowed", "resets"), [
    ("cycle", "On", GH200, ["PowerCycle"]),
    ("cycle", "On", HPE, ["ForceRestart"]),  # iLO 5 offers no PowerCycle: the documented fallback
    ("cycle", "On", ("On", "ForceOff"), ["ForceOff", "On"]),
    ("cycle", "Off", ("ForceOn", "ForceOff"), ["ForceOn"]),
    ("on", "Off", ("ForceOn", "ForceOff"), ["ForceOn"]),
    ("off", "On", HPE, ["ForceOff"]),
    ("graceful", "On", HPE, ["GracefulShutdown"]),
    ("on", "On", ("ForceOff",), []),
])
def test_only_offered_reset_types_are_planned(target: Any, state: str, allowed: tuple[str, ...],
                                              resets: list[str]) -> None:
    actions = power.plan(target, state, allowed)
    assert [a.reset_type for a in actions] == resets
    assert all(a.reset_type in allowed for a in actions)


@pytest.mark.parametrize(("target", "state", "allowed"), [
    ("cycle", "On", ("GracefulRestart", "Nmi")),
    ("graceful", "On", ("On", "ForceOff")),
    ("on", "Off", ("ForceOff", "Nmi")),
])
def test_a_reset_the_bmc_does_not_offer_is_a_one_line_error_listing_what_it_offers(
        target: Any, state: str, allowed: tuple[str, ...]) -> None:
    with pytest.raises(RedfishBadRequest) as err:
        power.plan(target, state, allowed, "node01 BMC (https://b)")
    text = str(err.value)
    assert text.startswith("node01 BMC (https://b): offers none") and str(list(allowed)) in text
    assert "\n" not in text


@pytest.mark.parametrize(("name", "expected"), [
    ("nvidia_gh200", GH200),  # through /Systems/System_0/ResetActionInfo
    ("supermicro", ("On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn",
                    "PowerCycle")),  # ActionInfo too
    ("hpe", HPE),  # inline AllowableValues
])
def test_reset_types_come_from_allowable_values_or_action_info(name: str, expected: tuple[str, ...]) -> None:
    with Served(FakeBmc(tree=capture(name))) as srv:
        node = node_facts(connect(srv))
        assert power.reset_types(node) == expected


def test_an_action_info_that_cannot_be_read_says_nothing_and_is_recorded() -> None:
    t = capture("nvidia_gh200")
    del t[f"{GH200_SYS}/ResetActionInfo"]
    with Served(FakeBmc(tree=t)) as srv:
        node = node_facts(conn := connect(srv))
        assert power.reset_types(node) == ()
    assert f"{GH200_SYS}/ResetActionInfo" in conn.stats.missing


def test_action_info_restricting_the_cycle_to_force_restart() -> None:
    t = capture("nvidia_gh200")
    info = t[f"{GH200_SYS}/ResetActionInfo"]
    info["Parameters"][0]["AllowableValues"] = ["On", "ForceOff", "ForceRestart"]
    with Served(FakeBmc(tree=t)) as srv:
        node = node_facts(connect(srv))
        assert [a.reset_type for a in power.plan("cycle", "On", power.reset_types(node))] == ["ForceRestart"]


def test_boot_once_sends_the_bmcs_spelling_and_refuses_what_it_does_not_offer() -> None:
    bmc = FakeBmc(tree=capture("nvidia_gh200"))
    with Served(bmc) as srv:
        node = node_facts(connect(srv))
        power.boot_once(node, "pxe")
        with pytest.raises(InputError, match=r"boot target 'Floppy' is not offered .*'Pxe'"):
            power.boot_once(node, "Floppy")
    assert bmc.patches == [(GH200_SYS, {"Boot": {"BootSourceOverrideEnabled": "Once",
                                                   "BootSourceOverrideTarget": "Pxe"}})]


def test_boot_once_checks_the_enabled_value_too() -> None:
    t = capture("nvidia_gh200")
    t[GH200_SYS]["Boot"]["BootSourceOverrideEnabled@Redfish.AllowableValues"] = ["Continuous", "Disabled"]
    bmc = FakeBmc(tree=t)
    with Served(bmc) as srv:
        node = node_facts(connect(srv))
        with pytest.raises(InputError, match="BootSourceOverrideEnabled 'Once' is not offered"):
            power.boot_once(node, "Pxe")
    assert bmc.patches == []


def test_apply_times_from_the_gh200_update_service() -> None:
    svc = capture("nvidia_gh200")["/redfish/v1/UpdateService"]
    supported = allowable.apply_times(svc, "MultipartHttpPushUri")
    assert supported == ("Immediate",)
    assert allowable.apply_time("Immediate", supported, "n") == "Immediate"
    with pytest.raises(RedfishBadRequest, match=r"n: apply time 'OnReset' is not offered .*\['Immediate'\]"):
        allowable.apply_time("OnReset", supported, "n")
    assert allowable.apply_times(svc) == ()  # nothing on the resource itself: the BMC does not say
    assert allowable.apply_time("OnReset", (), "n") == "OnReset"
    action = {"target": "/x", "@Redfish.OperationApplyTimeSupport": {"SupportedValues": ["OnReset", "Immediate"]}}
    assert allowable.apply_times(action) == ("OnReset", "Immediate")
    model = UpdateService.parse(svc)
    with pytest.raises(RedfishBadRequest, match="OnReset"):
        allowable.update_apply_time(model, "multipart", "OnReset", "n")
    assert allowable.update_apply_time(model, "simple", "OnReset", "n") == "OnReset"  # the action says nothing
    simple = UpdateService.parse({"Actions": {"#UpdateService.SimpleUpdate": action}})
    assert allowable.update_apply_time(simple, "simple", "onreset", "n") == "OnReset"


INFO = {"error": {"code": "Base.1.8.GeneralError", "message": "A general error has occurred. See ExtendedInfo.",
                  "@Message.ExtendedInfo": [
                      {"MessageId": "Base.1.8.PropertyValueNotInList",
                       "Message": "The value 'Floppy' for the property\nBootSourceOverrideTarget is not in the list "
                                  "of acceptable values."},
                      {"MessageId": "Base.1.8.PropertyNotWritable"}]}}


@pytest.mark.parametrize(("body", "expected"), [
    (INFO, ["The value 'Floppy' for the property BootSourceOverrideTarget is not in the list of acceptable values. "
            "[Base.1.8.PropertyValueNotInList]", "Base.1.8.PropertyNotWritable"]),
    ({"error": {"code": "Base.1.8.InternalError", "message": "busy"}}, ["busy [Base.1.8.InternalError]"]),
    ({"@Message.ExtendedInfo": [{"Message": "Password change required"}]}, ["Password change required"]),
    ("<html>", []),
])
def test_extended_messages_carry_the_bmcs_words_and_ids(body: Any, expected: list[str]) -> None:
    assert extended_messages(body) == expected


def test_an_error_answer_names_the_message_and_its_id() -> None:
    with pytest.raises(RedfishBadRequest) as err:
        raise_for_status("PATCH", GH200_SYS, 400, INFO, "node01 BMC")
    text = str(err.value)
    assert text.startswith(f"node01 BMC: PATCH {GH200_SYS} -> HTTP 400: The value 'Floppy'")
    assert "[Base.1.8.PropertyValueNotInList]" in text and "\n" not in text


def test_the_connector_raises_the_bmcs_message() -> None:
    bmc = FakeBmc(tree=capture("nvidia_gh200"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.raw[GH200_SYS] = (400, "application/json", json.dumps(INFO).encode())
        with pytest.raises(RedfishBadRequest, match=r"not in the list of acceptable values\. "
                                                    r"\[Base\.1\.8\.PropertyValueNotInList\]"):
            conn.patch(GH200_SYS, {"Boot": {"BootSourceOverrideTarget": "Floppy"}}, etag="W/\"1\"")

"""Discovery's pure parts as tables: a BMC judged against profiles and inventory hosts (fits, known by serial
or UUID, moved, an address another host holds, placeholders), and enroll's plan (names, who is left out and
why, duplicates refused)."""

from __future__ import annotations

import pytest

from provision.discover.enroll import check_pattern, plan
from provision.discover.match import Known, Standing, Verdict, judge
from provision.discover.probe import Found, Outcome
from provision.errors import InputError
from provision.spec.platforms import BmcIdentity, Board, PlatformIdentity, Platforms


def found(ip: str, maker: str | None = "Supermicro", model: str = "SYS-821GE-TNHR", serial: str | None = "S1",
          uuid: str | None = "U1", outcome: Outcome = Outcome.IDENTIFIED, scheme: str = "https") -> Found:
    ident = None if maker is None else PlatformIdentity(
        system=Board(manufacturer=maker, model=model, serial_number=serial, uuid=uuid),
        bmc=BmcIdentity(model="ASPEED", firmware_version="11.01.01"))
    return Found(address=f"{scheme}://{ip}", ip=ip, outcome=outcome if ident else Outcome.PASSWORD_CHANGE,
                 identity=ident, bmc_mac="3c:ec:ef:00:00:01")


PROFILES = {
    "smc_a": Platforms.model_validate([{"manufacturer": "Supermicro", "model": "SYS-821GE-*"}]),
    "smc_b": Platforms.model_validate([{"manufacturer": "supermicro", "model": "SYS-821GE-TNHR"}]),
    "hpe": Platforms.model_validate([{"manufacturer": "HPE", "model": "ProLiant DL385*"}]),
    "anything": Platforms.model_validate("any"),
}


@pytest.mark.parametrize(("f", "hosts", "standing", "host", "fits"), [
    (found("10.0.0.1"), [], Standing.NEW, None, ("smc_a", "smc_b")),  # `any` is no evidence
    (found("10.0.0.1", "HPE", "ProLiant DL385 Gen10 Plus v2"), [], Standing.NEW, None, ("hpe",)),
    (found("10.0.0.1", "Dell Inc.", "PowerEdge R760"), [], Standing.NEW, None, ()),
    (found("10.0.0.1"), [Known(name="n1", address="https://10.0.0.1/", serial="s1")], Standing.KNOWN, "n1",
     ("smc_a", "smc_b")),  # serial case-insensitive, address's trailing slash
    (found("10.0.0.1", serial=None), [Known(name="n1", address="https://10.0.0.9", uuid="u1")], Standing.MOVED,
     "n1", ("smc_a", "smc_b")),
    (found("10.0.0.1"), [Known(name="n1", address="https://10.0.0.1")], Standing.ADDRESS_TAKEN, "n1",
     ("smc_a", "smc_b")),  # identity not recorded: not the same host, but its address
    (found("10.0.0.1"), [Known(name="n1", address="https://10.0.0.1", serial="S2")], Standing.ADDRESS_TAKEN,
     "n1", ("smc_a", "smc_b")),  # another board recorded there
    (found("10.0.0.1", serial="To be filled by O.E.M.", uuid="03000200-0400-0500-0006-000700080009"),
     [Known(name="n1", address="https://10.0.0.9", serial="To Be Filled By O.E.M.",
            uuid="03000200-0400-0500-0006-000700080009")], Standing.NEW, None, ("smc_a", "smc_b")),
    (found("10.0.0.1", maker=None), [Known(name="n1", address="https://10.0.0.9", serial="S1")], Standing.NEW,
     None, ()),  # nothing read, nothing matched
])
def test_judge(f: Found, hosts: list[Known], standing: Standing, host: str | None, fits: tuple[str, ...]) -> None:
    v = judge(f, PROFILES, hosts)
    assert (v.standing, v.host, v.fits) == (standing, host, fits)
    if standing is Standing.MOVED:
        assert "https://10.0.0.9" in v.note and f.address in v.note


def V(f: Found, fits: tuple[str, ...] = ("smc_a",), standing: Standing = Standing.NEW, host: str | None = None) -> Verdict:
    return Verdict(found=f, fits=fits, standing=standing, host=host)


GROUPS = {"smc_a": "gpu_a", "smc_b": "gpu_b", "hpe": "hpe_nodes"}


def test_plan_names_in_address_order_and_says_why_the_others_are_left_out() -> None:
    verdicts = [
        V(found("10.0.0.10", serial="S10", uuid="U10")),
        V(found("10.0.0.9", serial="S9", uuid="U9")),  # numeric order: .9 before .10
        V(found("10.0.0.2", serial="S2", uuid="U2"), fits=("smc_a", "smc_b")),
        V(found("10.0.0.3", serial="S3", uuid="U3"), fits=()),
        V(found("10.0.0.4", serial="S4", uuid="U4"), standing=Standing.KNOWN, host="n4"),
        V(found("10.0.0.5", maker=None)),
        V(found("10.0.0.6", serial="Default string", uuid="00000000-0000-0000-0000-000000000000")),
        V(found("10.0.0.7", serial="S7", uuid="U7", scheme="http")),
        V(found("10.0.0.8", serial="S8", uuid="U8"), fits=("hpe",)),  # no group sets it
    ]
    p = plan(verdicts, "gpu{rack}-{index:02}", existing={"node01"}, groups={"smc_a": "gpu_a"}, rack="r1", start=7)
    assert [(h.name, h.profile, h.group, h.verdict.found.ip) for h in p.hosts] == [
        ("gpur1-07", "smc_a", "gpu_a", "10.0.0.9"), ("gpur1-08", "smc_a", "gpu_a", "10.0.0.10")]
    why = {s.address.split("//")[1]: s.why for s in p.skipped}
    assert why == {
        "10.0.0.2": "several profiles fit (smc_a, smc_b): give --profile",
        "10.0.0.3": "no profile describes Supermicro SYS-821GE-TNHR (give --profile)",
        "10.0.0.4": "already in the inventory as n4",
        "10.0.0.5": "not identified: password change required",
        "10.0.0.6": "the BMC gives neither a serial nor a UUID (it could not be told apart later)",
        "10.0.0.7": "plain HTTP (the password would travel in clear): not enrolled",
        "10.0.0.8": "no group of the inventory sets provision_profile: hpe (give --group)",
    }


def test_plan_with_the_operators_profile_takes_only_the_bmcs_it_describes() -> None:
    verdicts = [V(found("10.0.0.2", serial="S2", uuid="U2"), fits=("smc_a", "smc_b")),
                V(found("10.0.0.3", "HPE", "ProLiant DL385", serial="S3", uuid="U3"), fits=("hpe",))]
    p = plan(verdicts, "{serial}", existing=set(), groups=GROUPS, profile="smc_b",
             chooses=lambda name, v: PROFILES[name].fits(v.found.identity))
    assert [(h.name, h.profile, h.group) for h in p.hosts] == [("S2", "smc_b", "gpu_b")]
    assert [s.why for s in p.skipped] == ["profile smc_b does not describe HPE ProLiant DL385"]


def test_two_bmcs_that_give_one_serial_are_both_left_out() -> None:
    verdicts = [V(found("10.0.0.2", serial="S1", uuid="U2")), V(found("10.0.0.3", serial="s1", uuid="U3")),
                V(found("10.0.0.4", serial="S4", uuid="U4"))]
    p = plan(verdicts, "n{index}", existing=set(), groups=GROUPS)
    assert [h.name for h in p.hosts] == ["n1"] and p.hosts[0].verdict.found.ip == "10.0.0.4"
    assert all("is given by 2 BMCs" in s.why for s in p.skipped) and len(p.skipped) == 2


@pytest.mark.parametrize(("pattern", "existing", "says"), [
    ("gpu-{model}", set(), "gpu-SYS-821GE-TNHR for both https://10.0.0.2 and https://10.0.0.3"),
    ("node{index:02}", {"node02"}, "node02 (BMC at https://10.0.0.3) is already a host of the inventory"),
    ("{serial}/x", set(), "gives 'S2/x' for the BMC at https://10.0.0.2, not a host name"),
])
def test_plan_refuses_names_that_collide_or_are_no_host_names(pattern: str, existing: set[str], says: str) -> None:
    verdicts = [V(found("10.0.0.2", serial="S2", uuid="U2")), V(found("10.0.0.3", serial="S3", uuid="U3"))]
    with pytest.raises(InputError) as err:
        plan(verdicts, pattern, existing=existing, groups=GROUPS)
    assert says in str(err.value)


@pytest.mark.parametrize(("pattern", "says"), [
    ("gpu{rack}", "every BMC would get the same name"),
    ("gpu{slot}", "unknown field {slot}"),
    ("gpu{index:02", "unmatched '{'"),
    ("gpu{serial:d}", "Unknown format code 'd'"),
    ("gpu{serial.__class__}", "unknown field {serial.__class__}"),
])
def test_bad_patterns_are_refused_before_anything_is_sent(pattern: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        check_pattern(pattern)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_good_patterns() -> None:
    for pattern in ("gpu{rack}-{index:02}", "{serial}", "{model}-{mac}", "n{index:03d}.{rack}"):
        check_pattern(pattern)


def test_a_file_that_says_another_serial_or_mac_is_noted() -> None:
    from provision.discover.leases import Lease

    f = found("10.0.0.1", serial="S1").model_copy(update={"lease": Lease(ip="10.0.0.1", serial="S9",
                                                                         mac="3c:ec:ef:00:00:09")})
    assert judge(f, PROFILES, []).note == ("the file says serial S9, the BMC S1; "
                                           "the file says MAC 3c:ec:ef:00:00:09, the BMC 3c:ec:ef:00:00:01")
    same = f.model_copy(update={"lease": Lease(ip="10.0.0.1", serial="s1", mac="3c:ec:ef:00:00:01")})
    assert judge(same, PROFILES, []).note == ""


def test_a_bmc_that_must_change_its_password_is_enrolled_only_as_the_vendors_file_and_the_profile_say() -> None:
    """A factory BMC shows only its service root (PasswordChangeRequired): enrolled with the serial the
    vendor's file gives for its address and the operator's --profile, never on one of the two alone, never over
    plain HTTP, and two such BMCs the file gives one serial are both left out."""
    from provision.discover.enroll import host_vars_text, serial_of
    from provision.discover.leases import Lease

    def factory(ip: str, serial: str | None, scheme: str = "https") -> Verdict:
        f = found(ip, maker=None).model_copy(update={"bmc_mac": None, "lease": Lease(
            ip=ip, mac="3c:ec:ef:00:00:0a", serial=serial)})
        return V(f.model_copy(update={"address": f"{scheme}://{ip}"}), fits=())

    vs = [factory("10.0.0.2", "SN2"), factory("10.0.0.3", None), factory("10.0.0.4", "SN4", "http"),
          factory("10.0.0.5", "SN5"), factory("10.0.0.6", "sn5"),
          V(found("10.0.0.7", maker=None))]  # no file at all
    p = plan(vs, "n-{serial}", existing=set(), groups=GROUPS, profile="smc_a", chooses=lambda _n, _v: False)
    assert [(h.name, h.profile, h.verdict.found.ip) for h in p.hosts] == [("n-SN2", "smc_a", "10.0.0.2")]
    why = {s.address.split("//")[1]: s.why for s in p.skipped}
    assert why["10.0.0.3"] == why["10.0.0.7"] == "not identified: password change required"
    assert why["10.0.0.4"] == "plain HTTP (the password would travel in clear): not enrolled"
    assert "serial sn5 is given by 2 BMCs" in why["10.0.0.5"] and why["10.0.0.5"] == why["10.0.0.6"]
    # without --profile the file's serial alone enrolls nothing
    assert plan(vs[:1], "n-{serial}", existing=set(), groups=GROUPS).skipped[0].why == \
        "not identified: password change required"
    [h] = p.hosts
    assert serial_of(h.verdict.found) == "SN2"
    text = host_vars_text(h, None, __import__("datetime").datetime(2026, 1, 1))
    assert "serial: SN2" in text and "bmc_mac: 3c:ec:ef:00:00:0a" in text and "manufacturer" not in text
    # a BMC that was identified keeps its own serial whatever the file says
    told = found("10.0.0.8", serial="BMC-SN").model_copy(update={"lease": Lease(ip="10.0.0.8", serial="FILE-SN")})
    assert serial_of(told) == "BMC-SN"

"""Paging (Members@odata.nextLink), the per-command deadline, and partial reads, against the loopback BMC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from rf_fakebmc import FakeBmc, Served
from rf_support import connect, tree

from provision.cli import main as cli_main
from provision.errors import RedfishError
from provision.redfish.errors import RedfishTimeout, RedfishUnavailable, RedfishUnreadable
from provision.redfish.ops.inventory import observe

ROOT = "/redfish/v1"
LOG = f"{ROOT}/Systems/1/LogServices/Log1/Entries"


def _entry(n: int) -> dict[str, object]:
    return {"@odata.id": f"{LOG}/{n}", "Id": str(n), "Message": f"event {n}", "EntryType": "SEL"}


def _paged(pages: int, per_page: int = 2, loop_to: int | None = None) -> dict[str, object]:
    """The supermicro tree with LOG split into `pages` pages; the last links back to page `loop_to`."""
    t = tree("supermicro")
    for p in range(pages):
        uri = LOG if p == 0 else f"{LOG}/page{p}"
        members = [_entry(p * per_page + i) for i in range(per_page)]
        page: dict[str, object] = {"@odata.id": uri, "Members": members, "Members@odata.count": pages * per_page}
        if p + 1 < pages:
            page["Members@odata.nextLink"] = f"{LOG}/page{p + 1}"
        elif loop_to is not None:
            page["Members@odata.nextLink"] = LOG if loop_to == 0 else f"{LOG}/page{loop_to}"
        t[uri] = page
        for m in members:
            t[str(m["@odata.id"])] = m
    return t


def _gets(bmc: FakeBmc, prefix: str) -> int:
    return sum(1 for s in bmc.seen if s.method == "GET" and s.path.startswith(prefix))


def test_every_page_is_read_once() -> None:
    bmc = FakeBmc(tree=_paged(4))
    with Served(bmc) as srv:
        rows = connect(srv).members(LOG)
    assert [r["Id"] for r in rows] == [str(i) for i in range(8)]
    assert _gets(bmc, f"{LOG}/page") == 3


@pytest.mark.parametrize("loop_to", [0, 1, 2])
def test_a_next_link_back_to_a_page_already_read_stops_with_one_line(loop_to: int) -> None:
    bmc = FakeBmc(tree=_paged(3, loop_to=loop_to))
    with Served(bmc) as srv:
        conn = connect(srv)
        with pytest.raises(RedfishError, match="paging loop") as err:
            conn.members(LOG)
    text = str(err.value)
    assert "\n" not in text and "node01" in text and LOG in text
    assert _gets(bmc, LOG) <= 3  # each page once, nothing after the loop was seen


def test_an_absolute_next_link_to_the_first_page_is_a_loop_too() -> None:
    t = _paged(2)
    with Served(bmc := FakeBmc(tree=t)) as srv:
        t[f"{LOG}/page1"]["Members@odata.nextLink"] = f"{srv.address}{LOG}/"  # type: ignore[index]
        with pytest.raises(RedfishError, match="paging loop"):
            connect(srv).members(LOG)
    assert _gets(bmc, LOG) == 2


def test_the_page_cap_bounds_a_walk_that_never_ends() -> None:
    bmc = FakeBmc(tree=_paged(30, per_page=1))
    with Served(bmc) as srv:
        conn = connect(srv, max_pages=5)
        with pytest.raises(RedfishError, match=r"more than 5 pages") as err:
            conn.members(LOG)
    assert "node01" in str(err.value) and LOG in str(err.value)
    assert _gets(bmc, LOG) == 5


def test_a_page_that_fails_is_recorded_and_ends_the_walk() -> None:
    bmc = FakeBmc(tree=_paged(3))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.fail(f"{LOG}/page1", 500, times=10)
        rows = conn.members(LOG)
    assert [r["Id"] for r in rows] == ["0", "1"]
    assert [u.uri for u in conn.stats.unreadable] == [f"{LOG}/page1"]
    assert "HTTP 500" in conn.stats.unreadable[0].reason


def test_a_stalled_bmc_hits_the_deadline_instead_of_hanging() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv, deadline_s=0.5)
        bmc.delay[f"{ROOT}/Systems/1"] = 3.0
        with pytest.raises(RedfishTimeout, match="deadline") as err, conn.deadline():
            conn.get(f"{ROOT}/Systems/1")
    text = str(err.value)
    assert "node01" in text and f"{ROOT}/Systems/1" in text and "\n" not in text


def test_a_stalled_collection_walk_raises_rather_than_being_recorded() -> None:
    bmc = FakeBmc(tree=_paged(3), expand=False)
    with Served(bmc) as srv:
        conn = connect(srv, deadline_s=0.5)
        bmc.delay[f"{LOG}/page1"] = 3.0
        with pytest.raises(RedfishTimeout):
            conn.members(LOG)
    assert not conn.stats.unreadable


def test_a_5xx_sub_collection_is_recorded_while_the_rest_is_read() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.fail(f"{ROOT}/Systems/1/Memory", 500, times=50)
        inv = observe(conn)
    assert [u.uri for u in inv.unreadable] == [f"{ROOT}/Systems/1/Memory"]
    assert inv.memory == [] and len(inv.cpus) == 2 and len(inv.gpus) == 8 and inv.firmware


@pytest.mark.parametrize(("ctype", "body", "why"), [
    ("text/html", b"<!DOCTYPE html><html><body>Login</body></html>", "HTML instead of JSON"),
    ("application/json", b'{"Id": "1", "Members": [', "malformed JSON"),
    ("application/json", b"[1, 2]", "a JSON list instead of an object"),
])
def test_html_or_malformed_json_is_recorded_for_a_link_and_raised_for_a_get(ctype: str, body: bytes,
                                                                            why: str) -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    uri = f"{ROOT}/Systems/1/Processors"
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.raw[uri] = (200, ctype, body)
        assert conn.get_optional(uri) is None
        assert [u.uri for u in conn.stats.unreadable] == [uri]
        assert conn.stats.unreadable[0].reason.startswith(why)
        with pytest.raises(RedfishUnreadable) as err:
            conn.get(uri)
        inv = observe(conn)
    assert str(err.value).startswith(f"node01 BMC ({srv.address}): GET {uri}: {why}")
    assert "\n" not in str(err.value)
    assert inv.cpus == [] and inv.memory and any(u.uri == uri for u in inv.unreadable)


def test_a_service_root_that_is_html_still_raises() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    bmc.raw[ROOT] = (200, "text/html", b"<html>BMC web UI</html>")
    bmc.authorised = lambda headers: True  # type: ignore[method-assign]  # raw answers go to the authorised
    with Served(bmc) as srv, pytest.raises(RedfishUnreadable, match=r"service root.*HTML instead of JSON"):
        connect(srv)


def test_unreachable_mid_inventory_still_raises() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.drop[f"{ROOT}/Systems/1/Memory"] = 50
        with pytest.raises(RedfishUnavailable, match="no answer"):
            conn.get_optional(f"{ROOT}/Systems/1/Memory")


def test_bmc_inventory_exits_1_and_names_what_it_could_not_read(inventory_copy: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    bmc.fail(f"{ROOT}/Systems/1/Memory", 403, times=50)  # not retried: the CLI's retry policy is real time
    bmc.raw[f"{ROOT}/Chassis/1/Power"] = (200, "text/html", b"<html>503 Service Temporarily Unavailable</html>")
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    data = yaml.safe_load(hv.read_text())
    with Served(bmc) as srv:
        data.update(provision_bmc_address=srv.address, provision_bmc_username="admin",
                    provision_bmc_password="s3cret-Pa55", provision_bmc_insecure_http=True)
        hv.write_text(yaml.safe_dump(data))
        code = cli_main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 1
    assert {u["uri"] for u in report["unreadable"]} == {f"{ROOT}/Systems/1/Memory", f"{ROOT}/Chassis/1/Power"}
    err = out.err.strip()
    lines = [line for line in err.splitlines() if "could not be read" in line]
    assert len(lines) == 1 and "2 URI(s) could not be read" in lines[0], err
    assert f"{ROOT}/Systems/1/Memory (HTTP 403" in err and f"{ROOT}/Chassis/1/Power (HTML instead of JSON)" in err
    assert len(report["inventory"]["gpus"]) == 8  # the rest was read


@pytest.mark.parametrize(("link", "key"), [
    ("/redfish/v1/Systems/1/LogServices/SEL/Entries?$skip=50", "/redfish/v1/Systems/1/LogServices/SEL/Entries?$skip=50"),
    ("https://10.0.0.5/redfish/v1/Entries/?$skip=2&$top=2", "/redfish/v1/Entries?$skip=2&$top=2"),
    ("/redfish/v1/Entries/", "/redfish/v1/Entries"),
])
def test_a_next_link_is_known_by_its_path_and_query(link: str, key: str) -> None:
    from provision.redfish.collection import page_key

    assert page_key(link) == key

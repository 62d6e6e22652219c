"""`provision discover` and `provision enroll` over loopback BMCs (127.0.5.0/28 only: nothing else is ever
asked): five of fourteen addresses answer, four whole captures of different platforms over HTTPS verified
against a test CA, and one factory BMC that answers everything 403 PasswordChangeRequired."""

from __future__ import annotations

import difflib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from provision.cli import main
from tests.unit.redfish.full_captures import full_tree
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, make_cert

NET = "127.0.5.0/28"
IPS = {"supermicro": "127.0.5.2", "hpe": "127.0.5.5", "lenovo": "127.0.5.7", "nvidia_gh200": "127.0.5.9"}
FACTORY = "127.0.5.11"
PASSWORD = "s3cret-Pa55"


def _port() -> int:
    """A port free on the first address (the others are asked on the same one)."""
    with socket.socket() as s:
        s.bind((IPS["supermicro"], 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def bmcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, dict[str, FakeBmc]]]:
    ca, cert, key = make_cert(tmp_path_factory.mktemp("discover-ca"), ips=(*IPS.values(), FACTORY))
    port = _port()
    fakes = {name: FakeBmc(tree=full_tree(name)) for name in IPS}
    fakes["factory"] = FakeBmc(tree=full_tree("supermicro"), change_first=True)
    served = [Served(fakes[name], tls=(cert, key), host=IPS.get(name, FACTORY), port=port) for name in fakes]
    for s in served:
        s.__enter__()
    try:
        yield port, ca, fakes
    finally:
        stops = [threading.Thread(target=s.__exit__, args=(None, None, None)) for s in served]
        for t in stops:
            t.start()
        for t in stops:
            t.join()


@pytest.fixture
def inv(inventory_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example inventory with three profiles pointed at the captures' platforms: ml_density_v2 at the
    HPE, ml_cost_v3 at the Lenovo; the Supermicro fits ml_prod_v4 and sys_821ge_tnhr_captured (ambiguous);
    no profile names the GH200."""
    root = inventory_copy.parent
    for name, platform in (("ml_density_v2", "{manufacturer: HPE, model: ProLiant DL385 Gen10 Plus v2}"),
                           ("ml_cost_v3", "{manufacturer: Lenovo, model: 'ThinkSystem SR670*'}")):
        path = root / "group_vars" / "all" / f"profile_{name}.yml"
        text = path.read_text()
        old = "  platforms:\n    - {manufacturer: Supermicro, model: SYS-821GE-TNHR}\n"
        assert old in text
        path.write_text(text.replace(old, f"  platforms:\n    - {platform}\n"))
    monkeypatch.setenv("PROVISION_BMC_USERNAME", "admin")
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", PASSWORD)
    return root / "hosts.yml"


def _discover(inv: Path, port: int, ca: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    source = list(extra) if "-f" in extra else ["-r", f"{NET}:{port}", *extra]
    rc = main(["-q", "discover", *source, "-i", str(inv), "--ca-file", str(ca), "--json"])
    got = capsys.readouterr()
    assert got.out, got.err
    return rc, json.loads(got.out)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_discover_finds_exactly_the_bmcs_that_answer_with_identity_and_profile(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    before = _snapshot(inv.parent)
    rc, out = _discover(inv, port, ca, capsys)
    assert out["scanned"] == 14
    rows = {r["address"]: r for r in out["found"]}
    assert sorted(rows) == sorted(f"https://{ip}:{port}" for ip in (*IPS.values(), FACTORY))
    want = {
        "supermicro": ("Supermicro", "SYS-821GE-TNHR", "S889914X3710910", "00000000-0000-0000-0000-7CC25550A8FF",
                       "11.01.01", None, ["ml_prod_v4", "sys_821ge_tnhr_captured"]),
        "hpe": ("HPE", "ProLiant DL385 Gen10 Plus v2", "MXQ302099S", "34383350-3131-584D-5133-303230393953",
                "iLO 5 v2.72", "ml_density_v2", ["ml_density_v2"]),
        "lenovo": ("Lenovo", "ThinkSystem SR670 V2", "J105958B", "6173ecec-6ef5-11ee-834a-0a8fc3a58a71",
                   "TGBT42S 2.83 2023-07-05", "ml_cost_v3", ["ml_cost_v3"]),
        "nvidia_gh200": ("NVIDIA", "P3809", None, "1e90aa6e-6d05-9589-2253-ce7672d02d26", "GH200-24.05-2", None, []),
    }
    for name, (maker, model, serial, uuid, fw, profile, fits) in want.items():
        r = rows[f"https://{IPS[name]}:{port}"]
        assert (r["outcome"], r["manufacturer"], r["model"], r["uuid"], r["bmc_firmware"], r["profile"], r["fits"],
                r["inventory"]) == ("identified", maker, model, uuid, fw, profile, fits, "new"), name
        if serial:
            assert r["serial"] == serial
        assert r["bmc_mac"] and len(r["bmc_mac"]) == 17, name  # from the Manager's EthernetInterfaces
    factory = rows[f"https://{FACTORY}:{port}"]
    assert factory["outcome"] == "password change required" and factory["manufacturer"] is None
    assert rc == 1  # a BMC that could not be identified is not a clean discovery
    assert _snapshot(inv.parent) == before  # nothing written


def test_discover_from_a_dnsmasq_lease_file(bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, fakes = bmcs
    leases = tmp_path / "dnsmasq.leases"
    leases.write_text(f"1733389262 3c:ec:ef:9a:10:01 {IPS['hpe']} ilo-a *\n"
                      "1733389270 b8:83:03:5a:aa:02 127.0.5.3 * *\n"  # nobody there
                      f"1733389280 b8:83:03:5a:aa:03 {IPS['lenovo']} XCC-7Z23 *\n")
    asked = len(fakes["supermicro"].seen)
    rc, out = _discover(inv, port, ca, capsys, "-f", str(leases), "--port", str(port))
    assert rc == 0 and out["scanned"] == 3
    assert [(r["address"], r["serial"], r["file"]["mac"]) for r in out["found"]] == [
        (f"https://{IPS['hpe']}:{port}", "MXQ302099S", "3c:ec:ef:9a:10:01"),
        (f"https://{IPS['lenovo']}:{port}", "J105958B", "b8:83:03:5a:aa:03")]
    assert len(fakes["supermicro"].seen) == asked  # only the file's addresses were asked


def test_known_bmc_matched_by_serial_and_reported_moved_with_both_addresses(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    hv = inv.parent / "host_vars"
    (hv / "node01.yml").write_text(yaml.safe_dump({
        "provision_bmc_address": "https://10.99.0.1", "provision_bmc_identity": {"serial": "MXQ302099S"}}))
    (hv / "node02.yml").write_text(yaml.safe_dump({  # same address, another board recorded
        "provision_bmc_address": f"https://{IPS['lenovo']}:{port}", "provision_bmc_identity": {"serial": "OTHER1"}}))
    (hv / "node03.yml").write_text(yaml.safe_dump({  # by UUID, at its address
        "provision_bmc_address": f"https://{IPS['nvidia_gh200']}:{port}",
        "provision_bmc_identity": {"uuid": "1E90AA6E-6D05-9589-2253-CE7672D02D26"}}))
    _, out = _discover(inv, port, ca, capsys)
    rows = {r["address"]: r for r in out["found"]}
    hpe = rows[f"https://{IPS['hpe']}:{port}"]
    assert (hpe["inventory"], hpe["host"], hpe["inventory_address"]) == (
        "in inventory, address moved", "node01", "https://10.99.0.1")
    lenovo = rows[f"https://{IPS['lenovo']}:{port}"]
    assert (lenovo["inventory"], lenovo["host"]) == ("address of another host", "node02")
    gh = rows[f"https://{IPS['nvidia_gh200']}:{port}"]
    assert (gh["inventory"], gh["host"]) == ("in inventory", "node03")
    assert rows[f"https://{IPS['supermicro']}:{port}"]["inventory"] == "new"


def test_enroll_writes_new_hosts_that_validate_and_a_second_run_changes_nothing(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    _budget(inv, "r02", 60000)
    hosts_before = inv.read_text()
    args = ["-q", "enroll", "-r", f"{NET}:{port}", "-i", str(inv), "--ca-file", str(ca), "--name", "gpu{rack}-{index:02}",
            "--rack", "r02", "--json"]
    assert main(args) == 1  # the factory BMC is not identified
    out = json.loads(capsys.readouterr().out)
    assert [(h["host"], h["profile"], h["address"]) for h in out["hosts"]] == [
        ("gpur02-01", "ml_density_v2", f"https://{IPS['hpe']}:{port}"),
        ("gpur02-02", "ml_cost_v3", f"https://{IPS['lenovo']}:{port}")]
    skipped = {s["address"]: s["why"] for s in out["skipped"]}
    assert "several profiles fit (ml_prod_v4, sys_821ge_tnhr_captured)" in skipped[f"https://{IPS['supermicro']}:{port}"]
    assert "no profile describes NVIDIA P3809" in skipped[f"https://{IPS['nvidia_gh200']}:{port}"]
    assert "password change required" in skipped[f"https://{FACTORY}:{port}"]
    # the hosts file: every line it had, in order, comments included; the new hosts under their groups
    after = inv.read_text()
    added = [ln for ln in difflib.ndiff(hosts_before.splitlines(), after.splitlines()) if ln[:2] in ("- ", "+ ")]
    assert [ln[0] + " " + ln[2:].strip() for ln in added] == ["+ ml_density_v2:", "+ hosts:", "+ gpur02-01:", "+ ml_cost_v3:",
                                            "+ hosts:", "+ gpur02-02:"]
    loaded = yaml.safe_load(after)["all"]["children"]
    assert loaded["ml_density_v2"]["hosts"] == {"gpur02-01": None}
    assert loaded["ml_cost_v3"]["hosts"] == {"gpur02-02": None}
    hv = yaml.safe_load((inv.parent / "host_vars" / "gpur02-01.yml").read_text())
    assert hv["provision_bmc_address"] == f"https://{IPS['hpe']}:{port}" and hv["provision_rack"] == "r02"
    assert hv["provision_bmc_identity"]["serial"] == "MXQ302099S" and hv["provision_bmc_ca_file"] == str(ca.resolve())
    assert main(["-q", "spec", "validate", "-i", str(inv)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    # the Supermicro with the operator's choice of profile, numbering on
    assert main(["-q", "enroll", "-r", f"{NET}:{port}", "-i", str(inv), "--ca-file", str(ca), "--name", "{serial}",
                 "--profile", "ml_prod_v4", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(h["host"], h["group"]) for h in out["hosts"]] == [("S889914X3710910", "ml_prod_v4")]
    assert "profile ml_prod_v4 does not describe NVIDIA P3809" in {s["why"] for s in out["skipped"]}
    assert main(["-q", "spec", "validate", "-i", str(inv)]) == 0
    capsys.readouterr()
    # again: every BMC is known by serial or UUID now, nothing is written
    files = _snapshot(inv.parent)
    assert main(["-q", "enroll", "-r", f"{NET}:{port}", "-i", str(inv), "--ca-file", str(ca), "--name", "{serial}",
                 "--profile", "ml_prod_v4", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["hosts"] == [] and _snapshot(inv.parent) == files
    assert sum("already in the inventory" in s["why"] for s in out["skipped"]) == 3


def _budget(inv: Path, rack: str, watts: int) -> None:
    main_yml = inv.parent / "group_vars" / "all" / "main.yml"
    text = main_yml.read_text()
    old = f"  {rack}:\n    power_budget_w: 25000\n"
    assert old in text
    main_yml.write_text(text.replace(old, f"  {rack}:\n    power_budget_w: {watts}\n"))


def test_an_enrollment_spec_validate_would_refuse_is_put_back(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rack r02 holds four 5.5 kW nodes of its 25 kW: two more are over its budget."""
    port, ca, _ = bmcs
    files = _snapshot(inv.parent)
    assert main(["-q", "enroll", "-r", f"{NET}:{port}", "-i", str(inv), "--ca-file", str(ca), "--name",
                 "gpu{rack}-{index:02}", "--rack", "r02"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "rack r02: 6 node(s) peak at 28600 W together, over its budget of 25000 W" in err
    assert "put back as it was, nothing written" in err
    assert _snapshot(inv.parent) == files


@pytest.mark.parametrize(("args", "says"), [
    (["-r", "127.0.0.0/8"], "16777216 addresses, more than --max 4096; nothing sent"),
    (["-r", "127.0.5.0/28", "--max", "8"], "16 addresses, more than --max 8"),
    (["-f", "/nonexistent/dhcpd.leases"], "/nonexistent/dhcpd.leases: cannot read the lease file"),
    (["--name", "gpu-{rack}", "-r", "127.0.5.2"], "every BMC would get the same name"),
    (["--name", "gpu-{slot}", "-r", "127.0.5.2"], "unknown field {slot}"),
])
def test_bad_input_is_one_line_exit_2_nothing_sent_or_written(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str],
        args: list[str], says: str) -> None:
    _, _, fakes = bmcs
    seen = {n: len(f.seen) for n, f in fakes.items()}
    files = _snapshot(inv.parent)
    cmd = ["enroll", "--name", "{index}", *args] if "--name" not in args else ["enroll", *args]
    assert main([*cmd, "-i", str(inv)]) == 2
    err = capsys.readouterr().err
    assert says in " ".join(err.split()) and err.count("\n") == 1, err
    assert {n: len(f.seen) for n, f in fakes.items()} == seen and _snapshot(inv.parent) == files


def test_a_pattern_that_gives_two_bmcs_one_name_is_refused_before_anything_is_written(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    files = _snapshot(inv.parent)
    # {ip} differs per BMC, but cut to 8 characters the HPE and the Lenovo both give gpu-127.0.5.
    assert main(["-q", "enroll", "-r", f"{NET}:{port}", "-i", str(inv), "--ca-file", str(ca),
                 "--name", "gpu-{ip:.8}"]) == 2, capsys.readouterr()
    err = capsys.readouterr().err
    assert "gpu-127.0.5. for both" in err and "nothing written" in err and err.count("\n") == 1
    assert _snapshot(inv.parent) == files


def test_a_certificate_that_does_not_verify_is_said_and_insecure_reads_through(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, _, fakes = bmcs
    asked = len(fakes["hpe"].seen)
    assert main(["-q", "discover", "-r", f"{IPS['hpe']}:{port}", "-i", str(inv), "--json"]) == 1
    [row] = json.loads(capsys.readouterr().out)["found"]
    assert row["outcome"] == "certificate not verified" and "--ca-file" in row["detail"]
    assert len(fakes["hpe"].seen) == asked  # the handshake failed: no request, no password sent
    assert main(["-q", "discover", "-r", f"{IPS['hpe']}:{port}", "-i", str(inv), "-o", "table"]) == 1
    table = capsys.readouterr().out
    assert "certificate not verified" in table and "give --ca-file, or --insecure" in " ".join(table.split())
    assert main(["-q", "discover", "-r", f"{IPS['hpe']}:{port}", "-i", str(inv), "--insecure", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["found"]
    assert (row["outcome"], row["serial"]) == ("identified", "MXQ302099S")


def test_a_host_known_by_the_journals_identity_reading(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """node01's host_vars record no identity, but `bmc inventory` once kept its reading in the journal."""
    from provision.cli.options import journal_at
    from provision.journal.identities import record_identity
    from provision.journal.store import Journal
    from provision.spec.platforms import Board, PlatformIdentity

    port, ca, _ = bmcs
    with Journal(journal_at(None, inv)) as journal:
        record_identity(journal, "node01", PlatformIdentity(system=Board(serial_number="J105958B")), "test")
    _, out = _discover(inv, port, ca, capsys)
    rows = {r["address"]: r for r in out["found"]}
    lenovo = rows[f"https://{IPS['lenovo']}:{port}"]
    assert (lenovo["inventory"], lenovo["host"], lenovo["inventory_address"]) == (
        "in inventory, address moved", "node01", "https://bmc-node01.oob.example.net")


def test_plain_output_from_a_csv_notes_a_serial_the_bmc_does_not_give(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    shipping = tmp_path / "shipping.csv"
    shipping.write_text(f"Serial Number,BMC IP\nMXQ302099S,{IPS['hpe']}\nJ999,{IPS['lenovo']}\n")
    assert main(["-q", "discover", "-f", str(shipping), "--port", str(port), "-i", str(inv), "--ca-file", str(ca),
                 "-o", "plain"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split("\t") == ["address", "state", "manufacturer", "model", "serial", "uuid", "bmc mac",
                                   "bmc firmware", "profile", "inventory", "note"]
    rows = {ln.split("\t")[0]: ln.split("\t") for ln in lines}
    assert rows[f"https://{IPS['hpe']}:{port}"][-1] == "-"
    assert rows[f"https://{IPS['lenovo']}:{port}"][-1] == "the file says serial J999, the BMC J105958B"
    assert rows[f"https://{IPS['lenovo']}:{port}"][8:10] == ["ml_cost_v3", "new"]


def test_day_zero_an_inventory_of_profiles_and_no_host_yet(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    inv.write_text("---\n# The site's racks, empty until enroll.\nall:\n  children:\n    gpu_nodes:\n      children:\n"
                   "        ml_cost_v3:\n")
    for f in (inv.parent / "host_vars").iterdir():
        f.unlink()
    assert main(["-q", "enroll", "-r", f"{IPS['lenovo']}:{port}", "-i", str(inv), "--ca-file", str(ca),
                 "--name", "{serial}", "--json"]) == 0
    assert [h["host"] for h in json.loads(capsys.readouterr().out)["hosts"]] == ["J105958B"]
    assert inv.read_text().startswith("---\n# The site's racks, empty until enroll.\n")
    assert yaml.safe_load(inv.read_text())["all"]["children"]["gpu_nodes"]["children"]["ml_cost_v3"] == {
        "hosts": {"J105958B": None}}
    assert main(["-q", "spec", "validate", "-i", str(inv)]) == 0


def test_enroll_plan_shows_the_hosts_and_writes_nothing(
        bmcs: tuple[int, Path, dict[str, FakeBmc]], inv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, ca, _ = bmcs
    files = _snapshot(inv.parent)
    assert main(["-q", "enroll", "-r", f"{IPS['hpe']},{IPS['lenovo']}", "--port", str(port), "-i", str(inv),
                 "--ca-file", str(ca), "--name", "n{index}", "--plan", "-o", "plain"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("\t") == ["host", "profile", "group", "address", "serial", "uuid"]
    assert [ln.split("\t")[:3] for ln in out[1:]] == [["n1", "ml_density_v2", "ml_density_v2"],
                                                      ["n2", "ml_cost_v3", "ml_cost_v3"]]
    assert _snapshot(inv.parent) == files

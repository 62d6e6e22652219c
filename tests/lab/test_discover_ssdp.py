"""`provision discover --ssdp lo` inside a network namespace this test makes (`unshare -n`): its loopback
carries the multicast, so the M-SEARCH never leaves it. A responder answers as DSP0266 says (AL: the service
root), once for a BMC served in the namespace (the whole HPE capture over HTTPS) and once naming a third
address, which discovery must not ask."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None,
                                 reason="needs root, unshare and ip to make a network namespace")]

INSIDE = r'''
import json, socket, struct, subprocess, sys, threading
from pathlib import Path
for cmd in ("ip link set lo up", "ip link set lo multicast on", "ip route add 239.0.0.0/8 dev lo"):
    subprocess.run(cmd.split(), check=True)
from tests.unit.redfish.full_captures import full_tree
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, make_cert
work = Path(sys.argv[1])
ca, cert, key = make_cert(work, ips=("127.0.0.1",))
bmc = FakeBmc(tree=full_tree("hpe"))
srv = Served(bmc, tls=(cert, key)).__enter__()
port = srv.server.server_address[1]
searches = []
listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("", 1900))
listener.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                    struct.pack("4s4si", socket.inet_aton("239.255.255.250"), bytes(4), socket.if_nametoindex("lo")))
def answer():
    data, peer = listener.recvfrom(4096)
    searches.append(data.decode())
    for al in (f"https://127.0.0.1:{port}/redfish/v1/", "https://127.0.0.99:443/redfish/v1/"):
        listener.sendto(("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nST: urn:dmtf-org:service:redfish-rest:1\r\n"
                         "USN: uuid:34383350-3131-584d-5133-303230393953::urn:dmtf-org:service:redfish-rest:1\r\n"
                         f"AL: {al}\r\nEXT:\r\n\r\n").encode(), peer)
threading.Thread(target=answer, daemon=True).start()
third = socket.socket()
third.bind(("127.0.0.99", 443))
third.listen(8)
third.settimeout(0.1)
def third_party():
    try:
        return third.accept()
    except TimeoutError:
        return None
from provision.cli import main
import contextlib, io
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(["-q", "discover", "--ssdp", "lo", "--ssdp-wait", "1", "-i", sys.argv[2], "--ca-file", str(ca),
               "--json"])
print(json.dumps({"third_asked": third_party() is not None, "rc": rc, "out": json.loads(out.getvalue()), "searches": searches, "port": port,
                  "asked": [s.path for s in bmc.seen]}))
'''


def test_discover_by_ssdp_in_a_namespace(tmp_path: Path, inventory_copy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROVISION_BMC_USERNAME": "admin",
           "PROVISION_BMC_PASSWORD": "s3cret-Pa55", "XDG_STATE_HOME": str(tmp_path / "state")}
    run = subprocess.run(["unshare", "-n", "--", sys.executable, "-c", INSIDE, str(tmp_path), str(inventory_copy)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    [search] = got["searches"]
    assert search.startswith("M-SEARCH * HTTP/1.1\r\n") and "ST: urn:dmtf-org:service:redfish-rest:1\r\n" in search
    assert 'MAN: "ssdp:discover"' in search
    [row] = got["out"]["found"]
    assert got["third_asked"] is False  # the answer naming 127.0.0.99 is left out: never asked
    assert (row["address"], row["outcome"], row["serial"]) == (
        f"https://127.0.0.1:{got['port']}", "identified", "MXQ302099S")
    assert got["rc"] == 0 and "/redfish/v1" in got["asked"]

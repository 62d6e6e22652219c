"""The installer CD on a VM lab node that lacks the boot pair it was told to use: the installer reports one
line naming its step, powers the node off, and nothing is written to any drive.

Part of the default vm tier (about a minute: firmware, GRUB and the installer's kernel under plain
emulation, then the refusal); the full install is tests/vm/test_os_install_vm.py (opt-in).
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.errors import LabError
from provision.lab.bmcsim.vmhost import drive_file
from provision.lab.twins.ssh import lab_key
from provision.lab.vm import deploy, installer
from provision.lab.vm.node import VmNode, VmNodeOptions, vm_node

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VmNode, str]]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    base = tmp_path_factory.mktemp("osrefusal")
    key = lab_key(base)
    www = base / "www"
    www.mkdir()
    conf = installer.InstallConf(hostname="node01", boot_serials=("NOPE-BOOT0", "NOPE-BOOT1"),
                                 authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
    installer.installer_iso(conf, www / "install.iso")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(www), **kw)

        def log_message(self, *_: Any) -> None:
            return None

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with vm_node(base / "lab", VmNodeOptions(boot_drive_mib=256, scratch_drive_mib=16)) as node:
            yield node, f"http://127.0.0.1:{srv.server_address[1]}/install.iso"
    finally:
        srv.shutdown()


def test_a_node_without_the_named_boot_pair_is_refused_before_anything_is_written(lab: tuple[VmNode, str]) -> None:
    node, url = lab
    with pytest.raises(LabError) as caught:
        deploy.install(node, url, timeout_s=900)
    message = str(caught.value)
    assert message.startswith("node01: the installer failed at step drives: boot drive NOPE-BOOT0 not found")
    assert "nothing written" in message and "\n" not in message
    assert deploy.power_state(node) == "Off"
    for drive in (*node.host.boot_drives, *node.host.scratch_drives):
        path: Path = drive_file(node.host, drive.serial)
        assert path.stat().st_blocks == 0, f"{path.name}: the installer wrote to it"

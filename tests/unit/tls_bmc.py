"""The loopback HTTPS BMC of the TLS tests: rf_fakebmc's FakeBmc serving the pruned Supermicro capture with a
certificate made by the lab's own CA code (provision.lab.ca); the fixtures `lab_ca` and `tls_bmc` (tests/unit/
conftest.py) start it, `point_node01` points the copied example inventory's node01 at it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, load_tree

PASSWORD = "tls-Test-Pa55-7d1e"
TREE = load_tree(ROOT / "tests" / "fixtures" / "redfish" / "supermicro")


@contextlib.contextmanager
def serve(lab_ca: tuple[Path, Path, Path]) -> Iterator[Served]:
    """The BMC over HTTPS with the lab CA's server certificate; stopped on the way out."""
    _ca, cert, key = lab_ca
    with Served(FakeBmc(tree=dict(TREE), password=PASSWORD), tls=(cert, key)) as srv:
        yield srv


def point_node01(inv: Path, address: str, ca: Path | None, monkeypatch: pytest.MonkeyPatch,
                 **extra: object) -> Path:
    """node01's host_vars: the BMC at `address` (trusted through `ca` when given) and `extra`; the password
    from PROVISION_BMC_PASSWORD. Returns `inv`."""
    hv: dict[str, object] = {"provision_bmc_address": address, "provision_bmc_username": "admin", **extra}
    if ca is not None:
        hv["provision_bmc_ca_file"] = str(ca)
    (inv.parent / "host_vars" / "node01.yml").write_text("---\n" + yaml.safe_dump(hv))
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", PASSWORD)
    return inv

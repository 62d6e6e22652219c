from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from rf_fakebmc import FakeBmc, Served, load_tree

from provision.redfish.connector import Connector, ConnectorOptions
from provision.redfish.retry import RetryPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"
TREES = {
    "supermicro": FIXTURES / "supermicro",
    "dell": FIXTURES / "dell",
    "public-rackmount1": FIXTURES / "public-rackmount1",
}

_cache: dict[str, dict] = {}


def tree(name: str) -> dict:
    if name not in _cache:
        _cache[name] = load_tree(TREES[name])
    return {k: v for k, v in _cache[name].items()}


def options(address: str, **kw: object) -> ConnectorOptions:
    base: dict[str, object] = {
        "address": address, "username": "admin", "password": "s3cret-Pa55", "name": "node01",
        "retry": RetryPolicy(attempts=3, base_delay_s=0.0, timeout_s=5),
        "insecure_http": address.startswith("http://"),  # the loopback FakeBmc speaks plain HTTP
    }
    base.update(kw)
    return ConnectorOptions.model_validate(base)


@pytest.fixture
def served_tree(request: pytest.FixtureRequest):
    name = getattr(request, "param", "supermicro")
    bmc = FakeBmc(tree=tree(name))
    with Served(bmc) as srv:
        yield srv


def connect(srv: Served, **kw: object) -> Connector:
    conn = Connector(options(srv.address, **kw), sleep=lambda s: None)
    conn.open()
    return conn


def point_at(inventory: Path, address: str) -> None:
    """Point the copied example inventory's node01 at a loopback BMC."""
    hv = inventory.parent / "host_vars" / "node01.yml"
    data = yaml.safe_load(hv.read_text())
    data.update(provision_bmc_address=address, provision_bmc_username="admin",
                provision_bmc_password="s3cret-Pa55", provision_bmc_insecure_http=address.startswith("http://"))
    hv.write_text(yaml.safe_dump(data))

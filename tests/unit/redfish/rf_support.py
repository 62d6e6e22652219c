from __future__ import annotations

from pathlib import Path

import pytest
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

"""Shared lab fixtures: a BMC-only lab (the simulator), a loopback image server, lab handles.

Every fixture that starts something stops it in a `finally`, even when the test fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redfish
import yaml

from provision.lab import manager
from provision.lab.state import LabState
from provision.redfish.image_server import ImageServer

LAB_SPEED = 60.0  # a 60 s simulated flash takes ~1 s
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LabHandle:
    """A running lab: its state and how to reach each node's BMC."""

    state: LabState

    def host_vars(self, node: str) -> dict[str, Any]:
        path = self.state.lab_dir / "inventory" / "host_vars" / f"{node}.yml"
        return dict(yaml.safe_load(path.read_text()))

    @property
    def ca(self) -> Path:
        return self.state.lab_dir / "ca.pem"

    def client(self, node: str, http: bool = False) -> Any:
        """A logged-in (session) DMTF `redfish` client, TLS verified against the lab CA."""
        hv = self.host_vars(node)
        url = hv["provision_lab_bmc_http_address"] if http else hv["provision_bmc_address"]
        client = redfish.redfish_client(base_url=url, username=hv["provision_bmc_username"],
                                        password=hv["provision_bmc_password"], cafile=str(self.ca), timeout=10)
        client.login(auth="session")
        return client


@contextlib.contextmanager
def running_lab(lab_dir: Path, **opts: Any) -> Iterator[LabHandle]:
    """`provision lab up --bmc-only` with `opts`; always `lab down` afterwards."""
    opts.setdefault("speed", LAB_SPEED)
    state = manager.up(manager.UpOptions(lab_dir=lab_dir, bmc_only=True, **opts))
    try:
        yield LabHandle(state)
    finally:
        manager.down(lab_dir)


@pytest.fixture(scope="module")
def twin_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    """`lab up` of twins with their BMCs, from the example inventory's specs, once per module; always `lab
    down` after. The module says how many twins with TWIN_LAB_NODES (default 1)."""
    lab_dir = tmp_path_factory.mktemp(f"{request.module.__name__.rpartition('.')[2]}-lab")
    state = manager.up(manager.UpOptions(lab_dir=lab_dir, nodes=getattr(request.module, "TWIN_LAB_NODES", 1),
                                         speed=LAB_SPEED, source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        yield state
    finally:
        manager.down(lab_dir)


@pytest.fixture(scope="session")
def bmc_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    """Two simulated BMCs (default Supermicro HGX H100 tree, complete ML-PROD-V4 server)."""
    with running_lab(tmp_path_factory.mktemp("bmclab"), nodes=2) as lab:
        yield lab


@dataclass
class ServedImages:
    """A temp dir where tests put firmware images, served by the product's ImageServer on loopback."""

    server: ImageServer
    directory: Path

    def url_for(self, name: str) -> str:
        """The URL of `directory/name` (write the file first)."""
        return self.server.url_for(self.directory / name)


@pytest.fixture(scope="session")
def image_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedImages]:
    """The product's ImageServer on loopback, serving what tests write into a temp dir."""
    with ImageServer(bind="127.0.0.1") as server:
        yield ServedImages(server, tmp_path_factory.mktemp("images"))


@pytest.fixture(scope="session")
def lab_factory() -> Any:
    """`running_lab` itself, for tests that start labs of their own."""
    return running_lab


@pytest.fixture(scope="session")
def lab_handle() -> Any:
    """Build a LabHandle from a lab directory's lab.json (for labs started through the CLI)."""
    def make(lab_dir: Path) -> LabHandle:
        return LabHandle(LabState.model_validate_json((lab_dir / "lab.json").read_text()))
    return make


@pytest.fixture
def shared_lab(tmp_path: Path) -> Iterator[Callable[[int, float], LabState]]:
    """For the tests of several controllers on one PostgreSQL journal (with `pg_url`): `shared_lab(nodes,
    speed)` starts a BMC-only lab of that many simulated BMCs over the repository's inventory in
    tmp_path/lab; `lab down` after the test."""
    with contextlib.ExitStack() as stack:
        def up(nodes: int, speed: float) -> LabState:
            return stack.enter_context(running_lab(tmp_path / "lab", nodes=nodes, speed=speed,
                                                   source_inventory=ROOT / "inventory" / "hosts.yml")).state
        yield up


@pytest.fixture
def journal_db(pg_cluster: Any, pg_url: str) -> Iterator[Any]:
    """A psycopg connection (autocommit) to pg_url's schema: the test's own reads of the controllers' journal."""
    import psycopg

    schema = pg_url.rsplit("%3D", 1)[1]
    conn = psycopg.connect(host="127.0.0.1", port=pg_cluster.port, user="provision", password=pg_cluster.password,
                           dbname="postgres", autocommit=True, options=f"-csearch_path={schema}")
    try:
        yield conn
    finally:
        conn.close()

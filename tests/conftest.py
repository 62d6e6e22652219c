"""Shared test helpers: paths of the project and its example inventory."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_INVENTORY = ROOT / "inventory"


def pytest_configure(config: pytest.Config) -> None:
    """A SIGTERM (a CI job's timeout, `kill`) ends the run as Ctrl-C does, so every fixture's teardown runs: the
    lab's simulators, twins, VMs and repository servers are stopped and their files removed (pytest's own
    default on SIGTERM is to die with no teardown at all)."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupted)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@pytest.fixture
def inventory_copy(tmp_path: Path) -> Path:
    """A writable copy of the example inventory (with the firmware dir beside it); returns hosts.yml."""
    shutil.copytree(EXAMPLE_INVENTORY, tmp_path / "inventory")
    shutil.copytree(ROOT / "firmware", tmp_path / "firmware")
    return tmp_path / "inventory" / "hosts.yml"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a test that passed: every verify report (JSON, JUnit) and metrics file it left in its tmp_path is
    validated (schema, junit-10.xsd, promtool; tests/reportcheck.py), so no test writes an invalid one unseen."""
    result = yield  # a test that failed raises here, and is reported as it failed
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if isinstance(tmp, Path):
        from tests.reportcheck import check_written

        check_written(tmp)
    return result


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[object]:
    """One throwaway PostgreSQL cluster for the session (tests/pgcluster.py); a test takes a schema of its own.
    Without PostgreSQL installed the test is skipped, except under CI, where that is an error."""
    import os

    from tests.pgcluster import cluster, pg_bindir

    if pg_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL (initdb) is not installed: scripts/bootstrap.sh installs it")
        pytest.skip("PostgreSQL (initdb) is not installed: scripts/bootstrap.sh installs it")
    with cluster() as c:
        yield c


@pytest.fixture
def pg_url(pg_cluster: object, monkeypatch: pytest.MonkeyPatch) -> str:
    """PROVISION_JOURNAL_URL (and its password) set to a fresh, empty schema of the session's cluster."""
    import secrets

    from tests.pgcluster import Cluster

    assert isinstance(pg_cluster, Cluster)
    schema = f"t_{secrets.token_hex(6)}"
    with pg_cluster.admin() as db:  # type: ignore[attr-defined]
        db.execute(f"CREATE SCHEMA {schema}")
    url = pg_cluster.url(options=f"-csearch_path%3D{schema}")
    monkeypatch.setenv("PROVISION_JOURNAL_URL", url)
    monkeypatch.setenv("PROVISION_JOURNAL_PASSWORD", pg_cluster.password)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """A journal location for `Journal(...)`: a SQLite file, or None with PROVISION_JOURNAL_URL set to a
    fresh PostgreSQL schema. Tests parametrized by it run on both engines."""
    if request.param == "sqlite":
        return str(tmp_path / "state" / "journal.db")
    request.getfixturevalue("pg_url")
    return None

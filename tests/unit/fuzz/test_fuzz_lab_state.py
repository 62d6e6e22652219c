"""Fuzzing of the state files the toolkit reads back: the lab's lab.json, the twins' state.json, a twin's
faults.json and hardware.json, and the journal database itself. A damaged or foreign file gives the project's
own typed error (LabError / InputError), never a raw exception."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provision.errors import LabError, ProvisionError
from provision.journal import Journal
from provision.lab.state import STATE, LabState, NodeState, read_state
from provision.lab.twins import state as twins_state
from provision.lab.twins.models import TwinInfo
from provision.lab.twins.personality.faults import load_faults
from provision.lab.twins.personality.state import load_hardware

LAB_STATE = LabState(
    lab_dir=Path("/tmp/lab"), pid=4242, control_port=40000, profile="ml_prod_v4", tree="/trees/supermicro",
    as_captured=False, twins=True, inventory=Path("/tmp/lab/inventory/hosts.yml"),
    nodes=[NodeState(name="node01", https_port=40001, http_port=40002,
                             ssh=TwinInfo(name="node01", address="10.203.1.2", key_file=Path("/k"),
                                          known_hosts=Path("/kh"), repo_url="file:/srv/repo"))],
).model_dump(mode="json")
TWINS_STATE: dict[str, Any] = {"rootfs": "/var/cache/rootfs", "twins": [
    {"name": "node01", "index": 1, "profile": "ml_prod_v4", "slot": 1, "twin_dir": "/tmp/lab/twins/node01"}]}
FAULTS: dict[str, Any] = {"active": {"scratch_drive_missing": {"drive": "nvme8n1"}}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**31, 2**31) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    doc = json.loads(json.dumps(base))
    node: Any = doc
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else list(range(len(node)))))
        if not isinstance(node[key], dict | list):
            break
        node = node[key]
    if isinstance(node, dict) and node:
        key = draw(st.sampled_from(sorted(node)))
        if draw(st.booleans()):
            node[key] = draw(json_values)
        else:
            del node[key]
    return json.dumps(doc).encode()


def contents(base: dict[str, Any]) -> st.SearchStrategy[bytes]:
    return mutated(base) | st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()) | \
        st.just(json.dumps(base).encode()[: len(json.dumps(base)) // 2])


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzzstate-") as tmp:
        yield Path(tmp)


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=contents(LAB_STATE))
def test_lab_state(workdir: Path, data: bytes) -> None:
    (workdir / STATE).write_bytes(data)
    try:
        read_state(workdir)
    except LabError as exc:
        assert str(workdir / STATE) in str(exc)


@SETTINGS
@given(data=contents(TWINS_STATE))
def test_twins_state(workdir: Path, data: bytes) -> None:
    (workdir / "twins").mkdir(exist_ok=True)
    (workdir / "twins" / "state.json").write_bytes(data)
    with contextlib.suppress(LabError):
        twins_state.load(workdir)


@SETTINGS
@given(data=contents(FAULTS))
def test_twin_faults_file(workdir: Path, data: bytes) -> None:
    (workdir / "faults.json").write_bytes(data)
    with contextlib.suppress(LabError):
        load_faults(workdir / "faults.json")


@SETTINGS
@given(data=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_twin_hardware_file(workdir: Path, data: bytes) -> None:
    (workdir / "hardware.json").write_bytes(data)
    with contextlib.suppress(LabError):
        load_hardware(workdir)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from([b"", b"SQLite format 3\x00"]), junk=st.binary(max_size=2000))
def test_journal_file_that_is_not_a_journal(workdir: Path, head: bytes, junk: bytes) -> None:
    path = workdir / "journal.db"
    for extra in ("-wal", "-shm"):
        Path(str(path) + extra).unlink(missing_ok=True)
    path.write_bytes(head + junk)
    try:
        with Journal(path) as jr:
            jr.nodes()
    except ProvisionError as exc:
        assert str(path) in str(exc)

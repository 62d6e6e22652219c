"""One error boundary: expected failures are ProvisionErrors with one line naming what and where; the
bring-up engine scrubs what it journals; SSH waits retry only transport errors and keep their message."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import paramiko
import pytest

from provision.bringup.engine import run_bringup
from provision.bringup.model import StagePlan
from provision.bringup.stage import StageContext
from provision.campaign.catalog import file_digest
from provision.conformance import runner
from provision.errors import InputError, ProvisionError, RedfishError
from provision.journal import Journal
from provision.redact import MASK, register_secret
from provision.redfish.image_server import ImageServer, ImageServerError
from provision.redfish.ops.firmware import check_image
from provision.remote import ssh
from provision.spec import load_fleet
from tests.conftest import EXAMPLE_INVENTORY

SECRET = "Boundary-" + "S3cret-k2"
needs_unprivileged = pytest.mark.skipif(os.getuid() == 0, reason="root reads a file whatever its mode")


@pytest.fixture
def host() -> Any:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]


# ---- the bring-up engine journals scrubbed, one-line errors ------------------------------------------
class _Leaky:
    name = "bios"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def observe(self, ctx: StageContext) -> None:
        raise self.exc

    def plan(self, ctx: StageContext, observed: object) -> StagePlan:
        raise AssertionError("not reached")

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        raise AssertionError("not reached")


@pytest.mark.parametrize("exc", [KeyError(f"body {{'Password': '{SECRET}'}}"),
                                 RedfishError(f"login as admin:{SECRET} refused\nsecond line")])
def test_the_engine_journals_no_secret_and_one_line(host: Any, tmp_path: Path, exc: Exception) -> None:
    register_secret(SECRET)
    journal = Journal(tmp_path / "j.db")
    try:
        result = run_bringup([host], [_Leaky(exc)], journal=journal)  # type: ignore[list-item]
        detail = journal.stages("node01")[0].detail
    finally:
        journal.close()
    error = result.nodes[0].stages[0].error
    for text in (detail, error):
        assert SECRET not in text and MASK in text and "\n" not in text


# ---- unreadable files and a busy address are one-line ProvisionErrors --------------------------------
@needs_unprivileged
def test_an_unreadable_firmware_image_is_an_input_error(tmp_path: Path) -> None:
    from provision.redfish.ops.firmware import FirmwareStep

    image = tmp_path / "bios.bin"
    image.write_bytes(b"x")
    image.chmod(0)
    step = FirmwareStep.model_construct(component="bios", image=image, sha256="0" * 64)
    with pytest.raises(InputError, match=rf"bios: cannot read {image}: Permission denied"):
        check_image(step)


def test_an_unreadable_firmware_image_is_an_input_error_even_for_root(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.redfish.ops.firmware import FirmwareStep

    image = tmp_path / "bios.bin"
    image.write_bytes(b"x")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    step = FirmwareStep.model_construct(component="bios", image=image, sha256="0" * 64)
    with pytest.raises(InputError, match=rf"bios: cannot read {image}: Permission denied"):
        check_image(step)
    with pytest.raises(InputError, match=rf"components.bios.image: cannot read {image}: Permission denied"):
        file_digest(image, "c.yml: components.bios.image")


def test_an_image_server_that_cannot_listen_names_the_address() -> None:
    with ImageServer(bind="127.0.0.1") as first:
        busy = ImageServer(bind="127.0.0.1", port=first.actual_port)
        with pytest.raises(ImageServerError, match=rf"cannot listen on 127\.0\.0\.1:{first.actual_port}"):
            busy.__enter__()
    with pytest.raises(ProvisionError, match="not started"):
        ImageServer().url_for(Path("/x.bin"))


def test_check_modules_that_disagree_are_a_provision_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.conformance.model import CheckResult

    result = CheckResult.model_construct(node="n1", id="gpu.count")
    with pytest.raises(ProvisionError, match=r"n1: check id gpu\.count recorded twice"):
        runner._unique([result, result])


# ---- SSH: a wait retries what it expects and keeps the message; a bug is not "SSH not up" ------------
class _Conn:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def run(self, *args: object, **kw: object) -> None:
        raise self.exc


def _connect_raising(exc: BaseException) -> Any:
    @contextmanager
    def fake(host: Any, timeout: float = 10.0) -> Any:
        yield _Conn(exc)

    return fake


def test_wait_for_ssh_keeps_the_transport_error_message(host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh, "connect", _connect_raising(paramiko.SSHException("Channel closed by peer")))
    with pytest.raises(ssh.SshError, match=r"SSH not up after 0 s \(session dropped: SSHException: Channel closed"):
        ssh.wait_for_ssh(host, timeout=0.05, interval=0.01)


def test_wait_for_ssh_does_not_retry_a_bug(host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    @contextmanager
    def buggy(host: Any, timeout: float = 10.0) -> Any:
        calls.append(1)
        raise TypeError("unexpected keyword argument 'in_stream'")
        yield

    monkeypatch.setattr(ssh, "connect", buggy)
    with pytest.raises(TypeError, match="in_stream"):
        ssh.wait_for_ssh(host, timeout=5, interval=0.01)
    assert calls == [1]


def test_run_keeps_the_message_of_a_dropped_session(host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh, "connect", _connect_raising(EOFError("connection reset mid-command")))
    with pytest.raises(ssh.SshError, match=r"node01: 'uptime' did not complete: EOFError: connection reset"):
        ssh.run(host, "uptime")


def test_a_log_dir_that_cannot_be_made_is_an_input_error(tmp_path: Path) -> None:
    from rich.console import Console

    from provision.bringup.display import Progress

    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match=rf"{tmp_path / 'file' / 'logs'}: cannot create the log directory"):
        Progress(["n1"], tmp_path / "file" / "logs", Console(), live=False)

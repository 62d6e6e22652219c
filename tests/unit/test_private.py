"""Private runtime directories and files on a shared controller (provision.private and its users)."""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.conformance.facts import control_dir
from provision.errors import UnsafePathError
from provision.private import ensure_private_dir, open_private, runtime_dir, write_private

ROOT = Path(__file__).resolve().parents[2]
FOREIGN_UID = 4242


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _make_foreign(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`path` owned by another user: chown for real when we are root, else pretend to be someone else."""
    path.mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(path, FOREIGN_UID, FOREIGN_UID)
    else:
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)


def test_created_0700_whatever_the_umask(tmp_path: Path, loose_umask: None) -> None:
    assert _mode(ensure_private_dir(tmp_path / "d")) == 0o700


def test_another_users_directory_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "d"
    _make_foreign(target, monkeypatch)
    with pytest.raises(UnsafePathError, match=rf"^{target}: owned by uid \d+, not by this user") as err:
        ensure_private_dir(target)
    assert "\n" not in str(err.value) and err.value.exit_code == 2


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o702])
def test_a_group_or_world_writable_directory_is_refused(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "d"
    target.mkdir()
    target.chmod(mode)
    with pytest.raises(UnsafePathError, match=rf"^{target}: group or world writable"):
        ensure_private_dir(target)
    assert _mode(target) == mode  # refused, not "fixed" behind the back of whoever made it


def test_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UnsafePathError, match="symlink"):
        ensure_private_dir(tmp_path / "link")


def test_our_own_readable_directory_is_tightened(tmp_path: Path) -> None:
    target = tmp_path / "d"
    target.mkdir()
    target.chmod(0o755)
    ensure_private_dir(target)
    assert _mode(target) == 0o700


def test_runtime_dir_prefers_xdg_runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "run-user"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    assert runtime_dir("pv-x") == xdg / "pv-x"
    assert runtime_dir("pv-x", override=str(tmp_path)) == tmp_path / f"pv-x-{os.getuid()}"


def test_control_dir_precreated_by_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_SSH_CONTROL_DIR", str(tmp_path))
    squatted = tmp_path / f"pv-ssh-{os.getuid()}"
    _make_foreign(squatted, monkeypatch)
    with pytest.raises(UnsafePathError, match=rf"^{squatted}: owned by uid"):
        control_dir()


def test_world_writable_control_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_SSH_CONTROL_DIR", str(tmp_path))
    squatted = tmp_path / f"pv-ssh-{os.getuid()}"
    squatted.mkdir()
    squatted.chmod(0o777)
    with pytest.raises(UnsafePathError, match=rf"^{squatted}: group or world writable"):
        control_dir()


def test_verify_with_a_squatted_control_dir_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from provision.cli import main

    monkeypatch.setenv("PROVISION_SSH_CONTROL_DIR", str(tmp_path))
    squatted = tmp_path / f"pv-ssh-{os.getuid()}"
    squatted.mkdir()
    squatted.chmod(0o777)
    rc = main(["verify", "node01", "-i", str(ROOT / "inventory" / "hosts.yml")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert str(squatted) in err and "internal error" not in err and len(err.strip().splitlines()) == 1


def test_private_files_are_0600_from_the_start(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "f"
    with open_private(path) as fh:
        assert _mode(path) == 0o600  # before a byte is written
        fh.write("x")
    loose = tmp_path / "loose"
    loose.write_text("old")
    loose.chmod(0o644)
    write_private(loose, b"new")
    assert _mode(loose) == 0o600 and loose.read_bytes() == b"new"
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(UnsafePathError, match="link"):
        write_private(tmp_path / "link", "x")


def test_diagnostics_bundle_is_0600_while_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loose_umask: None
) -> None:
    from provision.remote import collect
    from provision.remote.ssh import CommandResult

    seen: list[int] = []

    def fake_run(host: object, command: str, timeout: float = 60) -> CommandResult:
        seen.extend(_mode(p) for p in (tmp_path / "out").glob("*.tar.gz"))
        return CommandResult(node="n1", command=command, exit_code=0, stdout="ok\n", stderr="", seconds=0.0)

    monkeypatch.setattr(collect, "run", fake_run)

    class Host:
        name = "n1"

    bundle = collect.collect(Host(), tmp_path / "out")  # type: ignore[arg-type]
    assert seen and set(seen) == {0o600}
    assert _mode(bundle) == 0o600 and _mode(tmp_path / "out") == 0o700
    with tarfile.open(bundle) as tar:
        assert len(tar.getmembers()) == len(collect.DIAGNOSTICS)


def test_bringup_node_log_is_private(tmp_path: Path, loose_umask: None) -> None:
    from rich.console import Console

    from provision.bringup.display import Progress

    progress = Progress(["n1"], tmp_path / "logs", Console(file=open(os.devnull, "w")), live=False)  # noqa: SIM115
    progress("n1", "preflight", "observing")
    assert _mode(tmp_path / "logs" / "n1.log") == 0o600 and _mode(tmp_path / "logs") == 0o700


def test_a_directory_that_cannot_be_created_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object, mode: int = 0o777) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "mkdir", refuse)
    with pytest.raises(UnsafePathError, match=rf"^{tmp_path / 'd'}: cannot create a private directory: Permission"):
        ensure_private_dir(tmp_path / "d")

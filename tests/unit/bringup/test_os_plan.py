"""The os stage's decisions as tables: the plan from an observation, where an attempt resumes, and what the
journal's records say the latest attempt is. Pure functions: nothing is read while planning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from provision.bringup.stages.os_plan import ORDER, Attempt, OsObserved, Ssh, Step, attempt_of, plan_os, resume
from provision.errors import CheckFailed, InputError
from provision.journal import Journal
from provision.spec import HostEntry

URL = "http://images.example/install.iso"
FP = "SHA256:ours"
ALL = [s.value for s in ORDER]
AFTER_POWER_ON = ALL[ALL.index("os-installing"):]


def attempt(fp: str = FP, **outcomes: str | None) -> Attempt:
    """Outcomes by step name with '-' for '_' dropped: attempt(hostkey='ok', power_on=None)."""
    return Attempt(outcomes={Step(f"os-{k.replace('_', '-')}"): v for k, v in outcomes.items()}, fingerprint=fp)


DONE_TO_POWER_ON = {"hostkey": "ok", "media": "ok", "boot_cd": "ok", "power_on": "ok"}
COMPLETE = {s.value.removeprefix("os-").replace("-", "_"): "ok" for s in ORDER}


@pytest.mark.parametrize(("outcomes", "power", "left"), [
    (None, "Off", None),  # never attempted: a new install
    ({"hostkey": "ok", "media": "ok"}, "Off", None),  # killed before the reset: nothing written, start over
    ({"hostkey": "ok", "media": "ok", "boot_cd": "ok", "power_on": None}, "Off", None),  # reset maybe not sent
    ({"hostkey": "ok", "media": "ok", "boot_cd": "ok", "power_on": None}, "On", AFTER_POWER_ON),  # it was
    (DONE_TO_POWER_ON, "On", AFTER_POWER_ON),  # killed while the installer runs: wait on
    (DONE_TO_POWER_ON, "Off", AFTER_POWER_ON),  # it ended meanwhile: the wait sees Off at once
    ({**DONE_TO_POWER_ON, "installing": None}, "Off", AFTER_POWER_ON),
    ({**DONE_TO_POWER_ON, "installing": "ok"}, "Off", ["os-eject", "os-boot-disk", "os-first-boot"]),
    ({**DONE_TO_POWER_ON, "installing": "ok", "eject": "ok", "boot_disk": None}, "Off",
     ["os-boot-disk", "os-first-boot"]),
    ({**DONE_TO_POWER_ON, "installing": "ok", "eject": "ok", "boot_disk": "ok"}, "On", ["os-first-boot"]),
    ({**DONE_TO_POWER_ON, "installing": "failed"}, "On", None),  # a failed step ends the attempt
    ({**COMPLETE, "first_boot": "failed"}, "On", None),
    (COMPLETE, "On", []),
])
def test_resume(outcomes: dict[str, str | None] | None, power: str, left: list[str] | None) -> None:
    got = resume(attempt(**outcomes) if outcomes is not None else None, power)
    assert (None if got is None else [s.value for s in got]) == left


def obs(tmp: Path, ssh: Ssh = Ssh.DOWN, power: str = "Off", expected: str = "", att: Attempt | None = None,
        installer: str | None = URL, refusals: tuple[str, ...] = ()) -> OsObserved:
    return OsObserved(ssh=ssh, ssh_detail="connection refused", power=power, known_hosts=tmp / "known_hosts",
                      expected_fingerprint=expected, attempt=att, installer=installer, refusals=refusals)


@pytest.mark.parametrize(("kw", "kinds", "converged"), [
    ({"ssh": Ssh.OK, "power": "On", "expected": FP}, [], True),  # converged
    ({"ssh": Ssh.OK, "power": "On", "expected": FP, "installer": None}, [], True),  # no installer needed
    ({}, ALL, False),  # blank, off, an installer: install
    ({"power": "On"}, ALL, False),  # on, but nothing answers (a blank node at its firmware)
    ({"expected": FP, "att": attempt(hostkey="ok", media="ok")}, ALL, False),  # our key, never booted: again
    ({"expected": FP, "att": attempt(**DONE_TO_POWER_ON), "power": "On"}, AFTER_POWER_ON, False),
    ({"expected": FP, "att": attempt(**DONE_TO_POWER_ON, installing="ok", eject="ok", boot_disk="ok"),
      "power": "On"}, ["os-first-boot"], False),
    # up with the new key, killed before the eject / before the first boot was journaled: cleanup only
    ({"ssh": Ssh.OK, "power": "On", "expected": FP, "att": attempt(**DONE_TO_POWER_ON, installing="ok")},
     ["os-eject", "os-first-boot"], False),
    ({"ssh": Ssh.OK, "power": "On", "expected": FP,
      "att": attempt(**DONE_TO_POWER_ON, installing="ok", eject="ok", boot_disk="ok")}, ["os-first-boot"], True),
    ({"ssh": Ssh.OK, "power": "On", "expected": FP, "att": attempt(**COMPLETE)}, [], True),
    # a failed attempt, our key: the next run installs again (refusals checked first)
    ({"expected": FP, "att": attempt(**DONE_TO_POWER_ON, installing="failed")}, ALL, False),
])
def test_plan(make_host: Callable[..., HostEntry], tmp_path: Path, kw: dict[str, object], kinds: list[str],
              converged: bool) -> None:
    host = make_host()
    observed = obs(tmp_path, **kw)  # type: ignore[arg-type]
    plan = plan_os(host, observed)
    assert [a.kind for a in plan.actions] == kinds
    assert plan.converged is converged
    assert plan_os(host, observed) == plan  # pure


@pytest.mark.parametrize(("kw", "error", "words"), [
    ({"installer": None}, InputError, "no installer to install one (--os-image, or software.os_installer"),
    ({"refusals": ("installer http://x/i.iso does not answer: refused",)}, InputError,
     "cannot install: installer http://x/i.iso does not answer"),
    ({"refusals": ("the BMC lists 1 boot drive(s) (2 x 3.84 TB): the RAID1 root needs two", "no seed tool")},
     InputError, "the RAID1 root needs two; no seed tool"),
    ({"ssh": Ssh.WRONG_KEY, "power": "On"}, CheckFailed, "not installed over"),
    ({"ssh": Ssh.WRONG_KEY, "power": "On", "att": attempt(**DONE_TO_POWER_ON)}, CheckFailed, "not installed over"),
    # an installed node that is down (its key recorded by someone else, or by a completed install)
    ({"expected": "SHA256:theirs"}, CheckFailed, "is not installed over; power it on"),
    ({"expected": FP, "att": attempt(**COMPLETE)}, CheckFailed, "is not installed over; power it on"),
    ({"expected": "SHA256:theirs", "att": attempt(hostkey="ok")}, CheckFailed, "is not installed over"),
])
def test_plan_refuses(make_host: Callable[..., HostEntry], tmp_path: Path, kw: dict[str, object],
                      error: type[Exception], words: str) -> None:
    host = make_host()
    with pytest.raises(error) as caught:
        plan_os(host, obs(tmp_path, **kw))  # type: ignore[arg-type]
    message = str(caught.value)
    assert words in message and message.startswith(f"{host.name}: ") and "\n" not in message


def test_the_attempt_is_the_records_since_the_latest_host_key(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as j:
        run = j.start_run("bringup", "node01")
        assert attempt_of(j.actions("node01", stage="os")) is None
        for step in ORDER:  # an earlier, complete attempt
            j.action_finished(j.action_started(run, "node01", "os", step.value, "host SHA256:old"
                                               if step is Step.HOSTKEY else "host"), "ok")
        j.action_finished(j.action_started(run, "node01", "other", "os-eject", "host"), "failed")  # not os's
        j.action_finished(j.action_started(run, "node01", "os", "os-hostkey", f"host {FP}"), "ok")
        j.action_finished(j.action_started(run, "node01", "os", "os-media", "host"), "failed")
        j.action_finished(j.action_started(run, "node01", "os", "os-media", "host"), "ok")  # retried: last wins
        j.action_started(run, "node01", "os", "os-boot-cd", "host")  # killed during it
        got = attempt_of(j.actions("node01", stage="os"))
    assert got == Attempt(outcomes={Step.HOSTKEY: "ok", Step.MEDIA: "ok", Step.BOOT_CD: None}, fingerprint=FP)
    assert got.failed is None and not got.complete and got.last_done == ORDER.index(Step.MEDIA)


def test_the_media_step_names_the_installer_with_its_password_masked(make_host: Callable[..., HostEntry],
                                                                     tmp_path: Path) -> None:
    plan = plan_os(make_host(), obs(tmp_path, installer="https://ops:s3cret-pw@images.example/install.iso"))
    media = next(a for a in plan.actions if a.kind == "os-media")
    assert media.after == "https://ops:<redacted>@images.example/install.iso"
    assert all("s3cret-pw" not in a.describe() for a in plan.actions)

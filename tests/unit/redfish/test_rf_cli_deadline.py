"""Every BMC command runs within the connector's deadline: against the loopback BMC stalling one URI the
command needs, each one fails with a single line naming the node and that URI instead of hanging; and a
wait with its own bound (Connector.waiting) holds the command's deadline meanwhile."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import connect, point_at, tree

from provision.cli import main as cli_main
from provision.redfish.errors import RedfishTimeout
from provision.redfish.ops import session
from provision.redfish.retry import RetryPolicy

ROOT = "/redfish/v1"
SYS = f"{ROOT}/Systems/1"
STALL_S = 4.0  # the loopback BMC sleeps this long before answering; the command's deadline is 1.2 s (the
# reads before the stalled one, the node's identity among them, fit in it on a loaded machine)


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    real = session.options_for

    def options_for(*args: object, **kw: object):  # type: ignore[no-untyped-def]
        opts = real(*args, **kw)  # type: ignore[arg-type]
        return opts.model_copy(update={"deadline_s": 1.2, "retry": RetryPolicy(attempts=3, base_delay_s=0.01)})

    monkeypatch.setattr(session, "options_for", options_for)


@pytest.mark.parametrize(("argv", "stalled"), [
    (["bmc", "inventory"], f"{SYS}/Memory"),
    (["firmware", "status"], f"{ROOT}/UpdateService/FirmwareInventory"),
    (["firmware", "plan"], f"{ROOT}/UpdateService/FirmwareInventory"),
    (["firmware", "update", "--plan"], f"{ROOT}/UpdateService/FirmwareInventory"),
    (["bios", "diff"], f"{SYS}/Bios"),
    (["bios", "apply", "--plan"], f"{SYS}/Bios"),
    (["power", "status"], f"{ROOT}/Systems"),  # a node fact: the login and the facts count too
    (["power", "cycle"], f"{SYS}/ResetActionInfo"),
    (["bmc", "boot-once", "Pxe"], SYS),
    (["bmc", "media", "--eject"], f"{SYS}/VirtualMedia"),
    (["sel"], f"{SYS}/LogServices"),
])
def test_a_stalling_bmc_fails_each_command_with_one_line(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                         short_deadline: None, argv: list[str], stalled: str) -> None:
    t = tree("supermicro")
    t[SYS] = dict(t[SYS], VirtualMedia={"@odata.id": f"{SYS}/VirtualMedia"})
    bmc = FakeBmc(tree=t)
    with Served(bmc) as srv:
        point_at(inventory_copy, srv.address)
        bmc.delay[stalled] = STALL_S
        code = cli_main([argv[0], *argv[1:2], "node01", *argv[2:], "-i", str(inventory_copy)] if argv[0] in (
            "bmc", "firmware", "bios") else [argv[0], "node01", *argv[1:], "-i", str(inventory_copy)])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "plain HTTP" not in line]
    # a read (a plan, a status, an update's or apply's --plan) that could not look: exit 3, as verify
    plan = argv[:2] in (["firmware", "plan"], ["bios", "diff"], ["firmware", "status"]) or "--plan" in argv
    assert code == (3 if plan else 1), err
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "node01 BMC" in err[0] and stalled in err[0] and "deadline" in err[0], err
    assert not [s for s in bmc.seen if s.method in ("POST", "PATCH") and "Sessions" not in s.path]


def test_a_bounded_wait_holds_the_commands_deadline_and_bounds_its_own_requests() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv, deadline_s=0.5, retry=RetryPolicy(attempts=5, base_delay_s=0.0, timeout_s=0.3))
        with conn.deadline():
            with conn.waiting(1.0):
                time.sleep(0.7)  # longer than the command's deadline: the wait has its own
                conn.get(SYS)
            conn.get(SYS)  # the command's deadline resumes with what it had left
            bmc.delay[SYS] = 2.0  # past the wait's bound (0.1 s + one 0.3 s request timeout)
            with pytest.raises(RedfishTimeout, match=rf"node01 .*GET {SYS}.*deadline"), conn.waiting(0.1):
                conn.get(SYS)


def test_a_bringup_bmc_stage_whose_read_stalls_fails_with_one_line(inventory_copy: Path, short_deadline: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The bring-up BMC stages' reads run within the deadline too (each use of the kept session)."""
    from contextlib import ExitStack
    from types import SimpleNamespace

    from provision.bringup.options import BringupOptions
    from provision.bringup.stages import bmc_session as bmc_stage
    from provision.bringup.stages.firmware import FirmwareStage
    from provision.spec import load_fleet

    monkeypatch.setattr(bmc_stage, "options_for", session.options_for)  # the short deadline there too
    stalled = f"{ROOT}/UpdateService/FirmwareInventory"
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv, ExitStack() as stack:
        point_at(inventory_copy, srv.address)
        kept: dict[str, object] = {}

        def keep(key: str, opener: object) -> object:
            if key not in kept:
                kept[key] = stack.enter_context(opener())  # type: ignore[operator]
            return kept[key]

        ctx = SimpleNamespace(host=load_fleet(inventory_copy).select(["node01"])[0], keep=keep)
        bmc.delay[stalled] = STALL_S
        with pytest.raises(RedfishTimeout) as err:
            FirmwareStage(BringupOptions(inventory=inventory_copy, poll_s=0.01)).observe(ctx)  # type: ignore[arg-type]
    text = str(err.value)
    assert "\n" not in text and "node01 BMC" in text and stalled in text and "deadline" in text

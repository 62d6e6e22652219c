"""provision clean's pure parts as tables: method per capability and level, the disks plan (boot drives, resume,
unerasable drives), the guards, and the parsers of the evidence (on real id-ctrl captures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.clean import nvme
from provision.clean.model import MIB, CleanLevel, Drive, DriveCaps, EraseMethod, SanitizeStatus, ZeroRead
from provision.clean.plan import (
    DestroyPool,
    DisksObserved,
    EraseDrive,
    Interrupted,
    KnownIdentity,
    MdArray,
    RecordResumed,
    StopArray,
    Unerasable,
    WipeLabels,
    ZfsPool,
    check_drained,
    check_identity,
    choose_method,
    plan_disks,
)
from provision.conformance.parsers.nvme import parse_nvme_id_ctrl
from provision.errors import CheckFailed, ParseError
from provision.spec.platforms import Board, PlatformIdentity

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nvme"
ALL = DriveCaps(sanitize_crypto=True, sanitize_block=True, format=True, format_crypto=True)
BLOCK_ONLY = DriveCaps(sanitize_block=True, format=True)
FORMAT_CRYPTO = DriveCaps(format=True, format_crypto=True)
FORMAT_ONLY = DriveCaps(format=True)
NONE = DriveCaps()
S, E, M = CleanLevel.SANITIZE, CleanLevel.ERASE, CleanLevel.METADATA


@pytest.mark.parametrize(("caps", "level", "method"), [
    (ALL, S, EraseMethod.SANITIZE_CRYPTO),
    (BLOCK_ONLY, S, EraseMethod.SANITIZE_BLOCK),
    (FORMAT_CRYPTO, S, EraseMethod.FORMAT_CRYPTO),
    (FORMAT_ONLY, S, EraseMethod.FORMAT_USER),
    (NONE, S, None),
    (ALL, E, EraseMethod.FORMAT_CRYPTO),
    (FORMAT_ONLY, E, EraseMethod.FORMAT_USER),
    (DriveCaps(sanitize_block=True), E, EraseMethod.SANITIZE_BLOCK),
    (NONE, E, None),
    (ALL, M, None),
])
def test_method_per_capability_and_level(caps: DriveCaps, level: CleanLevel, method: EraseMethod | None) -> None:
    assert choose_method(caps, level) == method


@pytest.mark.parametrize(("sanicap", "oacs", "fna", "caps"), [
    (0x3, 0x17, 0x4, ALL),
    (0x2, 0x2, 0x0, BLOCK_ONLY),
    (0x1, 0x0, 0x4, DriveCaps(sanitize_crypto=True)),  # FNA crypto without Format NVM is no format at all
    (None, None, None, NONE),
])
def test_caps_from_identify_fields(sanicap: int | None, oacs: int | None, fna: int | None, caps: DriveCaps) -> None:
    assert DriveCaps.of(sanicap, oacs, fna) == caps


@pytest.mark.parametrize(("capture", "caps", "method"), [
    ("ironlib/nvme-id-ctrl.json", FORMAT_CRYPTO, EraseMethod.FORMAT_CRYPTO),  # Samsung 980 PRO: no sanitize
    ("qemu-vm/nvme-id-ctrl.nvme0.json", FORMAT_ONLY, EraseMethod.FORMAT_USER),  # qemu 7.2: format, no crypto
])
def test_real_id_ctrl_captures(capture: str, caps: DriveCaps, method: EraseMethod) -> None:
    ident = parse_nvme_id_ctrl((FIXTURES / capture).read_text())
    got = DriveCaps.of(ident.sanicap, ident.oacs, ident.fna)
    assert got == caps
    assert choose_method(got, S) == method


def _drive(n: int, caps: DriveCaps = ALL, boot: bool = False) -> Drive:
    return Drive(device=f"/dev/nvme{n}n1", controller=f"/dev/nvme{n}", serial=f"SN{n}", boot=boot, caps=caps)


ZEROED = ZeroRead(first_bytes=MIB, first_nonzero=0, last_bytes=MIB, last_nonzero=0)
DIRTY = ZeroRead(first_bytes=MIB, first_nonzero=4096, last_bytes=MIB, last_nonzero=0)
DONE_LOG = nvme.parse_sanitize_log('{"nvme2":{"sprog":65535,"sstat":{"status":"(1) done"}}}')
FAILED_LOG = nvme.parse_sanitize_log('{"nvme2":{"sprog":65535,"sstat":{"status":"(3) failed"}}}')
DRIVES = (_drive(0, boot=True), _drive(1, boot=True), _drive(2), _drive(3, FORMAT_ONLY))
POOLS = (ZfsPool(name="scratch"), ZfsPool(name="rpool", boot=True))
ARRAYS = (MdArray(device="/dev/md0", boot=True), MdArray(device="/dev/md1", members=("/dev/nvme4n1",)))


def _kinds(level: CleanLevel, include_boot: bool = False, **changes: object) -> list[str]:
    observed = DisksObserved(drives=DRIVES, pools=POOLS, arrays=ARRAYS, observed_at=100.0).model_copy(update=changes)
    return [f"{a.kind} {a.target}" for a in plan_disks("node01", observed, level, include_boot).actions]


def test_data_drives_only_pools_and_arrays_first() -> None:
    assert _kinds(S) == ["pool-destroy scratch", "md-stop /dev/md1",
                         "wipe-labels /dev/nvme2n1", "drive-erase /dev/nvme2n1 SN2",
                         "wipe-labels /dev/nvme3n1", "drive-erase /dev/nvme3n1 SN3"]


def test_include_boot_erases_the_boot_drives_last() -> None:
    kinds = _kinds(E, include_boot=True)
    assert kinds[0] == "pool-destroy scratch" and "pool-destroy rpool" in kinds
    assert "md-stop /dev/md0" not in kinds  # the running OS's mirror is not stopped under it
    erased = [k.split()[1] for k in kinds if k.startswith("drive-erase")]
    assert erased == ["/dev/nvme2n1", "/dev/nvme3n1", "/dev/nvme0n1", "/dev/nvme1n1"]


def test_metadata_wipes_labels_and_erases_nothing() -> None:
    assert _kinds(M) == ["pool-destroy scratch", "md-stop /dev/md1", "wipe-labels /dev/nvme2n1",
                         "wipe-labels /dev/nvme3n1"]


def test_methods_carried_by_the_actions() -> None:
    plan = plan_disks("node01", DisksObserved(drives=DRIVES), S, False)
    methods = {a.drive.serial: a.method for a in plan.actions if isinstance(a, EraseDrive)}
    assert methods == {"SN2": EraseMethod.SANITIZE_CRYPTO, "SN3": EraseMethod.FORMAT_USER}
    assert "boot drives kept" in plan.note
    assert all(isinstance(a, WipeLabels | EraseDrive) for a in plan.actions)


def test_drives_erased_earlier_in_this_clean_are_left_alone() -> None:
    assert _kinds(S, erased=frozenset({"SN2"})) == ["pool-destroy scratch", "md-stop /dev/md1", "wipe-labels /dev/nvme3n1",
                                                    "drive-erase /dev/nvme3n1 SN3"]


def test_a_drive_with_no_method_is_planned_as_unerasable_after_the_others() -> None:
    observed = DisksObserved(drives=(_drive(2, NONE), _drive(3)))
    plan = plan_disks("node01", observed, S, False)
    assert [type(a) for a in plan.actions] == [Unerasable, WipeLabels, EraseDrive]
    assert "/dev/nvme2n1 (SN2)" in plan.actions[0].after and not plan.converged


@pytest.mark.parametrize(("sanitize", "read", "resumed"), [
    (DONE_LOG, ZEROED, True),  # it ran, the drive says so, it reads back zeroed: not again
    (DONE_LOG, DIRTY, False),  # the log is an older sanitize's: erase
    (FAILED_LOG, ZEROED, False),  # a failed sanitize is never "done"
    (None, ZEROED, False),  # a sanitize method needs the drive's log
])
def test_an_interrupted_sanitize_is_recorded_only_when_the_drive_proves_it(sanitize, read, resumed) -> None:  # type: ignore[no-untyped-def]
    seen = Interrupted(started_at=50.0, sanitize=sanitize, read_back=read)
    observed = DisksObserved(drives=(_drive(2),), interrupted={"SN2": seen}, observed_at=100.0)
    actions = plan_disks("node01", observed, S, False).actions
    if resumed:
        (action,) = actions
        assert isinstance(action, RecordResumed) and not action.changes_node
        assert action.evidence.resumed and action.evidence.started_at == 50.0 and action.evidence.ended_at == 100.0
    else:
        assert [type(a) for a in actions] == [WipeLabels, EraseDrive]


def test_an_interrupted_format_needs_only_the_read_back() -> None:
    seen = Interrupted(started_at=50.0, read_back=ZEROED)
    observed = DisksObserved(drives=(_drive(3, FORMAT_ONLY),), interrupted={"SN3": seen}, observed_at=60.0)
    (action,) = plan_disks("node01", observed, E, False).actions
    assert isinstance(action, RecordResumed) and action.evidence.method is EraseMethod.FORMAT_USER


def test_boot_drives_unknown_refuses_unless_everything_goes() -> None:
    observed = DisksObserved(drives=(_drive(0), _drive(1)), boot_known=False)
    with pytest.raises(CheckFailed, match="cannot tell the boot drives"):
        plan_disks("node01", observed, S, False)
    assert len(plan_disks("node01", observed, S, True).actions) == 4


def test_pool_and_array_actions_are_typed() -> None:
    plan = plan_disks("node01", DisksObserved(drives=(), pools=POOLS, arrays=ARRAYS), M, False)
    assert [type(a) for a in plan.actions] == [DestroyPool, StopArray]
    assert plan.actions[1].members == ("/dev/nvme4n1",)


# ---- guards ----------------------------------------------------------------------------------------------
NOW = PlatformIdentity(system=Board(serial_number="S123", uuid="4C4C4544-0001"))


@pytest.mark.parametrize(("known", "error"), [
    ([KnownIdentity(source="journal", serial="S123", uuid="4c4c4544-0001")], None),
    ([KnownIdentity(source="inventory", serial="S123")], None),
    ([KnownIdentity(source="inventory", serial="S999")], "serial S123, the inventory holds S999"),
    ([KnownIdentity(source="inventory", serial="S123"), KnownIdentity(source="journal", uuid="other")],
     "UUID 4C4C4544-0001, the journal holds other"),
    ([], "no serial or UUID recorded"),
    ([KnownIdentity(source="journal")], "no serial or UUID recorded"),
])
def test_identity_guard(known: list[KnownIdentity], error: str | None) -> None:
    if error is None:
        assert "S123" in check_identity("node01", NOW, known)
    else:
        with pytest.raises(CheckFailed, match=error):
            check_identity("node01", NOW, known)


def test_identity_guard_when_the_bmc_reports_none() -> None:
    with pytest.raises(CheckFailed, match=r"serial \(none\)"):
        check_identity("node01", PlatformIdentity(system=Board()), [KnownIdentity(source="journal", serial="S1")])


@pytest.mark.parametrize(("drained", "error"), [(None, False), (True, False), (False, True)])
def test_drained_guard(drained: bool | None, error: bool) -> None:
    if error:
        with pytest.raises(CheckFailed, match="gpu-a01 is not drained"):
            check_drained("node01", "gpu-a01", drained)
    else:
        assert check_drained("node01", "gpu-a01", drained)


# ---- evidence parsers ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "status", "erased"), [
    # nvme-cli 2.x (nvme-print-json.c): nested under the device, SSTAT an object with "status"
    ('{"nvme0":{"sprog":65535,"sstat":{"global_erased":1,"no_cmplted_passes":0,"status":"(1) Most Recent Sanitize '
     'Command Completed Successfully."},"cdw10_info":0}}', SanitizeStatus.COMPLETED, True),
    # later 2.x: the status string is the key as well as the value
    ('{"nvme0":{"sprog":32768,"sstat":{"global_erased":0,"no_cmplted_passes":0,"Sanitize in Progress.":'
     '"(2) Sanitize in Progress."}}}', SanitizeStatus.IN_PROGRESS, False),
    ('{"sprog":65535,"sstat":259}', SanitizeStatus.FAILED, True),  # 1.x: SSTAT an integer (0x103)
    ('{"nvme0":{"sprog":65535,"sstat":4}}', SanitizeStatus.COMPLETED_NO_DEALLOCATE, False),
    ('{"nvme0":{"sprog":65535,"sstat":0}}', SanitizeStatus.NEVER, False),
])
def test_sanitize_log(text: str, status: SanitizeStatus, erased: bool) -> None:
    log = nvme.parse_sanitize_log(text)
    assert log.status is status and log.global_erased is erased
    assert log.succeeded is (status in (SanitizeStatus.COMPLETED, SanitizeStatus.COMPLETED_NO_DEALLOCATE))


@pytest.mark.parametrize("text", ["", "[]", '{"nvme0":{}}', '{"nvme0":{"sprog":"x","sstat":1}}',
                                  '{"nvme0":{"sprog":1,"sstat":{"status":"done"}}}', '{"sprog":1,"sstat":7}'])
def test_sanitize_log_refused(text: str) -> None:
    with pytest.raises(ParseError, match="sanitize-log"):
        nvme.parse_sanitize_log(text)


@pytest.mark.parametrize(("text", "zeroed"), [
    (f"{MIB}\n0\n{MIB}\n0\n", True),
    (f"{MIB}\n12\n{MIB}\n0\n", False),
    (f"{MIB}\n0\n0\n0\n", False),  # the last MiB could not be read: not evidence of anything
    (f"{MIB - 512}\n0\n{MIB}\n0\n", False),
])
def test_read_back(text: str, zeroed: bool) -> None:
    assert nvme.parse_read_back(text).zeroed is zeroed


@pytest.mark.parametrize("text", ["", "1 2 3", "a b c d", f"{MIB} 0 {MIB} 0 9"])
def test_read_back_refused(text: str) -> None:
    with pytest.raises(ParseError):
        nvme.parse_read_back(text)


@pytest.mark.parametrize(("method", "command"), [
    (EraseMethod.SANITIZE_CRYPTO, "nvme sanitize /dev/nvme2 --sanact=4"),
    (EraseMethod.SANITIZE_BLOCK, "nvme sanitize /dev/nvme2 --sanact=2"),
    (EraseMethod.FORMAT_CRYPTO, "nvme format /dev/nvme2n1 --ses=2 --force"),
    (EraseMethod.FORMAT_USER, "nvme format /dev/nvme2n1 --ses=1 --force"),
])
def test_erase_commands(method: EraseMethod, command: str) -> None:
    assert nvme.erase_command(method, "/dev/nvme2n1", nvme.controller_of("/dev/nvme2n1")) == command


def test_scan_parsers() -> None:
    assert nvme.parse_zpools("scratch\nrpool\n") == ("scratch", "rpool")
    assert nvme.parse_zpools("no pools available\n") == ()
    scan = "ARRAY /dev/md0 metadata=1.2 name=node01:0 UUID=1:2:3:4\nARRAY /dev/md/data metadata=1.2\n"
    assert nvme.parse_md_scan(scan) == ("/dev/md0", "/dev/md/data")
    with pytest.raises(ParseError):
        nvme.controller_of("/dev/sda")

"""Platform identities in the journal (migration 8): every reading kept, read back typed, on both engines; a
journal made before the migration gains the table when opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from provision.journal import Journal
from provision.journal.identities import identities, record_identity
from provision.journal.schema import MIGRATIONS
from provision.spec.platforms import BmcIdentity, Board, PlatformIdentity

SMC = PlatformIdentity(
    system=Board(uri="/redfish/v1/Systems/1", manufacturer="Supermicro", model="SYS-821GE-TNHR", sku="0x1D1415D9",
                 part_number="SYS-821GE-TNHR-02-CI061", serial_number="S889914X3710910",
                 uuid="00000000-0000-0000-0000-7CC25550A8FF"),
    chassis=Board(uri="/redfish/v1/Chassis/1", manufacturer="Supermicro", model="X13DEG-OAD"),
    bmc=BmcIdentity(uri="/redfish/v1/Managers/1", model="ASPEED", firmware_version="11.01.01"))


def test_each_reading_is_kept_and_read_back(backend: str | None) -> None:
    swapped = SMC.model_copy(update={"bmc": SMC.bmc.model_copy(update={"firmware_version": "11.02.05"})})
    with Journal(backend) as j:
        record_identity(j, "node01", SMC, "bmc inventory", at=10.0)
        record_identity(j, "node02", SMC, "preflight", at=11.0)
        record_identity(j, "node01", swapped, "preflight", at=20.0)
    with Journal(backend) as j:
        got = identities(j, "node01")
    assert [(r.at, r.source) for r in got] == [(10.0, "bmc inventory"), (20.0, "preflight")]
    assert got[0].identity == SMC and got[1].identity.bmc is not None
    assert got[1].identity.bmc.firmware_version == "11.02.05"
    with Journal(backend) as j:
        assert identities(j, "node03") == []


def test_an_older_journal_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for script in MIGRATIONS[:7]:
        db.executescript(script)
    db.execute("PRAGMA user_version=7")
    db.commit()
    db.close()
    path.chmod(0o600)
    with Journal(path) as j:
        assert j.schema_version == len(MIGRATIONS)
        record_identity(j, "n1", SMC, "preflight", at=1.0)
        assert [r.identity.name for r in identities(j, "n1")] == ["Supermicro SYS-821GE-TNHR"]

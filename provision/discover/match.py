"""Pure: what each discovered BMC is to this inventory: the profile it fits and the host it already is.

- Profile: a profile fits when one of its `platforms:` patterns fits the BMC's identity (platforms.py). A
  profile of `platforms: any` describes every board, so it is no evidence of what a board is: it is never
  *found* to fit, though an operator may choose it (`--profile`). Several fitting profiles are ambiguous
  (listed; none chosen).
- Known: a host whose recorded identity (`provision_bmc_identity`, or the journal's last reading) has the
  BMC's serial or UUID, never its address alone. Such a host at another address is reported moved, with both
  addresses. A BMC at the address of a host whose identity is not recorded, or recorded as another board,
  is reported so: enrolling it would give two hosts one BMC.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from provision.discover.probe import Found
from provision.spec.platforms import Platforms


class Known(BaseModel):
    """An inventory host as discovery compares it: its name, BMC address and recorded serial/UUID."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    address: str
    serial: str | None = None
    uuid: str | None = None


class Standing(StrEnum):
    NEW = "new"
    KNOWN = "in inventory"
    MOVED = "in inventory, address moved"
    ADDRESS_TAKEN = "address of another host"


class Verdict(BaseModel):
    """One discovered BMC judged against the inventory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    found: Found
    fits: tuple[str, ...] = ()
    standing: Standing = Standing.NEW
    host: str | None = None
    inventory_address: str | None = None
    note: str = ""

    @property
    def profile(self) -> str | None:
        """The one profile the identity fits, None when none or several do."""
        return self.fits[0] if len(self.fits) == 1 else None


def fitting_profiles(found: Found, profiles: Mapping[str, Platforms]) -> tuple[str, ...]:
    """The profiles whose named platforms fit the BMC (never `any` ones), sorted."""
    if found.identity is None:
        return ()
    return tuple(sorted(n for n, p in profiles.items() if not p.any_platform and p.fits(found.identity)))


# What boards and BMCs say when nobody wrote a serial or UUID (SMBIOS defaults of AMI and OEM firmware): never
# an identity, or every such board would be the same one.
PLACEHOLDERS = frozenset(v.casefold() for v in (
    "To be filled by O.E.M.", "Default string", "System Serial Number", "Not Specified", "Not Applicable", "N/A",
    "None", "0", "0123456789", "1234567890", "Unknown", "00000000-0000-0000-0000-000000000000",
    "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "03000200-0400-0500-0006-000700080009"))


def meaningful(value: str | None) -> str | None:
    """The value, or None when it is empty or a placeholder (PLACEHOLDERS)."""
    text = (value or "").strip()
    return text if text and text.casefold() not in PLACEHOLDERS else None


def _same(a: str | None, b: str | None) -> bool:
    a, b = meaningful(a), meaningful(b)
    return a is not None and b is not None and a.casefold() == b.casefold()


def _norm(address: str) -> str:
    return address.rstrip("/").casefold()


def judge(found: Found, profiles: Mapping[str, Platforms], hosts: list[Known]) -> Verdict:
    """One BMC: its fitting profiles, its standing in the inventory, and where the file it came from (a CSV,
    a lease) says another serial or MAC than the BMC does."""
    verdict = _standing(found, fitting_profiles(found, profiles), hosts)
    differs = file_differs(found)
    return verdict.model_copy(update={"note": "; ".join(n for n in (verdict.note, differs) if n)}) if differs \
        else verdict


def file_differs(found: Found) -> str:
    """`the file says serial X, the BMC Y` (and for the MAC), or ''."""
    lease = found.lease
    if lease is None:
        return ""
    out = []
    if meaningful(lease.serial) and meaningful(found.serial) and not _same(lease.serial, found.serial):
        out.append(f"the file says serial {lease.serial}, the BMC {found.serial}")
    if lease.mac and found.bmc_mac and lease.mac != found.bmc_mac:
        out.append(f"the file says MAC {lease.mac}, the BMC {found.bmc_mac}")
    return "; ".join(out)


def _standing(found: Found, fits: tuple[str, ...], hosts: list[Known]) -> Verdict:
    by_identity = next((h for h in hosts if _same(h.serial, found.serial) or _same(h.uuid, found.uuid)), None)
    if by_identity is not None:
        if _norm(by_identity.address) == _norm(found.address):
            return Verdict(found=found, fits=fits, standing=Standing.KNOWN, host=by_identity.name,
                           inventory_address=by_identity.address)
        return Verdict(found=found, fits=fits, standing=Standing.MOVED, host=by_identity.name,
                       inventory_address=by_identity.address,
                       note=f"{by_identity.name}: inventory says {by_identity.address}, found at {found.address}")
    at_address = next((h for h in hosts if _norm(h.address) == _norm(found.address)), None)
    if at_address is not None:
        why = ("its identity is not recorded" if not (at_address.serial or at_address.uuid) or found.identity is None
               else f"recorded as serial {at_address.serial or '?'} / UUID {at_address.uuid or '?'}")
        return Verdict(found=found, fits=fits, standing=Standing.ADDRESS_TAKEN, host=at_address.name,
                       inventory_address=at_address.address, note=f"{at_address.name} has this BMC address; {why}")
    return Verdict(found=found, fits=fits)


def judge_all(found: list[Found], profiles: Mapping[str, Platforms], hosts: list[Known]) -> list[Verdict]:
    return [judge(f, profiles, hosts) for f in found]

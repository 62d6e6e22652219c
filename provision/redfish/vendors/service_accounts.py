"""Accounts a vendor's BMC keeps for itself or for its host's firmware: never removed by a clean, a retirement or
the bmc-accounts stage, whatever the spec names, and each one kept is reported with why.

The standard marks such accounts itself, read in provision.redfish.ops.accounts (`never_removed`): a
ManagerAccount whose `HostBootstrapAccount` is true (ManagerAccount v1_8_0: "a bootstrap account created by the
Redfish Host Interface Specification-defined credential bootstrapping"; DSP0270 section 9.2: the service deletes
its bootstrap accounts itself when the host or the service resets), and one whose GET answers an `Allow` header
without DELETE (DSP0266: the Allow header of a GET lists the methods the resource supports). What a BMC does
not mark that way, its vendor plugin lists here as data (VendorPlugin.service_accounts), each entry with where it
comes from: a vendor's documentation, or a capture when nothing is documented (said so in the entry).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, field_validator


class ServiceAccount(BaseModel):
    """A BMC's own account, by its UserName (and, where a name alone is not enough, its AccountTypes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str
    """re.fullmatch over the account's UserName."""
    account_types: frozenset[str] | None = None
    """When given, the account's AccountTypes must be exactly these (a name shape alone would also fit a site's
    account)."""
    why: str
    """What the account is for, as the plan and the journal say it (short)."""

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        re.compile(value)
        return value

    def matches(self, user: str, account_types: Collection[str]) -> bool:
        if self.account_types is not None and frozenset(account_types) != self.account_types:
            return False
        return re.fullmatch(self.pattern, user) is not None


def service_account(entries: Collection[ServiceAccount], user: str, account_types: Collection[str]) -> str | None:
    """Why `user` is one of the BMC's own accounts by its plugin's list, or None."""
    return next((e.why for e in entries if e.matches(user, account_types)), None)

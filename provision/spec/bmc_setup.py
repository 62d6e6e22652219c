"""The `bmc:` section of a profile (or the `provision_bmc_setup` variable of a host or group): how a BMC is
taken over on day zero. Accounts, the initial (factory) account's rotation, the site certificate, time,
names and protocols. Passwords are never in it: each is a source (a file, an environment variable, or the
host's `provision_bmc_password`, vaulted as the inventory allows), read when the stage runs.
"""

from __future__ import annotations

import os
import re
import stat
import string
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from provision.errors import InputError
from provision.redact import register_secret

PLACEHOLDERS = frozenset({"node", "bmc_host"})
"""What a hostname, common name or SAN pattern may name: the inventory host, the BMC address's host part."""
VAULT_HEADER = "$ANSIBLE_VAULT;"
ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


class Frozen(BaseModel):
    """As the spec's models (provision.spec.frozen.Frozen): immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


def check_pattern(value: str) -> str:
    """A `{node}`-style pattern naming only PLACEHOLDERS; refused at load otherwise."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
    except ValueError as exc:
        raise ValueError(f"bad pattern {value!r}: {exc}") from None
    unknown = names - PLACEHOLDERS
    if unknown:
        raise ValueError(f"pattern {value!r} names {', '.join(sorted(unknown))}; it may name only "
                         f"{{{'}, {'.join(sorted(PLACEHOLDERS))}}}")
    return value


def fill(pattern: str, node: str, bmc_host: str) -> str:
    return pattern.format(node=node, bmc_host=bmc_host)


class SecretSource(Frozen):
    """Where a password comes from: exactly one of `file` (its first line; an Ansible Vault file is decrypted
    with ANSIBLE_VAULT_PASSWORD_FILE, as the inventory is), `env` (a variable's name) or `inventory: true` (the
    host's provision_bmc_password). Never the password itself."""

    file: Path | None = None
    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    inventory: Literal[True] | None = None

    @model_validator(mode="after")
    def _one(self) -> SecretSource:
        given = [k for k in ("file", "env", "inventory") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of file, env or inventory: true (a password is never written in "
                             f"the spec){'; got ' + ', '.join(given) if given else ''}")
        return self

    def describe(self) -> str:
        """Where it is read from, for messages (never the value)."""
        if self.file is not None:
            return f"file {self.file}"
        if self.env is not None:
            return f"environment variable {self.env}"
        return "provision_bmc_password"


class SiteAccount(Frozen):
    """An account the site wants on every BMC of the profile."""

    user: str = Field(pattern=ACCOUNT_NAME.pattern)
    role: str = Field(default="Administrator", min_length=1, description="The Redfish RoleId")
    password: SecretSource


class InitialAccount(Frozen):
    """The account the BMC ships with: its factory password, and the password it is rotated to."""

    user: str = Field(pattern=ACCOUNT_NAME.pattern)
    password: SecretSource
    """The factory password (the vendor's default, or the one on the BMC's pull-out tag)."""
    rotate_to: SecretSource


class Subject(Frozen):
    """The certificate's subject; `common_name` a pattern ({node}, {bmc_host})."""

    common_name: str = "{bmc_host}"
    organization: str | None = None
    organizational_unit: str | None = None
    city: str | None = None
    state: str | None = None
    country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$")

    _cn = field_validator("common_name")(lambda v: check_pattern(v))


class CertificateSpec(Frozen):
    """The BMC's HTTPS certificate, issued by the site's CA: signed with `ca_key`, or by `sign_command` (which
    reads the CSR on stdin and writes the certificate, PEM, on stdout)."""

    ca_cert: Path
    ca_key: Path | None = None
    sign_command: tuple[str, ...] | None = Field(default=None, min_length=1)
    subject: Subject = Subject()
    sans: tuple[str, ...] = Field(default=(), description="Subject alternative names (patterns); the BMC address's "
                                  "host is always one")
    days: int = Field(default=397, ge=1, le=3650)
    renew_days: int = Field(default=30, ge=0, description="A site certificate ending within this many days is "
                            "replaced")
    csr_timeout_s: float = Field(default=120.0, gt=0, description="How long a CSR task may run")

    @model_validator(mode="after")
    def _signer(self) -> CertificateSpec:
        if (self.ca_key is None) == (self.sign_command is None):
            raise ValueError("give exactly one of ca_key (a CA key file) or sign_command (the site's signing "
                             "command)")
        return self

    @field_validator("sans")
    @classmethod
    def _sans(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_pattern(v) for v in value)


class Protocols(Frozen):
    """Manager protocols turned on (true) or off (false); absent: left as they are."""

    ssdp: bool | None = None
    ipmi: bool | None = None


class BmcSetup(Frozen):
    """How `provision bmc setup` and the bring-up's bmc stages take a BMC over."""

    initial: InitialAccount | None = None
    accounts: tuple[SiteAccount, ...] = ()
    remove_unnamed: bool = Field(default=False, description="Delete accounts the spec does not name (else listed)")
    certificate: CertificateSpec | None = None
    ntp: tuple[str, ...] = Field(default=(), description="NTP servers (none: time left as it is)")
    hostname: str | None = Field(default=None, description="The BMC's host name, a pattern ({node}, {bmc_host})")
    dns: tuple[str, ...] = Field(default=(), description="Static DNS servers (none: left as they are)")
    protocols: Protocols = Protocols()

    @field_validator("hostname")
    @classmethod
    def _hostname(cls, value: str | None) -> str | None:
        return None if value is None else check_pattern(value)

    @field_validator("accounts")
    @classmethod
    def _unique(cls, value: tuple[SiteAccount, ...]) -> tuple[SiteAccount, ...]:
        seen = [a.user for a in value]
        dup = sorted({u for u in seen if seen.count(u) > 1})
        if dup:
            raise ValueError(f"account {dup[0]} is named twice")
        return value

    @model_validator(mode="after")
    def _initial_not_site(self) -> BmcSetup:
        if self.initial is not None and self.initial.user in {a.user for a in self.accounts}:
            raise ValueError(f"initial account {self.initial.user} is also a site account: name it once")
        return self

    @property
    def named_accounts(self) -> frozenset[str]:
        """Every account this section names: the site accounts and the initial one."""
        return frozenset({a.user for a in self.accounts} | ({self.initial.user} if self.initial else set()))

    def resolved(self, base: Path) -> BmcSetup:
        """Every file path made absolute against `base` (the inventory's directory)."""
        def path(p: Path | None) -> Path | None:
            return p if p is None or p.is_absolute() else (base / p).resolve()

        def source(s: SecretSource) -> SecretSource:
            return s if s.file is None else s.model_copy(update={"file": path(s.file)})

        initial = None if self.initial is None else self.initial.model_copy(
            update={"password": source(self.initial.password), "rotate_to": source(self.initial.rotate_to)})
        accounts = tuple(a.model_copy(update={"password": source(a.password)}) for a in self.accounts)
        cert = self.certificate
        if cert is not None:
            cert = cert.model_copy(update={"ca_cert": path(cert.ca_cert), "ca_key": path(cert.ca_key)})
        return self.model_copy(update={"initial": initial, "accounts": accounts, "certificate": cert})


class SecretUnreadable(InputError):
    """A password source that cannot be read, or may not be (a file others can read): one line, nothing sent."""


def read_secret(source: SecretSource, inventory_password: SecretStr, where: str) -> SecretStr:
    """The password `source` gives, registered for redaction; SecretUnreadable (one line naming the file or
    variable, never the value) when it cannot or may not be read. `where` names the host and key."""
    if source.inventory:
        value = inventory_password.get_secret_value()
        if not value:
            raise SecretUnreadable(f"{where}: provision_bmc_password is not set")
    elif source.env is not None:
        value = os.environ.get(source.env, "")
        if not value:
            raise SecretUnreadable(f"{where}: environment variable {source.env} is not set or empty")
    else:
        assert source.file is not None
        value = _read_file(source.file, where)
    value = value.strip("\r\n")
    register_secret(value)
    return SecretStr(value)


def _read_file(path: Path, where: str) -> str:
    try:
        st = path.stat()
    except OSError as exc:
        raise SecretUnreadable(f"{where}: password file {path}: {exc.strerror}") from None
    if st.st_mode & 0o077:
        raise SecretUnreadable(f"{where}: password file {path} is readable by group or others (mode "
                               f"{stat.filemode(st.st_mode)}): chmod 600 it")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretUnreadable(f"{where}: password file {path}: cannot read it ({type(exc).__name__})") from None
    if text.startswith(VAULT_HEADER):
        text = _decrypt(path, text, where)
    line = text.splitlines()[0] if text.strip() else ""
    if not line:
        raise SecretUnreadable(f"{where}: password file {path} is empty")
    return line


def _decrypt(path: Path, text: str, where: str) -> str:
    """An Ansible Vault file, decrypted with the vault password file the inventory loader uses."""
    vault_password = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    if not vault_password:
        raise SecretUnreadable(f"{where}: password file {path} is vault-encrypted and ANSIBLE_VAULT_PASSWORD_FILE "
                               "is not set")
    from ansible.cli import CLI
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.parsing.vault import VaultLib

    try:
        secrets = CLI.setup_vault_secrets(DataLoader(), vault_ids=[], vault_password_files=[vault_password])
        return VaultLib(secrets).decrypt(text.encode()).decode("utf-8")
    except (AnsibleError, UnicodeDecodeError) as exc:
        raise SecretUnreadable(f"{where}: password file {path}: cannot decrypt it ({type(exc).__name__})") from None
